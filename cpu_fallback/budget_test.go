package cpufallback

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// expandModel is x -> Expand(x, shape) -> Relu -> y, with the target shape
// a model input (dynamic) or a constant (static).
func expandModel(static tensor.Shape) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1))
	var shape *graph.Node
	params := []*graph.Node{x}
	if static != nil {
		shape = graph.NewConstant("shape", nnI64(tensor.Shape{int64(len(static))}, static))
	} else {
		shape = graph.NewParameter("shape", tensor.I64, graph.ShapeOf(2))
		params = append(params, shape)
	}
	e := graph.NewNode("Expand", "big", []graph.Output{x.Out(0), shape.Out(0)}, nil, 1)
	r := graph.NewNode("Relu", "relu", []graph.Output{e.Out(0)}, nil, 1)
	return graph.NewModel("expand", params, []*graph.Node{graph.NewResult("y", r.Out(0))})
}

// TestMaxHostMemory: with MAX_HOST_MEMORY=1MiB a model whose static peak
// is just over 1 MiB (Expand's 512 KiB output and Relu's beside it, plus
// the inputs) fails to compile,
// naming the node, shape and bytes; with the size from an input the same
// compiled model fails at inference and then runs a small input.
func TestMaxHostMemory(t *testing.T) {
	p := newTestPlugin(t)
	defer p.Close()
	props := map[string]string{driver.KeyMaxHostMemory: "1MiB"}

	_, err := p.CompileModel(context.Background(), expandModel(tensor.Shape{256, 512}), props)
	require.ErrorIs(t, err, driver.ErrResourceExhausted)
	assert.ErrorContains(t, err, `node "relu"`)
	assert.ErrorContains(t, err, "f32[256,512] takes 512.0 KiB")
	assert.ErrorContains(t, err, "would hold 1.0 MiB, over MAX_HOST_MEMORY=1.0 MiB")

	cm, err := p.CompileModel(context.Background(), expandModel(tensor.Shape{16, 16}), props)
	require.NoError(t, err, "a small static model fits")
	require.NoError(t, cm.Close())

	cm, err = p.CompileModel(context.Background(), expandModel(nil), props)
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	x, _ := tensor.FromF32(tensor.Shape{1}, []float32{2})
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.SetTensor("shape", nnI64(tensor.Shape{2}, []int64{300, 512})))
	err = r.Infer(context.Background())
	require.ErrorIs(t, err, driver.ErrResourceExhausted)
	assert.ErrorContains(t, err, `node "relu"`)

	require.NoError(t, r.SetTensor("shape", nnI64(tensor.Shape{2}, []int64{3, 4})))
	require.NoError(t, r.Infer(context.Background()), "the same compiled model runs a reasonable input")
	y, err := r.Tensor("y")
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{3, 4}, y.Shape())
	assert.InDelta(t, 2, y.F32()[11], 0)
}
