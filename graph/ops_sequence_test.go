package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// TestSequenceInference checks the kinds, types and shapes the sequence
// family infers, and that tensor ops refuse sequences.
func TestSequenceInference(t *testing.T) {
	a := NewParameter("a", tensor.F32, ShapeOf(2, 3))
	b := NewParameter("b", tensor.F32, ShapeOf(4, 3))
	seq := NewNode("SequenceConstruct", "seq", []Output{a.Out(0), b.Out(0)}, nil, 1)
	at := NewNode("SequenceAt", "at", []Output{seq.Out(0), cI64("pos", 1)}, nil, 1)
	cat := NewNode("ConcatFromSequence", "cat", []Output{seq.Out(0)}, Attrs{"axis": int64(0)}, 1)
	stk := NewNode("ConcatFromSequence", "stk", []Output{seq.Out(0)}, Attrs{"axis": int64(-1), "new_axis": int64(1)}, 1)
	n := NewNode("SequenceLength", "len", []Output{seq.Out(0)}, nil, 1)
	opt := NewNode("Optional", "opt", []Output{seq.Out(0)}, nil, 1)
	get := NewNode("OptionalGetElement", "get", []Output{opt.Out(0)}, nil, 1)
	split := NewNode("SplitToSequence", "split", []Output{a.Out(0)}, Attrs{"axis": int64(1), "keepdims": int64(0)}, 1)
	m := NewModel("seq", []*Node{a, b}, []*Node{NewResult("at", at.Out(0)), NewResult("cat", cat.Out(0)), NewResult("stk", stk.Out(0)),
		NewResult("len", n.Out(0)), NewResult("get", get.Out(0)), NewResult("split", split.Out(0))})
	require.NoError(t, m.InferShapes())
	assert.Equal(t, "sequence<f32[?,3]>", seq.Outputs[0].String())
	assert.Equal(t, "f32[?,3]", at.Outputs[0].String())
	assert.Equal(t, "f32[?,3]", cat.Outputs[0].String())
	assert.Equal(t, "f32[?,3,?]", stk.Outputs[0].String())
	assert.Equal(t, "i64[]", n.Outputs[0].String())
	assert.Equal(t, "optional<sequence<f32[?,3]>>", opt.Outputs[0].String())
	assert.Equal(t, "sequence<f32[?,3]>", get.Outputs[0].String())
	assert.Equal(t, "sequence<f32[2]>", split.Outputs[0].String())
	assert.Equal(t, tensor.KindSequence, m.Results[4].Outputs[0].Kind, "a Result keeps the kind")

	relu := NewNode("Relu", "relu", []Output{seq.Out(0)}, nil, 1)
	m2 := NewModel("bad", []*Node{a, b}, []*Node{NewResult("y", relu.Out(0))})
	assert.ErrorContains(t, m2.InferShapes(), "Relu takes tensors")
	mixed := NewNode("SequenceInsert", "ins", []Output{seq.Out(0), cI64("x", 1)}, nil, 1)
	m3 := NewModel("mixed", []*Node{a, b}, []*Node{NewResult("y", mixed.Out(0))})
	assert.ErrorContains(t, m3.InferShapes(), "inserts i64 into a sequence of f32")
}

// cI64 is an i64 scalar constant.
func cI64(name string, v int64) Output {
	x, _ := tensor.FromI64(tensor.Shape{}, []int64{v})
	return NewConstant(name, x).Out(0)
}
