package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func iota32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

func TestNewAndFrom(t *testing.T) {
	x, err := New(F16, Shape{2, 3})
	require.NoError(t, err)
	assert.Equal(t, int64(6), x.NumElements())
	assert.Equal(t, int64(12), x.ByteSize())
	assert.Equal(t, []int64{3, 1}, x.Strides())
	assert.Equal(t, "f16[2,3]", x.String())

	_, err = New(Undefined, Shape{1})
	require.ErrorIs(t, err, ErrType)
	_, err = New(F32, Shape{2, -1})
	require.ErrorIs(t, err, ErrShape)
	_, err = FromBytes(F32, Shape{2}, make([]byte, 7))
	require.ErrorIs(t, err, ErrShape)
	_, err = FromF32(Shape{2, 2}, []float32{1, 2, 3})
	require.ErrorIs(t, err, ErrShape)

	s := Scalar(2.5)
	assert.Equal(t, 0, s.Rank())
	assert.Equal(t, int64(1), s.NumElements())
	assert.InDelta(t, 2.5, s.F32()[0], 0)
	assert.Panics(t, func() { s.I32() }, "a typed accessor of the wrong type is a programmer error")
}

func TestViewSharesMemory(t *testing.T) {
	x := must(FromF32(Shape{3, 4}, iota32(12)))
	v, err := x.View([]int64{1, 1}, []int64{3, 3})
	require.NoError(t, err)
	assert.Equal(t, Shape{2, 2}, v.Shape())
	assert.False(t, v.IsContiguous())
	assert.Equal(t, []float64{5, 6, 9, 10}, v.Float64s())
	assert.Panics(t, func() { v.Bytes() }, "Bytes on a strided view")

	// Writing through the view changes the source.
	require.NoError(t, v.CopyFrom(must(FromF32(Shape{2, 2}, []float32{-1, -2, -3, -4}))))
	assert.Equal(t, []float32{0, 1, 2, 3, 4, -1, -2, 7, 8, -3, -4, 11}, x.F32())

	// Writing the source is seen through the view.
	x.F32()[10] = 42
	assert.Equal(t, []float64{-1, -2, -3, 42}, v.Float64s())

	// A view of a view.
	vv, err := v.View([]int64{1, 0}, []int64{2, 2})
	require.NoError(t, err)
	assert.Equal(t, []float64{-3, 42}, vv.Float64s())
	assert.True(t, vv.IsContiguous(), "one row of a view is dense")
	assert.Equal(t, []float32{-3, 42}, vv.F32())

	for _, bad := range []struct{ b, e []int64 }{
		{[]int64{0}, []int64{1}},
		{[]int64{0, 0}, []int64{4, 1}},
		{[]int64{2, 0}, []int64{1, 1}},
		{[]int64{-1, 0}, []int64{1, 1}},
	} {
		_, err := x.View(bad.b, bad.e)
		require.ErrorIs(t, err, ErrShape, "view %v..%v", bad.b, bad.e)
	}
}

func TestCloneOfStridedView(t *testing.T) {
	x := must(FromI64(Shape{2, 3, 4}, func() []int64 {
		v := make([]int64, 24)
		for i := range v {
			v[i] = int64(i)
		}
		return v
	}()))
	v := must(x.View([]int64{0, 1, 1}, []int64{2, 3, 3}))
	c := v.Clone()
	assert.True(t, c.IsContiguous())
	assert.Equal(t, Shape{2, 2, 2}, c.Shape())
	assert.Equal(t, []int64{5, 6, 9, 10, 17, 18, 21, 22}, c.I64())
	c.I64()[0] = -1
	assert.Equal(t, int64(5), x.I64()[5], "Clone shares no memory")

	cc := x.Clone()
	cc.I64()[0] = 99
	assert.Equal(t, int64(0), x.I64()[0])

	assert.Same(t, x, x.Contiguous())
	assert.NotSame(t, v, v.Contiguous())
}

func TestCopyFrom(t *testing.T) {
	x := must(FromF32(Shape{2, 3}, iota32(6)))
	y := MustNew(F32, Shape{2, 3})
	require.NoError(t, y.CopyFrom(x))
	assert.Equal(t, x.F32(), y.F32())

	// From a strided view into a contiguous tensor.
	src := must(FromF32(Shape{4, 4}, iota32(16)))
	sv := must(src.View([]int64{2, 1}, []int64{4, 4}))
	require.NoError(t, y.CopyFrom(sv))
	assert.Equal(t, []float32{9, 10, 11, 13, 14, 15}, y.F32())

	// From a view into a view.
	dst := MustNew(F32, Shape{3, 5})
	dv := must(dst.View([]int64{1, 2}, []int64{3, 5}))
	require.NoError(t, dv.CopyFrom(sv))
	assert.Equal(t, []float32{0, 0, 0, 0, 0, 0, 0, 9, 10, 11, 0, 0, 13, 14, 15}, dst.F32())

	require.ErrorIs(t, y.CopyFrom(MustNew(I32, Shape{2, 3})), ErrType)
	require.ErrorIs(t, y.CopyFrom(MustNew(F32, Shape{3, 2})), ErrShape)
}

func TestReshape(t *testing.T) {
	x := must(FromF32(Shape{2, 3}, iota32(6)))
	r, err := x.Reshape(Shape{3, 2})
	require.NoError(t, err)
	assert.Equal(t, Shape{3, 2}, r.Shape())
	assert.Equal(t, []int64{2, 1}, r.Strides())
	r.F32()[0] = 7
	assert.InDelta(t, 7, x.F32()[0], 0, "reshape of a contiguous tensor shares memory")

	v := must(x.View([]int64{0, 1}, []int64{2, 3}))
	rv, err := v.Reshape(Shape{4})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 4, 5}, rv.F32())

	_, err = x.Reshape(Shape{4})
	require.ErrorIs(t, err, ErrShape)
	_, err = x.Reshape(Shape{-6})
	require.ErrorIs(t, err, ErrShape)
}

func TestIsContiguous(t *testing.T) {
	x := MustNew(U8, Shape{4, 1, 5})
	tests := []struct {
		name   string
		b, e   []int64
		expect bool
	}{
		{"whole", []int64{0, 0, 0}, []int64{4, 1, 5}, true},
		{"leading rows", []int64{1, 0, 0}, []int64{3, 1, 5}, true},
		{"one element", []int64{2, 0, 3}, []int64{3, 1, 4}, true},
		{"column slice", []int64{0, 0, 1}, []int64{4, 1, 3}, false},
		{"single row part", []int64{1, 0, 1}, []int64{2, 1, 4}, true},
		{"empty", []int64{1, 0, 0}, []int64{1, 1, 5}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := must(x.View(tc.b, tc.e))
			assert.Equal(t, tc.expect, v.IsContiguous())
		})
	}
}

func TestShape(t *testing.T) {
	s := Shape{2, 3, 4}
	assert.Equal(t, int64(24), s.NumElements())
	assert.Equal(t, int64(1), Shape{}.NumElements())
	assert.Equal(t, 3, s.Rank())
	assert.True(t, s.Equal(Shape{2, 3, 4}))
	assert.False(t, s.Equal(Shape{2, 3}))
	assert.False(t, s.Equal(Shape{2, 3, 5}))
	c := s.Clone()
	c[0] = 9
	assert.Equal(t, int64(2), s[0])
	assert.Nil(t, Shape(nil).Clone())
	assert.Equal(t, []int64{12, 4, 1}, ContiguousStrides(s))
	assert.Equal(t, "[2,3,4]", s.String())
	assert.Equal(t, "[]", Shape{}.String())
}

func TestParseShape(t *testing.T) {
	tests := []struct {
		in      string
		want    Shape
		wantErr bool
	}{
		{"[1,3,48,192]", Shape{1, 3, 48, 192}, false},
		{"1,3,48,192", Shape{1, 3, 48, 192}, false},
		{"1x3x48x192", Shape{1, 3, 48, 192}, false},
		{" [ 2, ?, -1 ] ", Shape{2, -1, -1}, false},
		{"[]", Shape{}, false},
		{"", Shape{}, false},
		{"7", Shape{7}, false},
		{"1,a", nil, true},
		{"1,-2", nil, true},
		{"1,,2", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShape(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "tensor: bad shape")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	// String and ParseShape round trip.
	s := Shape{5, 1, 7}
	back, err := ParseShape(s.String())
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestElementTypeRoundTrip(t *testing.T) {
	sizes := map[ElementType]int{F32: 4, F16: 2, BF16: 2, F64: 8, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8, Bool: 1, U16: 2, I4: 1, U4: 1,
		U32: 4, U64: 8, F8E4M3FN: 1, F8E4M3FNUZ: 1, F8E5M2: 1, F8E5M2FNUZ: 1, String: 0}
	require.Len(t, ElementTypes(), len(sizes))
	for _, et := range ElementTypes() {
		t.Run(et.String(), func(t *testing.T) {
			assert.True(t, et.Valid())
			assert.Equal(t, sizes[et], et.Size())
			got, err := ParseElementType(et.String())
			require.NoError(t, err)
			assert.Equal(t, et, got)
			txt, err := et.MarshalText()
			require.NoError(t, err)
			var back ElementType
			require.NoError(t, back.UnmarshalText(txt))
			assert.Equal(t, et, back)
		})
	}
	for in, want := range map[string]ElementType{"FP16": F16, "float": F32, "bool": Bool, " int64 ": I64, "BFloat16": BF16, "double": F64} {
		got, err := ParseElementType(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseElementType("f8")
	require.Error(t, err)
	var et ElementType
	require.Error(t, et.UnmarshalText([]byte("complex64")))
	assert.False(t, Undefined.Valid())
	assert.Equal(t, 0, Undefined.Size())
	assert.Equal(t, "ElementType(200)", ElementType(200).String())
	assert.True(t, BF16.IsFloat())
	assert.False(t, Bool.IsFloat())
	assert.True(t, U8.IsInteger())
	assert.False(t, Bool.IsInteger())
}

// TestAccessorsAreData: each per-type accessor returns what Data returns
// and panics with Data's error (ErrType, ErrShape) where Data fails.
func TestAccessorsAreData(t *testing.T) {
	x := MustNew(F32, Shape{2, 3})
	got, err := Data[float32](x)
	require.NoError(t, err)
	assert.Equal(t, got, x.F32())
	h := MustNew(F16, Shape{2})
	hs, err := Data[Float16](h)
	require.NoError(t, err)
	hs[1] = NewFloat16(1.5)
	assert.Equal(t, uint16(NewFloat16(1.5)), h.F16()[1], "F16 shares memory with Data[Float16]")
	cases := []struct {
		name     string
		call     func()
		sentinel error
	}{
		{"WrongType", func() { x.I64() }, ErrType},
		{"WrongHalf", func() { x.BF16() }, ErrType},
		{"View", func() {
			v, err := x.View([]int64{0, 1}, []int64{2, 3})
			require.NoError(t, err)
			v.F32()
		}, ErrShape},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(error)
				require.True(t, ok, "panic value %v is not an error", r)
				assert.ErrorIs(t, err, tc.sentinel)
			}()
			tc.call()
			t.Fatal("no panic")
		})
	}
}
