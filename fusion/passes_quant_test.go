package fusion_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// constOf is a constant of type t from float64 values.
func (b *builder) constOf(t tensor.ElementType, shape tensor.Shape, v ...float64) graph.Output {
	x, err := tensor.FromFloat64s(t, shape, v)
	require.NoError(b.t, err)
	return graph.NewConstant(b.name("q"), x).Out(0)
}

// qweights are seeded int8 weights of shape with their per-channel
// scales ([shape[axis]]) and zero points.
func (b *builder) qweights(t tensor.ElementType, axis int, shape ...int64) (w, scale, zp graph.Output) {
	s := tensor.Shape(shape)
	v := make([]float64, s.NumElements())
	for i := range v {
		v[i] = float64((i*37)%255 - 127)
		if t == tensor.U8 {
			v[i] += 127
		}
	}
	c := shape[axis]
	sc, z := make([]float64, c), make([]float64, c)
	for i := range sc {
		sc[i] = 0.001 * float64(1+i%7)
	}
	return b.constOf(t, s, v...), b.constOf(tensor.F32, tensor.Shape{c}, sc...), b.constOf(t, tensor.Shape{c}, z...)
}

// qdq is x quantized to u8 and dequantized (scale 0.02, zero point 128).
func (b *builder) qdq(x graph.Output) graph.Output {
	s, z := b.scalar(0.02), b.constOf(tensor.U8, tensor.Shape{}, 128)
	return b.op("DequantizeLinear", nil, b.op("QuantizeLinear", nil, x, s, z), s, z)
}

// quantized runs the default pipeline on a clone of m and checks the
// result against m on the CPU within tol (the integer path rounds
// differently from the float one: a quantization step or two).
func quantized(t *testing.T, m *graph.Model, tol float64) *graph.Model {
	t.Helper()
	tm := m.Clone()
	_, err := fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
	require.NoError(t, err)
	require.NoError(t, tm.Validate())
	in := randomInputs(t, m, 7, nil)
	requireClose(t, runCPU(t, m, in), runCPU(t, tm, in), tol, 0)
	return tm
}

func TestFuseQuantizedQDQConv(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 4, 9, 11)
	w, ws, wz := b.qweights(tensor.I8, 0, 6, 4, 3, 3)
	conv := b.op("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, b.qdq(x),
		b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, w, ws, wz), b.rand(-1, 1, 6))
	y := b.qdq(b.op("Relu", nil, conv))
	// A second conv on the same quantized input: the shared
	// DequantizeLinear is duplicated so both fuse.
	w2, ws2, wz2 := b.qweights(tensor.I8, 0, 2, 4, 1, 1)
	conv2 := b.op("Conv", nil, graph.Output{}, b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, w2, ws2, wz2))
	conv2.Node.Inputs[0] = conv.Node.Inputs[0]
	m := b.model(y, conv2)
	tm := quantized(t, m, 0.05)
	assert.Equal(t, 2, opCount(t, tm, graph.OpQuantizedConv))
	assert.Zero(t, opCount(t, tm, "Conv"))
	nodes, err := tm.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		if n.OpType != graph.OpQuantizedConv {
			continue
		}
		if n.Input(graph.QuantInYScale).Valid() {
			assert.Equal(t, tensor.U8, n.Outputs[0].Type, "requantized: the QuantizeLinear after the Relu")
			assert.Equal(t, []string{graph.PostRelu}, n.Attrs.Strings(graph.AttrPostOps, nil))
			assert.Contains(t, n.OriginalNames(), conv.Node.Name)
		} else {
			assert.Equal(t, tensor.F32, n.Outputs[0].Type)
		}
	}
}

func TestFuseQuantizedQDQMatMulAndGemm(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 3, 8)
	w, ws, wz := b.qweights(tensor.I8, 1, 8, 5)
	mm := b.op("MatMul", nil, b.qdq(x), b.op("DequantizeLinear", graph.Attrs{"axis": int64(1)}, w, ws, wz))
	wt, wst, wzt := b.qweights(tensor.I8, 0, 4, 8)
	gemm := b.op("Gemm", graph.Attrs{"transB": int64(1), "beta": float32(0.5)}, b.qdq(x),
		b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, wt, wst, wzt), b.rand(-1, 1, 4))
	tm := quantized(t, b.model(mm, gemm), 0.02)
	assert.Equal(t, 2, opCount(t, tm, graph.OpQuantizedFullyConnected))
	assert.Zero(t, opCount(t, tm, "Gemm")+opCount(t, tm, "MatMul"))
}

func TestFuseQuantizedDynamic(t *testing.T) {
	// ONNX Runtime's quantize_dynamic form (IS-Net): DynamicQuantizeLinear
	// -> ConvInteger -> Cast -> Mul(x_scale * w_scale) -> Add(bias) ->
	// Relu.
	b := newBuilder(t)
	x := b.param("x", 1, 3, 8, 8)
	dq := graph.NewNode("DynamicQuantizeLinear", "dql", []graph.Output{x}, nil, 3)
	w := b.constOf(tensor.U8, tensor.Shape{5, 3, 3, 3}, make([]float64, 135)...)
	for i, v := range w.Node.Value.U8() {
		w.Node.Value.U8()[i] = v + uint8(i*29)
	}
	ci := b.op("ConvInteger", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, dq.Out(0), w, dq.Out(2), b.constOf(tensor.U8, tensor.Shape{}, 131))
	scales := b.op("Mul", nil, dq.Out(1), b.scalar(0.003))
	y := b.op("Relu", nil, b.op("Add", nil, b.op("Mul", nil, b.op("Cast", graph.Attrs{"to": int64(tensor.F32)}, ci), scales), b.rand(-1, 1, 1, 5, 1, 1)))
	m := b.model(y)
	tm := m.Clone()
	_, err := fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
	require.NoError(t, err)
	in := randomInputs(t, m, 3, nil)
	// The same f32 operations in the same order: the same bits.
	assert.Equal(t, runCPU(t, m, in)[0].F32(), runCPU(t, tm, in)[0].F32())
	require.Equal(t, 1, opCount(t, tm, graph.OpQuantizedConv))
	nodes, err := tm.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		if n.OpType == graph.OpQuantizedConv {
			assert.True(t, n.Input(graph.QuantInBias).Valid(), "the Add became the bias")
			assert.Equal(t, []string{graph.PostRelu}, n.Attrs.Strings(graph.AttrPostOps, nil))
		}
	}
}

func TestFuseQuantizedSaysWhyFloat(t *testing.T) {
	cases := []struct {
		name string
		wt   tensor.ElementType
		dq   graph.Attrs
		xt   tensor.ElementType
		why  string
	}{
		{"int16 data", tensor.I8, graph.Attrs{"axis": int64(0)}, tensor.I16, "the data is quantized to i16"},
		{"int4 weights", tensor.I4, graph.Attrs{"axis": int64(0)}, tensor.U8, "the weights are quantized to i4"},
		{"blocked weights", tensor.I8, graph.Attrs{"axis": int64(1), "block_size": int64(2)}, tensor.U8, "per block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			x := b.param("x", 1, 4, 5, 5)
			s, z := b.scalar(0.02), b.constOf(tc.xt, tensor.Shape{}, 3)
			xdq := b.op("DequantizeLinear", nil, b.op("QuantizeLinear", nil, x, s, z), s, z)
			wv := make([]float64, 3*4*3*3)
			for i := range wv {
				wv[i] = float64(i%7 - 3)
			}
			var ws, wz graph.Output
			if tc.dq.Int("block_size", 0) > 0 {
				ws, wz = b.rand(0.01, 0.02, 3, 2, 3, 3), b.constOf(tc.wt, tensor.Shape{3, 2, 3, 3}, make([]float64, 54)...)
			} else {
				ws, wz = b.rand(0.01, 0.02, 3), b.constOf(tc.wt, tensor.Shape{3}, 0, 0, 0)
			}
			conv := b.op("Conv", nil, xdq, b.op("DequantizeLinear", tc.dq, b.constOf(tc.wt, tensor.Shape{3, 4, 3, 3}, wv...), ws, wz))
			tm := quantized(t, b.model(conv), 1e-4)
			assert.Zero(t, opCount(t, tm, graph.OpQuantizedConv))
			nodes, err := tm.Nodes()
			require.NoError(t, err)
			found := false
			for _, n := range nodes {
				if why := n.RT.Extra[fusion.KeyQuantization]; why != "" {
					found = true
					assert.Contains(t, why, tc.why)
				}
			}
			assert.True(t, found, "a node says why it runs in float")
		})
	}
}

func TestFuseQuantizedQuantizesOnLoad(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 16, 16)
	// A 1x1 convolution of 8 channels quantizes its data on load; a 3x3
	// one at stride 2 would quantize each element once per tap (and the
	// discarded lanes of its loads) and keeps its QuantizeLinear.
	w, ws, wz := b.qweights(tensor.I8, 0, 8, 3, 1, 1)
	pointwise := b.op("Conv", nil, b.qdq(x), b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, w, ws, wz))
	w2, ws2, wz2 := b.qweights(tensor.I8, 0, 8, 3, 3, 3)
	wide := b.op("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}}, b.qdq(b.op("Relu", nil, x)),
		b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, w2, ws2, wz2))
	// A grouped 1x1 convolution (3 groups of one channel to two) is not
	// one the kernels that quantize on load take: it keeps its
	// QuantizeLinear.
	w3, ws3, wz3 := b.qweights(tensor.I8, 0, 6, 1, 1, 1)
	grouped := b.op("Conv", graph.Attrs{"group": int64(3)}, b.qdq(b.op("Sigmoid", nil, x)),
		b.op("DequantizeLinear", graph.Attrs{"axis": int64(0)}, w3, ws3, wz3))
	m := b.model(pointwise, wide, grouped)
	tm := quantized(t, m, 0.05)
	assert.Equal(t, 3, opCount(t, tm, graph.OpQuantizedConv))
	assert.Equal(t, 2, opCount(t, tm, "QuantizeLinear"), "the 3x3 and the grouped convolutions'")
	nodes, err := tm.Nodes()
	require.NoError(t, err)
	var onLoad *graph.Node
	for _, n := range nodes {
		if graph.QuantizesOnLoad(n) {
			require.Nil(t, onLoad, "one convolution quantizes on load")
			onLoad = n
		}
	}
	require.NotNil(t, onLoad)
	assert.Equal(t, tensor.U8, graph.IntegerPrecision(onLoad))
	// Quantizing on load is QuantizeLinear then the convolution, bit for
	// bit.
	sep := tm.Clone()
	snodes, err := sep.Nodes()
	require.NoError(t, err)
	for _, n := range snodes {
		if graph.QuantizesOnLoad(n) {
			q := graph.NewNode("QuantizeLinear", "q", []graph.Output{n.Input(graph.QuantInX), n.Input(graph.QuantInXScale), n.Input(graph.QuantInXZero)}, nil, 1)
			require.NoError(t, graph.InferNode(q))
			n.Inputs[graph.QuantInX] = q.Out(0)
		}
	}
	in := randomInputs(t, m, 11, nil)
	got, want := runCPU(t, tm, in), runCPU(t, sep, in)
	for i := range want {
		assert.Equal(t, want[i].F32(), got[i].F32(), "output %d", i)
	}
}
