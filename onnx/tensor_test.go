package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func TestReadTensorTypedFields(t *testing.T) {
	base := func(dt int64, dims ...int64) pb {
		p := pb(nil)
		for _, d := range dims {
			p = p.varint(1, d)
		}
		return p.varint(2, dt).str(8, "t")
	}
	tests := []struct {
		name  string
		data  []byte
		typ   tensor.ElementType
		shape tensor.Shape
		want  []float64
	}{
		{"float_data packed", base(dtFloat, 2).packedF32(4, []float32{1.5, -2}), tensor.F32, tensor.Shape{2}, []float64{1.5, -2}},
		{"float_data unpacked", base(dtFloat, 2).f32(4, 3).f32(4, 4), tensor.F32, tensor.Shape{2}, []float64{3, 4}},
		{"int32_data", base(dtInt32, 3).packedVarints(5, []int64{1, -1, 7}), tensor.I32, tensor.Shape{3}, []float64{1, -1, 7}},
		{"int32_data as int8", base(dtInt8, 2).packedVarints(5, []int64{-5, 100}), tensor.I8, tensor.Shape{2}, nil},
		{"int32_data as uint8", base(dtUint8, 2).packedVarints(5, []int64{200, 3}), tensor.U8, tensor.Shape{2}, []float64{200, 3}},
		{"int32_data as bool", base(dtBool, 3).packedVarints(5, []int64{0, 1, 5}), tensor.Bool, tensor.Shape{3}, []float64{0, 1, 1}},
		{"int64_data", base(dtInt64, 1, 2).varint(7, -9).varint(7, 1<<40), tensor.I64, tensor.Shape{1, 2}, []float64{-9, 1 << 40}},
		{"double_data", base(dtDouble, 1).bytes(10, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}), tensor.F64, tensor.Shape{1}, []float64{1}},
		{"scalar raw", base(dtFloat).bytes(9, []byte{0, 0, 0x80, 0x3f}), tensor.F32, tensor.Shape{}, []float64{1}},
		{"raw bool normalised", base(dtBool, 2).bytes(9, []byte{0, 7}), tensor.Bool, tensor.Shape{2}, []float64{0, 1}},
		{"empty", base(dtFloat, 0, 3), tensor.F32, tensor.Shape{0, 3}, []float64{}},
		{"int32_data as uint16", base(dtUint16, 2).packedVarints(5, []int64{65535, 7}), tensor.U16, tensor.Shape{2}, []float64{65535, 7}},
		{"raw uint16", base(dtUint16, 1).bytes(9, []byte{0xff, 0x80}), tensor.U16, tensor.Shape{1}, []float64{0x80ff}},
		// INT4/UINT4: two to a byte, the first in the low nibble; an odd
		// count leaves the last high nibble unused.
		{"raw int4", base(dtInt4, 3).bytes(9, []byte{0x8f, 0x07}), tensor.I4, tensor.Shape{3}, []float64{-1, -8, 7}},
		{"raw uint4", base(dtUint4, 2, 2).bytes(9, []byte{0x21, 0xf0}), tensor.U4, tensor.Shape{2, 2}, []float64{1, 2, 0, 15}},
		{"int32_data as packed int4", base(dtInt4, 4).packedVarints(5, []int64{0x9a, 0x34}), tensor.I4, tensor.Shape{4}, []float64{-6, -7, 4, 3}},
		{"uint64_data as uint32", base(dtUint32, 2).packedVarints(11, []int64{1<<32 - 1, 3}), tensor.U32, tensor.Shape{2}, []float64{1<<32 - 1, 3}},
		{"uint64_data", base(dtUint64, 1).packedVarints(11, []int64{-1}), tensor.U64, tensor.Shape{1}, []float64{1 << 64}},
		{"raw uint64", base(dtUint64, 1).bytes(9, []byte{1, 0, 0, 0, 0, 0, 0, 0}), tensor.U64, tensor.Shape{1}, []float64{1}},
		{"int32_data as float8e4m3fn", base(dtFloat8E4M3FN, 2).packedVarints(5, []int64{0x38, 0x7e}), tensor.F8E4M3FN, tensor.Shape{2}, []float64{1, 448}},
		{"raw float8e5m2fnuz", base(dtFloat8E5M2FNUZ, 1).bytes(9, []byte{0x40}), tensor.F8E5M2FNUZ, tensor.Shape{1}, []float64{1}},
		{"string_data", base(dtString, 2).str(6, "1.5").str(6, "-2"), tensor.String, tensor.Shape{2}, []float64{1.5, -2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, name, err := ReadTensor(tc.data)
			require.NoError(t, err)
			assert.Equal(t, "t", name)
			assert.Equal(t, tc.typ, x.Type())
			assert.Equal(t, tc.shape, x.Shape())
			if tc.want != nil {
				assert.InDeltaSlice(t, tc.want, x.Float64s(), 1e-9)
			}
		})
	}
	t.Run("string values", func(t *testing.T) {
		x, _, err := ReadTensor(base(dtString, 3).str(6, "héllo").str(6, "").str(6, "a b"))
		require.NoError(t, err)
		assert.Equal(t, []string{"héllo", "", "a b"}, x.Strings())
	})
	t.Run("every element type maps back", func(t *testing.T) {
		for _, et := range tensor.ElementTypes() {
			dt := DataType(et)
			require.NotZero(t, dt, et)
			back, err := ElementType(dt)
			require.NoError(t, err)
			assert.Equal(t, et, back)
		}
	})
	t.Run("int8 values", func(t *testing.T) {
		x, _, err := ReadTensor(base(dtInt8, 2).packedVarints(5, []int64{-5, 100}))
		require.NoError(t, err)
		assert.Equal(t, []int8{-5, 100}, x.I8())
	})
	t.Run("f16 bits", func(t *testing.T) {
		x, _, err := ReadTensor(base(dtFloat16, 2).packedVarints(5, []int64{0x3c00, 0xc000}))
		require.NoError(t, err)
		assert.Equal(t, []uint16{0x3c00, 0xc000}, x.F16())
	})
}

func TestReadTensorErrors(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		sentinel error
		contains string
	}{
		{"huge dims tiny file", pb(nil).varint(1, 1_000_000).varint(1, 1_000_000).varint(2, dtFloat).str(8, "big").bytes(9, []byte{1, 2, 3, 4}), ErrInvalidModel, `"big"`},
		{"overflowing dims", pb(nil).varint(1, 1<<40).varint(1, 1<<40).varint(2, dtFloat).str(8, "ov"), ErrInvalidModel, "more than"},
		{"negative dim", pb(nil).varint(1, -2).varint(2, dtFloat).str(8, "neg"), ErrInvalidModel, "negative"},
		{"too few values", pb(nil).varint(1, 3).varint(2, dtInt64).str(8, "few").varint(7, 1), ErrInvalidModel, "needs 3 values"},
		{"raw size mismatch", pb(nil).varint(1, 2).varint(2, dtInt32).str(8, "r").bytes(9, []byte{1, 2, 3}), ErrInvalidModel, "raw_data"},
		{"int4 raw size", pb(nil).varint(1, 3).varint(2, dtInt4).str(8, "i4").bytes(9, []byte{1}), ErrInvalidModel, "packed bytes"},
		{"complex", pb(nil).varint(1, 1).varint(2, dtComplex64).str(8, "c"), ErrUnsupportedType, "COMPLEX64"},
		{"too few strings", pb(nil).varint(1, 2).varint(2, dtString).str(8, "s").str(6, "a"), ErrInvalidModel, "needs 2 strings"},
		{"raw strings", pb(nil).varint(1, 1).varint(2, dtString).str(8, "s").bytes(9, []byte("a")), ErrInvalidModel, "string_data"},
		{"too few u64", pb(nil).varint(1, 1).varint(2, dtUint64).str(8, "u64"), ErrInvalidModel, "needs 1 values"},
		{"segment", pb(nil).varint(2, dtFloat).str(8, "seg").bytes(3, nil), ErrInvalidModel, "segment"},
		{"external without base", pb(nil).varint(2, dtFloat).str(8, "e").bytes(13, pb(nil).str(1, "location").str(2, "w.bin")).varint(14, 1), ErrExternalData, "base directory"},
		{"bad wire type", []byte{0x0b}, ErrInvalidModel, ""},
		{"truncated", pb(nil).bytes(9, []byte{1, 2, 3, 4})[:3], ErrInvalidModel, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadTensor(tc.data)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.Contains(t, err.Error(), tc.contains)
		})
	}
}

func TestReadTensorFile(t *testing.T) {
	dir := t.TempDir()
	want := f32Tensor(tensor.Shape{2, 2}, 1, 2, 3, 4)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.bin"), want.Bytes(), 0o600))
	inline := filepath.Join(dir, "input_0.pb")
	require.NoError(t, os.WriteFile(inline, rawTensor("x", want), 0o600))
	ext := filepath.Join(dir, "input_1.pb")
	require.NoError(t, os.WriteFile(ext, pb(nil).varint(1, 2).varint(1, 2).varint(2, dtFloat).str(8, "y").
		bytes(13, pb(nil).str(1, "location").str(2, "w.bin")).varint(14, 1), 0o600))

	for _, tc := range []struct{ path, name string }{{inline, "x"}, {ext, "y"}} {
		got, name, err := ReadTensorFile(tc.path)
		require.NoError(t, err)
		assert.Equal(t, tc.name, name)
		assert.InDeltaSlice(t, want.F32(), got.F32(), 0)
	}
	_, _, err := ReadTensorFile(filepath.Join(dir, "missing.pb"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestCorpusTestData(t *testing.T) {
	requireTestdata(t)
	// Every input/output tensor of the node tests whose model imports must
	// decode, or fail with an unsupported type.
	files, err := filepath.Glob(filepath.Join(libonnxTestdata, "node", "test_[a-c]*", "test_data_set_0", "*.pb"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	decoded := 0
	for _, f := range files {
		x, _, err := ReadTensorFile(f)
		if err != nil {
			assert.ErrorIs(t, err, ErrUnsupportedType, f)
			continue
		}
		decoded++
		assert.True(t, x.Type().Valid(), f)
	}
	t.Logf("decoded %d of %d tensors", decoded, len(files))
	assert.Greater(t, decoded, len(files)/2)
}
