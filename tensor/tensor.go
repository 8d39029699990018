package tensor

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// ErrShape is wrapped by errors about mismatched or invalid shapes.
var ErrShape = errors.New("tensor: bad shape")

// ErrType is wrapped by errors about a wrong element type.
var ErrType = errors.New("tensor: wrong element type")

// Tensor is an n-dimensional array in host memory. Data is little-endian and
// laid out by strides (in elements) from an offset, so a Tensor can be a view
// (a region of interest) of another one; views share memory with their
// source. Tensors made by New or the From* constructors are contiguous.
//
// A Tensor is not safe for concurrent mutation; concurrent reads are fine.
type Tensor struct {
	typ     ElementType
	shape   Shape
	strides []int64  // in elements
	offset  int64    // in elements
	data    []byte   // whole backing store, 8-byte aligned
	strs    []string // whole backing store of a String tensor (data is nil)
	// kind and items make the value a sequence or an optional (see Kind);
	// shape is then [len(items)] and data nil.
	kind  Kind
	items []*Tensor
}

// alloc returns n zeroed bytes whose address is 8-byte aligned, so typed
// slices of any element type can be made over them.
func alloc(n int64) []byte {
	if n == 0 {
		return []byte{}
	}
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

// New returns a zeroed contiguous tensor of the given type and static shape.
// A size that overflows or is over AllocLimit is an error wrapping
// ErrTooLarge, and nothing is allocated.
func New(t ElementType, shape Shape) (*Tensor, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrType, t)
	}
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	n, err := checkSize(t, shape)
	if err != nil {
		return nil, err
	}
	if t == String {
		return &Tensor{typ: t, shape: shape.Clone(), strides: ContiguousStrides(shape), strs: make([]string, shape.NumElements())}, nil
	}
	return &Tensor{typ: t, shape: shape.Clone(), strides: ContiguousStrides(shape), data: alloc(n)}, nil
}

// MustNew is New for shapes the caller has already validated; it panics on a
// bad type or shape, which is a programmer error.
func MustNew(t ElementType, shape Shape) *Tensor {
	x, err := New(t, shape)
	if err != nil {
		panic(err)
	}
	return x
}

// FromBytes returns a contiguous tensor holding a copy of raw little-endian
// data, which must be exactly NumElements*Size bytes long. String tensors
// have no byte form (use From).
func FromBytes(t ElementType, shape Shape, raw []byte) (*Tensor, error) {
	if t == String {
		return nil, fmt.Errorf("%w: string tensors have no byte form", ErrType)
	}
	x, err := New(t, shape)
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) != int64(len(x.data)) {
		return nil, fmt.Errorf("%w: %v%v needs %d bytes, got %d", ErrShape, t, shape, len(x.data), len(raw))
	}
	copy(x.data, raw)
	return x, nil
}

func fromSlice[T any](t ElementType, shape Shape, v []T) (*Tensor, error) {
	x, err := New(t, shape)
	if err != nil {
		return nil, err
	}
	if int64(len(v)) != shape.NumElements() {
		return nil, fmt.Errorf("%w: shape %v holds %d elements, got %d values", ErrShape, shape, shape.NumElements(), len(v))
	}
	if t == String {
		copy(x.strs, any(v).([]string))
		return x, nil
	}
	copy(typed[T](x), v)
	return x, nil
}

// FromF32 returns a contiguous f32 tensor holding a copy of v.
func FromF32(shape Shape, v []float32) (*Tensor, error) { return fromSlice(F32, shape, v) }

// FromF64 returns a contiguous f64 tensor holding a copy of v.
func FromF64(shape Shape, v []float64) (*Tensor, error) { return fromSlice(F64, shape, v) }

// FromI64 returns a contiguous i64 tensor holding a copy of v.
func FromI64(shape Shape, v []int64) (*Tensor, error) { return fromSlice(I64, shape, v) }

// FromI32 returns a contiguous i32 tensor holding a copy of v.
func FromI32(shape Shape, v []int32) (*Tensor, error) { return fromSlice(I32, shape, v) }

// FromU8 returns a contiguous u8 tensor holding a copy of v.
func FromU8(shape Shape, v []uint8) (*Tensor, error) { return fromSlice(U8, shape, v) }

// FromBool returns a contiguous boolean tensor holding a copy of v.
func FromBool(shape Shape, v []bool) (*Tensor, error) { return fromSlice(Bool, shape, v) }

// Scalar returns a rank-0 f32 tensor.
func Scalar(v float32) *Tensor {
	x := MustNew(F32, Shape{})
	x.F32()[0] = v
	return x
}

// Type is the element type.
func (x *Tensor) Type() ElementType { return x.typ }

// Shape returns the tensor's shape: a copy, which the caller may change
// without changing the tensor (a tensor's shape never changes; Reshape
// makes a new tensor).
func (x *Tensor) Shape() Shape { return x.shape.Clone() }

// Strides returns the tensor's strides in elements: a copy, which the
// caller may change without changing the tensor.
func (x *Tensor) Strides() []int64 { return slices.Clone(x.strides) }

// HasShape reports whether x's shape is s, without the copy Shape makes
// (a check on every inference's path).
func (x *Tensor) HasShape(s Shape) bool { return x.shape.Equal(s) }

// Rank is the number of dimensions.
func (x *Tensor) Rank() int { return len(x.shape) }

// NumElements is the number of elements.
func (x *Tensor) NumElements() int64 { return x.shape.NumElements() }

// ByteSize is the size of the elements in bytes, as if contiguous: for a
// String tensor, the bytes of its strings and their headers.
func (x *Tensor) ByteSize() int64 {
	if x.kind != KindTensor {
		n := int64(0)
		for _, it := range x.items {
			n += it.ByteSize()
		}
		return n
	}
	if x.typ == String {
		n := int64(0)
		for _, s := range x.Contiguous().stringData() {
			n += int64(len(s)) + stringHeader
		}
		return n
	}
	return x.NumElements() * int64(x.typ.Size())
}

// IsContiguous reports whether the elements are dense and row-major from the
// offset, so the typed accessors can be used.
func (x *Tensor) IsContiguous() bool {
	acc := int64(1)
	for i := len(x.shape) - 1; i >= 0; i-- {
		if x.shape[i] != 1 && x.strides[i] != acc {
			return false
		}
		acc *= x.shape[i]
	}
	return true
}

// Bytes returns the raw little-endian bytes of a contiguous tensor, sharing
// memory with it. It panics if the tensor is not contiguous (call Contiguous
// first) or is a String tensor (use Data[string]); both are programmer
// errors.
func (x *Tensor) Bytes() []byte {
	if !x.IsContiguous() {
		panic("tensor: Bytes on a non-contiguous view; call Contiguous first")
	}
	if x.typ == String || x.kind != KindTensor {
		panic("tensor: Bytes on a " + x.kind.Describe(x.typ, "") + " value; use Data[string] or Items")
	}
	sz := int64(x.typ.Size())
	return x.data[x.offset*sz : (x.offset+x.NumElements())*sz]
}

func typed[T any](x *Tensor) []T {
	b := x.Bytes()
	var zero T
	if int(unsafe.Sizeof(zero)) != x.typ.Size() {
		panic(fmt.Sprintf("tensor: %v accessor used on %v tensor", zero, x.typ))
	}
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// mustData returns Data's slice, panicking with its error: the per-type
// accessors below are Data for code that has checked the element type and
// the layout, where a mismatch is a programmer error.
func mustData[T Elem](x *Tensor) []T {
	v, err := Data[T](x)
	if err != nil {
		panic(err)
	}
	return v
}

// rawBits reinterprets a []Float16 or []BFloat16 as its raw bits.
func rawBits[T Float16 | BFloat16](v []T) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// F32 is Data[float32] for code that has checked the tensor is a
// contiguous f32 one: it panics (with Data's error) otherwise. Use Data
// where the type is not known.
func (x *Tensor) F32() []float32 { return mustData[float32](x) }

// F64 is Data[float64] that panics on a mismatch; see F32.
func (x *Tensor) F64() []float64 { return mustData[float64](x) }

// F16 is Data[Float16] as raw IEEE half bits, panicking on a mismatch;
// see F32.
func (x *Tensor) F16() []uint16 { return rawBits(mustData[Float16](x)) }

// BF16 is Data[BFloat16] as raw bfloat16 bits, panicking on a mismatch;
// see F32.
func (x *Tensor) BF16() []uint16 { return rawBits(mustData[BFloat16](x)) }

// I8 is Data[int8] that panics on a mismatch; see F32.
func (x *Tensor) I8() []int8 { return mustData[int8](x) }

// U8 is Data[uint8] that panics on a mismatch; see F32.
func (x *Tensor) U8() []uint8 { return mustData[uint8](x) }

// I16 is Data[int16] that panics on a mismatch; see F32.
func (x *Tensor) I16() []int16 { return mustData[int16](x) }

// U16 is Data[uint16] that panics on a mismatch; see F32.
func (x *Tensor) U16() []uint16 { return mustData[uint16](x) }

// I4 is Data[Int4] as int8 values (-8..7), panicking on a mismatch; see
// F32.
func (x *Tensor) I4() []int8 {
	v := mustData[Int4](x)
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// U4 is Data[Uint4] as uint8 values (0..15), panicking on a mismatch; see
// F32.
func (x *Tensor) U4() []uint8 {
	v := mustData[Uint4](x)
	return unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// I32 is Data[int32] that panics on a mismatch; see F32.
func (x *Tensor) I32() []int32 { return mustData[int32](x) }

// I64 is Data[int64] that panics on a mismatch; see F32.
func (x *Tensor) I64() []int64 { return mustData[int64](x) }

// Bool is Data[bool] that panics on a mismatch; see F32.
func (x *Tensor) Bool() []bool { return mustData[bool](x) }

// U32 is Data[uint32] that panics on a mismatch; see F32.
func (x *Tensor) U32() []uint32 { return mustData[uint32](x) }

// U64 is Data[uint64] that panics on a mismatch; see F32.
func (x *Tensor) U64() []uint64 { return mustData[uint64](x) }

// Strings is Data[string] that panics on a mismatch; see F32.
func (x *Tensor) Strings() []string { return mustData[string](x) }

// View returns a region of interest [begin, end) of x along every axis,
// sharing memory with x. begin and end must have x's rank.
func (x *Tensor) View(begin, end []int64) (*Tensor, error) {
	if x.kind != KindTensor {
		return nil, x.notTensor("View")
	}
	if len(begin) != len(x.shape) || len(end) != len(x.shape) {
		return nil, fmt.Errorf("%w: view of rank-%d tensor needs %d begin/end values, got %d/%d", ErrShape, len(x.shape), len(x.shape), len(begin), len(end))
	}
	shape := make(Shape, len(x.shape))
	off := x.offset
	for i := range x.shape {
		if begin[i] < 0 || end[i] > x.shape[i] || begin[i] > end[i] {
			return nil, fmt.Errorf("%w: view [%d,%d) out of range on axis %d of size %d", ErrShape, begin[i], end[i], i, x.shape[i])
		}
		shape[i] = end[i] - begin[i]
		off += begin[i] * x.strides[i]
	}
	return &Tensor{typ: x.typ, shape: shape, strides: append([]int64(nil), x.strides...), offset: off, data: x.data, strs: x.strs}, nil
}

// Reshape returns a contiguous tensor with a new shape of the same number of
// elements, sharing memory with x when x is contiguous.
func (x *Tensor) Reshape(shape Shape) (*Tensor, error) {
	if x.kind != KindTensor {
		return nil, x.notTensor("Reshape")
	}
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	if shape.NumElements() != x.NumElements() {
		return nil, fmt.Errorf("%w: cannot reshape %v (%d elements) to %v (%d elements)", ErrShape, x.shape, x.NumElements(), shape, shape.NumElements())
	}
	c := x
	if !x.IsContiguous() {
		c = x.Contiguous()
	}
	return &Tensor{typ: c.typ, shape: shape.Clone(), strides: ContiguousStrides(shape), offset: c.offset, data: c.data, strs: c.strs}, nil
}

// Contiguous returns x if it is contiguous, otherwise a dense copy of it.
func (x *Tensor) Contiguous() *Tensor {
	if x.IsContiguous() {
		return x
	}
	return x.Clone()
}

// Clone returns a dense copy of x that shares no memory with it.
func (x *Tensor) Clone() *Tensor {
	if x.kind != KindTensor {
		return x.cloneValue()
	}
	y := MustNew(x.typ, x.shape)
	if x.typ == String {
		d := y.strs
		x.forEach(func(i, src int64) { d[i] = x.strs[src] })
		return y
	}
	sz := int64(x.typ.Size())
	if x.IsContiguous() {
		copy(y.data, x.data[x.offset*sz:(x.offset+x.NumElements())*sz])
		return y
	}
	x.forEach(func(i, src int64) { copy(y.data[i*sz:(i+1)*sz], x.data[src*sz:(src+1)*sz]) })
	return y
}

// forEach calls f with the row-major index and the storage offset (in
// elements) of each element of x, in row-major order.
func (x *Tensor) forEach(f func(i, off int64)) {
	n := x.NumElements()
	idx := make([]int64, len(x.shape))
	for i := int64(0); i < n; i++ {
		off := x.offset
		for d, v := range idx {
			off += v * x.strides[d]
		}
		f(i, off)
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < x.shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// CopyFrom copies src's elements into x; types and shapes must match. Either
// may be a strided view.
func (x *Tensor) CopyFrom(src *Tensor) error {
	if x.typ != src.typ {
		return fmt.Errorf("%w: copy %v into %v", ErrType, src.typ, x.typ)
	}
	if !x.shape.Equal(src.shape) {
		return fmt.Errorf("%w: copy %v into %v", ErrShape, src.shape, x.shape)
	}
	if x.kind != KindTensor || src.kind != KindTensor {
		return x.notTensor("CopyFrom")
	}
	s := src.Contiguous()
	if x.typ == String {
		ss := s.stringData()
		x.forEach(func(i, dst int64) { x.strs[dst] = ss[i] })
		return nil
	}
	if x.IsContiguous() {
		copy(x.Bytes(), s.Bytes())
		return nil
	}
	sz := int64(x.typ.Size())
	sb := s.Bytes()
	x.forEach(func(i, dst int64) { copy(x.data[dst*sz:(dst+1)*sz], sb[i*sz:(i+1)*sz]) })
	return nil
}

// String describes the tensor's type and shape, e.g. "f32[1,3,224,224]",
// or a sequence or optional with its length ("sequence<f32>(3)").
func (x *Tensor) String() string {
	if x.kind != KindTensor {
		return x.describeValue()
	}
	return x.typ.String() + x.shape.String()
}
