package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// writeCase writes a backend-suite case dir: model.onnx computing
// y = Relu(x) (or an op of the caller's choice) and one data set.
func writeCase(t *testing.T, opType string, in, out *tensor.Tensor) string {
	t.Helper()
	dir := t.TempDir()
	m := onnxbuild.New("case", 17).
		Input("x", in.Type(), onnxbuild.Dims(in.Shape()...)).
		Output("y", out.Type(), onnxbuild.Dims(out.Shape()...)).
		Node(opType, "n0", []string{"x"}, []string{"y"}, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), m.Bytes(), 0o644))
	set := filepath.Join(dir, "test_data_set_0")
	require.NoError(t, os.MkdirAll(set, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(set, "input_0.pb"), onnxbuild.TensorProto("x", in), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(set, "output_0.pb"), onnxbuild.TensorProto("y", out), 0o644))
	return dir
}

func TestRunCase(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	x := f32(t, tensor.Shape{4}, -1, 0, 2, -3)
	tests := []struct {
		name    string
		op      string
		want    *tensor.Tensor
		out     Outcome
		wantErr string
	}{
		{"right output passes", "Relu", f32(t, tensor.Shape{4}, 0, 0, 2, 0), Passed, ""},
		{"wrong output fails", "Relu", f32(t, tensor.Shape{4}, 0, 0, 2, 1), Failed, `compare output "y"`},
		{"wrong shape fails", "Relu", f32(t, tensor.Shape{2, 2}, 0, 0, 2, 0), Failed, "shape"},
		{"op outside the op set is unsupported", "NoSuchOp", f32(t, tensor.Shape{4}, 0, 0, 2, 0), UnsupportedOp, "NoSuchOp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCase(t, tc.op, x, tc.want)
			out, err := RunCase(context.Background(), core, "CPU", dir)
			assert.Equal(t, tc.out, out, "error: %v", err)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	// writeModel writes a case whose model is built by build and whose data
	// set is x -> x.
	writeModel := func(t *testing.T, m *onnxbuild.Model) string {
		dir := writeCase(t, "Relu", x, x)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), m.Bytes(), 0o644))
		return dir
	}
	t.Run("data type clinfer lacks is unsupported-type", func(t *testing.T) {
		m := onnxbuild.New("case", 17).
			Input("x", tensor.F32, onnxbuild.Dims(4)).
			Output("y", tensor.F32, onnxbuild.Dims(4)).
			Node("Cast", "to_complex", []string{"x"}, []string{"s"}, map[string]any{"to": int64(14)}).
			Node("Cast", "back", []string{"s"}, []string{"y"}, map[string]any{"to": int64(1)})
		out, err := RunCase(context.Background(), core, "CPU", writeModel(t, m))
		assert.Equal(t, UnsupportedType, out, "error: %v", err)
		assert.ErrorContains(t, err, "COMPLEX64")
	})
	t.Run("unsupported op wins over unsupported data type", func(t *testing.T) {
		m := onnxbuild.New("case", 17).
			Input("x", tensor.F32, onnxbuild.Dims(4)).
			Output("y", tensor.F32, onnxbuild.Dims(4)).
			Node("Cast", "to_complex", []string{"x"}, []string{"s"}, map[string]any{"to": int64(14)}).
			Node("NoSuchOp", "later", []string{"s"}, []string{"y"}, nil)
		out, err := RunCase(context.Background(), core, "CPU", writeModel(t, m))
		assert.Equal(t, UnsupportedOp, out, "error: %v", err)
		assert.ErrorContains(t, err, "NoSuchOp")
	})
	t.Run("no data set fails", func(t *testing.T) {
		dir := writeCase(t, "Relu", x, x)
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "test_data_set_0")))
		out, err := RunCase(context.Background(), core, "CPU", dir)
		assert.Equal(t, Failed, out)
		assert.ErrorContains(t, err, "no test_data_set_")
	})
}
