package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/clinfer/clinfer/tensor"
)

// ONNX TensorProto.DataType values.
const (
	dtFloat     = 1
	dtUint8     = 2
	dtInt8      = 3
	dtUint16    = 4
	dtInt16     = 5
	dtInt32     = 6
	dtInt64     = 7
	dtString    = 8
	dtBool      = 9
	dtFloat16   = 10
	dtDouble    = 11
	dtUint32    = 12
	dtUint64    = 13
	dtComplex64 = 14
	dtBFloat16  = 16
	// The 8-bit floats (opset 19).
	dtFloat8E4M3FN   = 17
	dtFloat8E4M3FNUZ = 18
	dtFloat8E5M2     = 19
	dtFloat8E5M2FNUZ = 20
	dtUint4          = 21
	dtInt4           = 22
)

// elementTypes maps ONNX data types to clinfer's element types; DataType
// reads it backwards.
var elementTypes = map[int64]tensor.ElementType{
	dtFloat: tensor.F32, dtUint8: tensor.U8, dtInt8: tensor.I8, dtUint16: tensor.U16, dtInt16: tensor.I16,
	dtInt32: tensor.I32, dtInt64: tensor.I64, dtString: tensor.String, dtBool: tensor.Bool, dtFloat16: tensor.F16,
	dtDouble: tensor.F64, dtUint32: tensor.U32, dtUint64: tensor.U64, dtBFloat16: tensor.BF16,
	dtFloat8E4M3FN: tensor.F8E4M3FN, dtFloat8E4M3FNUZ: tensor.F8E4M3FNUZ, dtFloat8E5M2: tensor.F8E5M2,
	dtFloat8E5M2FNUZ: tensor.F8E5M2FNUZ, dtUint4: tensor.U4, dtInt4: tensor.I4,
}

var onnxTypeNames = map[int64]string{
	0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
	7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
	14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ",
	19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1",
}

func onnxTypeName(dt int64) string {
	if s, ok := onnxTypeNames[dt]; ok {
		return s
	}
	return "data type " + strconv.FormatInt(dt, 10)
}

// ElementType maps an ONNX TensorProto.DataType number to clinfer's element
// type. It returns an error wrapping ErrUnsupportedType for types clinfer has
// no element type for (complex, the 4-bit float).
func ElementType(dataType int64) (tensor.ElementType, error) {
	if t, ok := elementTypes[dataType]; ok {
		return t, nil
	}
	return tensor.Undefined, fmt.Errorf("%w: %s", ErrUnsupportedType, onnxTypeName(dataType))
}

// DataType maps a clinfer element type to its ONNX TensorProto.DataType
// number, or 0 (UNDEFINED) for an invalid type.
func DataType(t tensor.ElementType) int64 {
	for dt, et := range elementTypes {
		if et == t {
			return dt
		}
	}
	return 0
}

// maxElements bounds the element count of any tensor before it is
// allocated; the real bound is the data the file supplies, checked below.
const maxElements = 1 << 40

// numElements returns the product of dims, rejecting negative dimensions
// and products beyond maxElements.
func numElements(dims []int64) (int64, error) {
	n := int64(1)
	zero := false
	for i, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is negative (%d)", i, d)
		}
		if d == 0 {
			zero = true
			continue
		}
		if n > maxElements/d {
			return 0, fmt.Errorf("dims %v hold more than %d elements", dims, int64(maxElements))
		}
		n *= d
	}
	if zero {
		return 0, nil
	}
	return n, nil
}

// tensorSource says where external data is found: a base directory, or none.
type tensorSource struct {
	baseDir string
}

// decodeTensorValue turns a TensorProto into a tensor. Errors name the
// tensor.
func (src tensorSource) decodeTensorValue(tp *tensorProto) (*tensor.Tensor, error) {
	t, err := src.tensorValue(tp)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", tp.name, err)
	}
	return t, nil
}

func (src tensorSource) tensorValue(tp *tensorProto) (*tensor.Tensor, error) {
	if tp.segment {
		return nil, fmt.Errorf("%w: segmented tensors are not supported", ErrInvalidModel)
	}
	et, err := ElementType(tp.dataType)
	if err != nil {
		return nil, err
	}
	n, err := numElements(tp.dims)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	shape := tensor.Shape(append([]int64{}, tp.dims...))
	if et.Bits() == 4 {
		return src.packed4(tp, et, shape, n)
	}
	size := int64(et.Size())
	if et == tensor.String {
		if tp.location != 0 || tp.hasRaw {
			return nil, fmt.Errorf("%w: a STRING tensor keeps its values in string_data, not raw or external data", ErrInvalidModel)
		}
		if int64(len(tp.stringData)) != n {
			return nil, fmt.Errorf("%w: %v%v needs %d strings, got %d", ErrInvalidModel, et, shape, n, len(tp.stringData))
		}
		x, err := tensor.FromStrings(shape, tp.stringData)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
		}
		return x, nil
	}
	if tp.location == 1 {
		return src.external(tp, et, shape, n)
	}
	if tp.location != 0 {
		return nil, fmt.Errorf("%w: unknown data_location %d", ErrInvalidModel, tp.location)
	}
	if tp.hasRaw {
		if int64(len(tp.raw))/size != n || int64(len(tp.raw))%size != 0 {
			return nil, fmt.Errorf("%w: %v%v needs %d bytes of raw_data, got %d", ErrInvalidModel, et, shape, n*size, len(tp.raw))
		}
		x, err := tensor.FromBytes(et, shape, tp.raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
		}
		if et == tensor.Bool {
			normaliseBools(x.Bytes())
		}
		return x, nil
	}
	count := func(have int) error {
		if int64(have) != n {
			return fmt.Errorf("%w: %v%v needs %d values, got %d", ErrInvalidModel, et, shape, n, have)
		}
		return nil
	}
	var have int
	switch et {
	case tensor.F32:
		have = len(tp.floatData)
	case tensor.F64:
		have = len(tp.doubleData)
	case tensor.I64:
		have = len(tp.int64Data)
	case tensor.U32, tensor.U64:
		have = len(tp.uint64Data)
	default:
		have = len(tp.int32Data)
	}
	if err := count(have); err != nil {
		return nil, err
	}
	x, err := tensor.New(et, shape)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	switch et {
	case tensor.F32:
		copy(x.F32(), tp.floatData)
	case tensor.F64:
		copy(x.F64(), tp.doubleData)
	case tensor.I64:
		copy(x.I64(), tp.int64Data)
	case tensor.I32:
		copy(x.I32(), tp.int32Data)
	case tensor.I16:
		for i, v := range tp.int32Data {
			x.I16()[i] = int16(v)
		}
	case tensor.U16:
		for i, v := range tp.int32Data {
			x.U16()[i] = uint16(v)
		}
	case tensor.U32:
		for i, v := range tp.uint64Data {
			x.U32()[i] = uint32(v)
		}
	case tensor.U64:
		copy(x.U64(), tp.uint64Data)
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		b := x.Bytes()
		for i, v := range tp.int32Data {
			b[i] = uint8(v)
		}
	case tensor.I8:
		for i, v := range tp.int32Data {
			x.I8()[i] = int8(v)
		}
	case tensor.U8:
		for i, v := range tp.int32Data {
			x.U8()[i] = uint8(v)
		}
	case tensor.Bool:
		for i, v := range tp.int32Data {
			x.Bool()[i] = v != 0
		}
	case tensor.F16, tensor.BF16:
		b := x.Bytes()
		for i, v := range tp.int32Data {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
		}
	}
	return x, nil
}

// packed4 reads an INT4 or UINT4 tensor: two elements to a byte (the first
// in the low nibble) in raw_data or external data, or one packed byte per
// int32_data value (onnx.helper's layout).
func (src tensorSource) packed4(tp *tensorProto, et tensor.ElementType, shape tensor.Shape, n int64) (*tensor.Tensor, error) {
	want := tensor.PackedBytes(et, n)
	if b, ok := shape.Bytes(et); !ok || b > tensor.AllocLimit() { // Unpack4's check, before any read
		return nil, fmt.Errorf("%w: %v%v: %w", ErrInvalidModel, et, shape, tensor.ErrTooLarge)
	}
	var packed []byte
	switch {
	case tp.location == 1:
		packed = make([]byte, want)
		if err := src.externalBytes(tp, packed, fmt.Sprintf("%v%v", et, shape)); err != nil {
			return nil, err
		}
	case tp.location != 0:
		return nil, fmt.Errorf("%w: unknown data_location %d", ErrInvalidModel, tp.location)
	case tp.hasRaw:
		packed = tp.raw
	default:
		packed = make([]byte, len(tp.int32Data))
		for i, v := range tp.int32Data {
			packed[i] = byte(v)
		}
	}
	if int64(len(packed)) != want {
		return nil, fmt.Errorf("%w: %v%v needs %d packed bytes, got %d", ErrInvalidModel, et, shape, want, len(packed))
	}
	x, err := tensor.Unpack4(et, shape, packed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	return x, nil
}

// normaliseBools maps every non-zero byte to 1 so the bytes are valid Go
// bools.
func normaliseBools(b []byte) {
	for i, v := range b {
		if v != 0 {
			b[i] = 1
		}
	}
}

// external reads a tensor stored outside the model file.
func (src tensorSource) external(tp *tensorProto, et tensor.ElementType, shape tensor.Shape, n int64) (*tensor.Tensor, error) {
	x, err := tensor.New(et, shape)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	if err := src.externalBytes(tp, x.Bytes(), fmt.Sprintf("%v%v", et, shape)); err != nil {
		return nil, err
	}
	if et == tensor.Bool {
		normaliseBools(x.Bytes())
	}
	return x, nil
}

// externalBytes reads the len(dst) bytes of a tensor (described by what)
// stored outside the model file into dst. The location must be a local
// path below the base directory; os.Root also keeps symbolic links from
// leaving it.
func (src tensorSource) externalBytes(tp *tensorProto, dst []byte, what string) error {
	want := int64(len(dst))
	var location string
	offset, length := int64(0), int64(-1)
	for _, e := range tp.external {
		switch e.key {
		case "location":
			location = e.value
		case "offset", "length":
			v, err := strconv.ParseInt(e.value, 10, 64)
			if err != nil || v < 0 {
				return fmt.Errorf("%w: external data %s %q is not a non-negative integer", ErrInvalidModel, e.key, e.value)
			}
			if e.key == "offset" {
				offset = v
			} else {
				length = v
			}
		}
	}
	if location == "" {
		return fmt.Errorf("%w: external data has no location", ErrInvalidModel)
	}
	if !filepath.IsLocal(location) {
		return fmt.Errorf("%w: external data location %q is not a relative path inside the model directory", ErrExternalData, location)
	}
	if src.baseDir == "" {
		return fmt.Errorf("%w: external data %q needs a base directory (use ReadFile or WithBaseDir)", ErrExternalData, location)
	}
	root, err := os.OpenRoot(src.baseDir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExternalData, err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(location))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExternalData, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExternalData, err)
	}
	if offset > st.Size() {
		return fmt.Errorf("%w: external data %q: offset %d beyond the file's %d bytes", ErrExternalData, location, offset, st.Size())
	}
	if length < 0 {
		length = st.Size() - offset
	}
	if length > st.Size()-offset {
		return fmt.Errorf("%w: external data %q: offset %d + length %d beyond the file's %d bytes", ErrExternalData, location, offset, length, st.Size())
	}
	if want != length {
		return fmt.Errorf("%w: external data %q: %s needs %d bytes, length is %d", ErrExternalData, location, what, want, length)
	}
	if _, err := f.ReadAt(dst, offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return fmt.Errorf("%w: external data %q: %v", ErrExternalData, location, err)
	}
	return nil
}

// ReadTensor decodes a serialized TensorProto (the input_*.pb and
// output_*.pb files of ONNX test data sets) and returns the tensor and its
// name. Tensors with external data are rejected; use ReadTensorFile.
func ReadTensor(data []byte) (*tensor.Tensor, string, error) {
	return readTensor(data, "")
}

// ReadTensorFile reads a serialized TensorProto file; external data is
// resolved relative to the file's directory.
func ReadTensorFile(path string) (*tensor.Tensor, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: %w", err)
	}
	t, name, err := readTensor(data, filepath.Dir(path))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return t, name, nil
}

func readTensor(data []byte, baseDir string) (*tensor.Tensor, string, error) {
	tp, err := decodeTensor(data)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: %w", err)
	}
	t, err := tensorSource{baseDir: baseDir}.decodeTensorValue(tp)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: %w", err)
	}
	return t, tp.name, nil
}
