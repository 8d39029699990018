package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestMoreOpImports(t *testing.T) {
	x := fv("x", 2, 3, 4)
	t.Run("ReduceLogSum-13 is Log of ReduceSum", func(t *testing.T) {
		n := oneNode(t, 13, tNode{op: "ReduceLogSum", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 1), aInt("keepdims", 0)}}, x)
		require.Equal(t, "Log", n.OpType)
		sum := n.Inputs[0].Node
		require.Equal(t, "ReduceSum", sum.OpType)
		assert.Equal(t, []int64{1}, constInts(t, sum, 1))
		assert.Equal(t, "[2,4]", n.Outputs[0].Shape.String())
	})
	t.Run("ReduceL2-13 axes attribute", func(t *testing.T) {
		n := oneNode(t, 13, tNode{op: "ReduceL2", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 0, 2)}}, x)
		assert.Equal(t, []int64{0, 2}, constInts(t, n, 1))
		assert.Equal(t, "[1,3,1]", n.Outputs[0].Shape.String())
	})
	t.Run("TopK-1 k attribute", func(t *testing.T) {
		n := oneNode(t, 1, tNode{op: "TopK", in: []string{"x"}, out: []string{"v", "i"}, attrs: []tAttr{aInt("k", 2)}}, x)
		assert.Equal(t, []int64{2}, constInts(t, n, 1))
		assert.Equal(t, "[2,3,2]", n.Outputs[0].Shape.String())
		assert.Equal(t, tensor.I64, n.Outputs[1].Type)
	})
	t.Run("TopK-11 with only Values used keeps both outputs", func(t *testing.T) {
		m := tModel{opset: 11, nodes: []tNode{{op: "TopK", name: "k", in: []string{"x", "k"}, out: []string{"v"}}},
			inits: [][]byte{rawTensor("k", i64Tensor(1))}, inputs: []tValue{x}, outputs: []tValue{fv("v")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		n := model.Results[0].Inputs[0].Node
		assert.Len(t, n.Outputs, 2)
		assert.Equal(t, "[2,3,1]", n.Outputs[0].Shape.String())
	})
	t.Run("Scatter-9 is ScatterElements", func(t *testing.T) {
		m := tModel{opset: 9, nodes: []tNode{{op: "Scatter", name: "s", in: []string{"x", "i", "u"}, out: []string{"y"}, attrs: []tAttr{aInt("axis", 1)}}},
			inputs: []tValue{x, {name: "i", elem: dtInt64, dims: []any{2, 1, 4}}, fv("u", 2, 1, 4)}, outputs: []tValue{fv("y")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		n := model.Results[0].Inputs[0].Node
		assert.Equal(t, "ScatterElements", n.OpType)
		assert.Equal(t, int64(1), n.Attrs.Int("axis", 0))
	})
	t.Run("EyeLike dtype becomes an element type", func(t *testing.T) {
		n := oneNode(t, 9, tNode{op: "EyeLike", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("dtype", dtInt32)}}, fv("x", 2, 3))
		assert.Equal(t, int64(tensor.I32), n.Attrs.Int("dtype", 0))
		assert.Equal(t, tensor.I32, n.Outputs[0].Type)
	})
	t.Run("EyeLike dtype without element type", func(t *testing.T) {
		m := tModel{opset: 9, nodes: []tNode{{op: "EyeLike", name: "e", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("dtype", dtComplex64)}}},
			inputs: []tValue{fv("x", 2, 3)}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedType)
		assert.ErrorIs(t, err, ErrUnsupportedAttribute)
	})
}

// TestStringConstants imports Constant's value_string and value_strings
// as String constants.
func TestStringConstants(t *testing.T) {
	for _, tc := range []struct {
		attr  tAttr
		shape tensor.Shape
		want  []string
	}{
		{aStr("value_string", "hi"), tensor.Shape{}, []string{"hi"}},
		{aStrs("value_strings", "a", "", "c"), tensor.Shape{3}, []string{"a", "", "c"}},
	} {
		m := tModel{opset: 13, nodes: []tNode{{op: "Constant", name: "k", out: []string{"y"}, attrs: []tAttr{tc.attr}}}, outputs: []tValue{fv("y")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		c := model.Results[0].Inputs[0].Node
		require.Equal(t, graph.OpConstant, c.OpType)
		assert.Equal(t, tensor.String, c.Outputs[0].Type)
		assert.Equal(t, tc.shape, c.Value.Shape())
		assert.Equal(t, tc.want, c.Value.Strings())
	}
}

func TestUnsupportedOpBeforeType(t *testing.T) {
	cplx := tValue{name: "x", elem: dtComplex64, dims: []any{4}}
	t.Run("type clinfer lacks", func(t *testing.T) {
		m := tModel{opset: 13, nodes: []tNode{{op: "Relu", name: "r", in: []string{"x"}, out: []string{"y"}}}, inputs: []tValue{cplx}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedType)
		assert.NotErrorIs(t, err, ErrUnsupportedOp)
		assert.ErrorContains(t, err, "COMPLEX64")
	})
	t.Run("op outside the op set wins", func(t *testing.T) {
		m := tModel{opset: 13, nodes: []tNode{{op: "NoSuchOp", name: "q", in: []string{"x"}, out: []string{"y"}}}, inputs: []tValue{cplx}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedOp)
		assert.NotErrorIs(t, err, ErrUnsupportedType)
		assert.ErrorContains(t, err, "NoSuchOp")
	})
	t.Run("Cast to COMPLEX64", func(t *testing.T) {
		m := tModel{opset: 13, nodes: []tNode{{op: "Cast", name: "c", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("to", dtComplex64)}}},
			inputs: []tValue{fv("x", 4)}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedType)
		assert.ErrorContains(t, err, "COMPLEX64")
	})
}
