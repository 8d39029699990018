package tensor

import (
	"fmt"
	"unsafe"
)

// Float16 is an IEEE 754 half-precision value held as its bits, the Go
// element type of F16 tensors in From, Wrap and Data.
type Float16 uint16

// Float32 returns h as a float32.
func (h Float16) Float32() float32 { return F16ToFloat32(uint16(h)) }

// NewFloat16 rounds f to the nearest half.
func NewFloat16(f float32) Float16 { return Float16(Float32ToF16(f)) }

// BFloat16 is a bfloat16 value held as its bits, the Go element type of
// BF16 tensors in From, Wrap and Data.
type BFloat16 uint16

// Float32 returns b as a float32.
func (b BFloat16) Float32() float32 { return BF16ToFloat32(uint16(b)) }

// NewBFloat16 rounds f to the nearest bfloat16.
func NewBFloat16(f float32) BFloat16 { return BFloat16(Float32ToBF16(f)) }

// Int4 is a 4-bit signed integer (-8..7) held in a byte, the Go element
// type of I4 tensors in From, Wrap and Data.
type Int4 int8

// Uint4 is a 4-bit unsigned integer (0..15) held in a byte, the Go element
// type of U4 tensors in From, Wrap and Data.
type Uint4 uint8

// Elem is the set of Go types that are tensor element types: float32 (F32),
// float64 (F64), Float16 (F16), BFloat16 (BF16), int8 (I8), uint8 (U8),
// int16 (I16), uint16 (U16), int32 (I32), int64 (I64), Int4 (I4), Uint4
// (U4), bool (Bool), uint32 (U32), uint64 (U64), the 8-bit floats
// Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2 and Float8E5M2FNUZ, and string
// (String).
type Elem interface {
	float32 | float64 | Float16 | BFloat16 | int8 | uint8 | int16 | uint16 | int32 | int64 | Int4 | Uint4 | bool |
		uint32 | uint64 | Float8E4M3FN | Float8E4M3FNUZ | Float8E5M2 | Float8E5M2FNUZ | string
}

// TypeOf returns the element type that holds Go values of type T.
func TypeOf[T Elem]() ElementType {
	var z T
	switch any(z).(type) {
	case float32:
		return F32
	case float64:
		return F64
	case Float16:
		return F16
	case BFloat16:
		return BF16
	case int8:
		return I8
	case uint8:
		return U8
	case int16:
		return I16
	case uint16:
		return U16
	case Int4:
		return I4
	case Uint4:
		return U4
	case int32:
		return I32
	case int64:
		return I64
	case bool:
		return Bool
	case uint32:
		return U32
	case uint64:
		return U64
	case Float8E4M3FN:
		return F8E4M3FN
	case Float8E4M3FNUZ:
		return F8E4M3FNUZ
	case Float8E5M2:
		return F8E5M2
	case Float8E5M2FNUZ:
		return F8E5M2FNUZ
	default: // string, the last type of Elem
		return String
	}
}

// From returns a contiguous tensor of shape holding a copy of v; the
// element type follows T (float32: F32, int64: I64, Float16: F16, ...).
// len(v) must equal the shape's element count.
func From[T Elem](shape Shape, v []T) (*Tensor, error) {
	return fromSlice(TypeOf[T](), shape, v)
}

// Wrap returns a contiguous tensor of shape over v without copying: the
// tensor and v share memory, the caller keeps ownership of v and must not
// resize it while the tensor is in use. len(v) must equal the shape's
// element count.
func Wrap[T Elem](shape Shape, v []T) (*Tensor, error) {
	t := TypeOf[T]()
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	if int64(len(v)) != shape.NumElements() {
		return nil, fmt.Errorf("%w: shape %v holds %d elements, got %d values", ErrShape, shape, shape.NumElements(), len(v))
	}
	if t == String {
		strs := any(v).([]string)
		if strs == nil {
			strs = []string{}
		}
		return &Tensor{typ: t, shape: shape.Clone(), strides: ContiguousStrides(shape), strs: strs}, nil
	}
	var data []byte
	if len(v) == 0 {
		data = []byte{}
	} else {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*t.Size())
	}
	return &Tensor{typ: t, shape: shape.Clone(), strides: ContiguousStrides(shape), data: data}, nil
}

// WrapBytes returns a contiguous tensor of type t and shape over raw
// little-endian bytes without copying, as Wrap does for typed slices:
// memory the caller owns (a buffer mapped by a device, a memory-mapped
// file) and must keep valid while the tensor is in use. len(raw) must be
// the tensor's byte size, and raw aligned for t's elements.
func WrapBytes(t ElementType, shape Shape, raw []byte) (*Tensor, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrType, t)
	}
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	n, ok := shape.Bytes(t)
	if !ok || n != int64(len(raw)) {
		return nil, fmt.Errorf("%w: %v%v needs %d bytes, got %d", ErrShape, t, shape, n, len(raw))
	}
	if len(raw) > 0 && uintptr(unsafe.Pointer(&raw[0]))%uintptr(t.Size()) != 0 {
		return nil, fmt.Errorf("%w: %v data at an address not aligned to %d bytes", ErrType, t, t.Size())
	}
	if raw == nil {
		raw = []byte{}
	}
	return &Tensor{typ: t, shape: shape.Clone(), strides: ContiguousStrides(shape), data: raw}, nil
}

// Data returns the elements of x as a []T sharing memory with it. It is an
// error, never a panic, when T does not match x's element type or x is a
// non-contiguous view (call Contiguous first).
func Data[T Elem](x *Tensor) ([]T, error) {
	if x == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrType)
	}
	want := TypeOf[T]()
	if want != x.typ {
		var z T
		return nil, fmt.Errorf("%w: %v tensor read as []%T (want []%s)", ErrType, x, z, goTypeName(x.typ))
	}
	if x.kind != KindTensor {
		return nil, x.notTensor("Data")
	}
	if !x.IsContiguous() {
		return nil, fmt.Errorf("%w: Data of a non-contiguous view %v; call Contiguous first", ErrShape, x)
	}
	if want == String {
		return any(x.stringData()).([]T), nil
	}
	return typed[T](x), nil
}

// goTypeName is the Go element type of t, for error messages.
func goTypeName(t ElementType) string {
	switch t {
	case F32:
		return "float32"
	case F64:
		return "float64"
	case F16:
		return "tensor.Float16"
	case BF16:
		return "tensor.BFloat16"
	case I8:
		return "int8"
	case U8:
		return "uint8"
	case I16:
		return "int16"
	case U16:
		return "uint16"
	case I4:
		return "tensor.Int4"
	case U4:
		return "tensor.Uint4"
	case I32:
		return "int32"
	case I64:
		return "int64"
	case Bool:
		return "bool"
	case U32:
		return "uint32"
	case U64:
		return "uint64"
	case F8E4M3FN:
		return "tensor.Float8E4M3FN"
	case F8E4M3FNUZ:
		return "tensor.Float8E4M3FNUZ"
	case F8E5M2:
		return "tensor.Float8E5M2"
	case F8E5M2FNUZ:
		return "tensor.Float8E5M2FNUZ"
	case String:
		return "string"
	}
	return t.String()
}
