package fusion_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
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
