package graph

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// seBody is the body of an SE residual: y = x + x*gate.
func seBody() *Model {
	x := NewParameter("x", tensor.F32, ShapeOf(1, 2, 3, 3))
	g := NewParameter("gate", tensor.F32, ShapeOf(1, 2, 1, 1))
	mul := NewNode("Mul", "mul", []Output{x.Out(0), g.Out(0)}, nil, 1)
	add := NewNode("Add", "add", []Output{x.Out(0), mul.Out(0)}, nil, 1)
	return NewModel("se_residual", []*Node{x, g}, []*Node{NewResult("y", add.Out(0))})
}

func kernelFusionNode(body *Model, ins ...Output) *Node {
	return NewNode(OpKernelFusion, "se", ins, Attrs{AttrKernel: "se_residual", AttrLaunch: LaunchElementwise, AttrBody: body}, 1)
}

// TestKernelFusionInfer: the outputs come from the body bound to the
// node's inputs (other shapes than the body was built with, dynamic dims
// included), and the node's own body is left as it was.
func TestKernelFusionInfer(t *testing.T) {
	x := NewParameter("x", tensor.F32, PartialShape{RankKnown: true, Dims: []Dim{DynamicDim("N"), StaticDim(4), StaticDim(5), StaticDim(6)}})
	g := NewParameter("g", tensor.F32, ShapeOf(1, 4, 1, 1))
	body := seBody()
	n := kernelFusionNode(body, x.Out(0), g.Out(0))
	require.NoError(t, InferNode(n))
	assert.Equal(t, tensor.F32, n.Outputs[0].Type)
	assert.Equal(t, "[N,4,5,6]", n.Outputs[0].Shape.String())
	assert.Equal(t, "[1,2,3,3]", body.Parameters[0].Outputs[0].Shape.String(), "inference must not modify the node's body")
	assert.Contains(t, n.Attrs.Format(), "body=se_residual(x, gate){Mul, Add}")

	// A gate that does not broadcast fails inside the body, naming it.
	bad := kernelFusionNode(seBody(), x.Out(0), NewParameter("g3", tensor.F32, ShapeOf(1, 3, 1, 1)).Out(0))
	err := InferNode(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `body "se_residual"`)
}

func TestKernelFusionInvalid(t *testing.T) {
	x := NewParameter("x", tensor.F32, ShapeOf(1, 2, 3, 3)).Out(0)
	g := NewParameter("g", tensor.F32, ShapeOf(1, 2, 1, 1)).Out(0)
	for _, c := range []struct {
		name, want string
		node       func() *Node
	}{
		{"no_kernel", `"kernel"`, func() *Node { n := kernelFusionNode(seBody(), x, g); delete(n.Attrs, AttrKernel); return n }},
		{"bad_launch", `"tiles", want one of deconv, dense_chain, elementwise, gemm_rows, reduce_rows, rows, se_block`, func() *Node { n := kernelFusionNode(seBody(), x, g); n.Attrs[AttrLaunch] = "tiles"; return n }},
		{"no_body", `"body"`, func() *Node { n := kernelFusionNode(seBody(), x, g); delete(n.Attrs, AttrBody); return n }},
		{"input_count", "2 parameters for 1 inputs", func() *Node { return kernelFusionNode(seBody(), x) }},
		{"output_count", "1 results for 2 outputs", func() *Node {
			n := kernelFusionNode(seBody(), x, g)
			n.Outputs = append(n.Outputs, Port{})
			return n
		}},
		{"params_type", "want []float32", func() *Node { n := kernelFusionNode(seBody(), x, g); n.Attrs[AttrParams] = "eps"; return n }},
		{"omitted_input", "input 1 is omitted", func() *Node { return kernelFusionNode(seBody(), x, Output{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := InferNode(c.node())
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), `"se" (KernelFusion)`, "the error names the node")
		})
	}
}

// TestKernelFusionSerialize: a model with a KernelFusion node survives the
// binary encoding (export, import, model cache) and Clone, body included,
// and the encoding stays deterministic.
func TestKernelFusionSerialize(t *testing.T) {
	x := NewParameter("x", tensor.F32, ShapeOf(1, 2, 3, 3))
	g := NewParameter("g", tensor.F32, ShapeOf(1, 2, 1, 1))
	n := kernelFusionNode(seBody(), x.Out(0), g.Out(0))
	n.Attrs[AttrParams] = []float32{1e-5}
	n.RT.FusedNames = []string{"mul", "add"}
	m := NewModel("m", []*Node{x, g}, []*Node{NewResult("y", n.Out(0))})
	require.NoError(t, m.Validate())
	b1, err := m.MarshalBinary()
	require.NoError(t, err)
	var back Model
	require.NoError(t, back.UnmarshalBinary(b1))
	require.NoError(t, back.Validate())
	kf := back.Node("se")
	require.NotNil(t, kf)
	body, err := KernelFusionBody(kf)
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, body.WriteText(&text))
	assert.Contains(t, text.String(), `Mul "mul"`)
	assert.Contains(t, text.String(), `Add "add"`)
	assert.Equal(t, []float32{1e-5}, kf.Attrs.Floats(AttrParams, nil))
	assert.Equal(t, []string{"mul", "add"}, kf.RT.FusedNames)
	b2, err := back.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, b1, b2, "the encoding is deterministic")

	c := m.Clone()
	cb, err := KernelFusionBody(c.Node("se"))
	require.NoError(t, err)
	cb.Name = "changed"
	ob, err := KernelFusionBody(n)
	require.NoError(t, err)
	assert.Equal(t, "se_residual", ob.Name, "Clone copies the body")
}
