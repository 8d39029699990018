package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestQuantizeLinearImport(t *testing.T) {
	x := fv("x", 2, 3)
	scale := rawTensor("s", f32Tensor(tensor.Shape{}, 0.5))
	t.Run("opset 21 output_dtype without zero point", func(t *testing.T) {
		n := oneNode(t, 21, tNode{op: "QuantizeLinear", in: []string{"x", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("output_dtype", dtInt4), aInt("saturate", 1)}}, x, scale)
		assert.Equal(t, "QuantizeLinear", n.OpType)
		assert.Equal(t, int64(tensor.I4), n.Attrs.Int(graph.AttrOutputType, 0))
		assert.False(t, n.Attrs.Has("output_dtype"))
		assert.False(t, n.Attrs.Has("saturate"), "saturate concerns float8 outputs only")
		assert.Equal(t, tensor.I4, n.Outputs[0].Type)
	})
	t.Run("opset 10 defaults to u8", func(t *testing.T) {
		n := oneNode(t, 10, tNode{op: "QuantizeLinear", in: []string{"x", "s"}, out: []string{"y"}}, x, scale)
		assert.Equal(t, tensor.U8, n.Outputs[0].Type)
	})
	t.Run("opset 23 precision of the scale's type", func(t *testing.T) {
		n := oneNode(t, 23, tNode{op: "QuantizeLinear", in: []string{"x", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("precision", dtFloat)}}, x, scale)
		assert.False(t, n.Attrs.Has("precision"))
	})
	t.Run("another precision is refused", func(t *testing.T) {
		m := tModel{opset: 23, nodes: []tNode{{op: "QuantizeLinear", name: "q", in: []string{"x", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("precision", dtFloat16)}}},
			inits: [][]byte{scale}, inputs: []tValue{x}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		require.ErrorIs(t, err, ErrUnsupportedAttribute)
		assert.ErrorContains(t, err, "precision")
	})
	t.Run("DequantizeLinear output_dtype must be the scale's", func(t *testing.T) {
		q := tValue{name: "q", elem: dtUint8, dims: []any{2, 3}}
		n := oneNode(t, 23, tNode{op: "DequantizeLinear", in: []string{"q", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("output_dtype", dtFloat)}}, q, scale)
		assert.Equal(t, tensor.F32, n.Outputs[0].Type)
		m := tModel{opset: 23, nodes: []tNode{{op: "DequantizeLinear", name: "d", in: []string{"q", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("output_dtype", dtFloat16)}}},
			inits: [][]byte{scale}, inputs: []tValue{q}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		require.ErrorIs(t, err, ErrUnsupportedAttribute)
	})
	t.Run("blocked int4 initializer dequantized", func(t *testing.T) {
		w, err := tensor.From(tensor.Shape{2, 4}, []tensor.Int4{-8, 7, 1, -1, 0, 2, 3, -4})
		require.NoError(t, err)
		bs := rawTensor("bs", f32Tensor(tensor.Shape{2, 2}, 1, 2, 3, 4))
		m := tModel{opset: 21, nodes: []tNode{{op: "DequantizeLinear", name: "d", in: []string{"w", "bs"}, out: []string{"y"}, attrs: []tAttr{aInt("axis", 1), aInt("block_size", 2)}}},
			inits: [][]byte{rawTensor("w", w), bs}, outputs: []tValue{fv("y")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		n := model.Results[0].Inputs[0].Node
		v, ok := n.ConstInput(0)
		require.True(t, ok)
		assert.Equal(t, []int8{-8, 7, 1, -1, 0, 2, 3, -4}, v.I4(), "packed two to a byte in raw_data")
		assert.Equal(t, "[2,4]", n.Outputs[0].Shape.String())
	})
}
