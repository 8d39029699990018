package cpufallback

import (
	"context"
	"runtime"
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

// concatModel is x f32[1,?] -> Concat(x, x, x, x) -> Relu -> y: its peak is
// nine times the input, known only from the input's shape.
func concatModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, -1))
	c := graph.NewNode("Concat", "concat", []graph.Output{x.Out(0), x.Out(0), x.Out(0), x.Out(0)}, graph.Attrs{"axis": int64(1)}, 1)
	r := graph.NewNode("Relu", "relu", []graph.Output{c.Out(0)}, nil, 1)
	return graph.NewModel("concat", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
}

// TestMaxHostMemoryBeforeRunning: an input whose plan would pass
// MAX_HOST_MEMORY is refused before any kernel runs — checked by the bytes
// the Go runtime allocated during Infer, which stay well under the 16 MiB
// the first kernel's output would take (the CPU used to run kernels until
// the budget was passed: 77 s and 9.9 GB for det at 8192x8192) — and the
// same compiled model then runs an input that fits.
func TestMaxHostMemoryBeforeRunning(t *testing.T) {
	p := newTestPlugin(t)
	defer p.Close()
	cm, err := p.CompileModel(context.Background(), concatModel(), map[string]string{driver.KeyMaxHostMemory: "12MiB"})
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	x := tensor.MustNew(tensor.F32, tensor.Shape{1, 1 << 20}) // 4 MiB; Concat makes 16 MiB
	require.NoError(t, r.SetTensor("x", x))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = r.Infer(context.Background())
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, driver.ErrResourceExhausted)
	assert.ErrorContains(t, err, `node "concat" (Concat): its output f32[1,4194304] takes 16.0 MiB`)
	assert.ErrorContains(t, err, "over MAX_HOST_MEMORY=12.0 MiB")
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(2<<20), "Infer allocated %d bytes before refusing: the plan's peak must be checked before anything runs", allocated)

	small := tensor.MustNew(tensor.F32, tensor.Shape{1, 1 << 10})
	require.NoError(t, r.SetTensor("x", small))
	require.NoError(t, r.Infer(context.Background()), "the same compiled model runs an input that fits")
	y, err := r.Tensor("y")
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{1, 4 << 10}, y.Shape())
}
