package cpufallback_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// seModel is y = x + x*gate over x [N,2,3,3] with a dynamic N, written out
// (Mul, Add) or, with fused, as a KernelFusion node whose body is that.
func seModel(fused bool) *graph.Model {
	param := func(name string, dims ...graph.Dim) *graph.Node {
		return graph.NewParameter(name, tensor.F32, graph.PartialShape{RankKnown: true, Dims: dims})
	}
	sub := func(x, g *graph.Node) graph.Output {
		mul := graph.NewNode("Mul", "mul", []graph.Output{x.Out(0), g.Out(0)}, nil, 1)
		return graph.NewNode("Add", "add", []graph.Output{x.Out(0), mul.Out(0)}, nil, 1).Out(0)
	}
	dims := []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(2), graph.StaticDim(3), graph.StaticDim(3)}
	gdims := []graph.Dim{graph.StaticDim(1), graph.StaticDim(2), graph.StaticDim(1), graph.StaticDim(1)}
	x, g := param("x", dims...), param("gate", gdims...)
	if !fused {
		return graph.NewModel("se", []*graph.Node{x, g}, []*graph.Node{graph.NewResult("y", sub(x, g))})
	}
	bx, bg := param("x", dims...), param("gate", gdims...)
	body := graph.NewModel("se_residual", []*graph.Node{bx, bg}, []*graph.Node{graph.NewResult("y", sub(bx, bg))})
	n := graph.NewNode(graph.OpKernelFusion, "add", []graph.Output{x.Out(0), g.Out(0)},
		graph.Attrs{graph.AttrKernel: "se_residual", graph.AttrLaunch: graph.LaunchElementwise, graph.AttrBody: body}, 1)
	n.RT.FusedNames = []string{"mul", "add"}
	return graph.NewModel("se", []*graph.Node{x, g}, []*graph.Node{graph.NewResult("y", n.Out(0))})
}

// TestKernelFusionRunsBody: the CPU device runs a KernelFusion node by
// executing its body (bound to the actual input shapes), reports it as
// ref_body:<kernel> with the absorbed names, and agrees with the unfused
// graph exactly.
func TestKernelFusionRunsBody(t *testing.T) {
	p, err := cpufallback.New()
	require.NoError(t, err)
	defer p.Close()
	ins := map[string]*tensor.Tensor{"x": fusedRand(t, 1, 2, 2, 3, 3), "gate": fusedRand(t, 2, 1, 2, 1, 1)}
	run := func(m *graph.Model) (*tensor.Tensor, driver.CompiledModel) {
		cm, err := p.CompileModel(context.Background(), m, plugin.Props(plugin.WithDisableTransformations(true)))
		require.NoError(t, err)
		t.Cleanup(func() { cm.Close() })
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer req.Close()
		for k, v := range ins {
			require.NoError(t, req.SetTensor(k, v))
		}
		require.NoError(t, req.Infer(context.Background()))
		y, err := req.Tensor("y")
		require.NoError(t, err)
		return y.Clone(), cm
	}
	want, _ := run(seModel(false))
	got, cm := run(seModel(true))
	assert.Equal(t, want.Shape(), got.Shape())
	assert.Equal(t, want.F32(), got.F32())

	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	n := rm.Node("add")
	require.NotNil(t, n)
	assert.Equal(t, graph.OpKernelFusion, n.RT.Extra["LAYER_TYPE"])
	assert.Equal(t, "ref_body:se_residual", n.RT.Extra["IMPL_TYPE"])
	assert.Equal(t, "mul,add", n.RT.Extra["ORIGINAL_NAMES"])

	q, err := p.QueryModel(context.Background(), seModel(true), nil)
	require.NoError(t, err)
	assert.Equal(t, cpufallback.DeviceName, q["add"])
}

// TestKernelFusionBodyErrors: a body the reference kernels cannot run is
// an error naming the fused node and the body.
func TestKernelFusionBodyErrors(t *testing.T) {
	m := seModel(true)
	n := m.Results[0].Inputs[0].Node
	body, err := graph.KernelFusionBody(n)
	require.NoError(t, err)
	body.Results[0].Inputs[0].Node.OpType = "NoSuchOp"
	_, err = ref.Evaluate(n, []*tensor.Tensor{fusedRand(t, 1, 1, 2, 3, 3), fusedRand(t, 2, 1, 2, 1, 1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"add" (KernelFusion)`)
	assert.Contains(t, err.Error(), `body "se_residual"`)
	assert.Contains(t, err.Error(), "NoSuchOp")
}
