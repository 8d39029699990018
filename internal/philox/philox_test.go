package philox

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKnownAnswers checks Block against the Random123 library's known
// answers for Philox4x32-10 (kat_vectors: counter and key all zero, all
// ones, and the digits of pi).
func TestKnownAnswers(t *testing.T) {
	assert.Equal(t, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}, Block(0, 0, 0))
	ones := uint64(math.MaxUint64)
	assert.Equal(t, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}, Block(ones, ones, ones))
	pi := Block(0x299f31d0a4093822, 0x85a308d3243f6a88, 0x0370734413198a2e)
	assert.Equal(t, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}, pi)
}

// TestDistributions checks the uniform and normal maps on 100000 draws:
// range, mean and variance.
func TestDistributions(t *testing.T) {
	const n = 100000
	u := make([]float32, n)
	Uniforms(42, 7, u)
	sum, sq := 0.0, 0.0
	for i, v := range u {
		assert.True(t, v >= 0 && v < 1, "element %d: %v", i, v)
		assert.Equal(t, Uniform(Uint32(42, 7, uint64(i))), v)
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean := sum / n
	assert.InDelta(t, 0.5, mean, 0.005)
	assert.InDelta(t, 1.0/12, sq/n-mean*mean, 0.002)
	sum, sq = 0, 0
	for i := range uint64(n) {
		z := Normal(42, 7, i)
		sum += z
		sq += z * z
	}
	assert.InDelta(t, 0, sum/n, 0.01)
	assert.InDelta(t, 1, sq/n, 0.02)
	assert.NotEqual(t, Block(1, 0, 0), Block(2, 0, 0), "keys make different streams")
	assert.NotEqual(t, Block(1, 0, 0), Block(1, 0, 1), "streams differ under one key")
}
