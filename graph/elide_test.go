package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestElideValues: an elided Constant keeps its port and the mark through
// the encoding and Clone, validates and infers, its bytes are left out
// of the encoding, and the source model is untouched.
func TestElideValues(t *testing.T) {
	w, err := tensor.FromF32(tensor.Shape{64, 64}, make([]float32, 64*64))
	require.NoError(t, err)
	b, err := tensor.FromF32(tensor.Shape{64}, make([]float32, 64))
	require.NoError(t, err)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 64))
	wn, bn := graph.NewConstant("w", w), graph.NewConstant("b", b)
	mm := graph.NewNode("MatMul", "mm", []graph.Output{x.Out(0), wn.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{mm.Out(0), bn.Out(0)}, nil, 1)
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", add.Out(0))})
	require.NoError(t, m.InferShapes())
	full, err := m.MarshalBinary()
	require.NoError(t, err)

	el := m.ElideValues(func(n *graph.Node) bool { return n.Name == "w" })
	assert.False(t, m.HasElided(), "the source keeps its values")
	assert.NotNil(t, wn.Value)
	require.True(t, el.HasElided())
	enc, err := el.MarshalBinary()
	require.NoError(t, err)
	assert.Less(t, len(enc), len(full)-64*64*4+256, "the elided bytes are left out")

	var back graph.Model
	require.NoError(t, back.UnmarshalBinary(enc))
	for _, mod := range []*graph.Model{&back, back.Clone()} {
		require.NoError(t, mod.Validate())
		require.NoError(t, mod.InferShapes())
		nw, nb := mod.Node("w"), mod.Node("b")
		require.NotNil(t, nw)
		assert.True(t, nw.Elided())
		assert.Nil(t, nw.Value)
		assert.Equal(t, "f32[64,64]", nw.Outputs[0].String())
		assert.False(t, nb.Elided())
		assert.NotNil(t, nb.Value)
		assert.Equal(t, "f32[1,64]", mod.Results[0].Outputs[0].String())
		_, ok := graph.StaticValue(nw.Out(0))
		assert.False(t, ok, "an elided constant has no static value")
	}
	// A Constant without a value and without the mark is still invalid.
	bad := el.Clone()
	delete(bad.Node("w").RT.Extra, graph.ExtraElided)
	assert.Error(t, bad.Validate())
}
