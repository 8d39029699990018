package clbackend

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// TestDeviceMemoryBudget: a plan whose buffers each fit the device's
// largest allocation but which together need more than its global memory
// (k expansions of the input, all live for one Sum) fails at compile with
// ErrResourceExhausted, before any buffer is made; one buffer over the
// largest allocation fails naming its node, shape and bytes.
func TestDeviceMemoryBudget(t *testing.T) {
	p := newGPU(t)
	d := p.devices[p.def]
	require.Positive(t, d.maxAlloc)
	n := d.maxAlloc / 4 / 2 // f32 elements of a buffer of half the largest allocation
	k := int(d.memSize/(n*4)) + 2
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1))
	shape := graph.NewConstant("shape", must(tensor.FromI64(tensor.Shape{1}, []int64{n})))
	var ins []graph.Output
	for i := range k {
		e := graph.NewNode("Expand", fmt.Sprintf("e%d", i), []graph.Output{x.Out(0), shape.Out(0)}, nil, 1)
		neg := graph.NewNode("Neg", fmt.Sprintf("n%d", i), []graph.Output{e.Out(0)}, nil, 1)
		ins = append(ins, neg.Out(0))
	}
	sum := graph.NewNode("Sum", "sum", ins, nil, 1)
	m := graph.NewModel("wide", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", sum.Out(0))})
	before := cl.LiveObjects()["MemObject"]
	_, err := p.CompileModel(context.Background(), m, nil)
	require.ErrorIs(t, err, driver.ErrResourceExhausted)
	assert.ErrorContains(t, err, "CL_DEVICE_GLOBAL_MEM_SIZE")
	assert.ErrorContains(t, err, tensor.FormatBytes(d.memSize))
	assert.Equal(t, before, cl.LiveObjects()["MemObject"], "no buffer was made")

	big := graph.NewConstant("shape", must(tensor.FromI64(tensor.Shape{1}, []int64{d.maxAlloc/4 + 1})))
	e := graph.NewNode("Expand", "huge", []graph.Output{x.Out(0), big.Out(0)}, nil, 1)
	m = graph.NewModel("tall", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", e.Out(0))})
	_, err = p.CompileModel(context.Background(), m, nil)
	require.ErrorIs(t, err, driver.ErrResourceExhausted)
	assert.ErrorContains(t, err, `node "huge" (Expand)`)
	assert.ErrorContains(t, err, fmt.Sprintf("f32[%d]", d.maxAlloc/4+1))
	assert.ErrorContains(t, err, "CL_DEVICE_MAX_MEM_ALLOC_SIZE")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
