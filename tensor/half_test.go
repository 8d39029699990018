package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func f32b(b uint32) float32 { return math.Float32frombits(b) }

func TestFloat32ToF16Golden(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3C00},
		{"minus two", -2, 0xC000},
		{"zero", 0, 0x0000},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		{"max", 65504, 0x7BFF},
		{"below overflow tie", 65519, 0x7BFF},
		{"overflow tie rounds to inf", 65520, 0x7C00},
		{"large", 1e10, 0x7C00},
		{"minus large", -1e10, 0xFC00},
		{"inf", float32(math.Inf(1)), 0x7C00},
		{"minus inf", float32(math.Inf(-1)), 0xFC00},
		{"smallest subnormal 2^-24", 0x1p-24, 0x0001},
		{"2^-25 ties to even zero", 0x1p-25, 0x0000},
		{"minus 2^-25 ties to minus zero", -0x1p-25, 0x8000},
		{"just above 2^-25", math.Nextafter32(0x1p-25, 1), 0x0001},
		{"3*2^-25 ties to even 2", 3 * 0x1p-25, 0x0002},
		{"5*2^-25 ties to even 2", 5 * 0x1p-25, 0x0002},
		{"largest subnormal", 1023 * 0x1p-24, 0x03FF},
		{"1023.5 units ties up to smallest normal", 1023.5 * 0x1p-24, 0x0400},
		{"smallest normal", 0x1p-14, 0x0400},
		{"f32 subnormal", f32b(0x00000001), 0x0000},
		{"tiny negative", -1e-30, 0x8000},
		{"one third", 1.0 / 3, 0x3555},
		{"tenth", 0.1, 0x2E66},
		{"1+2^-11 ties to even 1", 1 + 0x1p-11, 0x3C00},
		{"1+3*2^-11 ties to even 0x3C02", 1 + 3*0x1p-11, 0x3C02},
		{"just above 1+2^-11", math.Nextafter32(1+0x1p-11, 2), 0x3C01},
		{"2048+1 ties to 2048", 2049, 0x6800},
		{"2051 ties to 2052", 2051, 0x6802},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equalf(t, tc.want, Float32ToF16(tc.in), "Float32ToF16(%g) = %#04x, want %#04x", tc.in, Float32ToF16(tc.in), tc.want)
		})
	}
}

func TestFloat32ToF16NaN(t *testing.T) {
	tests := []struct {
		name string
		in   uint32
		want uint16
	}{
		{"quiet NaN", 0x7FC00000, 0x7E00},
		{"signalling NaN with high payload is quietened", 0x7F802000, 0x7E01},
		{"negative NaN keeps sign and payload", 0xFFC02000, 0xFE01},
		{"payload only in dropped bits stays NaN", 0x7F800001, 0x7E00},
		{"full payload", 0x7FFFFFFF, 0x7FFF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Float32ToF16(f32b(tc.in))
			assert.Equal(t, tc.want, got)
			assert.True(t, math.IsNaN(float64(F16ToFloat32(got))))
		})
	}
}

func TestF16ToFloat32Golden(t *testing.T) {
	tests := []struct {
		in   uint16
		want uint32 // float32 bits
	}{
		{0x3C00, 0x3F800000},
		{0xC000, 0xC0000000},
		{0x0000, 0x00000000},
		{0x8000, 0x80000000},
		{0x0001, math.Float32bits(0x1p-24)},
		{0x8001, math.Float32bits(-0x1p-24)},
		{0x03FF, math.Float32bits(1023 * 0x1p-24)},
		{0x0400, math.Float32bits(0x1p-14)},
		{0x7BFF, math.Float32bits(65504)},
		{0x7C00, 0x7F800000},
		{0xFC00, 0xFF800000},
		{0x7E00, 0x7FC00000},
		{0x7E01, 0x7FC02000},
		{0x7C01, 0x7F802000},
		{0x3555, math.Float32bits(0.333251953125)},
	}
	for _, tc := range tests {
		got := math.Float32bits(F16ToFloat32(tc.in))
		assert.Equalf(t, tc.want, got, "F16ToFloat32(%#04x) = %#08x, want %#08x", tc.in, got, tc.want)
	}
}

func isF16NaN(h uint16) bool { return h&0x7C00 == 0x7C00 && h&0x03FF != 0 }

func TestF16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToFloat32(h)
		back := Float32ToF16(f)
		if isF16NaN(h) {
			if !math.IsNaN(float64(f)) || !isF16NaN(back) || back&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x -> %g -> %#04x: want a NaN of the same sign", h, f, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("%#04x -> %g -> %#04x: round trip changed the value", h, f, back)
		}
	}
}

func TestBF16Golden(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3F800000, 0x3F80},
		{"minus zero", 0x80000000, 0x8000},
		{"pi truncates", 0x40490FDB, 0x4049},
		{"tie to even down", 0x3F808000, 0x3F80},
		{"tie to even up", 0x3F818000, 0x3F82},
		{"above tie", 0x3F808001, 0x3F81},
		{"below tie", 0x3F807FFF, 0x3F80},
		{"max f32 overflows to inf", 0x7F7FFFFF, 0x7F80},
		{"largest that stays finite", 0x7F7F7FFF, 0x7F7F},
		{"inf", 0x7F800000, 0x7F80},
		{"minus inf", 0xFF800000, 0xFF80},
		{"NaN with low payload stays NaN", 0x7F800001, 0x7FC0},
		{"negative quiet NaN", 0xFFC00000, 0xFFC0},
		{"subnormal tie to even zero", 0x00008000, 0x0000},
		{"subnormal tie to even up", 0x00018000, 0x0002},
		{"subnormal above tie", 0x00008001, 0x0001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Float32ToBF16(f32b(tc.in)))
		})
	}
	assert.Equal(t, uint32(0x3F800000), math.Float32bits(BF16ToFloat32(0x3F80)))
	assert.Equal(t, uint32(0xFF800000), math.Float32bits(BF16ToFloat32(0xFF80)))
	assert.Equal(t, uint32(0x00010000), math.Float32bits(BF16ToFloat32(0x0001)))
}

func TestBF16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToFloat32(h)
		back := Float32ToBF16(f)
		if h&0x7F80 == 0x7F80 && h&0x7F != 0 {
			if !math.IsNaN(float64(f)) || Float32ToBF16(f)&0x7F == 0 {
				t.Fatalf("NaN %#04x -> %#04x: want a NaN", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("%#04x -> %g -> %#04x: round trip changed the value", h, f, back)
		}
	}
}

// nearestF16 is an independent oracle: it finds the f16 nearest to v among
// all finite positive f16 values by binary search over their float64 values,
// breaking ties towards the even bit pattern, and applies IEEE overflow.
type f16Oracle struct{ vals []float64 } // vals[h] for h in [0, 0x7BFF]

func newF16Oracle() *f16Oracle {
	o := &f16Oracle{vals: make([]float64, 0x7C00)}
	for h := range o.vals {
		e := h >> 10
		m := float64(h & 0x3FF)
		if e == 0 {
			o.vals[h] = m * 0x1p-24
		} else {
			o.vals[h] = (1 + m/1024) * math.Ldexp(1, e-15)
		}
	}
	return o
}

func (o *f16Oracle) round(f float32) uint16 {
	v := float64(f)
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	// 65520 = 65504 + half an ulp: at or above it IEEE rounds to Inf.
	if v >= 65520 {
		return sign | 0x7C00
	}
	i := sort.SearchFloat64s(o.vals, v) // first vals[i] >= v
	if i < len(o.vals) && o.vals[i] == v {
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	if hi == len(o.vals) {
		return sign | uint16(lo)
	}
	dl, dh := v-o.vals[lo], o.vals[hi]-v
	switch {
	case dl < dh:
		return sign | uint16(lo)
	case dh < dl:
		return sign | uint16(hi)
	case lo%2 == 0:
		return sign | uint16(lo)
	}
	return sign | uint16(hi)
}

func TestFloat32ToF16AgainstOracle(t *testing.T) {
	o := newF16Oracle()
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(f float32) {
		if math.IsNaN(float64(f)) {
			return
		}
		got, want := Float32ToF16(f), o.round(f)
		if got != want {
			t.Fatalf("Float32ToF16(%g [%#08x]) = %#04x, oracle says %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for range 200000 {
		// Bias exponents towards the f16 range, where the rounding happens.
		b := rng.Uint32()
		exp := uint32(100 + rng.IntN(45)) // 2^-27 .. 2^17
		check(f32b(b&0x807FFFFF | exp<<23))
		check(f32b(b))
	}
	// Every midpoint between neighbouring f16 values, and its neighbours.
	for h := 0; h < 0x7BFF; h++ {
		mid := float32((o.vals[h] + o.vals[h+1]) / 2)
		check(mid)
		check(-mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1e9))
	}
}

func TestSliceHelpers(t *testing.T) {
	src := []float32{1, -2, 65520, 0x1p-24}
	h := make([]uint16, 3)
	require.Equal(t, 3, F32ToF16Slice(h, src))
	assert.Equal(t, []uint16{0x3C00, 0xC000, 0x7C00}, h)
	back := make([]float32, 5)
	require.Equal(t, 3, F16ToF32Slice(back, h))
	assert.Equal(t, []float32{1, -2, float32(math.Inf(1)), 0, 0}, back)

	b := make([]uint16, 4)
	require.Equal(t, 4, F32ToBF16Slice(b, src))
	assert.Equal(t, []uint16{0x3F80, 0xC000, 0x4780, 0x3380}, b)
	bb := make([]float32, 2)
	require.Equal(t, 2, BF16ToF32Slice(bb, b))
	assert.Equal(t, []float32{1, -2}, bb)
}
