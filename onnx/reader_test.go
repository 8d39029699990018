package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestReadBasics(t *testing.T) {
	m := tModel{
		opset: 17,
		name:  "g",
		nodes: []tNode{
			{op: "Add", in: []string{"x", "w"}, out: []string{"s"}},
			{op: "Relu", in: []string{"s"}, out: []string{"y"}},
			{op: "Relu", name: "Relu_1", in: []string{"y"}, out: []string{"z"}},
		},
		inits:   [][]byte{rawTensor("w", f32Tensor(tensor.Shape{3}, 1, 2, 3))},
		inputs:  []tValue{fv("x", "batch", 3), fv("w", 3)},
		outputs: []tValue{fv("z"), fv("y")},
	}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	assert.Equal(t, "g", model.Name)
	assert.Equal(t, map[string]int64{"": 17}, model.Opsets)
	require.Len(t, model.Parameters, 1, "an initializer listed as input is a constant, not a parameter")
	p := model.Parameters[0]
	assert.Equal(t, "x", p.Name)
	assert.Equal(t, tensor.F32, p.Outputs[0].Type)
	assert.Equal(t, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{{Size: -1, Name: "batch"}, {Size: 3}}}, p.Outputs[0].Shape)

	require.Len(t, model.Results, 2)
	assert.Equal(t, "z", model.Results[0].Name)
	assert.Equal(t, "y", model.Results[1].Name)
	z := model.Results[0].Inputs[0]
	assert.Equal(t, "Relu_1", z.Node.Name, "the named node keeps its name")
	assert.Equal(t, "z", z.Port().Name)
	y := model.Results[1].Inputs[0]
	assert.Equal(t, "Relu_1_1", y.Node.Name, "the generated name Relu_1 is taken, so it is made unique")
	assert.Equal(t, "y", y.Port().Name)
	add := y.Node.Inputs[0].Node
	assert.Equal(t, "Add_0", add.Name)
	assert.Equal(t, "s", add.Outputs[0].Name)
	w := add.Inputs[1].Node
	assert.Equal(t, graph.OpConstant, w.OpType)
	assert.Equal(t, "w", w.Name)
	assert.InDeltaSlice(t, []float32{1, 2, 3}, w.Value.F32(), 0)
	assert.Equal(t, "[batch,3]", model.Results[0].Outputs[0].Shape.String())
}

func TestReadGraphOutputIsInputOrInitializer(t *testing.T) {
	m := tModel{
		opset:   13,
		inits:   [][]byte{rawTensor("c", i64Tensor(4, 5))},
		inputs:  []tValue{fv("x", 2)},
		outputs: []tValue{fv("x"), {name: "c", elem: dtInt64, dims: []any{2}}},
	}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	require.Len(t, model.Results, 2)
	assert.Same(t, model.Parameters[0], model.Results[0].Inputs[0].Node)
	assert.Equal(t, "x", model.Results[0].Outputs[0].Name)
	assert.Equal(t, "c", model.Results[1].Name)
	assert.Equal(t, graph.OpConstant, model.Results[1].Inputs[0].Node.OpType)
	assert.Equal(t, []int64{4, 5}, model.Results[1].Inputs[0].Node.Value.I64())
	assert.Equal(t, "x", model.Parameters[0].Name)
}

func TestReadShapes(t *testing.T) {
	m := tModel{
		opset:   13,
		inputs:  []tValue{{name: "a", elem: dtFloat, dims: []any{2, nil, "n"}}, {name: "b", elem: dtInt64, noShape: true}},
		outputs: []tValue{fv("a"), fv("b")},
	}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	a := model.Parameters[0].Outputs[0]
	assert.Equal(t, []graph.Dim{{Size: 2}, {Size: -1}, {Size: -1, Name: "n"}}, a.Shape.Dims)
	b := model.Parameters[1].Outputs[0]
	assert.Equal(t, tensor.I64, b.Type)
	assert.False(t, b.Shape.RankKnown)
}

func TestReadOptionalInputs(t *testing.T) {
	m := tModel{
		opset:   13,
		nodes:   []tNode{{op: "Clip", name: "clip", in: []string{"x", "", "hi"}, out: []string{"y"}}},
		inits:   [][]byte{rawTensor("hi", f32Tensor(nil, 6))},
		inputs:  []tValue{fv("x", 4)},
		outputs: []tValue{fv("y")},
	}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	clip := model.Results[0].Inputs[0].Node
	require.Len(t, clip.Inputs, 3)
	assert.Nil(t, clip.Inputs[1].Node)
	assert.Equal(t, "hi", clip.Inputs[2].Node.Name)
}

func TestReadUnsortedNodes(t *testing.T) {
	m := tModel{
		opset: 13,
		nodes: []tNode{
			{op: "Relu", in: []string{"a"}, out: []string{"b"}},
			{op: "Neg", in: []string{"x"}, out: []string{"a"}},
		},
		inputs:  []tValue{fv("x", 2)},
		outputs: []tValue{fv("b")},
	}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	nodes, err := model.Nodes()
	require.NoError(t, err)
	var ops []string
	for _, n := range nodes {
		ops = append(ops, n.OpType)
	}
	assert.Equal(t, []string{"Parameter", "Neg", "Relu", "Result"}, ops)
}

func TestReadErrors(t *testing.T) {
	relu := func(op, name, domain string, opset int64, extra map[string]int64) tModel {
		return tModel{
			opset:   opset,
			opsets:  extra,
			nodes:   []tNode{{op: op, name: name, domain: domain, in: []string{"x"}, out: []string{"y"}}},
			inputs:  []tValue{fv("x", 2)},
			outputs: []tValue{fv("y")},
		}
	}
	conv := tModel{
		opset:   11,
		nodes:   []tNode{{op: "Conv", name: "c1", in: []string{"x", "w"}, out: []string{"y"}, attrs: []tAttr{aStr("auto_pad", "FOO")}}},
		inits:   [][]byte{rawTensor("w", f32Tensor(tensor.Shape{1, 1, 1, 1}, 1))},
		inputs:  []tValue{fv("x", 1, 1, 4, 4)},
		outputs: []tValue{fv("y")},
	}
	graphAttr := relu("Relu", "r", "", 13, nil)
	graphAttr.nodes[0].attrs = []tAttr{aGraph("body")}
	bnTrain := tModel{
		opset: 15,
		nodes: []tNode{
			{op: "BatchNormalization", name: "bn", in: []string{"x", "s", "s", "s", "s"}, out: []string{"y", "rm"}},
			{op: "Neg", in: []string{"rm"}, out: []string{"z"}},
		},
		inits:   [][]byte{rawTensor("s", f32Tensor(tensor.Shape{2}, 1, 1))},
		inputs:  []tValue{fv("x", 1, 2, 3)},
		outputs: []tValue{fv("y"), fv("z")},
	}
	tests := []struct {
		name     string
		data     []byte
		sentinel error
		contains []string
	}{
		{"unknown op", relu("FancyOp", "fancy1", "", 13, nil).bytes(), ErrUnsupportedOp, []string{"FancyOp", `"fancy1"`, "opset 13", "ai.onnx"}},
		{"unnamed unknown op", relu("FancyOp", "", "", 13, nil).bytes(), ErrUnsupportedOp, []string{"FancyOp", `"FancyOp_0"`}},
		{"foreign domain", relu("FusedGemm", "fg", "com.microsoft", 13, map[string]int64{"com.microsoft": 1}).bytes(), ErrUnsupportedOp, []string{"FusedGemm", "com.microsoft", "opset 1", `"fg"`}},
		{"opset too new", relu("Relu", "r", "", maxOpset+1, nil).bytes(), ErrUnsupportedOp, []string{"Relu", "opset 24"}},
		{"op before its first opset", relu("HardSwish", "hs", "", 13, nil).bytes(), ErrUnsupportedOp, []string{"HardSwish", "opset 13"}},
		{"bad auto_pad", conv.bytes(), ErrUnsupportedAttribute, []string{`"c1"`, "Conv", "auto_pad", "FOO"}},
		{"graph attribute", graphAttr.bytes(), ErrUnsupportedAttribute, []string{`"r"`, "body", "GRAPH"}},
		{"training output used", bnTrain.bytes(), ErrUnsupportedOp, []string{`"bn"`, "rm"}},
		{"undefined input", relu("Relu", "r", "", 13, nil).bytesWith(func(m *tModel) { m.nodes[0].in = []string{"nope"} }), ErrInvalidModel, []string{`"nope"`, `"r"`}},
		{"undefined output", relu("Relu", "r", "", 13, nil).bytesWith(func(m *tModel) { m.outputs = []tValue{fv("q")} }), ErrInvalidModel, []string{`"q"`}},
		{"cycle", relu("Relu", "r", "", 13, nil).bytesWith(func(m *tModel) {
			m.nodes = append(m.nodes, tNode{op: "Neg", name: "n", in: []string{"y"}, out: []string{"x2"}})
			m.nodes[0].in = []string{"x2"}
		}), ErrInvalidModel, []string{"cycle"}},
		{"no graph", pb(nil).varint(1, 7), ErrInvalidModel, []string{"no graph"}},
		{"truncated", relu("Relu", "r", "", 13, nil).bytes()[:20], ErrInvalidModel, nil},
		{"complex input", relu("Relu", "r", "", 13, nil).bytesWith(func(m *tModel) { m.inputs[0].elem = dtComplex64 }), ErrUnsupportedType, []string{`"x"`, "COMPLEX64"}},
		{"string input to Relu", relu("Relu", "r", "", 13, nil).bytesWith(func(m *tModel) { m.inputs[0].elem = dtString }), ErrInvalidModel, []string{`"r"`, "string"}},
		{"sparse attribute constant", tModel{opset: 13, nodes: []tNode{{op: "Constant", name: "k", out: []string{"y"}, attrs: []tAttr{tAttr(pb(nil).str(1, "sparse_value").varint(20, attrSparseTensor).bytes(22, nil))}}}, outputs: []tValue{fv("y")}}.bytes(), ErrUnsupportedAttribute, []string{"sparse_value", "SPARSE_TENSOR"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.data)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// bytesWith encodes a modified copy of m.
func (m tModel) bytesWith(f func(*tModel)) []byte {
	c := m
	c.nodes = append([]tNode(nil), m.nodes...)
	c.inputs = append([]tValue(nil), m.inputs...)
	c.outputs = append([]tValue(nil), m.outputs...)
	f(&c)
	return c.bytes()
}

func TestReadFileErrorNamesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.onnx")
	m := tModel{opset: 13, nodes: []tNode{{op: "Nope", name: "n", in: []string{"x"}, out: []string{"y"}}}, inputs: []tValue{fv("x", 1)}, outputs: []tValue{fv("y")}}
	require.NoError(t, os.WriteFile(path, m.bytes(), 0o600))
	_, err := ReadFile(path)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnsupportedOp)
	assert.Contains(t, err.Error(), path)
	assert.Regexp(t, `^onnx: `, err.Error())

	_, err = ReadFile(filepath.Join(dir, "missing.onnx"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	w := f32Tensor(tensor.Shape{2, 2}, 1.5, -2, 3, 4.25)
	blob := append([]byte("padding!"), w.Bytes()...)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "w.bin"), blob, 0o600))
	ext := func(loc string, kv ...string) []byte {
		p := pb(nil).varint(1, 2).varint(1, 2).varint(2, dtFloat).str(8, "w")
		p = p.bytes(13, pb(nil).str(1, "location").str(2, loc))
		for i := 0; i+1 < len(kv); i += 2 {
			p = p.bytes(13, pb(nil).str(1, kv[i]).str(2, kv[i+1]))
		}
		return p.varint(14, 1)
	}
	model := func(init []byte) tModel {
		return tModel{
			opset:   13,
			nodes:   []tNode{{op: "Add", in: []string{"x", "w"}, out: []string{"y"}}},
			inits:   [][]byte{init},
			inputs:  []tValue{fv("x", 2, 2)},
			outputs: []tValue{fv("y")},
		}
	}
	path := filepath.Join(dir, "m.onnx")
	require.NoError(t, os.WriteFile(path, model(ext("data/w.bin", "offset", "8", "length", "16")).bytes(), 0o600))
	m, err := ReadFile(path)
	require.NoError(t, err)
	got := m.Results[0].Inputs[0].Node.Inputs[1].Node.Value
	assert.InDeltaSlice(t, w.F32(), got.F32(), 0)

	// Read needs WithBaseDir.
	data := model(ext("data/w.bin", "offset", "8")).bytes()
	_, err = Read(data)
	assert.ErrorIs(t, err, ErrExternalData)
	m, err = Read(data, WithBaseDir(dir))
	require.NoError(t, err)
	assert.InDeltaSlice(t, w.F32(), m.Results[0].Inputs[0].Node.Inputs[1].Node.Value.F32(), 0)

	outside := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-secret.bin")
	require.NoError(t, os.WriteFile(outside, w.Bytes(), 0o600))
	t.Cleanup(func() { os.Remove(outside) })
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.bin")))

	bad := []struct {
		name, loc string
		kv        []string
		want      string
	}{
		{"dotdot escape", "../" + filepath.Base(outside), nil, "not a relative path inside"},
		{"absolute", outside, nil, "not a relative path inside"},
		{"symlink escape", "link.bin", nil, ""},
		{"too short", "data/w.bin", []string{"offset", "12"}, "needs 16 bytes"},
		{"past end", "data/w.bin", []string{"offset", "100"}, "beyond"},
		{"missing file", "data/none.bin", nil, ""},
		{"bad offset", "data/w.bin", []string{"offset", "-1"}, "offset"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(model(ext(tc.loc, tc.kv...)).bytes(), WithBaseDir(dir))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrExternalData) || errors.Is(err, ErrInvalidModel), "%v", err)
			assert.Contains(t, err.Error(), `"w"`, "names the tensor")
			if tc.want != "" {
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}
