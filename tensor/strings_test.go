package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStringTensors checks String tensors: From/Data, views, clones,
// reshapes, byte size, and that Bytes and FromBytes refuse them.
func TestStringTensors(t *testing.T) {
	x, err := From(Shape{2, 3}, []string{"a", "bb", "ccc", "d", "", "ffffff"})
	require.NoError(t, err)
	assert.Equal(t, String, x.Type())
	assert.Equal(t, 0, String.Size())
	assert.Equal(t, int64(13+6*stringHeader), x.ByteSize())
	v, err := x.View([]int64{0, 1}, []int64{2, 3})
	require.NoError(t, err)
	require.False(t, v.IsContiguous())
	c := v.Contiguous()
	assert.Equal(t, []string{"bb", "ccc", "", "ffffff"}, c.Strings())
	c.Strings()[0] = "changed"
	assert.Equal(t, "bb", x.Strings()[1], "Contiguous of a view copies")
	r, err := x.Reshape(Shape{3, 2})
	require.NoError(t, err)
	assert.Equal(t, x.Strings(), r.Strings())
	dst := MustNew(String, Shape{2, 3})
	dv, err := dst.View([]int64{0, 1}, []int64{2, 3})
	require.NoError(t, err)
	require.NoError(t, dv.CopyFrom(c))
	assert.Equal(t, []string{"", "changed", "ccc", "", "", "ffffff"}, dst.Strings())
	_, err = Data[float32](x)
	assert.ErrorIs(t, err, ErrType)
	assert.Panics(t, func() { x.Bytes() })
	_, err = FromBytes(String, Shape{1}, []byte{0})
	assert.ErrorIs(t, err, ErrType)
	w, err := Wrap(Shape{2}, []string{"p", "q"})
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "q"}, w.Strings())
}

// TestStringConvert checks Cast to and from strings against the ONNX 1.12
// test data's forms (test_cast_FLOAT_to_STRING, test_cast_STRING_to_FLOAT).
func TestStringConvert(t *testing.T) {
	f, err := FromF32(Shape{8}, []float32{0.9767611, 0.039187793, 1, -2, 1e-5, 1.5e20, float32(math.NaN()), float32(math.Inf(-1))})
	require.NoError(t, err)
	s, err := f.Convert(String)
	require.NoError(t, err)
	assert.Equal(t, []string{"0.9767611", "0.039187793", "1.0", "-2.0", "1e-05", "1.5e+20", "NaN", "-INF"}, s.Strings())
	in, err := FromStrings(Shape{6}, []string{"0.47892547", "NaN", "INF", "+INF", "-INF", " 3 "})
	require.NoError(t, err)
	back, err := in.Convert(F32)
	require.NoError(t, err)
	g := back.F32()
	assert.Equal(t, float32(0.47892547), g[0])
	assert.True(t, math.IsNaN(float64(g[1])))
	assert.True(t, math.IsInf(float64(g[2]), 1) && math.IsInf(float64(g[3]), 1) && math.IsInf(float64(g[4]), -1))
	assert.Equal(t, float32(3), g[5])

	u, err := FromStrings(Shape{3}, []string{"18446744073709551615", "7", "2.9"})
	require.NoError(t, err)
	uv, err := u.Convert(U64)
	require.NoError(t, err)
	assert.Equal(t, []uint64{math.MaxUint64, 7, 2}, uv.U64())
	i8, err := u.Convert(I8)
	require.NoError(t, err)
	assert.Equal(t, []int8{127, 7, 2}, i8.I8(), "out of range saturates through the float path")
	us, err := uv.Convert(String)
	require.NoError(t, err)
	assert.Equal(t, []string{"18446744073709551615", "7", "2"}, us.Strings())
	b, err := FromBool(Shape{2}, []bool{true, false})
	require.NoError(t, err)
	bs, err := b.Convert(String)
	require.NoError(t, err)
	assert.Equal(t, []string{"True", "False"}, bs.Strings())
	bb, err := bs.Convert(Bool)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false}, bb.Bool())

	bad, err := FromStrings(Shape{2}, []string{"1", "one"})
	require.NoError(t, err)
	_, err = bad.Convert(F32)
	assert.ErrorIs(t, err, ErrType)
	assert.ErrorContains(t, err, `element 1, "one"`)
}

// TestUnsignedConvert checks u16/u32/u64 conversions: saturation from
// floats, wrapping between integers, and u64 values beyond int64.
func TestUnsignedConvert(t *testing.T) {
	f, err := FromF64(Shape{5}, []float64{-1, 70000, 3.9, 1e20, 5e9})
	require.NoError(t, err)
	u16, err := f.Convert(U16)
	require.NoError(t, err)
	assert.Equal(t, []uint16{0, 65535, 3, 65535, 65535}, u16.U16())
	u32, err := f.Convert(U32)
	require.NoError(t, err)
	assert.Equal(t, []uint32{0, 70000, 3, math.MaxUint32, math.MaxUint32}, u32.U32())
	u64, err := f.Convert(U64)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0, 70000, 3, math.MaxUint64, 5000000000}, u64.U64())
	big, err := From(Shape{2}, []uint64{1 << 63, 5})
	require.NoError(t, err)
	bf, err := big.Convert(F64)
	require.NoError(t, err)
	assert.Equal(t, []float64{0x1p63, 5}, bf.F64())
	assert.Equal(t, []float64{0x1p63, 5}, big.Float64s())
	bi, err := big.Convert(I64)
	require.NoError(t, err)
	assert.Equal(t, []int64{math.MinInt64, 5}, bi.I64(), "u64 to i64 wraps")
	n, err := FromI32(Shape{2}, []int32{-1, 65537})
	require.NoError(t, err)
	w, err := n.Convert(U16)
	require.NoError(t, err)
	assert.Equal(t, []uint16{65535, 1}, w.U16())
	assert.True(t, U64.IsUnsigned() && U64.IsInteger() && !I64.IsUnsigned())
}
