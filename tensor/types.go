package tensor

import (
	"fmt"
	"math"
	"strings"
)

// ElementType is the type of one element of a tensor.
type ElementType uint8

// The element types clinfer knows. The zero value is Undefined.
const (
	Undefined ElementType = iota
	F32
	F16
	BF16
	F64
	I8
	U8
	I16
	I32
	I64
	Bool
	// U16 is a 16-bit unsigned integer.
	U16
	// I4 and U4 are 4-bit integers (ONNX INT4 and UINT4). ONNX files pack
	// two of them in a byte (the first in the low nibble); in memory a
	// tensor holds one element per byte, sign-extended (I4: -8..7) or
	// zero-extended (U4: 0..15), so views, strides and kernels address
	// them like bytes. The ONNX reader and writer pack and unpack (see
	// Pack4 and Unpack4).
	I4
	U4
	// U32 and U64 are the wider unsigned integers.
	U32
	U64
	// F8E4M3FN, F8E4M3FNUZ, F8E5M2 and F8E5M2FNUZ are the 8-bit floats of
	// ONNX (opset 19): storage types that Cast converts, not types kernels
	// compute on (see IsFloat8 and float8.go).
	F8E4M3FN
	F8E4M3FNUZ
	F8E5M2
	F8E5M2FNUZ
	// String is a tensor of Go strings (ONNX STRING): host-only data with
	// no fixed element size (Size is 0), held apart from the byte storage
	// of the other types (see Strings).
	String
)

var typeNames = [...]string{
	Undefined:  "undefined",
	F32:        "f32",
	F16:        "f16",
	BF16:       "bf16",
	F64:        "f64",
	I8:         "i8",
	U8:         "u8",
	I16:        "i16",
	I32:        "i32",
	I64:        "i64",
	Bool:       "boolean",
	U16:        "u16",
	I4:         "i4",
	U4:         "u4",
	U32:        "u32",
	U64:        "u64",
	F8E4M3FN:   "f8e4m3",
	F8E4M3FNUZ: "f8e4m3fnuz",
	F8E5M2:     "f8e5m2",
	F8E5M2FNUZ: "f8e5m2fnuz",
	String:     "string",
}

var typeSizes = [...]int{
	Undefined: 0, F32: 4, F16: 2, BF16: 2, F64: 8, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8, Bool: 1,
	U16: 2, I4: 1, U4: 1, U32: 4, U64: 8, F8E4M3FN: 1, F8E4M3FNUZ: 1, F8E5M2: 1, F8E5M2FNUZ: 1, String: 0,
}

// ElementTypes lists every defined element type in declaration order.
func ElementTypes() []ElementType {
	return []ElementType{F32, F16, BF16, F64, I8, U8, I16, I32, I64, Bool, U16, I4, U4, U32, U64,
		F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, String}
}

// String returns the OpenVINO spelling of the type ("f32", "i64", "boolean").
func (t ElementType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("ElementType(%d)", uint8(t))
}

// Size is the size of one element in bytes in memory (0 for Undefined
// and for String, whose elements are Go strings of any length); I4 and U4
// take a byte each there (see Bits for their packed width).
func (t ElementType) Size() int {
	if int(t) < len(typeSizes) {
		return typeSizes[t]
	}
	return 0
}

// Bits is the width of one element in a packed serialisation: 4 for I4
// and U4, 8*Size otherwise.
func (t ElementType) Bits() int {
	if t == I4 || t == U4 {
		return 4
	}
	return 8 * t.Size()
}

// IsFloat reports whether t is a floating-point type that kernels compute
// on (f16, bf16, f32, f64). The 8-bit floats are storage types: see
// IsFloat8.
func (t ElementType) IsFloat() bool { return t == F32 || t == F16 || t == BF16 || t == F64 }

// IsFloat8 reports whether t is one of the 8-bit float types (F8E4M3FN,
// F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ).
func (t ElementType) IsFloat8() bool { return t >= F8E4M3FN && t <= F8E5M2FNUZ }

// IsInteger reports whether t is a signed or unsigned integer type (not Bool).
func (t ElementType) IsInteger() bool {
	switch t {
	case I8, U8, I16, I32, I64, U16, I4, U4, U32, U64:
		return true
	}
	return false
}

// IsSigned reports whether t holds negative values (the float types and
// the signed integers).
func (t ElementType) IsSigned() bool {
	return t.IsFloat() || t.IsFloat8() || t == I8 || t == I16 || t == I32 || t == I64 || t == I4
}

// IntRange returns the smallest and largest value of an integer type
// (0, 1 for Bool; the part of u64 an int64 holds, 0..2^63-1, for U64); ok
// is false for the other types.
func (t ElementType) IntRange() (lo, hi int64, ok bool) {
	switch t {
	case I4:
		return -8, 7, true
	case U4:
		return 0, 15, true
	case I8:
		return math.MinInt8, math.MaxInt8, true
	case U8:
		return 0, math.MaxUint8, true
	case I16:
		return math.MinInt16, math.MaxInt16, true
	case U16:
		return 0, math.MaxUint16, true
	case I32:
		return math.MinInt32, math.MaxInt32, true
	case U32:
		return 0, math.MaxUint32, true
	case I64:
		return math.MinInt64, math.MaxInt64, true
	case U64:
		return 0, math.MaxInt64, true
	case Bool:
		return 0, 1, true
	}
	return 0, 0, false
}

// IsUnsigned reports whether t is an unsigned integer type (u4, u8, u16,
// u32, u64).
func (t ElementType) IsUnsigned() bool { return t == U4 || t == U8 || t == U16 || t == U32 || t == U64 }

// IsNumeric reports whether t holds numbers: a float, 8-bit float or
// integer type (not Bool, String or Undefined).
func (t ElementType) IsNumeric() bool { return t.IsFloat() || t.IsFloat8() || t.IsInteger() }

// Valid reports whether t is one of the defined element types.
func (t ElementType) Valid() bool { return t > Undefined && int(t) < len(typeNames) }

// ParseElementType parses the OpenVINO spelling ("f32", "FP16", "bool", ...)
// of an element type, case-insensitively.
func ParseElementType(s string) (ElementType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "fp32", "float32", "float":
		return F32, nil
	case "f16", "fp16", "float16", "half":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f64", "fp64", "float64", "double":
		return F64, nil
	case "i8", "int8":
		return I8, nil
	case "u8", "uint8":
		return U8, nil
	case "i16", "int16":
		return I16, nil
	case "u16", "uint16":
		return U16, nil
	case "i4", "int4":
		return I4, nil
	case "u4", "uint4":
		return U4, nil
	case "i32", "int32":
		return I32, nil
	case "i64", "int64":
		return I64, nil
	case "boolean", "bool":
		return Bool, nil
	case "u32", "uint32":
		return U32, nil
	case "u64", "uint64":
		return U64, nil
	case "f8e4m3", "f8e4m3fn", "float8e4m3fn":
		return F8E4M3FN, nil
	case "f8e4m3fnuz", "float8e4m3fnuz":
		return F8E4M3FNUZ, nil
	case "f8e5m2", "float8e5m2":
		return F8E5M2, nil
	case "f8e5m2fnuz", "float8e5m2fnuz":
		return F8E5M2FNUZ, nil
	case "string", "str":
		return String, nil
	}
	return Undefined, fmt.Errorf("tensor: unknown element type %q (accepted: f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64, u64, i4, u4, boolean, f8e4m3, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, string)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (t ElementType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler so flag.TextVar works.
func (t *ElementType) UnmarshalText(b []byte) error {
	v, err := ParseElementType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
