package tests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// accumulator is y = x + 2*s, s_next = s + x: with MAKE_STATEFUL=s:s_next
// each inference adds x to the state.
func accumulator() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(2, 3))
	two := graph.NewConstant("two", tensor.Scalar(2))
	next := graph.NewNode("Add", "next", []graph.Output{s.Out(0), x.Out(0)}, nil, 1)
	s2 := graph.NewNode("Mul", "s2", []graph.Output{s.Out(0), two.Out(0)}, nil, 1)
	y := graph.NewNode("Add", "y", []graph.Output{x.Out(0), s2.Out(0)}, nil, 1)
	return graph.NewModel("acc", []*graph.Node{x, s}, []*graph.Node{graph.NewResult("y", y.Out(0)), graph.NewResult("s_next", next.Out(0))})
}

func TestStatefulCPU(t *testing.T) { statefulSuite(t, "CPU") }

// statefulSuite checks MAKE_STATEFUL on device: the state ports are gone,
// each inference reads the state the last one wrote, QueryState reads,
// sets and resets it, requests keep states of their own, and bad pairs
// and state ports are refused by name.
func statefulSuite(t *testing.T, device string) {
	core := plugin.NewCore()
	defer core.Close()
	ctx := context.Background()
	cm, err := core.CompileModel(ctx, accumulator(), device, plugin.Props(plugin.MakeStateful("s:s_next")))
	require.NoError(t, err)
	defer cm.Close()
	assert.Len(t, cm.Inputs(), 1, "the state input is the request's")
	assert.Len(t, cm.Outputs(), 1, "the state output is the request's")
	v, err := cm.Property(plugin.KeyMakeStateful)
	require.NoError(t, err)
	assert.Equal(t, "s:s_next", v)

	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	other, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer other.Close()
	x, _ := tensor.FromF32(tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, r.SetTensor("x", x))
	for k := 0; k < 3; k++ {
		require.NoError(t, r.Infer(ctx))
		y, err := r.Tensor("y")
		require.NoError(t, err)
		// s = k*x before inference k: y = x + 2*k*x.
		assert.InDeltaSlice(t, []float32{float32(1 + 2*k), float32(2 * (1 + 2*k)), float32(3 * (1 + 2*k)), float32(4 * (1 + 2*k)), float32(5 * (1 + 2*k)), float32(6 * (1 + 2*k))}, y.F32(), 1e-6, "inference %d", k)
	}
	states, err := r.QueryState()
	require.NoError(t, err)
	require.Len(t, states, 1)
	assert.Equal(t, "s", states[0].Name())
	st, err := states[0].State()
	require.NoError(t, err)
	assert.Equal(t, []float32{3, 6, 9, 12, 15, 18}, st.F32())

	// Another request has its own state, at zero.
	require.NoError(t, other.SetTensor("x", x))
	require.NoError(t, other.Infer(ctx))
	y, _ := other.Tensor("y")
	assert.Equal(t, x.F32(), y.F32())

	set, _ := tensor.FromF32(tensor.Shape{2, 3}, []float32{10, 10, 10, 10, 10, 10})
	require.NoError(t, states[0].SetState(set))
	require.NoError(t, r.Infer(ctx))
	y, _ = r.Tensor("y")
	assert.Equal(t, []float32{21, 22, 23, 24, 25, 26}, y.F32())
	require.NoError(t, states[0].Reset())
	require.NoError(t, r.Infer(ctx))
	y, _ = r.Tensor("y")
	assert.Equal(t, x.F32(), y.F32(), "after Reset the state is zero")

	bad, _ := tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3})
	assert.ErrorIs(t, states[0].SetState(bad), plugin.ErrInvalidArgument)
	assert.ErrorIs(t, r.SetTensor("s", x), plugin.ErrInvalidArgument)
	_, err = r.Tensor("s_next")
	assert.ErrorContains(t, err, "QueryState")

	for _, pairs := range []string{"s:nope", "x", "s:s_next,s:y"} {
		_, err := core.CompileModel(ctx, accumulator(), device, plugin.Props(plugin.MakeStateful(pairs)))
		assert.ErrorIs(t, err, plugin.ErrInvalidArgument, pairs)
	}
	dyn := accumulator()
	dyn.Parameters[1].Outputs[0].Shape = graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("n"), graph.StaticDim(3)}}
	_, err = core.CompileModel(ctx, dyn, device, plugin.Props(plugin.MakeStateful("s:s_next")))
	assert.ErrorContains(t, err, "static shape")

	plain, err := core.CompileModel(ctx, accumulator(), device, nil)
	require.NoError(t, err)
	defer plain.Close()
	pr, err := plain.CreateInferRequest()
	require.NoError(t, err)
	defer pr.Close()
	_, err = pr.QueryState()
	assert.ErrorIs(t, err, plugin.ErrNotImplemented)
}
