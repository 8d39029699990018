package tensor

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTypeOf(t *testing.T) {
	assert.Equal(t, F32, TypeOf[float32]())
	assert.Equal(t, F64, TypeOf[float64]())
	assert.Equal(t, F16, TypeOf[Float16]())
	assert.Equal(t, BF16, TypeOf[BFloat16]())
	assert.Equal(t, I8, TypeOf[int8]())
	assert.Equal(t, U8, TypeOf[uint8]())
	assert.Equal(t, I16, TypeOf[int16]())
	assert.Equal(t, I32, TypeOf[int32]())
	assert.Equal(t, I64, TypeOf[int64]())
	assert.Equal(t, Bool, TypeOf[bool]())
}

// roundTrip checks From (a copy), Wrap (shared memory) and Data for one Go
// element type.
func roundTrip[T Elem](t *testing.T, v []T) {
	t.Helper()
	shape := Shape{int64(len(v))}
	x, err := From(shape, v)
	require.NoError(t, err)
	assert.Equal(t, TypeOf[T](), x.Type())
	got, err := Data[T](x)
	require.NoError(t, err)
	assert.Equal(t, v, got)
	got[0] = v[1]
	assert.NotEqual(t, v[0], got[0], "From copies")

	w, err := Wrap(shape, v)
	require.NoError(t, err)
	wd, err := Data[T](w)
	require.NoError(t, err)
	wd[0] = v[1]
	assert.Equal(t, v[1], v[0], "Wrap shares the caller's memory")
}

func TestFromWrapData(t *testing.T) {
	roundTrip(t, []float32{1, 2, 3})
	roundTrip(t, []float64{1, 2, 3})
	roundTrip(t, []Float16{NewFloat16(1), NewFloat16(2)})
	roundTrip(t, []BFloat16{NewBFloat16(1), NewBFloat16(2)})
	roundTrip(t, []int8{1, 2})
	roundTrip(t, []uint8{1, 2})
	roundTrip(t, []int16{1, 2})
	roundTrip(t, []int32{1, 2})
	roundTrip(t, []int64{1, 2})
	roundTrip(t, []uint16{1, 2})
	roundTrip(t, []uint32{1, 2})
	roundTrip(t, []uint64{1, 2})
	roundTrip(t, []Float8E4M3FN{0x38, 0x40})
	roundTrip(t, []Float8E4M3FNUZ{0x40, 0x48})
	roundTrip(t, []Float8E5M2{0x3c, 0x40})
	roundTrip(t, []Float8E5M2FNUZ{0x40, 0x44})
	roundTrip(t, []bool{false, true})
}

func TestHalfHelpers(t *testing.T) {
	assert.InDelta(t, 1.5, NewFloat16(1.5).Float32(), 0)
	assert.InDelta(t, 3.140625, NewBFloat16(3.14159).Float32(), 1e-6)
}

func TestDataErrors(t *testing.T) {
	x, err := From(Shape{2, 2}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	_, err = Data[int64](x)
	assert.ErrorIs(t, err, ErrType, "wrong type is an error, not a panic")
	assert.ErrorContains(t, err, "[]float32")
	v, err := x.View([]int64{0, 0}, []int64{2, 1})
	require.NoError(t, err)
	_, err = Data[float32](v)
	assert.ErrorIs(t, err, ErrShape, "a strided view")
	_, err = Data[float32](nil)
	assert.ErrorIs(t, err, ErrType)

	_, err = From(Shape{3}, []float32{1, 2})
	assert.ErrorIs(t, err, ErrShape)
	_, err = Wrap(Shape{3}, []int64{1, 2})
	assert.ErrorIs(t, err, ErrShape)
	_, err = Wrap(Shape{-1}, []int64{})
	assert.ErrorIs(t, err, ErrShape)
	e, err := Wrap(Shape{0}, []int32{})
	require.NoError(t, err)
	d, err := Data[int32](e)
	require.NoError(t, err)
	assert.Empty(t, d)
}

func TestAllocLimit(t *testing.T) {
	old := SetAllocLimit(1 << 20)
	defer SetAllocLimit(old)
	_, err := New(F32, Shape{512, 512})
	assert.NoError(t, err, "1 MiB is the limit")
	_, err = New(F32, Shape{512, 513})
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, "f32[512,513] needs 1.0 MiB")
	_, err = New(F32, Shape{131072, 131072, 131072, 131072})
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, "overflows")
	_, err = From(Shape{1 << 20}, make([]float32, 1<<20))
	assert.ErrorIs(t, err, ErrTooLarge, "4 MiB")

	SetAllocLimit(0)
	assert.Equal(t, DefaultAllocLimit(), AllocLimit())
	assert.Positive(t, AllocLimit())
}

func TestShapeBytes(t *testing.T) {
	n, ok := Shape{2, 3}.Bytes(F32)
	assert.True(t, ok)
	assert.Equal(t, int64(24), n)
	_, ok = Shape{1 << 40, 1 << 40}.Bytes(F32)
	assert.False(t, ok)
	_, ok = Shape{-1}.Bytes(F32)
	assert.False(t, ok)
	n, ok = Shape{}.Bytes(I64)
	assert.True(t, ok)
	assert.Equal(t, int64(8), n)
	assert.Equal(t, "64.0 GiB", FormatBytes(64<<30))
	assert.Equal(t, "512 B", FormatBytes(512))
}

// TestWrapBytes: the tensor shares the bytes (no copy), and a wrong
// length, type or misaligned start is an error.
func TestWrapBytes(t *testing.T) {
	words := make([]float32, 5) // float32-aligned backing memory
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 20)
	x, err := WrapBytes(F32, Shape{2, 2}, raw[:16])
	require.NoError(t, err)
	x.F32()[3] = 7
	assert.Equal(t, float32(7), words[3], "shares memory")
	_, err = WrapBytes(F32, Shape{2, 2}, raw[:12])
	assert.ErrorIs(t, err, ErrShape)
	_, err = WrapBytes(F32, Shape{2, 2}, raw[1:17])
	assert.ErrorIs(t, err, ErrType, "misaligned")
	_, err = WrapBytes(ElementType(200), Shape{1}, raw[:4])
	assert.ErrorIs(t, err, ErrType)
	e, err := WrapBytes(F32, Shape{0, 3}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(0), e.NumElements())
}
