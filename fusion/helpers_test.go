package fusion_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers "CPU", which runCPU compiles for
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// builder builds small test graphs with seeded random constants.
type builder struct {
	t      *testing.T
	params []*graph.Node
	seed   uint32
	n      int
}

func newBuilder(t *testing.T) *builder { return &builder{t: t, seed: 1} }

func (b *builder) name(op string) string { b.n++; return fmt.Sprintf("%s_%d", op, b.n) }

func (b *builder) param(name string, shape ...int64) graph.Output {
	p := graph.NewParameter(name, tensor.F32, graph.ShapeOf(shape...))
	b.params = append(b.params, p)
	return p.Out(0)
}

// rand is a constant of seeded uniform values in [lo, hi].
func (b *builder) rand(lo, hi float32, shape ...int64) graph.Output {
	b.seed++
	s := tensor.Shape(shape)
	v, err := tensor.FromF32(s, seeded.Float32s(b.seed, int(s.NumElements()), lo, hi))
	require.NoError(b.t, err)
	return graph.NewConstant(b.name("w"), v).Out(0)
}

func (b *builder) scalar(v float32) graph.Output {
	return graph.NewConstant(b.name("c"), tensor.Scalar(v)).Out(0)
}

func (b *builder) ints(v ...int64) graph.Output {
	t, err := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	require.NoError(b.t, err)
	return graph.NewConstant(b.name("i"), t).Out(0)
}

func (b *builder) op(op string, attrs graph.Attrs, in ...graph.Output) graph.Output {
	return graph.NewNode(op, b.name(op), in, attrs, 1).Out(0)
}

func (b *builder) model(outs ...graph.Output) *graph.Model {
	var results []*graph.Node
	for i, o := range outs {
		results = append(results, graph.NewResult(fmt.Sprintf("out%d", i), o))
	}
	m := graph.NewModel("test", b.params, results)
	require.NoError(b.t, m.Validate())
	return m
}

// opCount counts the nodes of op type op.
func opCount(t *testing.T, m *graph.Model, op string) int {
	nodes, err := m.Nodes()
	require.NoError(t, err)
	c := 0
	for _, n := range nodes {
		if n.OpType == op {
			c++
		}
	}
	return c
}

// randomInputs makes seeded inputs for every parameter; dynamic dims take
// the size dyn gives for their position.
func randomInputs(t *testing.T, m *graph.Model, seed uint32, dyn func(param string, axis int) int64) map[string]*tensor.Tensor {
	in := map[string]*tensor.Tensor{}
	for i, p := range m.Parameters {
		ps := p.Outputs[0].Shape
		require.True(t, ps.RankKnown, "parameter %s has unknown rank", p.Name)
		s := make(tensor.Shape, len(ps.Dims))
		for j, d := range ps.Dims {
			s[j] = d.Size
			if !d.IsStatic() {
				require.NotNil(t, dyn, "parameter %s has dynamic dim %d", p.Name, j)
				s[j] = dyn(p.Name, j)
			}
		}
		v, err := tensor.FromF32(s, seeded.Float32s(seed+uint32(i), int(s.NumElements()), -1, 1))
		require.NoError(t, err)
		in[p.Name] = v
	}
	return in
}

// runCPU compiles m on the CPU device with transformations off (the graph
// runs exactly as given) and returns its outputs in order.
func runCPU(t *testing.T, m *graph.Model, inputs map[string]*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	core := driver.NewCore()
	defer func() { require.NoError(t, core.Close()) }()
	ctx := context.Background()
	cm, err := core.CompileModel(ctx, m, "CPU", map[string]string{driver.KeyDisableTransformations: "YES"})
	require.NoError(t, err)
	defer func() { require.NoError(t, cm.Close()) }()
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { require.NoError(t, req.Close()) }()
	for name, v := range inputs {
		require.NoError(t, req.SetTensor(name, v))
	}
	require.NoError(t, req.Infer(ctx))
	var outs []*tensor.Tensor
	for _, o := range cm.Outputs() {
		v, err := req.Tensor(o.Name)
		require.NoError(t, err)
		outs = append(outs, v.Clone())
	}
	return outs
}

// requireClose checks got against want elementwise within atol + rtol*|want|.
func requireClose(t *testing.T, want, got []*tensor.Tensor, atol, rtol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Type(), got[i].Type(), "output %d type", i)
		require.True(t, want[i].Shape().Equal(got[i].Shape()), "output %d: shape %v, want %v", i, got[i].Shape(), want[i].Shape())
		w, g := want[i].Float64s(), got[i].Float64s()
		worst, at := 0.0, -1
		for j := range w {
			d := math.Abs(w[j] - g[j])
			if d > atol+rtol*math.Abs(w[j]) || math.IsNaN(g[j]) != math.IsNaN(w[j]) {
				if d > worst || at < 0 {
					worst, at = d, j
				}
			}
		}
		require.Less(t, at, 0, "output %d: element %d is %g, want %g (|diff| %g)", i, at, safeAt(g, at), safeAt(w, at), worst)
	}
}

func safeAt(v []float64, i int) float64 {
	if i < 0 || i >= len(v) {
		return math.NaN()
	}
	return v[i]
}

// transform runs passes on a clone of m with the CPU evaluator and checks
// that the transformed graph computes what m computes on the CPU device.
func transform(t *testing.T, m *graph.Model, inputs map[string]*tensor.Tensor, passes ...fusion.Pass) (*graph.Model, *fusion.Report) {
	t.Helper()
	return transformWith(t, m, inputs, fusion.Options{}, passes...)
}

// transformWith is transform under opts (Eval set to the CPU's).
func transformWith(t *testing.T, m *graph.Model, inputs map[string]*tensor.Tensor, opts fusion.Options, passes ...fusion.Pass) (*graph.Model, *fusion.Report) {
	t.Helper()
	tm := m.Clone()
	opts.Eval = ref.Evaluate
	rep, err := fusion.NewManager(passes...).Run(context.Background(), tm, opts)
	require.NoError(t, err)
	require.NoError(t, tm.Validate(), "transformed model is invalid")
	requireClose(t, runCPU(t, m, inputs), runCPU(t, tm, inputs), 1e-4, 1e-3)
	return tm, rep
}
