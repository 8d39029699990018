package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/tensor"
)

// f32 is a seeded f32 tensor in [lo, hi).
func f32(t *testing.T, seed uint32, lo, hi float32, shape ...int64) *tensor.Tensor {
	x, err := tensor.FromF32(shape, seeded.Float32s(seed, int(tensor.Shape(shape).NumElements()), lo, hi))
	require.NoError(t, err)
	return x
}

// TestRun quantizes a Conv -> Relu -> Conv model from .npy samples and
// from random ones, writes a QDQ model that reads back, and checks it
// against the float model on the CPU (-check).
func TestRun(t *testing.T) {
	dir := t.TempDir()
	b := onnxbuild.New("tiny", 17).
		Input("x", tensor.F32, onnxbuild.Dims(1, 3, 10, 10)).
		Output("y", tensor.F32, onnxbuild.Dims(1, 4, 10, 10)).
		Initializer("w1", f32(t, 1, -0.5, 0.5, 6, 3, 3, 3)).Initializer("b1", f32(t, 2, -0.1, 0.1, 6)).
		Initializer("w2", f32(t, 3, -0.5, 0.5, 4, 6, 1, 1)).
		Node("Conv", "conv1", []string{"x", "w1", "b1"}, []string{"c1"}, map[string]any{"pads": []int64{1, 1, 1, 1}}).
		Node("Relu", "relu", []string{"c1"}, []string{"r1"}, nil).
		Node("Conv", "conv2", []string{"r1", "w2"}, []string{"y"}, nil)
	model := filepath.Join(dir, "tiny.onnx")
	require.NoError(t, os.WriteFile(model, b.Bytes(), 0o644))
	calib := filepath.Join(dir, "calib")
	require.NoError(t, os.Mkdir(calib, 0o755))
	for i := range 3 {
		require.NoError(t, npy.WriteFile(filepath.Join(calib, string(rune('a'+i))+".npy"), f32(t, uint32(10+i), -1, 1, 1, 3, 10, 10)))
	}
	in := filepath.Join(dir, "x.npy")
	require.NoError(t, npy.WriteFile(in, f32(t, 99, -1, 1, 1, 3, 10, 10)))

	out := filepath.Join(dir, "tiny_int8.onnx")
	var log bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-m", model, "-calib", calib, "-o", out, "-check", in, "-check_device", "CPU", "-threshold", "0", "-iters", "2"}, &log))
	assert.Contains(t, log.String(), "2 nodes quantized")
	assert.Contains(t, log.String(), "convolutions and products in u8/i8: f32 0, int8 2", "both convolutions run in integers")
	assert.Contains(t, log.String(), "IoU")
	q, err := onnx.ReadFile(out)
	require.NoError(t, err)
	ops := map[string]int{}
	nodes, err := q.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		ops[n.OpType]++
	}
	assert.Equal(t, 2, ops["QuantizeLinear"], "x and r1")

	log.Reset()
	require.NoError(t, run(context.Background(), []string{"-m", model, "-calib-random", "2", "-activations", "i8", "-method", "percentile", "-o", out}, &log))
	assert.Contains(t, log.String(), "activations i8, percentile over 2 samples")

	for _, args := range [][]string{
		{"-m", model, "-o", out},
		{"-m", model, "-o", out, "-calib", calib, "-calib-random", "2"},
		{"-m", model, "-calib-random", "2"},
		{"-m", model, "-o", out, "-calib-random", "2", "-activations", "f16"},
	} {
		assert.Error(t, run(context.Background(), args, &log), "%q", args)
	}
}
