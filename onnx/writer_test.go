package onnx

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// sameGraph checks that two models have the same ops with the same
// attributes, constants and ports, in topological order.
func sameGraph(t *testing.T, want, got *graph.Model) {
	t.Helper()
	wn, err := want.Nodes()
	require.NoError(t, err)
	gn, err := got.Nodes()
	require.NoError(t, err)
	count := func(ns []*graph.Node) map[string]int {
		c := map[string]int{}
		for _, n := range ns {
			c[n.OpType]++
		}
		return c
	}
	require.Equal(t, count(wn), count(gn))
	require.Len(t, got.Parameters, len(want.Parameters))
	require.Len(t, got.Results, len(want.Results))
	for i, r := range want.Results {
		g := got.Results[i]
		assert.Equal(t, r.Outputs[0].Name, g.Outputs[0].Name)
		assert.Equal(t, r.Outputs[0].Type, g.Outputs[0].Type)
		assert.Equal(t, r.Outputs[0].Shape.String(), g.Outputs[0].Shape.String())
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	w, err := tensor.From(tensor.Shape{2, 3}, []tensor.Int4{-8, 7, 0, 1, -1, 3})
	require.NoError(t, err)
	scale := f32Tensor(tensor.Shape{2}, 0.5, 0.25)
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{Dims: []graph.Dim{graph.DynamicDim("batch"), graph.StaticDim(3)}, RankKnown: true})
	dq := graph.NewNode("DequantizeLinear", "dq", []graph.Output{graph.NewConstant("w", w).Out(0), graph.NewConstant("s", scale).Out(0)}, graph.Attrs{"axis": int64(0)}, 1)
	mm := graph.NewNode("MatMul", "mm", []graph.Output{x.Out(0), graph.NewNode("Transpose", "t", []graph.Output{dq.Out(0)}, graph.Attrs{"perm": []int64{1, 0}}, 1).Out(0)}, nil, 1)
	c := graph.NewNode("Cast", "cast", []graph.Output{mm.Out(0)}, graph.Attrs{"to": int64(tensor.F16)}, 1)
	q := graph.NewNode("QuantizeLinear", "q", []graph.Output{x.Out(0), graph.NewConstant("qs", f32Tensor(tensor.Shape{}, 0.1)).Out(0)}, graph.Attrs{graph.AttrOutputType: int64(tensor.U4)}, 1)
	m := graph.NewModel("rt", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", c.Out(0)), graph.NewResult("q", q.Out(0)), graph.NewResult("x", x.Out(0))}) // an output that is an input keeps its name
	require.NoError(t, m.InferShapes())
	data, err := Marshal(m)
	require.NoError(t, err)
	back, err := Read(data)
	require.NoError(t, err)
	sameGraph(t, m, back)
	nodes, err := back.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		switch n.OpType {
		case "Cast":
			assert.Equal(t, int64(tensor.F16), n.Attrs.Int("to", 0), "Cast's to goes through the ONNX data type")
		case "QuantizeLinear":
			assert.Equal(t, tensor.U4, n.Outputs[0].Type)
		case "DequantizeLinear":
			v, ok := n.ConstInput(0)
			require.True(t, ok)
			assert.Equal(t, w.Bytes(), v.Bytes(), "int4 weights packed and unpacked")
		}
	}
	assert.Equal(t, "batch", back.Parameters[0].Outputs[0].Shape.Dims[0].Name)

	fused := graph.NewNode(graph.OpFusedConv, "fc", []graph.Output{x.Out(0)}, nil, 1)
	_, err = Marshal(graph.NewModel("f", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", fused.Out(0))}))
	assert.ErrorIs(t, err, ErrNotExportable)
}

func TestMarshalRealModels(t *testing.T) {
	for _, name := range []string{"ch_PP-OCRv4_det_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "hello_deepa.onnx"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(realModelDir(), name)
			m, err := ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s: %v; fetch the models with: make models", name, err)
			}
			require.NoError(t, err, "reading %s", path)
			data, err := Marshal(m)
			require.NoError(t, err)
			back, err := Read(data)
			require.NoError(t, err)
			sameGraph(t, m, back)
		})
	}
}
