package tensor

import "math"

// float8Format describes one 8-bit float encoding of ONNX: 1 sign bit,
// ebits exponent bits and mbits mantissa bits with an exponent bias.
//
//   - fn ("finite"): no infinities; E4M3FN keeps only S.1111.111 for NaN, so
//     its largest value is 1.75 * 2^8 = 448.
//   - uz ("unsigned zero"): no negative zero; the code 0x80 is the only NaN
//     and every exponent code holds finite values.
//   - E5M2 is IEEE-like: exponent code 31 holds the infinities and NaNs.
type float8Format struct {
	ebits, mbits, bias int
	uz                 bool
	inf                bool    // has infinities (E5M2)
	max                float64 // largest finite value
}

var (
	formatE4M3FN   = float8Format{ebits: 4, mbits: 3, bias: 7, max: 448}
	formatE4M3FNUZ = float8Format{ebits: 4, mbits: 3, bias: 8, uz: true, max: 240}
	formatE5M2     = float8Format{ebits: 5, mbits: 2, bias: 15, inf: true, max: 57344}
	formatE5M2FNUZ = float8Format{ebits: 5, mbits: 2, bias: 16, uz: true, max: 57344}
)

// float8FormatOf returns the format of an 8-bit float type.
func float8FormatOf(t ElementType) float8Format {
	switch t {
	case F8E4M3FN:
		return formatE4M3FN
	case F8E4M3FNUZ:
		return formatE4M3FNUZ
	case F8E5M2:
		return formatE5M2
	}
	return formatE5M2FNUZ
}

// nan is the format's canonical NaN code (positive where it has a sign).
func (f float8Format) nan() uint8 {
	switch {
	case f.uz:
		return 0x80
	case f.inf:
		return 0x7e // exponent 31, mantissa 10
	}
	return 0x7f
}

// decode returns the value of code b.
func (f float8Format) decode(b uint8) float64 {
	if f.uz && b == 0x80 {
		return math.NaN()
	}
	neg := b&0x80 != 0
	e := int(b>>f.mbits) & (1<<f.ebits - 1)
	m := int(b) & (1<<f.mbits - 1)
	var v float64
	switch {
	case f.inf && e == 1<<f.ebits-1:
		if m != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	case !f.inf && !f.uz && e == 1<<f.ebits-1 && m == 1<<f.mbits-1:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), 1-f.bias-f.mbits)
	default:
		v = math.Ldexp(float64(m|1<<f.mbits), e-f.bias-f.mbits)
	}
	if neg {
		v = -v
	}
	return v
}

// encode rounds v to the nearest code (ties to even), as ONNX Cast does.
// With saturate, a value beyond the largest finite one (infinities
// included) becomes the largest finite value of its sign; without it, it
// becomes infinity where the format has one (E5M2), else NaN.
func (f float8Format) encode(v float64, saturate bool) uint8 {
	if math.IsNaN(v) {
		return f.nan()
	}
	var sign uint8
	if math.Signbit(v) {
		sign = 0x80
	}
	a := math.Abs(v)
	overflow := func() uint8 {
		switch {
		case saturate:
			return sign | f.encodeFinite(f.max)
		case f.inf:
			return sign | 0x7c
		case f.uz:
			return f.nan()
		}
		return sign | f.nan()
	}
	if math.IsInf(a, 0) {
		return overflow()
	}
	if a == 0 {
		if f.uz {
			return 0
		}
		return sign
	}
	// The quantum at a's binade (or the subnormal quantum), and a rounded
	// to a multiple of it.
	emin := 1 - f.bias
	_, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	e := max(exp-1, emin)
	q := math.Ldexp(1, e-f.mbits)
	r := math.RoundToEven(a/q) * q
	if r > f.max {
		return overflow()
	}
	if r == 0 {
		if f.uz {
			return 0
		}
		return sign
	}
	return sign | f.encodeFinite(r)
}

// encodeFinite is the code of a positive value the format represents
// exactly.
func (f float8Format) encodeFinite(r float64) uint8 {
	emin := 1 - f.bias
	if r < math.Ldexp(1, emin) {
		return uint8(r / math.Ldexp(1, emin-f.mbits)) // subnormal
	}
	_, exp := math.Frexp(r)
	e := exp - 1
	m := r/math.Ldexp(1, e-f.mbits) - float64(int(1)<<f.mbits)
	return uint8((e+f.bias)<<f.mbits) | uint8(m)
}

// Float8ToFloat32 returns the value of the 8-bit float code b of type t
// (one of the IsFloat8 types).
func Float8ToFloat32(t ElementType, b uint8) float32 {
	return float32(float8FormatOf(t).decode(b))
}

// Float32ToFloat8 rounds v to the 8-bit float type t (ties to even), with
// ONNX Cast's saturate attribute: true clamps out-of-range values to the
// largest finite one, false makes them infinite or NaN (see encode).
func Float32ToFloat8(t ElementType, v float32, saturate bool) uint8 {
	return float8FormatOf(t).encode(float64(v), saturate)
}

// Float8E4M3FN is an ONNX FLOAT8E4M3FN value held as its bits, the Go
// element type of F8E4M3FN tensors in From, Wrap and Data.
type Float8E4M3FN uint8

// Float8E4M3FNUZ is an ONNX FLOAT8E4M3FNUZ value held as its bits (F8E4M3FNUZ).
type Float8E4M3FNUZ uint8

// Float8E5M2 is an ONNX FLOAT8E5M2 value held as its bits (F8E5M2).
type Float8E5M2 uint8

// Float8E5M2FNUZ is an ONNX FLOAT8E5M2FNUZ value held as its bits (F8E5M2FNUZ).
type Float8E5M2FNUZ uint8

// Float32 returns the value of f.
func (f Float8E4M3FN) Float32() float32 { return Float8ToFloat32(F8E4M3FN, uint8(f)) }

// Float32 returns the value of f.
func (f Float8E4M3FNUZ) Float32() float32 { return Float8ToFloat32(F8E4M3FNUZ, uint8(f)) }

// Float32 returns the value of f.
func (f Float8E5M2) Float32() float32 { return Float8ToFloat32(F8E5M2, uint8(f)) }

// Float32 returns the value of f.
func (f Float8E5M2FNUZ) Float32() float32 { return Float8ToFloat32(F8E5M2FNUZ, uint8(f)) }
