package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConvertGolden(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		from, to ElementType
		in       []float64 // built with FromFloat64s(from, ...)
		check    func(t *testing.T, y *Tensor)
	}{
		{"f32 to i32 truncates and saturates", F32, I32, []float64{-2.7, 2.7, -0.5, 1e10, nan, -1e10, 2147483520},
			func(t *testing.T, y *Tensor) {
				assert.Equal(t, []int32{-2, 2, 0, math.MaxInt32, 0, math.MinInt32, 2147483520}, y.I32())
			}},
		{"f32 to u8 saturates", F32, U8, []float64{-1, 255.9, 256, 3.9, -0.9},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint8{0, 255, 255, 3, 0}, y.U8()) }},
		{"f32 to i8", F32, I8, []float64{-128.9, 127.9, -300, 300},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int8{-128, 127, -128, 127}, y.I8()) }},
		{"f32 to i16", F32, I16, []float64{-40000, 40000, -7.9},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int16{-32768, 32767, -7}, y.I16()) }},
		{"f64 to i64 saturates", F64, I64, []float64{1e19, -1e19, 9.2e18, -3.99, nan},
			func(t *testing.T, y *Tensor) {
				assert.Equal(t, []int64{math.MaxInt64, math.MinInt64, 9200000000000000000, -3, 0}, y.I64())
			}},
		{"f32 to bool", F32, Bool, []float64{0, math.Copysign(0, -1), 0.5, nan, -3},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []bool{false, false, true, true, true}, y.Bool()) }},
		{"f32 to f16 rounds to nearest even", F32, F16, []float64{1, 65520, 0x1p-25, 3 * 0x1p-25},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0x3C00, 0x7C00, 0, 2}, y.F16()) }},
		{"f64 to f16 goes through f32", F64, F16, []float64{-2, 1.0 / 3},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0xC000, 0x3555}, y.F16()) }},
		{"f32 to bf16", F32, BF16, []float64{1, -2, math.Inf(1)},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0x3F80, 0xC000, 0x7F80}, y.BF16()) }},
		{"f16 to i32 truncates", F16, I32, []float64{3.140625, -3.140625},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int32{3, -3}, y.I32()) }},
		{"f16 to bf16", F16, BF16, []float64{1, 0.5},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0x3F80, 0x3F00}, y.BF16()) }},
		{"bf16 to f16", BF16, F16, []float64{1, 65536},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0x3C00, 0x7C00}, y.F16()) }},
		{"bool to f32", Bool, F32, []float64{1, 0},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []float32{1, 0}, y.F32()) }},
		{"bool to i64", Bool, I64, []float64{0, 1},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int64{0, 1}, y.I64()) }},
		{"i64 to i8 wraps", I64, I8, []float64{127, 128, -129, 255},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int8{127, -128, 127, -1}, y.I8()) }},
		{"i32 to u8 wraps", I32, U8, []float64{-1, 256, 300},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint8{255, 0, 44}, y.U8()) }},
		{"i8 to u8 wraps", I8, U8, []float64{-1, -128},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint8{255, 128}, y.U8()) }},
		{"u8 to i8 wraps", U8, I8, []float64{200, 127},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []int8{-56, 127}, y.I8()) }},
		{"i64 to bool", I64, Bool, []float64{0, 5, -1},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []bool{false, true, true}, y.Bool()) }},
		{"i64 to f32 rounds to nearest even", I64, F32, []float64{1<<24 + 1, 1<<24 + 3},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []float32{1 << 24, 1<<24 + 4}, y.F32()) }},
		{"i32 to f16", I32, F16, []float64{2049, 70000},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []uint16{0x6800, 0x7C00}, y.F16()) }},
		{"i16 to f64", I16, F64, []float64{-32768, 5},
			func(t *testing.T, y *Tensor) { assert.Equal(t, []float64{-32768, 5}, y.F64()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := FromFloat64s(tc.from, Shape{int64(len(tc.in))}, tc.in)
			require.NoError(t, err)
			y, err := x.Convert(tc.to)
			require.NoError(t, err)
			require.Equal(t, tc.to, y.Type())
			require.Equal(t, x.Shape(), y.Shape())
			tc.check(t, y)
		})
	}
}

func TestConvertI64Exact(t *testing.T) {
	// Integers must not pass through float64 between integer types.
	x, err := FromI64(Shape{2}, []int64{math.MaxInt64, 1<<53 + 1})
	require.NoError(t, err)
	y, err := x.Convert(I64)
	require.NoError(t, err)
	assert.Equal(t, []int64{math.MaxInt64, 1<<53 + 1}, y.I64())
	z, err := x.Convert(I32)
	require.NoError(t, err)
	assert.Equal(t, []int32{-1, 1}, z.I32())
	// Bool bytes other than 0/1 still read as true.
	b, err := FromBytes(Bool, Shape{3}, []byte{0, 2, 255})
	require.NoError(t, err)
	bi, err := b.Convert(I32)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1, 1}, bi.I32())
}

// TestConvertAllPairs converts small values that every type can hold between
// all type pairs (strings included), from a strided view, and checks
// value, shape and that the result shares no memory with the source. The
// 4-bit types saturate.
func TestConvertAllPairs(t *testing.T) {
	vals := []float64{0, 1, 2, 3, 96, 112, 0, 5, 1, 10, 64, 8} // exact in every type, e5m2 included
	for _, from := range ElementTypes() {
		for _, to := range ElementTypes() {
			t.Run(from.String()+"_to_"+to.String(), func(t *testing.T) {
				in := vals
				if from == Bool {
					in = make([]float64, len(vals))
					for i, v := range vals {
						if v != 0 {
							in[i] = 1
						}
					}
				}
				in = saturate4(from, in)
				base, err := FromFloat64s(from, Shape{3, 4}, in)
				require.NoError(t, err)
				view, err := base.View([]int64{1, 1}, []int64{3, 4}) // rows 1-2, cols 1-3
				require.NoError(t, err)
				require.False(t, view.IsContiguous())
				y, err := view.Convert(to)
				require.NoError(t, err)
				require.Equal(t, to, y.Type())
				require.Equal(t, Shape{2, 3}, y.Shape())
				require.True(t, y.IsContiguous())
				var want []float64
				for r := 1; r < 3; r++ {
					for c := 1; c < 4; c++ {
						v := in[r*4+c]
						if to == Bool && v != 0 {
							v = 1
						}
						if to.IsFloat8() { // 15, a u4's largest, is not an e5m2
							v = float64(Float8ToFloat32(to, Float32ToFloat8(to, float32(v), true)))
						}
						want = append(want, saturate4(to, []float64{v})...)
					}
				}
				assert.InDeltaSlice(t, want, y.Float64s(), 0)
				// The result is a copy: writing the source does not change it.
				z, err := FromFloat64s(from, Shape{2, 3}, make([]float64, 6))
				require.NoError(t, err)
				require.NoError(t, view.CopyFrom(z))
				assert.InDeltaSlice(t, want, y.Float64s(), 0)
			})
		}
	}
}

// saturate4 clamps v to the range of t when t is a 4-bit type.
func saturate4(t ElementType, v []float64) []float64 {
	lo, hi, _ := t.IntRange()
	if t.Bits() != 4 {
		return v
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = min(max(x, float64(lo)), float64(hi))
	}
	return out
}

func TestConvert4Bit(t *testing.T) {
	x, err := FromF32(Shape{6}, []float32{-9, -8.5, 2.5, 3.5, 7.49, float32(math.NaN())})
	require.NoError(t, err)
	i4, err := x.Convert(I4)
	require.NoError(t, err)
	assert.Equal(t, []int8{-8, -8, 2, 4, 7, 0}, i4.I4(), "round half to even, saturate, NaN 0")
	u4, err := x.Convert(U4)
	require.NoError(t, err)
	assert.Equal(t, []uint8{0, 0, 2, 4, 7, 0}, u4.U4())
	wide, err := FromI64(Shape{3}, []int64{-100, 20, 5})
	require.NoError(t, err)
	n4, err := wide.Convert(I4)
	require.NoError(t, err)
	assert.Equal(t, []int8{-8, 7, 5}, n4.I4(), "integers saturate to 4 bits")
}

func TestPack4(t *testing.T) {
	x, err := From(Shape{5}, []Int4{-1, -8, 7, 0, 3})
	require.NoError(t, err)
	p, err := Pack4(x)
	require.NoError(t, err)
	assert.Equal(t, []byte{0x8f, 0x07, 0x03}, p, "low nibble first, odd count padded")
	back, err := Unpack4(I4, Shape{5}, p)
	require.NoError(t, err)
	assert.Equal(t, x.Bytes(), back.Bytes())
	u, err := Unpack4(U4, Shape{2}, []byte{0xf1})
	require.NoError(t, err)
	assert.Equal(t, []uint8{1, 15}, u.U4())
	_, err = Unpack4(U4, Shape{3}, []byte{0xf1})
	assert.ErrorIs(t, err, ErrShape)
	_, err = Pack4(MustNew(U8, Shape{2}))
	assert.ErrorIs(t, err, ErrType)
	assert.Equal(t, int64(3), PackedBytes(I4, 5))
	assert.Equal(t, int64(10), PackedBytes(U16, 5))
}

func TestConvertErrors(t *testing.T) {
	x := MustNew(F32, Shape{2})
	_, err := x.Convert(Undefined)
	require.ErrorIs(t, err, ErrType)
	_, err = x.Convert(ElementType(200))
	require.ErrorIs(t, err, ErrType)
}

func TestFloat64s(t *testing.T) {
	tests := []struct {
		name string
		x    *Tensor
		want []float64
	}{
		{"f32", must(FromF32(Shape{3}, []float32{1.5, -2, 0.1})), []float64{1.5, -2, float64(float32(0.1))}},
		{"f16", must(FromBytes(F16, Shape{2}, []byte{0x00, 0x3C, 0x01, 0x00})), []float64{1, 0x1p-24}},
		{"bf16", must(FromBytes(BF16, Shape{1}, []byte{0x80, 0x3F})), []float64{1}},
		{"i64", must(FromI64(Shape{2}, []int64{-7, 1 << 40})), []float64{-7, 1 << 40}},
		{"u8", must(FromU8(Shape{2}, []uint8{0, 255})), []float64{0, 255}},
		{"bool", must(FromBool(Shape{2}, []bool{true, false})), []float64{1, 0}},
		{"scalar", Scalar(3), []float64{3}},
		{"empty", MustNew(I32, Shape{0, 4}), []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.x.Float64s()
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("view", func(t *testing.T) {
		x := must(FromI32(Shape{2, 3}, []int32{1, 2, 3, 4, 5, 6}))
		v := must(x.View([]int64{0, 1}, []int64{2, 3}))
		got := v.Float64s()
		assert.Equal(t, []float64{2, 3, 5, 6}, got)
		got[0] = 100 // a copy
		assert.Equal(t, int32(2), x.I32()[1])
	})
}

func TestFromFloat64s(t *testing.T) {
	x, err := FromFloat64s(U8, Shape{2, 2}, []float64{1.9, -3, 300, 7})
	require.NoError(t, err)
	assert.Equal(t, Shape{2, 2}, x.Shape())
	assert.Equal(t, []uint8{1, 0, 255, 7}, x.U8())

	f, err := FromFloat64s(F64, Shape{}, []float64{math.Pi})
	require.NoError(t, err)
	assert.InDelta(t, math.Pi, f.F64()[0], 0)

	_, err = FromFloat64s(F32, Shape{3}, []float64{1, 2})
	require.ErrorIs(t, err, ErrShape)
	_, err = FromFloat64s(Undefined, Shape{1}, []float64{1})
	require.ErrorIs(t, err, ErrType)
	_, err = FromFloat64s(F32, Shape{-1}, nil)
	require.ErrorIs(t, err, ErrShape)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
