package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFloat8Golden checks codes and values against ONNX's reference
// conversions (onnx.helper.float32_to_float8e4m3 / e5m2 and their tests).
func TestFloat8Golden(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name     string
		typ      ElementType
		in       float64
		sat, raw uint8 // codes with saturate=true and saturate=false
	}{
		{"e4m3fn max", F8E4M3FN, 448, 0x7e, 0x7e},
		{"e4m3fn inf", F8E4M3FN, inf, 0x7e, 0x7f},
		{"e4m3fn -inf", F8E4M3FN, -inf, 0xfe, 0xff},
		{"e4m3fn overflow", F8E4M3FN, 500, 0x7e, 0x7f},
		{"e4m3fn rounds to max", F8E4M3FN, 464, 0x7e, 0x7e},
		{"e4m3fn -0", F8E4M3FN, math.Copysign(0, -1), 0x80, 0x80},
		{"e4m3fn nan", F8E4M3FN, nan, 0x7f, 0x7f},
		{"e4m3fn smallest subnormal", F8E4M3FN, 0x1p-9, 0x01, 0x01},
		{"e4m3fn half of it rounds to even 0", F8E4M3FN, 0x1p-10, 0x00, 0x00},
		{"e4m3fn 1", F8E4M3FN, 1, 0x38, 0x38},
		{"e4m3fn 10.1 rounds to 10", F8E4M3FN, 10.1, 0x52, 0x52},
		{"e4m3fnuz max", F8E4M3FNUZ, 240, 0x7f, 0x7f},
		{"e4m3fnuz inf", F8E4M3FNUZ, inf, 0x7f, 0x80},
		{"e4m3fnuz -0 is 0", F8E4M3FNUZ, math.Copysign(0, -1), 0x00, 0x00},
		{"e4m3fnuz 1", F8E4M3FNUZ, 1, 0x40, 0x40},
		{"e5m2 max", F8E5M2, 57344, 0x7b, 0x7b},
		{"e5m2 -max", F8E5M2, -57344, 0xfb, 0xfb},
		{"e5m2 inf", F8E5M2, inf, 0x7b, 0x7c},
		{"e5m2 overflow", F8E5M2, 1e6, 0x7b, 0x7c},
		{"e5m2 -0", F8E5M2, math.Copysign(0, -1), 0x80, 0x80},
		{"e5m2 1", F8E5M2, 1, 0x3c, 0x3c},
		{"e5m2fnuz overflow", F8E5M2FNUZ, 1e6, 0x7f, 0x80},
		{"e5m2fnuz -overflow", F8E5M2FNUZ, -1e6, 0xff, 0x80},
		{"e5m2fnuz nan", F8E5M2FNUZ, nan, 0x80, 0x80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.sat, Float32ToFloat8(tc.typ, float32(tc.in), true), "saturate")
			assert.Equal(t, tc.raw, Float32ToFloat8(tc.typ, float32(tc.in), false), "no saturate")
		})
	}
	assert.True(t, math.IsNaN(float64(Float8ToFloat32(F8E5M2FNUZ, 0x80))))
	assert.True(t, math.IsInf(float64(Float8ToFloat32(F8E5M2, 0xfc)), -1))
	assert.Equal(t, float32(-57344), Float8ToFloat32(F8E5M2FNUZ, 0xff))
	assert.Equal(t, float32(448), Float8E4M3FN(0x7e).Float32())
	assert.Equal(t, float32(240), Float8E4M3FNUZ(0x7f).Float32())
	assert.Equal(t, float32(57344), Float8E5M2(0x7b).Float32())
	assert.Equal(t, float32(0x1p-17), Float8E5M2FNUZ(0x01).Float32())
}

// TestFloat8RoundTrip decodes every code of every 8-bit float type and
// encodes it back: each non-NaN code is its value's code.
func TestFloat8RoundTrip(t *testing.T) {
	for _, typ := range []ElementType{F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ} {
		t.Run(typ.String(), func(t *testing.T) {
			require.True(t, typ.IsFloat8())
			require.False(t, typ.IsFloat())
			nans := 0
			for c := 0; c < 256; c++ {
				v := Float8ToFloat32(typ, uint8(c))
				if math.IsNaN(float64(v)) {
					nans++
					continue
				}
				assert.Equal(t, uint8(c), Float32ToFloat8(typ, v, false), "code %#x (%v)", c, v)
			}
			want := map[ElementType]int{F8E4M3FN: 2, F8E4M3FNUZ: 1, F8E5M2: 6, F8E5M2FNUZ: 1}[typ]
			assert.Equal(t, want, nans, "NaN codes")
			// Midpoints between neighbouring positive codes round to the even one.
			for c := 1; c < 0x7b; c++ {
				a, b := Float8ToFloat32(typ, uint8(c)), Float8ToFloat32(typ, uint8(c+1))
				if math.IsNaN(float64(b)) || math.IsInf(float64(b), 0) {
					continue
				}
				mid := (float64(a) + float64(b)) / 2
				even := uint8(c)
				if c%2 == 1 {
					even = uint8(c + 1)
				}
				assert.Equal(t, even, Float32ToFloat8(typ, float32(mid), true), "midpoint of %#x and %#x", c, c+1)
			}
		})
	}
}

// TestFloat8Tensors converts through tensors: Cast's saturate, generic
// From/Data, and conversions between 8-bit floats and other types.
func TestFloat8Tensors(t *testing.T) {
	x, err := FromF32(Shape{4}, []float32{1, -2.5, 1000, float32(math.Inf(-1))})
	require.NoError(t, err)
	sat, err := x.Convert(F8E4M3FN)
	require.NoError(t, err)
	v, err := Data[Float8E4M3FN](sat)
	require.NoError(t, err)
	assert.Equal(t, []Float8E4M3FN{0x38, 0xc2, 0x7e, 0xfe}, v)
	raw, err := x.Cast(F8E5M2, false)
	require.NoError(t, err)
	back, err := raw.Convert(F32)
	require.NoError(t, err)
	assert.Equal(t, float32(1024), back.F32()[2])
	assert.True(t, math.IsInf(float64(back.F32()[3]), -1))
	y, err := From(Shape{2}, []Float8E5M2FNUZ{0x40, 0xc4})
	require.NoError(t, err)
	assert.Equal(t, F8E5M2FNUZ, y.Type())
	assert.Equal(t, []float64{1, -2}, y.Float64s())
	i, err := sat.Convert(I32)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, -2, 448, -448}, i.I32())
}
