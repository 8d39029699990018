package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// ErrFormat is wrapped by errors about a malformed .npy file.
var ErrFormat = errors.New("npy: malformed file")

// ErrUnsupported is wrapped by errors about a well-formed .npy file (or a
// tensor) that this package cannot represent: an unknown dtype, Fortran
// order, a sequence or optional to write.
var ErrUnsupported = errors.New("npy: unsupported")

const magic = "\x93NUMPY"

// maxHeader bounds the header length we accept; NumPy itself refuses
// headers over 10000 bytes unless told otherwise.
const maxHeader = 1 << 20

// maxBytes bounds the data size a header may announce (1 TiB), so shape
// products cannot overflow.
const maxBytes = 1 << 40

// dtypes maps the kind and size of a NumPy type string (without its byte
// order character) to a tensor element type.
var dtypes = map[string]tensor.ElementType{
	"f4": tensor.F32, "f2": tensor.F16, "f8": tensor.F64,
	"i8": tensor.I64, "i4": tensor.I32, "i2": tensor.I16, "i1": tensor.I8,
	"u8": tensor.U64, "u4": tensor.U32, "u2": tensor.U16, "u1": tensor.U8, "b1": tensor.Bool,
}

// namedDtypes are the types NumPy has no type string for, written by
// name as the ml_dtypes package names them (numpy.dtype("bfloat16")
// resolves them once ml_dtypes is imported, so np.load reads these files).
var namedDtypes = map[string]tensor.ElementType{
	"bfloat16": tensor.BF16, "float8_e4m3fn": tensor.F8E4M3FN, "float8_e4m3fnuz": tensor.F8E4M3FNUZ,
	"float8_e5m2": tensor.F8E5M2, "float8_e5m2fnuz": tensor.F8E5M2FNUZ,
}

var descrs = map[tensor.ElementType]string{
	tensor.F32: "<f4", tensor.F16: "<f2", tensor.F64: "<f8",
	tensor.I64: "<i8", tensor.I32: "<i4", tensor.I16: "<i2", tensor.I8: "|i1",
	tensor.U64: "<u8", tensor.U32: "<u4", tensor.U16: "<u2", tensor.U8: "|u1", tensor.Bool: "|b1",
	tensor.BF16: "bfloat16", tensor.F8E4M3FN: "float8_e4m3fn", tensor.F8E4M3FNUZ: "float8_e4m3fnuz",
	tensor.F8E5M2: "float8_e5m2", tensor.F8E5M2FNUZ: "float8_e5m2fnuz",
}

// Read reads one array in .npy format from r and returns it as a contiguous
// tensor. It reads exactly the bytes of that array, so several arrays
// written one after another can be read in turn.
func Read(r io.Reader) (*tensor.Tensor, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return nil, fmt.Errorf("%w: reading magic: %v", ErrFormat, err)
	}
	if string(pre[:6]) != magic {
		return nil, fmt.Errorf("%w: not a .npy file (magic %q)", ErrFormat, pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, fmt.Errorf("%w: reading header length: %v", ErrFormat, err)
		}
		hlen = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: reading header length: %v", ErrFormat, err)
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeader {
			return nil, fmt.Errorf("%w: header length %d over the %d-byte limit", ErrFormat, n, maxHeader)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("%w: format version %d.%d (want 1.0, 2.0 or 3.0)", ErrUnsupported, major, minor)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%w: reading %d-byte header: %v", ErrFormat, hlen, err)
	}
	h, err := parseHeader(string(hdr))
	if err != nil {
		return nil, err
	}
	n := h.shape.NumElements()
	if h.typ == tensor.String {
		return readStrings(r, h)
	}
	size := int64(h.typ.Size())
	want := n * size
	// ReadAll over a LimitReader grows its buffer as data arrives, so a
	// lying header on a short stream cannot make us allocate its claim.
	raw, err := io.ReadAll(io.LimitReader(r, want))
	if err != nil {
		return nil, fmt.Errorf("npy: reading %v data: %w", h.shape, err)
	}
	if int64(len(raw)) != want {
		return nil, fmt.Errorf("%w: %s%v needs %d data bytes, file has %d", ErrFormat, h.descr, h.shape, want, len(raw))
	}
	if h.bigEndian && size > 1 {
		swap(raw, int(size))
	}
	if h.typ == tensor.Bool {
		for i, b := range raw {
			if b != 0 {
				raw[i] = 1 // a Go bool must be 0 or 1
			}
		}
	}
	t, err := tensor.FromBytes(h.typ, h.shape, raw)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	return t, nil
}

func swap(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for j, k := 0, size-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// ReadFile reads a .npy file. Errors name the file.
func ReadFile(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	t, err := Read(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Write writes t (any layout) to w in .npy format: little-endian, C order,
// version 1.0, or 2.0 when the header does not fit 1.0's 16-bit length.
// bf16 and the 8-bit floats are written with ml_dtypes' dtype names
// ("bfloat16", "float8_e4m3fn"...), strings as NumPy unicode ("<U<n>",
// UTF-32, n the longest string's length in characters). Sequences and
// optionals have no .npy form (ErrUnsupported).
func Write(w io.Writer, t *tensor.Tensor) error {
	if t.Kind() != tensor.KindTensor {
		return fmt.Errorf("%w: a %v has no .npy form (write its tensors one by one)", ErrUnsupported, t.Kind())
	}
	descr, ok := descrs[t.Type()]
	var data []byte
	if t.Type() == tensor.String {
		descr, data = encodeStrings(t.Contiguous().Strings())
	} else if !ok {
		return fmt.Errorf("%w: element type %v has no NumPy dtype (convert to f32 first)", ErrUnsupported, t.Type())
	} else {
		data = t.Contiguous().Bytes()
	}
	var shape strings.Builder
	shape.WriteByte('(')
	for i, d := range t.Shape() {
		if i > 0 {
			shape.WriteString(", ")
		}
		shape.WriteString(strconv.FormatInt(d, 10))
	}
	if t.Rank() == 1 {
		shape.WriteByte(',')
	}
	shape.WriteByte(')')
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape.String())

	// Pad with spaces and end with '\n' so the data starts 64-byte aligned,
	// as NumPy does.
	var buf bytes.Buffer
	buf.WriteString(magic)
	pre := 10
	total := pre + len(dict) + 1
	if total += (64 - total%64) % 64; total-pre > 0xffff {
		pre = 12
		total = pre + len(dict) + 1
		total += (64 - total%64) % 64
		buf.Write([]byte{2, 0})
		buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(total-pre)))
	} else {
		buf.Write([]byte{1, 0})
		buf.Write(binary.LittleEndian.AppendUint16(nil, uint16(total-pre)))
	}
	buf.WriteString(dict)
	for buf.Len() < total-1 {
		buf.WriteByte(' ')
	}
	buf.WriteByte('\n')
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("npy: writing header: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("npy: writing %v data: %w", t, err)
	}
	return nil
}

// WriteFile writes t to path in .npy format, creating or truncating it.
// Errors name the file.
func WriteFile(path string, t *tensor.Tensor) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	bw := bufio.NewWriter(f)
	if err := Write(bw, t); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("npy: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("npy: %s: %w", path, err)
	}
	return nil
}
