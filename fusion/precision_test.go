package fusion_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// TestConvertPrecision lowers the Add and Mul of
// out0 = Mul(Relu(Add(x, c)), y) and out1 = Add(x, c) to f16: the f32
// constant is converted once, inputs and the f32-only Relu are joined
// through Casts, the outputs keep f32, and the CPU runs the result within
// f16 tolerance of the f32 graph.
func TestConvertPrecision(t *testing.T) {
	build := func() *graph.Model {
		b := newBuilder(t)
		x, y := b.param("x", 2, 8), b.param("y", 2, 8)
		add := b.op("Add", nil, x, b.rand(-1, 1, 8))
		return b.model(b.op("Mul", nil, b.op("Relu", nil, add), y), add)
	}
	m := build()
	require.NoError(t, m.InferShapes())
	policy := func(n *graph.Node) (bool, []int) { return n.OpType == "Add" || n.OpType == "Mul", nil }
	count, err := fusion.ConvertPrecision(m, tensor.F16, policy)
	require.NoError(t, err)
	assert.Equal(t, 2, count, "Add and Mul run in f16")

	nodes, err := m.Nodes()
	require.NoError(t, err)
	types := map[string]tensor.ElementType{}
	casts := 0
	for _, n := range nodes {
		switch n.OpType {
		case "Add", "Mul", "Relu":
			types[n.OpType] = n.Outputs[0].Type
			for i, in := range n.Inputs {
				assert.Equal(t, n.Outputs[0].Type, in.Type(), "%s input %d is not in its precision", n.Name, i)
			}
		case "Cast":
			casts++
		case graph.OpConstant:
			if n.Outputs[0].Type == tensor.F16 {
				assert.Contains(t, n.Name, "/f16", "the converted constant is named after the original")
			}
		}
	}
	assert.Equal(t, map[string]tensor.ElementType{"Add": tensor.F16, "Mul": tensor.F16, "Relu": tensor.F32}, types)
	// x->f16, Add->f32 for Relu, Relu->f16, y->f16, Mul->f32 and Add->f32
	// for the results (the widened Add is shared by Relu and out1).
	assert.Equal(t, 5, casts)
	for _, r := range m.Results {
		assert.Equal(t, tensor.F32, r.Outputs[0].Type, "result %s keeps f32", r.Name)
	}
	for _, p := range m.Parameters {
		assert.Equal(t, tensor.F32, p.Outputs[0].Type, "parameter %s keeps f32", p.Name)
	}

	ref := build()
	ins := randomInputs(t, ref, 3, nil)
	requireClose(t, runCPU(t, ref, ins), runCPU(t, m, ins), 2e-3, 2e-3)

	t.Run("f32 is a no-op", func(t *testing.T) {
		m := build()
		require.NoError(t, m.InferShapes())
		n, err := fusion.ConvertPrecision(m, tensor.F32, policy)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, opCount(t, m, "Cast"))
	})
	t.Run("kept inputs stay f32", func(t *testing.T) {
		b := newBuilder(t)
		x := b.param("x", 1, 1, 2, 2)
		scales := b.op("Identity", nil, b.rand(2, 2, 4))
		m := b.model(b.op("Resize", graph.Attrs{"mode": "nearest"}, x, graph.Output{}, scales))
		require.NoError(t, m.InferShapes())
		_, err := fusion.ConvertPrecision(m, tensor.F16, func(n *graph.Node) (bool, []int) { return n.OpType == "Resize", []int{1, 2} })
		require.NoError(t, err)
		r := m.Results[0].Input(0).Node.Input(0).Node // Result <- Cast <- Resize
		require.Equal(t, "Resize", r.OpType)
		assert.Equal(t, tensor.F16, r.Input(0).Type())
		assert.Equal(t, tensor.F32, r.Input(2).Type(), "scales stay f32")
	})
}

// TestConvertF16ToF32 runs an f16 model the way onnxconverter-common
// writes one (f32 ports, a Cast to f16 after the input, f16 weights, Casts
// around an f32-only op, a Cast to f32 before the output) plus an f16 input
// and an f16 output, and checks that ConvertF16ToF32 and RemoveIdentity
// leave every op in f32 with the weights decompressed, keep the ports'
// types through the only two Casts left, and compute within f16 tolerance
// of the model as written; with KeepF16 the pass does nothing.
func TestConvertF16ToF32(t *testing.T) {
	half := func(o graph.Output) graph.Output {
		v, err := o.Node.Value.Convert(tensor.F16)
		require.NoError(t, err)
		return graph.NewConstant(o.Node.Name+"_f16", v).Out(0)
	}
	build := func() *graph.Model {
		b := newBuilder(t)
		x := b.param("x", 1, 4, 8, 8)
		hp := graph.NewParameter("h", tensor.F16, graph.ShapeOf(1, 8, 8, 8))
		b.params = append(b.params, hp)
		toF16 := graph.Attrs{"to": int64(tensor.F16)}
		toF32 := graph.Attrs{"to": int64(tensor.F32)}
		xh := b.op("Cast", toF16, x)
		conv := b.op("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, xh, half(b.rand(-0.3, 0.3, 8, 4, 3, 3)), half(b.rand(-0.1, 0.1, 8)))
		relu := b.op("Relu", nil, conv)
		sig := b.op("Cast", toF16, b.op("Sigmoid", nil, b.op("Cast", toF32, relu)))
		add := b.op("Add", nil, sig, hp.Out(0))
		return b.model(b.op("Cast", toF32, add), add)
	}
	m := build()
	require.NoError(t, m.InferShapes())
	tm := m.Clone()
	rep, err := fusion.NewManager(fusion.ConvertF16ToF32(), fusion.RemoveIdentity()).Run(context.Background(), tm, fusion.Options{})
	require.NoError(t, err)
	require.NoError(t, tm.Validate())
	assert.Positive(t, rep.Passes[0].Rewrites)

	nodes, err := tm.Nodes()
	require.NoError(t, err)
	var casts []string
	for _, n := range nodes {
		switch n.OpType {
		case "Conv", "Relu", "Sigmoid", "Add":
			assert.Equal(t, tensor.F32, n.Outputs[0].Type, "%s runs in f32", n.Name)
			for i, in := range n.Inputs {
				assert.Equal(t, tensor.F32, in.Type(), "%s input %d", n.Name, i)
			}
		case graph.OpConstant:
			assert.NotEqual(t, tensor.F16, n.Outputs[0].Type, "constant %s is decompressed", n.Name)
		case "Cast":
			casts = append(casts, fmt.Sprintf("%s->%s", n.Input(0).Type(), n.Outputs[0].Type))
		}
	}
	assert.ElementsMatch(t, []string{"f16->f32", "f32->f16"}, casts, "only the f16 input and the f16 output are cast")
	assert.Equal(t, []tensor.ElementType{tensor.F32, tensor.F16}, []tensor.ElementType{tm.Parameters[0].Outputs[0].Type, tm.Parameters[1].Outputs[0].Type})
	assert.Equal(t, []tensor.ElementType{tensor.F32, tensor.F16}, []tensor.ElementType{tm.Results[0].Outputs[0].Type, tm.Results[1].Outputs[0].Type})

	ins := randomInputs(t, graph.NewModel("x only", m.Parameters[:1], nil), 5, nil)
	h, err := tensor.FromF32(tensor.Shape{1, 8, 8, 8}, seeded.Float32s(9, 512, -1, 1))
	require.NoError(t, err)
	ins["h"], err = h.Convert(tensor.F16)
	require.NoError(t, err)
	requireClose(t, runCPU(t, m, ins), runCPU(t, tm, ins), 2e-3, 2e-3)

	t.Run("KeepF16 runs the model as written", func(t *testing.T) {
		km := m.Clone()
		rep, err := fusion.NewManager(fusion.ConvertF16ToF32()).Run(context.Background(), km, fusion.Options{KeepF16: true})
		require.NoError(t, err)
		assert.Zero(t, rep.Passes[0].Rewrites)
		assert.Equal(t, 4, opCount(t, km, "Cast"))
	})
	t.Run("the hint f16 sets KeepF16", func(t *testing.T) {
		o, err := fusion.ParseOptions(map[string]string{driver.KeyInferencePrecisionHint: "f16"})
		require.NoError(t, err)
		assert.True(t, o.KeepF16)
		o, err = fusion.ParseOptions(map[string]string{driver.KeyInferencePrecisionHint: "f32"})
		require.NoError(t, err)
		assert.False(t, o.KeepF16)
	})
}
