package clbackend

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/tensor"
)

// crcTwins returns two different 64-byte blocks with the same CRC-32C
// (a birthday search over seeded random blocks: some 2^16 tries).
func crcTwins(t *testing.T) (a, b []byte) {
	rng := rand.New(rand.NewPCG(3, 5))
	seen := map[uint32][]byte{}
	for range 1 << 22 {
		blk := make([]byte, 64)
		for i := range blk {
			blk[i] = byte(rng.Uint32())
		}
		sum := crc32.Checksum(blk, weightCRC)
		if prev, ok := seen[sum]; ok && string(prev) != string(blk) {
			return prev, blk
		}
		seen[sum] = blk
	}
	t.Fatal("no CRC-32C collision found")
	return nil, nil
}

// TestWeightsShareByContent: a context shares a weight between models
// only when the bytes are the same; two weights whose keys collide (same
// type, shape and CRC-32C) get a device copy each, and each reference
// goes back to its own copy.
func TestWeightsShareByContent(t *testing.T) {
	p := newGPU(t)
	cc, err := p.devices[p.def].context()
	require.NoError(t, err)
	defer func() { _ = cc.release() }()
	a, b := crcTwins(t)
	ta, err := tensor.FromBytes(tensor.U8, tensor.Shape{64}, a)
	require.NoError(t, err)
	tb, err := tensor.FromBytes(tensor.U8, tensor.Shape{64}, b)
	require.NoError(t, err)
	require.Equal(t, weightKey(ta), weightKey(tb), "the test needs colliding keys")

	na, ba, err := cc.weight(ta, "m", nil)
	require.NoError(t, err)
	nb, bb, err := cc.weight(tb, "m", nil)
	require.NoError(t, err)
	assert.NotEqual(t, na, nb)
	assert.NotSame(t, ba, bb, "different bytes, different weights")
	na2, ba2, err := cc.weight(ta.Clone(), "m", nil)
	require.NoError(t, err)
	assert.Equal(t, na, na2)
	assert.Same(t, ba, ba2, "the same bytes share one weight")
	for _, w := range []struct {
		buf  *cl.MemObject
		want []byte
	}{{ba, a}, {bb, b}} {
		got, err := cc.holds(w.buf, w.want)
		require.NoError(t, err)
		assert.True(t, got, "each weight holds its own bytes")
	}
	before := cc.weightBytes.Load()
	require.NoError(t, cc.releaseWeight(na))
	assert.Equal(t, before, cc.weightBytes.Load(), "a's other reference keeps it")
	require.NoError(t, cc.releaseWeight(nb))
	assert.Equal(t, before-64, cc.weightBytes.Load(), "b's copy is released")
	require.NoError(t, cc.releaseWeight(na2))
	assert.Equal(t, before-128, cc.weightBytes.Load())
	assert.Empty(t, cc.weights)
}
