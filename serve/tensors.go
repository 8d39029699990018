package serve

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/tensor"
)

// The protocol's datatype names for clinfer's element types. BYTES and the
// unsigned types wider than 8 bits have no clinfer element type.
var datatypes = map[tensor.ElementType]string{
	tensor.Bool: "BOOL", tensor.U8: "UINT8", tensor.I8: "INT8", tensor.I16: "INT16",
	tensor.I32: "INT32", tensor.I64: "INT64", tensor.F16: "FP16", tensor.BF16: "BF16",
	tensor.F32: "FP32", tensor.F64: "FP64",
}

// datatypeName is the protocol's name of t.
func datatypeName(t tensor.ElementType) string {
	if s, ok := datatypes[t]; ok {
		return s
	}
	return t.String()
}

// elementType is the clinfer element type of a protocol datatype.
func elementType(name string) (tensor.ElementType, bool) {
	for t, s := range datatypes {
		if s == name {
			return t, true
		}
	}
	return tensor.Undefined, false
}

// portShape is a port's shape in the protocol's form: -1 for a dynamic
// dimension.
func portShape(p clinfer.PortInfo) []int64 {
	s := make([]int64, len(p.Shape.Dims))
	for i, d := range p.Shape.Dims {
		s[i] = d.Size
		if s[i] < 0 {
			s[i] = -1
		}
	}
	return s
}

// checkInput checks a request's input against the model's port before
// anything is allocated: the datatype, the rank and every static
// dimension, and the byte size against the limit. It returns the element
// type and the byte size.
func checkInput(p clinfer.PortInfo, datatype string, shape []int64, limit int64) (tensor.ElementType, int64, error) {
	t, ok := elementType(datatype)
	if !ok {
		return 0, 0, errorf(codeInvalid, "input %q: datatype %q is not one the server takes (BOOL, UINT8, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64)", p.Name, datatype)
	}
	if t != p.Type {
		return 0, 0, errorf(codeInvalid, "input %q: datatype %s does not match the model's %s", p.Name, datatype, datatypeName(p.Type))
	}
	if p.Shape.RankKnown && len(shape) != len(p.Shape.Dims) {
		return 0, 0, errorf(codeInvalid, "input %q: shape %v has rank %d, the model's %v has rank %d", p.Name, shape, len(shape), portShape(p), len(p.Shape.Dims))
	}
	for i, d := range shape {
		if d < 0 {
			return 0, 0, errorf(codeInvalid, "input %q: shape %v has a negative dimension", p.Name, shape)
		}
		if p.Shape.RankKnown && p.Shape.Dims[i].Size >= 0 && p.Shape.Dims[i].Size != d {
			return 0, 0, errorf(codeInvalid, "input %q: shape %v: dimension %d is %d, the model's %v needs %d", p.Name, shape, i, d, portShape(p), p.Shape.Dims[i].Size)
		}
	}
	n, ok := tensor.Shape(shape).Bytes(t)
	if !ok || n > limit {
		return 0, 0, errorf(codeTooLarge, "input %q: %s%v is over the server's tensor size limit of %d bytes", p.Name, datatype, shape, limit)
	}
	return t, n, nil
}

// fromRaw makes a tensor from little-endian bytes, checking their length.
func fromRaw(name string, t tensor.ElementType, shape []int64, n int64, raw []byte) (*tensor.Tensor, error) {
	if int64(len(raw)) != n {
		return nil, errorf(codeInvalid, "input %q: %s%v needs %d bytes of data, got %d", name, datatypeName(t), shape, n, len(raw))
	}
	x, err := tensor.FromBytes(t, tensor.Shape(shape), raw)
	if err != nil {
		return nil, errorf(codeTooLarge, "input %q: %v", name, err)
	}
	return x, nil
}

// fromJSON makes a tensor from the protocol's JSON data: a flat or nested
// array (row-major) of numbers or booleans. It counts the values while it
// writes them, so malformed or short data is an error before the tensor
// is used; the tensor's size was checked by checkInput.
func fromJSON(name string, t tensor.ElementType, shape []int64, data []byte) (*tensor.Tensor, error) {
	x, err := tensor.New(t, tensor.Shape(shape))
	if err != nil {
		return nil, errorf(codeTooLarge, "input %q: %v", name, err)
	}
	raw := x.Bytes()
	size := t.Size()
	want := x.NumElements()
	var i int64
	depth := 0
	for p := 0; p < len(data); {
		c := data[p]
		switch {
		case c == '[':
			depth++
			p++
		case c == ']':
			depth--
			if depth < 0 {
				return nil, errorf(codeInvalid, "input %q: data: unbalanced ']'", name)
			}
			p++
		case c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r':
			p++
		default:
			end := p
			for end < len(data) && !separator[data[end]] {
				end++
			}
			if i >= want {
				return nil, errorf(codeInvalid, "input %q: data has more than the %d values of shape %v", name, want, shape)
			}
			// The string aliases data for the parse only: no copy per value.
			if err := putValue(raw[i*int64(size):(i+1)*int64(size)], t, unsafe.String(&data[p], end-p)); err != nil {
				return nil, errorf(codeInvalid, "input %q: data value %d: %v", name, i, err)
			}
			i++
			p = end
		}
	}
	if depth != 0 {
		return nil, errorf(codeInvalid, "input %q: data: unbalanced '['", name)
	}
	if i != want {
		return nil, errorf(codeInvalid, "input %q: data has %d values, shape %v needs %d", name, i, shape, want)
	}
	return x, nil
}

// separator marks the bytes that end a JSON value in a data array.
var separator = [256]bool{'[': true, ']': true, ',': true, ' ': true, '\n': true, '\t': true, '\r': true}

// putValue parses one JSON value as t into dst (little-endian).
func putValue(dst []byte, t tensor.ElementType, s string) error {
	switch t {
	case tensor.Bool:
		switch s {
		case "true":
			dst[0] = 1
		case "false":
			dst[0] = 0
		default:
			return errorf(codeInvalid, "%q is not a BOOL (true or false)", s)
		}
		return nil
	case tensor.F32, tensor.F64, tensor.F16, tensor.BF16:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errorf(codeInvalid, "%q is not a number", s)
		}
		switch t {
		case tensor.F32:
			binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(v)))
		case tensor.F64:
			binary.LittleEndian.PutUint64(dst, math.Float64bits(v))
		case tensor.F16:
			binary.LittleEndian.PutUint16(dst, tensor.Float32ToF16(float32(v)))
		default:
			binary.LittleEndian.PutUint16(dst, tensor.Float32ToBF16(float32(v)))
		}
		return nil
	}
	bits := 8 * t.Size()
	if t == tensor.U8 {
		v, err := strconv.ParseUint(s, 10, 8)
		if err != nil {
			return errorf(codeInvalid, "%q is not a UINT8", s)
		}
		dst[0] = byte(v)
		return nil
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return errorf(codeInvalid, "%q is not an INT%d", s, bits)
	}
	switch bits {
	case 8:
		dst[0] = byte(v)
	case 16:
		binary.LittleEndian.PutUint16(dst, uint16(v))
	case 32:
		binary.LittleEndian.PutUint32(dst, uint32(v))
	default:
		binary.LittleEndian.PutUint64(dst, uint64(v))
	}
	return nil
}

// appendJSON appends x's elements as a flat JSON array. Non-finite floats,
// which JSON cannot hold, are written as null.
func appendJSON(b []byte, x *tensor.Tensor) []byte {
	raw := x.Bytes()
	t := x.Type()
	size := t.Size()
	b = append(b, '[')
	for i := 0; i+size <= len(raw); i += size {
		if i > 0 {
			b = append(b, ',')
		}
		v := raw[i : i+size]
		switch t {
		case tensor.Bool:
			b = strconv.AppendBool(b, v[0] != 0)
		case tensor.U8:
			b = strconv.AppendUint(b, uint64(v[0]), 10)
		case tensor.I8:
			b = strconv.AppendInt(b, int64(int8(v[0])), 10)
		case tensor.I16:
			b = strconv.AppendInt(b, int64(int16(binary.LittleEndian.Uint16(v))), 10)
		case tensor.I32:
			b = strconv.AppendInt(b, int64(int32(binary.LittleEndian.Uint32(v))), 10)
		case tensor.I64:
			b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(v)), 10)
		case tensor.F64:
			b = appendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(v)), 64)
		case tensor.F16:
			b = appendFloat(b, float64(tensor.F16ToFloat32(binary.LittleEndian.Uint16(v))), 32)
		case tensor.BF16:
			b = appendFloat(b, float64(tensor.BF16ToFloat32(binary.LittleEndian.Uint16(v))), 32)
		default:
			b = appendFloat(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 32)
		}
	}
	return append(b, ']')
}

func appendFloat(b []byte, v float64, bits int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, bits)
}
