package driver

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTreeHash: the sum depends on the stream, not on how it is cut into
// writes, and changes with any byte of it and with its length.
func TestTreeHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3*treeLeaf+12345)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sum := func(cuts ...int) [32]byte {
		var h treeHash
		at := 0
		for _, c := range cuts {
			h.Write(data[at:c])
			at = c
		}
		h.Write(data[at:])
		return h.Sum()
	}
	want := sum()
	for _, cuts := range [][]int{{1}, {treeLeaf - 1}, {treeLeaf}, {17, treeLeaf + 3, 2*treeLeaf + 5}, {2 * treeLeaf, 2*treeLeaf + 1}, {len(data)}} {
		assert.Equal(t, want, sum(cuts...), "cut at %v", cuts)
	}
	for _, at := range []int{0, treeLeaf - 1, treeLeaf, 2*treeLeaf + 7, len(data) - 1} {
		data[at] ^= 1
		assert.NotEqual(t, want, sum(treeLeaf/2), "byte %d changed", at)
		data[at] ^= 1
	}
	var h treeHash
	h.Write(data)
	h.Write([]byte{0})
	assert.NotEqual(t, want, h.Sum(), "a longer stream")
	var empty, zero treeHash
	zero.Write([]byte{0})
	assert.NotEqual(t, empty.Sum(), zero.Sum())
}
