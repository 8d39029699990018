// Package philox is the Philox4x32-10 counter-based random generator
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11)
// that clinfer's random ops use on every device: the CPU reference
// computes it here and the GPU kernels (kernels/random.cl) compute the same
// function, so a seed gives the same tensors on both. Element i of a
// random tensor is word i%4 of the block at counter (i/4, stream) under the
// key seed: no state, any element computable alone, in any order.
//
// In the data flow of DESIGN.md it sits under the devices' random kernels
// (cpu_fallback/ref/ops_random.go and the GPU's random lowering).
package philox

import (
	"math"
	"math/bits"
)

// The Philox4x32 constants: the multipliers and the Weyl key increments.
const (
	m0 = 0xD2511F53
	m1 = 0xCD9E8D57
	w0 = 0x9E3779B9
	w1 = 0xBB67AE85
)

// Block returns the four 32-bit words of block ctr (a 64-bit position and a
// 64-bit stream) under key, after Philox's 10 rounds.
func Block(key, ctr, stream uint64) [4]uint32 {
	c := [4]uint32{uint32(ctr), uint32(ctr >> 32), uint32(stream), uint32(stream >> 32)}
	k0, k1 := uint32(key), uint32(key>>32)
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(m0, c[0])
		hi1, lo1 := bits.Mul32(m1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0}
		k0 += w0
		k1 += w1
	}
	return c
}

// Uint32 is element i of the stream: word i%4 of block i/4.
func Uint32(key, stream uint64, i uint64) uint32 { return Block(key, i/4, stream)[i%4] }

// Uniform maps a word to [0, 1): its top 24 bits over 2^24, exact in
// float32, so every device gets the same float.
func Uniform(u uint32) float32 { return float32(u>>8) * (1.0 / (1 << 24)) }

// Uniforms fills v with elements 0..len(v)-1 of the stream, as Uniform
// values.
func Uniforms(key, stream uint64, v []float32) {
	for i := 0; i < len(v); i += 4 {
		b := Block(key, uint64(i/4), stream)
		for j := 0; j < 4 && i+j < len(v); j++ {
			v[i+j] = Uniform(b[j])
		}
	}
}

// Normal is the standard normal value of element i: Box-Muller over words
// 2(i%2) and 2(i%2)+1 of block i/2 (the cosine branch), computed in
// float64; a device computing it in float32 agrees to about 1e-6.
func Normal(key, stream uint64, i uint64) float64 {
	b := Block(key, i/2, stream)
	u1 := (float64(b[2*(i%2)]>>8) + 1) * (1.0 / (1 << 24)) // (0, 1]
	u2 := float64(b[2*(i%2)+1]>>8) * (1.0 / (1 << 24))
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
