package tensor

import "math"

// Float32ToF16 converts f to IEEE 754 binary16 bits, rounding to nearest with
// ties to even. Values beyond the f16 range become ±Inf, values below half
// the smallest f16 subnormal become ±0, and a NaN stays a NaN: it is made
// quiet and keeps the top bits of its payload.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased f16 exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// The result is an f16 subnormal or zero. Anything with e < -10 is
		// below 2^-25 (half the smallest subnormal) and rounds to zero; that
		// includes every f32 subnormal.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++ // may carry into the smallest normal, whose encoding is the same
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry out of the mantissa bumps the exponent, up to Inf
	}
	return sign | uint16(h)
}

// F16ToFloat32 converts IEEE 754 binary16 bits to a float32. Every f16 value,
// subnormals included, is exactly representable; a NaN keeps its payload.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: mant * 2^-24, exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToBF16 converts f to bfloat16 bits (the top half of a float32),
// rounding to nearest with ties to even. Overflow becomes ±Inf, subnormals
// round like any other value, and a NaN stays a quiet NaN.
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 converts bfloat16 bits to a float32; this is exact.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToF16Slice converts min(len(dst), len(src)) values with Float32ToF16
// and returns how many it converted, like copy.
func F32ToF16Slice(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = Float32ToF16(v)
	}
	return n
}

// F16ToF32Slice converts min(len(dst), len(src)) values with F16ToFloat32
// and returns how many it converted, like copy.
func F16ToF32Slice(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = F16ToFloat32(v)
	}
	return n
}

// F32ToBF16Slice converts min(len(dst), len(src)) values with Float32ToBF16
// and returns how many it converted, like copy.
func F32ToBF16Slice(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = Float32ToBF16(v)
	}
	return n
}

// BF16ToF32Slice converts min(len(dst), len(src)) values with BF16ToFloat32
// and returns how many it converted, like copy.
func BF16ToF32Slice(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = BF16ToFloat32(v)
	}
	return n
}
