package tensor

import (
	"fmt"
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
)

var typeNames = [...]string{
	Undefined: "undefined",
	F32:       "f32",
	F16:       "f16",
	BF16:      "bf16",
	F64:       "f64",
	I8:        "i8",
	U8:        "u8",
	I16:       "i16",
	I32:       "i32",
	I64:       "i64",
	Bool:      "boolean",
}

var typeSizes = [...]int{
	Undefined: 0, F32: 4, F16: 2, BF16: 2, F64: 8, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8, Bool: 1,
}

// ElementTypes lists every defined element type in declaration order.
func ElementTypes() []ElementType {
	return []ElementType{F32, F16, BF16, F64, I8, U8, I16, I32, I64, Bool}
}

// String returns the OpenVINO spelling of the type ("f32", "i64", "boolean").
func (t ElementType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("ElementType(%d)", uint8(t))
}

// Size is the size of one element in bytes (0 for Undefined).
func (t ElementType) Size() int {
	if int(t) < len(typeSizes) {
		return typeSizes[t]
	}
	return 0
}

// IsFloat reports whether t is a floating-point type.
func (t ElementType) IsFloat() bool { return t == F32 || t == F16 || t == BF16 || t == F64 }

// IsInteger reports whether t is a signed or unsigned integer type (not Bool).
func (t ElementType) IsInteger() bool {
	return t == I8 || t == U8 || t == I16 || t == I32 || t == I64
}

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
	case "i32", "int32":
		return I32, nil
	case "i64", "int64":
		return I64, nil
	case "boolean", "bool":
		return Bool, nil
	}
	return Undefined, fmt.Errorf("tensor: unknown element type %q (accepted: f32, f16, bf16, f64, i8, u8, i16, i32, i64, boolean)", s)
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
