package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

func TestReadRealCase(t *testing.T) {
	tests := []struct {
		name, json string
		wantErr    bool
	}{
		{"complete", `{"model": "m.onnx", "inputs": [{"name": "x", "type": "f32", "shape": [1, 2], "seed": 7, "lo": -1, "hi": 1}],
			"outputs": [{"name": "y", "file": "output_0.npy", "type": "f32", "shape": [1]}], "ort_version": "1.30.0"}`, false},
		{"no outputs", `{"model": "m.onnx", "inputs": [{"name": "x", "type": "f32", "shape": [1]}], "outputs": []}`, true},
		{"not json", `model: m.onnx`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "case.json")
			require.NoError(t, os.WriteFile(p, []byte(tc.json), 0o644))
			c, err := ReadRealCase(p)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "m.onnx", c.Model)
			assert.Equal(t, uint32(7), c.Inputs[0].Seed)
			assert.Equal(t, []int64{1}, c.Outputs[0].Shape)
		})
	}
}

func TestRealInputTensor(t *testing.T) {
	in := RealInput{Name: "x", Type: "f32", Shape: []int64{2, 3}, Seed: 9, Lo: -1, Hi: 1}
	x, err := in.Tensor()
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{2, 3}, x.Shape())
	assert.Equal(t, seeded.Float32s(9, 6, -1, 1), x.F32(), "inputs must be what make_refs.js fed ONNX Runtime")

	_, err = RealInput{Name: "x", Type: "complex64", Shape: []int64{1}}.Tensor()
	assert.ErrorContains(t, err, `input "x"`)
	_, err = RealInput{Name: "x", Type: "f32", Shape: []int64{-1}}.Tensor()
	assert.Error(t, err)
}
