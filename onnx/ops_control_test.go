package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// nestedIf is y = If(c1, then: If(c2, then: x + w, else: Relu(x)) * k,
// else: Neg(x)), where x and c2 are graph inputs, w an initializer and k a
// value made by a node listed after the If (ordered by what the branches
// read, not by file order). Every outer value is read by name from inside
// the branches.
func nestedIf() tModel {
	inner := tModel{name: "inner",
		nodes: []tNode{{op: "If", name: "if2", in: []string{"c2"}, out: []string{"t"}, attrs: []tAttr{
			aSubgraph("then_branch", tModel{name: "add", nodes: []tNode{{op: "Add", in: []string{"x", "w"}, out: []string{"a"}}}, outputs: []tValue{fv("a")}}),
			aSubgraph("else_branch", tModel{name: "relu", nodes: []tNode{{op: "Relu", in: []string{"x"}, out: []string{"r"}}}, outputs: []tValue{fv("r")}}),
		}}, {op: "Mul", in: []string{"t", "k"}, out: []string{"tk"}}},
		outputs: []tValue{fv("tk")}}
	neg := tModel{name: "neg", nodes: []tNode{{op: "Neg", in: []string{"x"}, out: []string{"n"}}}, outputs: []tValue{fv("n")}}
	return tModel{opset: 13, name: "nested",
		nodes: []tNode{
			{op: "If", name: "if1", in: []string{"c1"}, out: []string{"y"}, attrs: []tAttr{aSubgraph("then_branch", inner), aSubgraph("else_branch", neg)}},
			{op: "Abs", name: "k", in: []string{"x"}, out: []string{"k"}},
		},
		inits:   [][]byte{rawTensor("w", f32Tensor(tensor.Shape{3}, 10, 20, 30))},
		inputs:  []tValue{{name: "c1", elem: dtBool, dims: []any{}}, {name: "c2", elem: dtBool, dims: []any{}}, fv("x", 2, 3)},
		outputs: []tValue{fv("y")},
	}
}

// TestImportCaptures: reads of the outer scope become the If nodes'
// trailing captured inputs and bodies' Parameters named after the values,
// through two levels; the model runs right for every pair of conditions.
func TestImportCaptures(t *testing.T) {
	m, err := Read(nestedIf().bytes())
	require.NoError(t, err)
	if1 := m.Node("if1")
	require.NotNil(t, if1)
	assert.Equal(t, "[2,3]", m.Results[0].Outputs[0].Shape.String())
	k, err := graph.Captures(if1)
	require.NoError(t, err)
	assert.Equal(t, len(if1.Inputs)-1, k)
	var names []string
	for _, in := range if1.Inputs[1:] {
		names = append(names, in.Port().Name)
	}
	assert.ElementsMatch(t, []string{"c2", "x", "w", "k"}, names)
	then, els, err := graph.IfBranches(if1)
	require.NoError(t, err)
	for i, p := range then.Parameters {
		assert.Equal(t, names[i], p.Name, "then_branch parameter %d is named after the value it binds", i)
		assert.Equal(t, names[i], els.Parameters[i].Name)
	}
	if2 := then.Node("if2")
	require.NotNil(t, if2)
	k2, _ := graph.Captures(if2)
	assert.Equal(t, 2, k2, "the inner If captures x and w from the then branch's scope")

	x := f32Tensor(tensor.Shape{2, 3}, -1, 2, -3, 4, -5, 6)
	for _, c := range []struct {
		c1, c2 bool
		want   []float32
	}{
		{true, true, []float32{9, 44, 81, 56, 75, 216}},
		{true, false, []float32{0, 4, 0, 16, 0, 36}},
		{false, true, []float32{1, -2, 3, -4, 5, -6}},
		{false, false, []float32{1, -2, 3, -4, 5, -6}},
	} {
		b1, _ := tensor.FromBool(tensor.Shape{}, []bool{c.c1})
		b2, _ := tensor.FromBool(tensor.Shape{}, []bool{c.c2})
		got := runModel(t, m, map[string]*tensor.Tensor{"c1": b1, "c2": b2, "x": x})
		assert.InDeltaSlice(t, c.want, got[0].F32(), 1e-6, "c1=%v c2=%v", c.c1, c.c2)
	}
}

// TestImportScan8: opset 8's batched Scan becomes a Loop over the batch
// whose body runs the opset-9 Scan, with the same outputs.
func TestImportScan8(t *testing.T) {
	body := tModel{name: "body",
		nodes:   []tNode{{op: "Add", in: []string{"s", "xi"}, out: []string{"s2"}}, {op: "Identity", in: []string{"s2"}, out: []string{"o"}}},
		inputs:  []tValue{fv("s", 2), fv("xi", 2)},
		outputs: []tValue{fv("s2", 2), fv("o", 2)}}
	tm := tModel{opset: 8, name: "scan8",
		nodes:   []tNode{{op: "Scan", name: "scan", in: []string{"", "init", "xs"}, out: []string{"y", "z"}, attrs: []tAttr{aSubgraph("body", body), aInt("num_scan_inputs", 1), aInts("directions", 1)}}},
		inputs:  []tValue{fv("init", 2, 2), fv("xs", 2, 3, 2)},
		outputs: []tValue{fv("y"), fv("z")}}
	m, err := Read(tm.bytes())
	require.NoError(t, err)
	assert.Equal(t, "[2,2]", m.Results[0].Outputs[0].Shape.String())
	assert.Equal(t, "[2,3,2]", m.Results[1].Outputs[0].Shape.String())
	init := f32Tensor(tensor.Shape{2, 2}, 0, 0, 100, 100)
	xs := f32Tensor(tensor.Shape{2, 3, 2}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	got := runModel(t, m, map[string]*tensor.Tensor{"init": init, "xs": xs})
	assert.Equal(t, []float32{9, 12, 127, 130}, got[0].F32())
	// Reverse direction: the first slice seen is the last.
	assert.Equal(t, []float32{5, 6, 8, 10, 9, 12, 111, 112, 120, 122, 127, 130}, got[1].F32())

	bad := tm
	bad.nodes = []tNode{{op: "Scan", name: "scan", in: []string{"lens", "init", "xs"}, out: []string{"y", "z"}, attrs: []tAttr{aSubgraph("body", body), aInt("num_scan_inputs", 1)}}}
	bad.inputs = append(bad.inputs, tValue{name: "lens", elem: dtInt64, dims: []any{2}})
	_, err = Read(bad.bytes())
	assert.ErrorIs(t, err, ErrUnsupportedAttribute)
	assert.ErrorContains(t, err, "sequence_lens")
}

// runModel evaluates m on the host, node by node, with the reference
// kernels, and returns its outputs in order.
func runModel(t *testing.T, m *graph.Model, in map[string]*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	nodes, err := m.Nodes()
	require.NoError(t, err)
	vals := map[graph.Output]*tensor.Tensor{}
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter:
			vals[n.Out(0)] = in[n.Name]
			continue
		case graph.OpConstant:
			vals[n.Out(0)] = n.Value
			continue
		case graph.OpResult:
			continue
		}
		args := make([]*tensor.Tensor, len(n.Inputs))
		for i, x := range n.Inputs {
			if x.Valid() {
				args[i] = vals[x]
			}
		}
		outs, err := ref.Evaluate(n, args)
		require.NoError(t, err, n.Name)
		for i := range n.Outputs {
			vals[n.Out(i)] = outs[i]
		}
	}
	var out []*tensor.Tensor
	for _, r := range m.Results {
		out = append(out, vals[r.Input(0)])
	}
	return out
}
