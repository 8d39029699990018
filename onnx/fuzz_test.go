package onnx

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

var update = flag.Bool("update", false, "rewrite onnx/testdata/*.onnx from seedModels")

// seedModels are small handcrafted models covering the importers' paths;
// they are committed under testdata/ as fuzz seeds.
func seedModels() map[string][]byte {
	x := fv("x", 1, 3, 4, 4)
	return map[string][]byte{
		"conv_relu.onnx": tModel{
			opset: 13,
			nodes: []tNode{
				{op: "Conv", name: "conv", in: []string{"x", "w", "b"}, out: []string{"c"}, attrs: []tAttr{aInts("pads", 1, 1, 1, 1), aInts("kernel_shape", 3, 3)}},
				{op: "Relu", in: []string{"c"}, out: []string{"y"}},
			},
			inits: [][]byte{
				rawTensor("w", f32Tensor(tensor.Shape{2, 3, 3, 3}, make([]float32, 54)...)),
				rawTensor("b", f32Tensor(tensor.Shape{2}, 0.5, -0.5)),
			},
			inputs:  []tValue{x},
			outputs: []tValue{fv("y")},
		}.bytes(),
		"legacy_opset9.onnx": tModel{
			opset: 9,
			nodes: []tNode{
				{op: "Slice", in: []string{"x"}, out: []string{"s"}, attrs: []tAttr{aInts("starts", 0), aInts("ends", 2), aInts("axes", 1)}},
				{op: "Unsqueeze", in: []string{"s"}, out: []string{"u"}, attrs: []tAttr{aInts("axes", 0)}},
				{op: "Squeeze", in: []string{"u"}, out: []string{"q"}, attrs: []tAttr{aInts("axes", 0)}},
				{op: "Clip", in: []string{"q"}, out: []string{"c"}, attrs: []tAttr{aFloat("min", 0), aFloat("max", 6)}},
				{op: "Pad", in: []string{"c"}, out: []string{"p"}, attrs: []tAttr{aInts("pads", 0, 0, 1, 1, 0, 0, 1, 1), aStr("mode", "constant"), aFloat("value", 1)}},
				{op: "ReduceMean", in: []string{"p"}, out: []string{"r"}, attrs: []tAttr{aInts("axes", 2, 3), aInt("keepdims", 1)}},
				{op: "Upsample", in: []string{"r", "scales"}, out: []string{"up"}},
				{op: "Softmax", in: []string{"up"}, out: []string{"sm"}, attrs: []tAttr{aInt("axis", 1)}},
				{op: "Split", in: []string{"sm"}, out: []string{"y1", "y2"}, attrs: []tAttr{aInt("axis", 1), aInts("split", 1, 1)}},
				{op: "Cast", in: []string{"y1"}, out: []string{"y"}, attrs: []tAttr{aInt("to", dtFloat16)}},
				{op: "Dropout", in: []string{"y2"}, out: []string{"d"}, attrs: []tAttr{aFloat("ratio", 0.5)}},
			},
			inits:   [][]byte{rawTensor("scales", f32Tensor(tensor.Shape{4}, 1, 1, 2, 2))},
			inputs:  []tValue{x},
			outputs: []tValue{fv("y"), fv("d")},
		}.bytes(),
		"constants.onnx": tModel{
			opset: 13,
			nodes: []tNode{
				{op: "Constant", out: []string{"a"}, attrs: []tAttr{aFloats("value_floats", 1, 2, 3)}},
				{op: "Constant", out: []string{"b"}, attrs: []tAttr{aTensor("value", rawTensor("", f32Tensor(tensor.Shape{3}, 4, 5, 6)))}},
				{op: "Add", in: []string{"a", "b"}, out: []string{"y"}},
			},
			outputs: []tValue{fv("y")},
		}.bytes(),
	}
}

// TestSeedModels checks that the committed seed models match seedModels
// (run with -update to rewrite them) and that they import.
func TestSeedModels(t *testing.T) {
	for name, data := range seedModels() {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			if *update {
				require.NoError(t, os.WriteFile(path, data, 0o644))
			}
			onDisk, err := os.ReadFile(path)
			require.NoError(t, err, "run: go test ./onnx -run TestSeedModels -update")
			assert.True(t, bytes.Equal(data, onDisk), "%s is stale; run: go test ./onnx -run TestSeedModels -update", path)
			m, err := ReadFile(path)
			require.NoError(t, err)
			assert.NotEmpty(t, m.Results)
		})
	}
}

// FuzzReadONNX feeds arbitrary bytes to Read: it must return a model or an
// error, never panic or allocate beyond what the input justifies.
func FuzzReadONNX(f *testing.F) {
	for _, data := range seedModels() {
		f.Add(data)
	}
	if paths, err := filepath.Glob(filepath.Join(libonnxTestdata, "*", "*", "model.onnx")); err == nil {
		for _, p := range paths {
			if st, err := os.Stat(p); err == nil && st.Size() < 64<<10 {
				if data, err := os.ReadFile(p); err == nil {
					f.Add(data)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(data)
		if err == nil && m == nil {
			t.Fatal("Read returned neither a model nor an error")
		}
		if _, _, err := ReadTensor(data); err == nil {
			return
		}
	})
}
