package seeded

// Rand is a mulberry32 generator. Its zero value is a valid generator with
// seed 0. It is not safe for concurrent use.
type Rand struct {
	state uint32
}

// New returns a generator seeded with seed.
func New(seed uint32) *Rand { return &Rand{state: seed} }

// Uint32 returns the next 32 random bits. The JavaScript twin is
//
//	s = (s + 0x6D2B79F5) | 0;
//	t = Math.imul(s ^ (s >>> 15), s | 1);
//	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
//	return (t ^ (t >>> 14)) >>> 0;
func (r *Rand) Uint32() uint32 {
	r.state += 0x6D2B79F5
	t := r.state
	t = (t ^ t>>15) * (t | 1)
	t ^= t + (t^t>>7)*(t|61)
	return t ^ t>>14
}

// Float64 returns a number uniformly distributed in [0, 1) with 32 random
// bits: Uint32()/2^32, exactly as mulberry32 does in JavaScript.
func (r *Rand) Float64() float64 { return float64(r.Uint32()) / 4294967296 }

// Float32s returns n numbers from a generator seeded with seed, each
// float32(lo + (hi-lo)*r) computed in float64 with r = Float64(), which is
// what `Math.fround(lo + (hi - lo) * r)` computes in JavaScript. The values
// lie in [lo, hi] (hi itself only through float32 rounding). n <= 0 gives
// an empty slice.
func Float32s(seed uint32, n int, lo, hi float32) []float32 {
	if n < 0 {
		n = 0
	}
	r := New(seed)
	out := make([]float32, n)
	l, h := float64(lo), float64(hi)
	for i := range out {
		out[i] = float32(l + (h-l)*r.Float64())
	}
	return out
}
