package fusion_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestKernelFusionDeclarations checks every declaration of the registry:
// it validates, its pass and kernel names are unique, and the standard
// pipeline runs it after FuseFullyConnected and before DeadCodeRemoval.
func TestKernelFusionDeclarations(t *testing.T) {
	all := fusion.KernelFusions()
	require.NotEmpty(t, all)
	names := fusion.Default().Names()
	after := slices.Index(names, fusion.PassFuseFullyConnected)
	before := slices.Index(names, fusion.PassDeadCodeRemoval)
	kernels := map[string]bool{}
	for _, k := range all {
		t.Run(k.Name, func(t *testing.T) {
			require.NoError(t, k.Validate())
			assert.False(t, kernels[k.Kernel], "kernel %s is declared twice", k.Kernel)
			kernels[k.Kernel] = true
			i := slices.Index(names, k.Name)
			require.GreaterOrEqual(t, i, 0, "pass %s is not in the standard pipeline", k.Name)
			assert.Greater(t, i, after)
			assert.Less(t, i, before)
			got, ok := fusion.LookupKernelFusion(k.Kernel)
			require.True(t, ok)
			assert.Equal(t, k.Name, got.Name)
		})
	}
	_, ok := fusion.LookupKernelFusion("no_such_kernel")
	assert.False(t, ok)
}

// originalOps lists the op nodes of m by name.
func originalOps(t *testing.T, m *graph.Model) []string {
	nodes, err := m.Nodes()
	require.NoError(t, err)
	var out []string
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
		default:
			out = append(out, n.Name)
		}
	}
	return out
}

// TestKernelFusionsMatchUnfused runs each declared fusion on seeded random
// instances of its pattern: the pass makes exactly one KernelFusion node
// with the declared kernel, inputs and launch, which stands for every op of
// the instance (fused names) and computes on the CPU device what the
// unfused instance computes.
func TestKernelFusionsMatchUnfused(t *testing.T) {
	for _, k := range fusion.KernelFusions() {
		for seed := range uint64(3) {
			t.Run(k.Name, func(t *testing.T) {
				m, err := k.Instance(rand.New(rand.NewPCG(seed, 5)))
				require.NoError(t, err)
				ops := originalOps(t, m)
				fm := m.Clone()
				n, err := fusion.ApplyKernelFusion(context.Background(), fm, k)
				require.NoError(t, err)
				require.Equal(t, 1, n, "rewrites")
				require.NoError(t, fm.Validate())
				kf := fm.Results[0].Inputs[0].Node
				require.Equal(t, graph.OpKernelFusion, kf.OpType)
				assert.Equal(t, []string{kf.Name}, originalOps(t, fm), "every op of the instance is absorbed")
				assert.Equal(t, k.Kernel, kf.Attrs.String(graph.AttrKernel, ""))
				assert.Equal(t, k.Launch, kf.Attrs.String(graph.AttrLaunch, ""))
				assert.Len(t, kf.Inputs, len(k.Inputs))
				assert.ElementsMatch(t, ops, kf.OriginalNames())
				body, err := graph.KernelFusionBody(kf)
				require.NoError(t, err)
				for i, p := range body.Parameters {
					assert.Equal(t, k.Inputs[i].Name, p.Name, "body parameter %d", i)
				}
				in := randomInputs(t, m, uint32(seed)+1, nil)
				requireClose(t, runCPU(t, m, in), runCPU(t, fm, in), 1e-5, 1e-5)
			})
		}
	}
}

// TestKernelFusionRewriteRules: inputs are exactly the declared captures;
// a Constant the matched ops read is copied into the body; a non-constant
// value from outside that is not declared declines the match, and so do
// inputs that are not f32.
func TestKernelFusionRewriteRules(t *testing.T) {
	k := fusion.KernelFusion{
		Name: "FuseClipRelu", Doc: "test", Kernel: "clip_relu", File: "clip_relu.cl", Launch: graph.LaunchElementwise,
		Pattern: fusion.Op("Relu", fusion.Op("Clip", fusion.Any().As("x"))),
		Inputs:  []fusion.Input{{Name: "x", Shape: "N"}},
	}
	require.NoError(t, k.Validate())
	build := func(typ tensor.ElementType, constBounds bool) *graph.Model {
		x := graph.NewParameter("x", typ, graph.ShapeOf(5))
		lo := graph.NewParameter("lo", typ, graph.ShapeOf())
		params := []*graph.Node{x, lo}
		loOut := lo.Out(0)
		if constBounds {
			v, err := tensor.FromFloat64s(typ, tensor.Shape{}, []float64{-0.5})
			require.NoError(t, err)
			loOut = graph.NewConstant("lo_c", v).Out(0)
			params = params[:1]
		}
		clip := graph.NewNode("Clip", "clip", []graph.Output{x.Out(0), loOut}, nil, 1)
		relu := graph.NewNode("Relu", "relu", []graph.Output{clip.Out(0)}, nil, 1)
		m := graph.NewModel("m", params, []*graph.Node{graph.NewResult("y", relu.Out(0))})
		require.NoError(t, m.Validate())
		return m
	}
	m := build(tensor.F32, true)
	n, err := fusion.ApplyKernelFusion(context.Background(), m, k)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	body, err := graph.KernelFusionBody(m.Results[0].Inputs[0].Node)
	require.NoError(t, err)
	assert.Equal(t, 1, opCount(t, body, graph.OpConstant), "the Clip bound is copied into the body")
	in := randomInputs(t, build(tensor.F32, true), 3, nil)
	requireClose(t, runCPU(t, build(tensor.F32, true), in), runCPU(t, m, in), 0, 0)

	for _, c := range []struct {
		name  string
		model *graph.Model
	}{{"undeclared_value", build(tensor.F32, false)}, {"f64", build(tensor.F64, true)}} {
		t.Run(c.name, func(t *testing.T) {
			n, err := fusion.ApplyKernelFusion(context.Background(), c.model, k)
			require.NoError(t, err)
			assert.Zero(t, n)
		})
	}
}

func TestKernelFusionValidate(t *testing.T) {
	ok := func() fusion.KernelFusion {
		return fusion.KernelFusion{
			Name: "FuseX", Doc: "x", Kernel: "x_kernel", File: "x.cl", Launch: graph.LaunchRows,
			Pattern: fusion.Op("Add", fusion.Any().As("a"), fusion.Op("Relu", fusion.Const().As("c"))),
			Inputs:  []fusion.Input{{Name: "a", Shape: "N,C"}, {Name: "c", Shape: "C"}},
		}
	}
	require.NoError(t, ok().Validate())
	for _, c := range []struct {
		name, want string
		edit       func(k *fusion.KernelFusion)
	}{
		{"no_doc", "Doc", func(k *fusion.KernelFusion) { k.Doc = "" }},
		{"kernel_name", "C identifier", func(k *fusion.KernelFusion) { k.Kernel = "x-kernel" }},
		{"file", "must be a .cl file", func(k *fusion.KernelFusion) { k.File = "x.c" }},
		{"launch", "elementwise, gemm_rows, reduce_rows, rows", func(k *fusion.KernelFusion) { k.Launch = "tiles" }},
		{"pattern", "Op pattern", func(k *fusion.KernelFusion) { k.Pattern = fusion.Any() }},
		{"no_inputs", "no Inputs", func(k *fusion.KernelFusion) { k.Inputs = nil }},
		{"unknown_capture", `"b" is not a capture`, func(k *fusion.KernelFusion) { k.Inputs[1].Name = "b" }},
		{"any_not_input", `Any() "a" that is not an input`, func(k *fusion.KernelFusion) { k.Inputs = k.Inputs[1:] }},
		{"op_capture", "captures an Op", func(k *fusion.KernelFusion) {
			k.Pattern = fusion.Op("Add", fusion.Any().As("a"), fusion.Op("Relu", fusion.Any().As("b")).As("r"))
			k.Inputs = []fusion.Input{{Name: "a"}, {Name: "b"}, {Name: "r"}}
		}},
		{"twice", "listed twice", func(k *fusion.KernelFusion) { k.Inputs = append(k.Inputs, k.Inputs[0]) }},
		{"shape", `"N+1" is neither`, func(k *fusion.KernelFusion) { k.Inputs[0].Shape = "N+1,C" }},
		{"size", "at least 1", func(k *fusion.KernelFusion) { k.Inputs[0].Shape = "0,C" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := ok()
			c.edit(&k)
			err := k.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "FuseX", "the error names the declaration")
		})
	}
}

// TestKernelFusionInstance: the generated instance satisfies Attr and
// ConstScalar; one that a Where condition rejects is an error asking for
// an Example, which then replaces it.
func TestKernelFusionInstance(t *testing.T) {
	k := fusion.KernelFusion{
		Name: "FuseScaledSoftmax", Doc: "x", Kernel: "scaled_softmax", File: "scaled_softmax.cl", Launch: graph.LaunchRows,
		Pattern: fusion.Op("Softmax", fusion.Op("Mul", fusion.Any().As("x"), fusion.ConstScalar(0.125))).Attr("axis", int64(-1), int64(-1)),
		Inputs:  []fusion.Input{{Name: "x", Shape: "B,4,T"}},
	}
	m, err := k.Instance(rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	sm := m.Results[0].Inputs[0].Node
	assert.Equal(t, int64(-1), sm.Attrs.Int("axis", 0))
	c, ok := sm.Inputs[0].Node.ConstInput(1)
	require.True(t, ok)
	assert.InDelta(t, 0.125, c.Float64s()[0], 1e-7)
	s, ok := m.Parameters[0].Outputs[0].Shape.ToShape()
	require.True(t, ok)
	assert.Equal(t, int64(4), s[1])
	assert.Equal(t, s[0] >= 2 && s[0] <= 5 && s[2] >= 2 && s[2] <= 5, true, "named dims are drawn in [2, 5]: %v", s)

	k.Pattern = fusion.Op("Relu", fusion.Any().As("x")).Where(func(n *graph.Node) bool { return n.Attrs.Has("never") })
	_, err = k.Instance(rand.New(rand.NewPCG(1, 1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set Example")
	k.Example = func(*rand.Rand) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(3))
		r := graph.NewNode("Relu", "r", []graph.Output{x.Out(0)}, graph.Attrs{"never": int64(1)}, 1)
		return graph.NewModel("ex", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
	}
	_, err = k.Instance(rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
}
