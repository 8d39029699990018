package quantize_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/quantize"
	"github.com/clinfer/clinfer/tensor"
)

// f32 is a seeded f32 tensor in [lo, hi).
func f32(t *testing.T, seed uint32, lo, hi float32, shape ...int64) *tensor.Tensor {
	s := tensor.Shape(shape)
	x, err := tensor.FromF32(s, seeded.Float32s(seed, int(s.NumElements()), lo, hi))
	require.NoError(t, err)
	return x
}

// smallNet is x [1,3,12,12] -> Conv 3x3 (8) -> BatchNormalization -> Relu
// -> Conv 1x1 (6, depthwise-free) -> HardSwish -> GlobalAveragePool ->
// Flatten -> Gemm (6 -> 5) -> MatMul (5 -> 4) -> y.
func smallNet(t *testing.T) *graph.Model {
	b := onnxbuild.New("small", 17).
		Input("x", tensor.F32, onnxbuild.Dims(1, 3, 12, 12)).
		Output("y", tensor.F32, onnxbuild.Dims(1, 4)).
		Initializer("w1", f32(t, 1, -0.5, 0.5, 8, 3, 3, 3)).Initializer("b1", f32(t, 2, -0.1, 0.1, 8)).
		Initializer("bn_s", f32(t, 3, 0.5, 1.5, 8)).Initializer("bn_b", f32(t, 4, -0.2, 0.2, 8)).
		Initializer("bn_m", f32(t, 5, -0.1, 0.1, 8)).Initializer("bn_v", f32(t, 6, 0.5, 1, 8)).
		Initializer("w2", f32(t, 7, -0.4, 0.4, 6, 8, 1, 1)).
		Initializer("wg", f32(t, 8, -1, 1, 6, 5)).Initializer("bg", f32(t, 9, -0.3, 0.3, 5)).
		Initializer("wm", f32(t, 10, -1, 1, 5, 4)).
		Node("Conv", "conv1", []string{"x", "w1", "b1"}, []string{"c1"}, map[string]any{"pads": []int64{1, 1, 1, 1}}).
		Node("BatchNormalization", "bn", []string{"c1", "bn_s", "bn_b", "bn_m", "bn_v"}, []string{"n1"}, nil).
		Node("Relu", "relu", []string{"n1"}, []string{"r1"}, nil).
		Node("Conv", "conv2", []string{"r1", "w2"}, []string{"c2"}, nil).
		Node("HardSwish", "hs", []string{"c2"}, []string{"h2"}, nil).
		Node("GlobalAveragePool", "gap", []string{"h2"}, []string{"g"}, nil).
		Node("Flatten", "flat", []string{"g"}, []string{"f"}, nil).
		Node("Gemm", "fc", []string{"f", "wg", "bg"}, []string{"fc"}, nil).
		Node("MatMul", "mm", []string{"fc", "wm"}, []string{"y"}, nil)
	m, err := onnx.Read(b.Bytes())
	require.NoError(t, err)
	return m
}

// samples are n seeded inputs for m's only input x.
func samples(t *testing.T, n int) []map[string]*tensor.Tensor {
	var s []map[string]*tensor.Tensor
	for i := range n {
		s = append(s, map[string]*tensor.Tensor{"x": f32(t, uint32(100+i), -1, 1, 1, 3, 12, 12)})
	}
	return s
}

// run compiles m on device and returns output y for x.
func run(t *testing.T, m *graph.Model, device string, x *tensor.Tensor) ([]float32, driver.CompiledModel) {
	core := driver.NewCore()
	t.Cleanup(func() { core.Close() })
	cm, err := core.CompileModel(context.Background(), m, device, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cm.Close() })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	return append([]float32(nil), y.Contiguous().F32()...), cm
}

func TestModelQDQ(t *testing.T) {
	m := smallNet(t)
	q, rep, err := quantize.Model(context.Background(), m, samples(t, 4), quantize.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"conv1+bn", "conv2", "fc", "mm"}, rep.Quantized)
	assert.Empty(t, rep.Float)
	assert.Equal(t, 4, rep.Samples)
	counts := map[string]int{}
	nodes, err := q.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		counts[n.OpType]++
	}
	// x, r1, f (pooled and flattened), fc: 4 activations; 4 weights
	// and 2 biases (conv1's with the batch norm folded in, fc's).
	assert.Equal(t, 4, counts["QuantizeLinear"])
	assert.Equal(t, 4+4+2, counts["DequantizeLinear"])
	assert.Zero(t, counts["BatchNormalization"], "folded before quantizing")
	for name, r := range rep.Ranges {
		assert.LessOrEqual(t, r.Min, 0.0, name)
		assert.GreaterOrEqual(t, r.ZeroPoint, int64(0), name)
		assert.LessOrEqual(t, r.ZeroPoint, int64(255), name)
	}

	// The QDQ model, written and read back, runs close to the float one
	// and in integers on the CPU.
	blob, err := onnx.Marshal(q)
	require.NoError(t, err)
	back, err := onnx.Read(blob)
	require.NoError(t, err)
	x := f32(t, 7, -1, 1, 1, 3, 12, 12)
	want, _ := run(t, m, "CPU", x)
	got, cm := run(t, back, "CPU", x)
	var maxAbs, maxErr float64
	for i := range want {
		maxAbs = max(maxAbs, math.Abs(float64(want[i])))
		maxErr = max(maxErr, math.Abs(float64(got[i]-want[i])))
	}
	assert.Less(t, maxErr, 0.05*maxAbs, "int8 output %v vs float %v", got, want)
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	rnodes, err := rm.Nodes()
	require.NoError(t, err)
	ints := 0
	for _, n := range rnodes {
		if graph.IsQuantizedFused(n) {
			ints++
			assert.Equal(t, "u8", n.RT.Extra[driver.RuntimePrecision], n.Name)
		}
		assert.NotContains(t, []string{"Conv", "FusedConv", "MatMul", "Gemm", "FullyConnected"}, n.OpType, "%s stayed float: %s", n.Name, n.RT.Extra[fusion.KeyQuantization])
	}
	assert.Equal(t, 4, ints)
}

func TestModelOptions(t *testing.T) {
	m := smallNet(t)
	q, rep, err := quantize.Model(context.Background(), m, samples(t, 2), quantize.Options{
		Activations: tensor.I8, Method: quantize.Percentile, Percentile: 99.9, Exclude: []string{"fc"}, PerTensorWeights: true, OpTypes: []string{"Conv", "Gemm"},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"conv1+bn", "conv2"}, rep.Quantized)
	assert.Equal(t, map[string]string{"fc": "excluded"}, rep.Float)
	nodes, err := q.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		if n.OpType == "QuantizeLinear" {
			assert.Equal(t, tensor.I8, n.Outputs[0].Type)
		}
		if n.OpType == "DequantizeLinear" && n.Input(0).Type() == tensor.I8 && n.Input(0).Node.OpType == graph.OpConstant {
			assert.Equal(t, int64(1), n.Input(1).Node.Value.NumElements(), "per-tensor weights")
		}
	}

	_, _, err = quantize.Model(context.Background(), m, nil, quantize.Options{})
	assert.ErrorIs(t, err, quantize.ErrNoSamples)
	_, _, err = quantize.Model(context.Background(), m, samples(t, 1), quantize.Options{Exclude: []string{"nope"}})
	assert.ErrorContains(t, err, `"nope"`)
	_, _, err = quantize.Model(context.Background(), m, samples(t, 1), quantize.Options{Activations: tensor.I16})
	assert.ErrorContains(t, err, "u8 or i8")
	_, _, err = quantize.Model(context.Background(), m, samples(t, 1), quantize.Options{OpTypes: []string{"LSTM"}})
	assert.ErrorContains(t, err, "LSTM")
	meth, err := quantize.ParseMethod("percentile")
	require.NoError(t, err)
	assert.Equal(t, "percentile", meth.String())
	_, err = quantize.ParseMethod("entropy")
	assert.Error(t, err)
}
