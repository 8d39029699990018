package clbackend

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// TestStatesReadBeforeTheirCopies: results that read a state buffer (MAKE_STATEFUL)
// are read before the next states overwrite it, whatever the results'
// order: an output that passes state s1 through (y = Identity(s1)) gives
// the state the inference read, and a state that takes another's value
// (s2_next = s1, a delay line) gets it before s1's copy replaces it, on
// every launch path (command buffer with the copies recorded, single
// launches; shared or staged ports). The results list s1's next state
// first, the order that enqueued its copy before the others' reads.
func TestStatesReadBeforeTheirCopies(t *testing.T) {
	gpu := newGPU(t)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	s1 := graph.NewParameter("s1", tensor.F32, graph.ShapeOf(2, 3))
	s2 := graph.NewParameter("s2", tensor.F32, graph.ShapeOf(2, 3))
	next := graph.NewNode("Add", "next", []graph.Output{s1.Out(0), x.Out(0)}, nil, 1)
	y := graph.NewNode("Identity", "y", []graph.Output{s1.Out(0)}, nil, 1)
	delay := graph.NewNode("Identity", "delay", []graph.Output{s1.Out(0)}, nil, 1)
	sum := graph.NewNode("Add", "sum", []graph.Output{s2.Out(0), x.Out(0)}, nil, 1)
	m := graph.NewModel("delay_line", []*graph.Node{x, s1, s2}, []*graph.Node{
		graph.NewResult("s1_next", next.Out(0)), graph.NewResult("y", y.Out(0)),
		graph.NewResult("s2_next", delay.Out(0)), graph.NewResult("z", sum.Out(0))})
	require.NoError(t, m.InferShapes())
	xs, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{1, 1, 1, 1, 1, 1})
	require.NoError(t, err)
	full := func(v float32) []float32 { return slices.Repeat([]float32{v}, 6) }
	onEveryStatePath(t, gpu, m, func(t *testing.T, r *InferRequest) {
		require.NoError(t, r.SetTensor("x", xs))
		for i := range 4 {
			// Before inference i, s1 holds i and s2 holds i-1 (0 at first).
			require.NoError(t, r.Infer(context.Background()))
			yt, err := r.Tensor("y")
			require.NoError(t, err)
			assert.Equal(t, full(float32(i)), yt.F32(), "inference %d: y is the s1 it read", i)
			zt, err := r.Tensor("z")
			require.NoError(t, err)
			assert.Equal(t, full(float32(max(i-1, 0))+1), zt.F32(), "inference %d: z = s2 + x", i)
		}
		st, err := r.HoldState("s2", "s2_next")
		require.NoError(t, err)
		v, err := st.State()
		require.NoError(t, err)
		assert.Equal(t, full(3), v.F32(), "s2 after four inferences: s1 before the last")
	})
}

// TestStatesSwapped: two states that take each other's value (s1_next =
// s2, s2_next = s1: each next state reads the other's buffer, a cycle no
// order of the copies serves) swap at every inference, on every launch
// path, and the outputs reading s1 and s2 see the values the inference
// read.
func TestStatesSwapped(t *testing.T) {
	gpu := newGPU(t)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	s1 := graph.NewParameter("s1", tensor.F32, graph.ShapeOf(2, 3))
	s2 := graph.NewParameter("s2", tensor.F32, graph.ShapeOf(2, 3))
	n1 := graph.NewNode("Identity", "n1", []graph.Output{s2.Out(0)}, nil, 1)
	n2 := graph.NewNode("Identity", "n2", []graph.Output{s1.Out(0)}, nil, 1)
	sum := graph.NewNode("Add", "sum", []graph.Output{s1.Out(0), x.Out(0)}, nil, 1)
	sum2 := graph.NewNode("Add", "sum2", []graph.Output{s2.Out(0), x.Out(0)}, nil, 1)
	m := graph.NewModel("swap", []*graph.Node{x, s1, s2}, []*graph.Node{
		graph.NewResult("s1_next", n1.Out(0)), graph.NewResult("s2_next", n2.Out(0)),
		graph.NewResult("z", sum.Out(0)), graph.NewResult("z2", sum2.Out(0))})
	require.NoError(t, m.InferShapes())
	full := func(v float32) []float32 { return slices.Repeat([]float32{v}, 6) }
	tensorOf := func(v float32) *tensor.Tensor {
		tt, err := tensor.FromF32(tensor.Shape{2, 3}, full(v))
		require.NoError(t, err)
		return tt
	}
	onEveryStatePath(t, gpu, m, func(t *testing.T, r *InferRequest) {
		require.NoError(t, r.SetTensor("x", tensorOf(1)))
		st1, err := r.HoldState("s1", "s1_next")
		require.NoError(t, err)
		st2, err := r.HoldState("s2", "s2_next")
		require.NoError(t, err)
		require.NoError(t, st1.SetState(tensorOf(1)))
		require.NoError(t, st2.SetState(tensorOf(2)))
		for i := range 4 {
			// Before inference i, s1 holds 1 (even i) or 2 (odd i).
			a, b := float32(1+i%2), float32(2-i%2)
			require.NoError(t, r.Infer(context.Background()))
			zt, err := r.Tensor("z")
			require.NoError(t, err)
			assert.Equal(t, full(a+1), zt.F32(), "inference %d: z = s1 + x", i)
			zt, err = r.Tensor("z2")
			require.NoError(t, err)
			assert.Equal(t, full(b+1), zt.F32(), "inference %d: z2 = s2 + x", i)
			v1, err := st1.State()
			require.NoError(t, err)
			v2, err := st2.State()
			require.NoError(t, err)
			assert.Equal(t, full(b), v1.F32(), "inference %d: s1 takes s2", i)
			assert.Equal(t, full(a), v2.F32(), "inference %d: s2 takes s1", i)
		}
	})
}

// onEveryStatePath runs f on a request of m compiled with the states s1
// and s2 (MAKE_STATEFUL s1:s1_next,s2:s2_next) on every launch path:
// command buffers on and off, shared and staged ports.
func onEveryStatePath(t *testing.T, gpu *Plugin, m *graph.Model, f func(t *testing.T, r *InferRequest)) {
	for _, cb := range []string{"YES", "NO"} {
		for _, shared := range []string{"YES", "NO"} {
			t.Run(fmt.Sprintf("cmdbuf=%s/shared=%s", cb, shared), func(t *testing.T) {
				cm, err := gpu.CompileModel(context.Background(), m, map[string]string{
					driver.KeyMakeStateful: "s1:s1_next,s2:s2_next", KeyCommandBuffers: cb, KeySharedHostIO: shared})
				require.NoError(t, err)
				defer func() { require.NoError(t, cm.Close()) }()
				r, err := cm.CreateInferRequest()
				require.NoError(t, err)
				defer r.Close()
				f(t, r.(*InferRequest))
			})
		}
	}
}
