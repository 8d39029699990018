package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// mkNpy builds a .npy byte stream by hand: magic, version major.0, header
// length (2 bytes for 1.x, 4 for 2.x/3.x), the dict padded to 64 bytes,
// then data.
func mkNpy(major byte, dict string, data []byte) []byte {
	pre := 10
	if major >= 2 {
		pre = 12
	}
	total := pre + len(dict) + 1
	total += (64 - total%64) % 64
	hl := total - pre
	var b bytes.Buffer
	b.WriteString("\x93NUMPY")
	b.Write([]byte{major, 0})
	if major >= 2 {
		b.Write(binary.LittleEndian.AppendUint32(nil, uint32(hl)))
	} else {
		b.Write(binary.LittleEndian.AppendUint16(nil, uint16(hl)))
	}
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", hl-len(dict)-1))
	b.WriteByte('\n')
	b.Write(data)
	return b.Bytes()
}

func le32(v ...float32) []byte {
	var b []byte
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func TestWriteMatchesNumPyBytes(t *testing.T) {
	// np.save(f, np.array([1, 2, 3], dtype='<f4')) writes exactly this: a
	// 118-byte header so the data starts at byte 128.
	want := []byte("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" +
		strings.Repeat(" ", 60) + "\n")
	want = append(want, le32(1, 2, 3)...)
	x, err := tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, x))
	assert.Equal(t, want, buf.Bytes())

	// Scalars are "()", rank 2 "(2, 3)".
	buf.Reset()
	require.NoError(t, Write(&buf, tensor.Scalar(1)))
	assert.Contains(t, buf.String(), "'shape': (), }")
	buf.Reset()
	require.NoError(t, Write(&buf, tensor.MustNew(tensor.I64, tensor.Shape{2, 3})))
	assert.Contains(t, buf.String(), "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }")
	assert.Equal(t, 0, (buf.Len()-48)%64, "data starts 64-byte aligned")
}

func TestRoundTripAllTypes(t *testing.T) {
	shapes := []tensor.Shape{{}, {5}, {2, 3, 4}, {0, 3}, {1, 1, 1, 1, 7}}
	for _, et := range tensor.ElementTypes() {
		if et.Bits() == 4 {
			continue // NumPy has no 4-bit integers; see TestWriteRejects4Bit
		}
		for _, s := range shapes {
			t.Run(et.String()+s.String(), func(t *testing.T) {
				n := int(s.NumElements())
				v := make([]float64, n)
				for i := range v {
					v[i] = float64((i*7)%11) - 3
					if et == tensor.Bool || et.IsUnsigned() {
						v[i] = float64(i % 2)
					}
				}
				x, err := tensor.FromFloat64s(et, s, v)
				require.NoError(t, err)
				var buf bytes.Buffer
				require.NoError(t, Write(&buf, x))
				assert.Equal(t, byte(1), buf.Bytes()[6], "version 1.0")
				y, err := Read(&buf)
				require.NoError(t, err)
				assert.Equal(t, et, y.Type())
				assert.Equal(t, s, y.Shape())
				if et == tensor.String {
					assert.Equal(t, x.Strings(), y.Strings())
				} else {
					assert.Equal(t, x.Contiguous().Bytes(), y.Bytes())
				}
				assert.Zero(t, buf.Len(), "Read consumed exactly the array")
			})
		}
	}
}

func TestWriteStridedView(t *testing.T) {
	x, err := tensor.FromI32(tensor.Shape{3, 3}, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	require.NoError(t, err)
	v, err := x.View([]int64{1, 0}, []int64{3, 2})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, v))
	y, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{2, 2}, y.Shape())
	assert.Equal(t, []int32{4, 5, 7, 8}, y.I32())
}

func TestReadVariants(t *testing.T) {
	tests := []struct {
		name  string
		file  []byte
		typ   tensor.ElementType
		shape tensor.Shape
		want  []float64
	}{
		{"v2.0", mkNpy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le32(1.5, -2)), tensor.F32, tensor.Shape{2}, []float64{1.5, -2}},
		{"v3.0", mkNpy(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }", le32(7)), tensor.F32, tensor.Shape{1, 1}, []float64{7}},
		{"keys in another order, double quotes, no trailing comma", mkNpy(1, `{"shape": (2,), "fortran_order": False, "descr": "<f4"}`, le32(3, 4)), tensor.F32, tensor.Shape{2}, []float64{3, 4}},
		{"big-endian f4 is converted", mkNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", []byte{0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}), tensor.F32, tensor.Shape{2}, []float64{1, -2}},
		{"big-endian i2 is converted", mkNpy(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (1,), }", []byte{0x01, 0x02}), tensor.I16, tensor.Shape{1}, []float64{258}},
		{"<u1 spelling", mkNpy(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", []byte{0, 255}), tensor.U8, tensor.Shape{2}, []float64{0, 255}},
		{"|i1", mkNpy(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", []byte{0xff, 0x7f}), tensor.I8, tensor.Shape{2}, []float64{-1, 127}},
		{"|b1 nonzero bytes are true", mkNpy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", []byte{0, 2, 1}), tensor.Bool, tensor.Shape{3}, []float64{0, 1, 1}},
		{"=f8 native", mkNpy(1, "{'descr': '=f8', 'fortran_order': False, 'shape': (), }", binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.25))), tensor.F64, tensor.Shape{}, []float64{0.25}},
		{"<f2", mkNpy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", []byte{0x00, 0x3c}), tensor.F16, tensor.Shape{1}, []float64{1}},
		{"<i4", mkNpy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", []byte{0xfe, 0xff, 0xff, 0xff}), tensor.I32, tensor.Shape{1}, []float64{-2}},
		{"python 2 long dims", mkNpy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 1L), }", binary.LittleEndian.AppendUint64(nil, 9)), tensor.I64, tensor.Shape{1, 1}, []float64{9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := Read(bytes.NewReader(tc.file))
			require.NoError(t, err)
			assert.Equal(t, tc.typ, x.Type())
			assert.Equal(t, tc.shape, x.Shape())
			assert.InDeltaSlice(t, tc.want, x.Float64s(), 0)
		})
	}
}

func TestReadErrors(t *testing.T) {
	good := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
	tests := []struct {
		name     string
		file     []byte
		sentinel error
		msg      string
	}{
		{"empty", nil, ErrFormat, "magic"},
		{"bad magic", []byte("PK\x03\x04xxxxxxxxxx"), ErrFormat, "not a .npy file"},
		{"version 4", mkNpy(4, good, le32(1, 2)), ErrUnsupported, "version 4.0"},
		{"truncated header", mkNpy(1, good, nil)[:40], ErrFormat, "header"},
		{"short data", mkNpy(1, good, le32(1)), ErrFormat, "needs 8 data bytes, file has 4"},
		{"fortran order", mkNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", le32(1, 2)), ErrUnsupported, "fortran_order True"},
		{"complex dtype", mkNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", le32(1, 2)), ErrUnsupported, `dtype "<c8"`},
		{"complex dtype", mkNpy(1, "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", le32(1)), ErrUnsupported, `dtype "<c16"`},
		{"bad string width", mkNpy(1, "{'descr': '<Ux', 'fortran_order': False, 'shape': (1,), }", nil), ErrUnsupported, `dtype "<Ux"`},
		{"short string data", mkNpy(1, "{'descr': '<U10', 'fortran_order': False, 'shape': (1,), }", nil), ErrFormat, "needs 40 data bytes"},
		{"bad byte order", mkNpy(1, "{'descr': '!f4', 'fortran_order': False, 'shape': (1,), }", le32(1)), ErrUnsupported, "byte order"},
		{"structured dtype", mkNpy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", le32(1)), ErrUnsupported, "structured"},
		{"missing shape", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, }", le32(1)), ErrFormat, `no "shape"`},
		{"unknown key", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", le32(1)), ErrFormat, `unknown key "x"`},
		{"repeated key", mkNpy(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", le32(1)), ErrFormat, "repeated"},
		{"negative dim", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", le32(1)), ErrFormat, "non-negative"},
		{"shape not a tuple", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", le32(1)), ErrFormat, "not a tuple"},
		{"one-tuple without comma", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", le32(1)), ErrFormat, "trailing comma"},
		{"huge shape", mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", le32(1)), ErrUnsupported, "over"},
		{"not a dict", mkNpy(1, "['descr']", nil), ErrFormat, "'{'"},
		{"trailing text", mkNpy(1, good+" x", le32(1, 2)), ErrFormat, "trailing"},
		{"unterminated string", mkNpy(1, "{'descr", nil), ErrFormat, "unterminated"},
		{"fortran_order garbage", mkNpy(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", le32(1)), ErrFormat, "fortran_order"},
		{"v2 header too long", append([]byte("\x93NUMPY\x02\x00"), 0xff, 0xff, 0xff, 0x7f), ErrFormat, "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "npy: "), "error %q starts with the package name", err)
		})
	}
}

func TestWriteRejects4Bit(t *testing.T) {
	for _, et := range []tensor.ElementType{tensor.I4, tensor.U4} {
		var buf bytes.Buffer
		err := Write(&buf, tensor.MustNew(et, tensor.Shape{2}))
		require.ErrorIs(t, err, ErrUnsupported)
		assert.Contains(t, err.Error(), et.String())
		assert.Zero(t, buf.Len())
	}
}

// TestNamedAndStringDtypes checks the dtypes NumPy spells by name
// (ml_dtypes' bfloat16 and 8-bit floats) and NumPy's string dtypes, and
// that sequences have no .npy form.
func TestNamedAndStringDtypes(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, tensor.MustNew(tensor.BF16, tensor.Shape{2})))
	assert.Contains(t, buf.String(), "'descr': 'bfloat16'")
	buf.Reset()
	require.NoError(t, Write(&buf, tensor.MustNew(tensor.F8E5M2, tensor.Shape{2})))
	assert.Contains(t, buf.String(), "'descr': 'float8_e5m2'")

	s, err := tensor.FromStrings(tensor.Shape{3}, []string{"héllo", "", "ab"})
	require.NoError(t, err)
	buf.Reset()
	require.NoError(t, Write(&buf, s))
	assert.Contains(t, buf.String(), "'descr': '<U5'")
	back, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, []string{"héllo", "", "ab"}, back.Strings())

	// NumPy's bytes strings (|S3), padded with NULs.
	hdr := "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }"
	raw := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), 0)
	raw = append(append(raw, hdr...), "abcx\x00\x00"...)
	b, err := Read(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, []string{"abc", "x"}, b.Strings())

	seq, err := tensor.NewSequence(tensor.F32, nil)
	require.NoError(t, err)
	buf.Reset()
	assert.ErrorIs(t, Write(&buf, seq), ErrUnsupported)
	assert.Zero(t, buf.Len())
}

func TestSeveralArraysInOneStream(t *testing.T) {
	a, err := tensor.FromF32(tensor.Shape{2}, []float32{1, 2})
	require.NoError(t, err)
	b, err := tensor.FromI64(tensor.Shape{1, 1}, []int64{-5})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, a))
	require.NoError(t, Write(&buf, b))
	x, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, x.F32())
	y, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, []int64{-5}, y.I64())
}

func TestLargeHeaderUsesV2(t *testing.T) {
	// 25000 dimensions of 1 need a header over 65535 bytes: version 2.0.
	s := make(tensor.Shape, 25000)
	for i := range s {
		s[i] = 1
	}
	x := tensor.MustNew(tensor.U8, s)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, x))
	assert.Equal(t, byte(2), buf.Bytes()[6])
	assert.Equal(t, 0, (buf.Len()-1)%64)
	y, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, s, y.Shape())
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	x, err := tensor.FromF32(tensor.Shape{2, 2}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	require.NoError(t, WriteFile(path, x))
	y, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, x.F32(), y.F32())

	_, err = ReadFile(filepath.Join(dir, "missing.npy"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "missing.npy")

	bad := filepath.Join(dir, "bad.npy")
	require.NoError(t, os.WriteFile(bad, mkNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", nil), 0o644))
	_, err = ReadFile(bad)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "bad.npy")

	err = WriteFile(filepath.Join(dir, "no", "such", "dir.npy"), x)
	require.ErrorIs(t, err, os.ErrNotExist)
	seq, err := tensor.NewSequence(tensor.F32, nil)
	require.NoError(t, err)
	err = WriteFile(filepath.Join(dir, "b.npy"), seq)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "b.npy")
}

func FuzzRead(f *testing.F) {
	f.Add(mkNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le32(1, 2)))
	f.Add(mkNpy(2, "{'descr': '>i2', 'fortran_order': False, 'shape': (1, 1), }", []byte{1, 2}))
	f.Add(mkNpy(3, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }", []byte{3}))
	f.Add(mkNpy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 5), }", nil))
	f.Add([]byte("\x93NUMPY\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever reads must write and read back identically.
		var buf bytes.Buffer
		if err := Write(&buf, x); err != nil {
			t.Fatalf("Write after a successful Read: %v", err)
		}
		y, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read of our own output: %v", err)
		}
		if x.Type() != y.Type() || !x.Shape().Equal(y.Shape()) || !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Fatalf("round trip changed %v into %v", x, y)
		}
	})
}
