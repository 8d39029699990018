package hetero

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// testDevice is the CPU device under another name that cannot run Relu:
// a second device for HETERO without OpenCL.
const testDevice = "HTEST"

func init() {
	registerCPUAs(testDevice, func(p *cpufallback.Plugin) driver.Plugin { return &noRelu{Plugin: p} })
}

// registerCPUAs registers under name a new CPU device wrapped by wrap: the
// test devices HETERO splits across.
func registerCPUAs(name string, wrap func(*cpufallback.Plugin) driver.Plugin) {
	driver.Register(name, func() (driver.Plugin, error) {
		p, err := cpufallback.New()
		if err != nil {
			return nil, err
		}
		return wrap(p), nil
	})
}

// noRelu is the CPU device that pretends not to support Relu.
type noRelu struct{ *cpufallback.Plugin }

func (p *noRelu) Name() string { return testDevice }

func (p *noRelu) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	a, err := p.Plugin.QueryModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name := range a {
		if n := m.Node(name); n != nil && n.OpType != "Relu" {
			out[name] = testDevice
		}
	}
	return out, nil
}

func (p *noRelu) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.OpType == "Relu" {
			return nil, driver.Errorf(driver.ErrUnsupported, "htest: node %q: Relu is not supported", n.Name)
		}
	}
	return p.Plugin.CompileModel(ctx, m, props)
}

// chain is x f32[dims] -> Add(c) "add" -> Relu "relu" -> Mul(c) "mul" ->
// Result "y", and "mul" also feeds Result "z" through Sub(x) "sub" (so
// a model input reaches two subgraphs).
func chain(t *testing.T, dims ...graph.Dim) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{Dims: dims, RankKnown: true})
	cv, err := tensor.FromF32(tensor.Shape{4}, []float32{0.5, -1, 2, -3})
	require.NoError(t, err)
	c := graph.NewConstant("c", cv)
	add := graph.NewNode("Add", "add", []graph.Output{x.Out(0), c.Out(0)}, nil, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{add.Out(0)}, nil, 1)
	mul := graph.NewNode("Mul", "mul", []graph.Output{relu.Out(0), c.Out(0)}, nil, 1)
	sub := graph.NewNode("Sub", "sub", []graph.Output{mul.Out(0), x.Out(0)}, nil, 1)
	y := graph.NewResult("y", mul.Out(0))
	z := graph.NewResult("z", sub.Out(0))
	m := graph.NewModel("chain", []*graph.Node{x}, []*graph.Node{y, z})
	require.NoError(t, m.InferShapes())
	return m
}

func static(sizes ...int64) []graph.Dim {
	d := make([]graph.Dim, len(sizes))
	for i, s := range sizes {
		d[i] = graph.StaticDim(s)
	}
	return d
}

func newHetero(t *testing.T) *Plugin {
	t.Helper()
	p, err := New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// run compiles m on p with props, infers on inputs and returns the outputs
// by name.
func run(t *testing.T, p driver.Plugin, m *graph.Model, props map[string]string, inputs map[string]*tensor.Tensor) (driver.CompiledModel, map[string]*tensor.Tensor) {
	t.Helper()
	cm, err := p.CompileModel(context.Background(), m, props)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	for name, x := range inputs {
		require.NoError(t, r.SetTensor(name, x))
	}
	require.NoError(t, r.Infer(context.Background()))
	out := map[string]*tensor.Tensor{}
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		require.NoError(t, err)
		out[o.Name] = y.Clone()
	}
	return cm, out
}

// reference runs m on the CPU device alone.
func reference(t *testing.T, m *graph.Model, inputs map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	p, err := cpufallback.New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	_, out := run(t, p, m, nil, inputs)
	return out
}

func assertSame(t *testing.T, want, got map[string]*tensor.Tensor) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for name, w := range want {
		g := got[name]
		require.NotNil(t, g, "output %q", name)
		require.Equal(t, w.Shape(), g.Shape(), "output %q shape", name)
		assert.InDeltaSlice(t, w.Contiguous().F32(), g.Contiguous().F32(), 1e-6, "output %q", name)
	}
}

func input(t *testing.T, seed uint32, shape tensor.Shape) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(shape, seeded.Float32s(seed, int(shape.NumElements()), -3, 3))
	require.NoError(t, err)
	return x
}

func prop(t *testing.T, cm driver.CompiledModel, key string) string {
	t.Helper()
	v, err := cm.Property(key)
	require.NoError(t, err)
	return v
}

func TestSplitAroundUnsupportedOp(t *testing.T) {
	cases := []struct {
		name   string
		dims   []graph.Dim
		shape  tensor.Shape
		static bool
	}{
		{"Static", static(2, 4), tensor.Shape{2, 4}, true},
		{"DynamicBatch", []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(4)}, tensor.Shape{3, 4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := chain(t, tc.dims...)
			x := input(t, 7, tc.shape)
			want := reference(t, m, map[string]*tensor.Tensor{"x": x})
			p := newHetero(t)
			cm, got := run(t, p, m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}, map[string]*tensor.Tensor{"x": x})
			assertSame(t, want, got)
			assert.Equal(t, "3", prop(t, cm, KeyNumberOfSubmodels))
			assert.Equal(t, testDevice+" CPU", prop(t, cm, driver.KeyExecutionDevices))
			devs, _ := cm.(*CompiledModel).Submodels()
			assert.Equal(t, []string{testDevice, "CPU", testDevice}, devs)

			// The user's model is unchanged: no affinities leak back.
			nodes, err := m.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				assert.Empty(t, n.RT.Affinity, "node %q", n.Name)
			}
		})
	}
}

func TestIntermediateTensorsShared(t *testing.T) {
	m := chain(t, static(2, 4)...)
	p := newHetero(t)
	cm, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	defer cm.Close()
	ri, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer ri.Close()
	r := ri.(*InferRequest)
	var before []*tensor.Tensor
	links := 0
	for k, sg := range r.c.subs {
		for _, in := range sg.inputs {
			if in.from.sub < 0 {
				continue
			}
			links++
			prod, err := r.subs[in.from.sub].Tensor(in.from.name)
			require.NoError(t, err)
			cons, err := r.subs[k].Tensor(in.name)
			require.NoError(t, err)
			assert.Same(t, prod, cons, "%s input %q is its producer's output tensor", sg.name, in.name)
			before = append(before, cons)
		}
	}
	require.Equal(t, 2, links, "add->relu and relu->mul cross subgraphs")
	for i := range 2 {
		require.NoError(t, r.SetTensor("x", input(t, uint32(i), tensor.Shape{2, 4})))
		require.NoError(t, r.Infer(context.Background()))
	}
	i := 0
	for k, sg := range r.c.subs {
		for _, in := range sg.inputs {
			if in.from.sub < 0 {
				continue
			}
			cons, err := r.subs[k].Tensor(in.name)
			require.NoError(t, err)
			assert.Same(t, before[i], cons, "inference reallocated intermediate %q", in.name)
			i++
		}
	}
}

func TestPinnedHalfHalf(t *testing.T) {
	m := chain(t, static(2, 4)...)
	x := input(t, 3, tensor.Shape{2, 4})
	want := reference(t, m, map[string]*tensor.Tensor{"x": x})
	pinned := m.Clone()
	for _, n := range []string{"add", "relu"} {
		pinned.Node(n).RT.Affinity = "CPU"
	}
	for _, n := range []string{"mul", "sub"} {
		pinned.Node(n).RT.Affinity = testDevice
	}
	p := newHetero(t)
	// CPU is listed first, yet the pins put mul and sub on HTEST.
	cm, got := run(t, p, pinned, map[string]string{driver.KeyDevicePriorities: "CPU," + testDevice}, map[string]*tensor.Tensor{"x": x})
	assertSame(t, want, got)
	assert.Equal(t, "2", prop(t, cm, KeyNumberOfSubmodels))
	assert.Equal(t, "CPU "+testDevice, prop(t, cm, driver.KeyExecutionDevices))

	// A pin to a device that cannot run the node fails on that device.
	bad := m.Clone()
	bad.Node("relu").RT.Affinity = testDevice
	_, err := p.CompileModel(context.Background(), bad, map[string]string{driver.KeyDevicePriorities: "CPU"})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), "relu")
}

// TestCycleSplit: a and c on one device, b on the other, with c reading
// both a and b: cutting only where the affinity changes would give the
// subgraphs {a,c} and {b}, each waiting for the other.
func TestCycleSplit(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 4))
	a := graph.NewNode("Abs", "a", []graph.Output{x.Out(0)}, nil, 1)
	b := graph.NewNode("Relu", "b", []graph.Output{a.Out(0)}, nil, 1)
	c := graph.NewNode("Add", "c", []graph.Output{a.Out(0), b.Out(0)}, nil, 1)
	d := graph.NewNode("Neg", "d", []graph.Output{x.Out(0)}, nil, 1) // independent branch
	y := graph.NewResult("y", c.Out(0))
	z := graph.NewResult("z", d.Out(0))
	m := graph.NewModel("diamond", []*graph.Node{x}, []*graph.Node{y, z})
	require.NoError(t, m.InferShapes())
	xv := input(t, 11, tensor.Shape{1, 4})
	want := reference(t, m, map[string]*tensor.Tensor{"x": xv})
	p := newHetero(t)
	cm, got := run(t, p, m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}, map[string]*tensor.Tensor{"x": xv})
	assertSame(t, want, got)
	devs, _ := cm.(*CompiledModel).Submodels()
	assert.Equal(t, []string{testDevice, "CPU", testDevice}, devs)
	// Each subgraph reads only earlier subgraphs.
	for k, sg := range cm.(*CompiledModel).subs {
		for _, in := range sg.inputs {
			assert.Less(t, in.from.sub, k, "%s input %q", sg.name, in.name)
		}
	}
}

func TestHousekeepingOnlyModels(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2))
	cv, err := tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3})
	require.NoError(t, err)
	c := graph.NewConstant("c", cv)
	m := graph.NewModel("passthrough", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", x.Out(0)), graph.NewResult("k", c.Out(0))})
	require.NoError(t, m.InferShapes())
	xv := input(t, 5, tensor.Shape{2})
	p := newHetero(t)
	cm, got := run(t, p, m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}, map[string]*tensor.Tensor{"x": xv})
	assert.Equal(t, xv.F32(), got["y"].F32())
	assert.Equal(t, []float32{1, 2, 3}, got["k"].F32())
	assert.Equal(t, testDevice, prop(t, cm, driver.KeyExecutionDevices))
}

func TestUnsupportedEverywhere(t *testing.T) {
	m := chain(t, static(1, 4)...)
	p := newHetero(t)
	_, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), `"relu" (Relu)`)

	q, err := p.QueryModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice})
	require.NoError(t, err)
	assert.Equal(t, testDevice, q["add"])
	assert.NotContains(t, q, "relu")

	q, err = p.QueryModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x": testDevice, "c": testDevice, "add": testDevice, "relu": "CPU", "mul": testDevice, "sub": testDevice, "y": testDevice, "z": testDevice}, q)
}

func TestBadDeviceLists(t *testing.T) {
	cases := []struct {
		name, prio string
		sentinel   error
	}{
		{"Self", "HETERO,CPU", driver.ErrInvalidArgument},
		{"Twice", "CPU,CPU", driver.ErrInvalidArgument},
		{"Malformed", "CPU,,GPU", driver.ErrInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newHetero(t)
			err := p.SetProperties(map[string]string{driver.KeyDevicePriorities: tc.prio})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.Contains(t, err.Error(), driver.KeyDevicePriorities)
		})
	}
	t.Run("Empty", func(t *testing.T) {
		p := newHetero(t)
		_, err := p.CompileModel(context.Background(), chain(t, static(1, 4)...), nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), driver.KeyDevicePriorities)
	})
	t.Run("UnknownDevice", func(t *testing.T) {
		p := newHetero(t)
		_, err := p.CompileModel(context.Background(), chain(t, static(1, 4)...), map[string]string{driver.KeyDevicePriorities: "NOSUCHDEV"})
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrNotFound)
		assert.Contains(t, err.Error(), "NOSUCHDEV")
	})
}

func TestCoreDeviceString(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	m := chain(t, static(2, 4)...)
	cm, err := core.CompileModel(context.Background(), m, "HETERO:"+testDevice+",CPU", nil)
	require.NoError(t, err)
	defer cm.Close()
	assert.Equal(t, "3", prop(t, cm, KeyNumberOfSubmodels))
	assert.Equal(t, testDevice+",CPU", prop(t, cm, driver.KeyDevicePriorities))
}

func TestDumpDot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dots")
	p := newHetero(t)
	_, err := p.CompileModel(context.Background(), chain(t, static(1, 4)...), map[string]string{
		driver.KeyDevicePriorities: testDevice + ",CPU", KeyDumpGraphDot: dir,
	})
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, "*.dot"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	assert.ElementsMatch(t, []string{"chain_affinity.dot", "chain_subgraph0_HTEST.dot", "chain_subgraph1_CPU.dot", "chain_subgraph2_HTEST.dot"}, names)
	b, err := os.ReadFile(filepath.Join(dir, "chain_affinity.dot"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "relu\\n@CPU")
	assert.Contains(t, string(b), "add\\n@HTEST")
	b, err = os.ReadFile(filepath.Join(dir, "chain_subgraph1_CPU.dot"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "Relu")
	assert.NotContains(t, string(b), "Mul")
}

func TestProfilingPrefixedBySubgraph(t *testing.T) {
	m := chain(t, static(1, 4)...)
	p := newHetero(t)
	cm, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU", driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Infer(context.Background()))
	ops := map[string]string{}
	for _, e := range r.ProfilingInfo() {
		if e.NodeType != "Stage" {
			ops[e.NodeName] = e.NodeType
		}
	}
	assert.Equal(t, "Relu", ops["subgraph1/relu"], "profile: %v", ops)
	assert.Equal(t, "Add", ops["subgraph0/add"], "profile: %v", ops)
	assert.Equal(t, "Mul", ops["subgraph2/mul"], "profile: %v", ops)

	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	relu := rm.Node("relu")
	require.NotNil(t, relu)
	assert.Equal(t, "CPU", relu.RT.Affinity)
	assert.Equal(t, "subgraph1", relu.RT.Extra["HETERO_SUBGRAPH"])
}

func TestUserBoundOutput(t *testing.T) {
	m := chain(t, static(2, 4)...)
	x := input(t, 9, tensor.Shape{2, 4})
	want := reference(t, m, map[string]*tensor.Tensor{"x": x})
	p := newHetero(t)
	cm, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	y := tensor.MustNew(tensor.F32, tensor.Shape{2, 4})
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.SetTensor("y", y))
	require.NoError(t, r.Infer(context.Background()))
	got, err := r.Tensor("y")
	require.NoError(t, err)
	assert.Same(t, y, got)
	assert.InDeltaSlice(t, want["y"].F32(), y.F32(), 1e-6)
}

func TestCancellationReachesSubRequests(t *testing.T) {
	m := chain(t, static(1, 4)...)
	p := newHetero(t)
	cm, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	defer cm.Close()
	var blocked atomic.Bool
	ar, err := cm.(driver.AsyncCompiledModel).CreateAsyncInferRequest(driver.WithStageMiddleware(func(s driver.Stage) driver.Stage {
		if !strings.HasPrefix(s.Name, "subgraph1/") {
			return s
		}
		run := s.Run
		s.Run = func(ctx context.Context) error {
			if blocked.CompareAndSwap(false, true) {
				<-ctx.Done() // the first run's CPU subgraph waits for the cancellation
			}
			return run(ctx)
		}
		return s
	}))
	require.NoError(t, err)
	defer ar.Close()
	require.NoError(t, ar.StartAsync(context.Background()))
	time.Sleep(10 * time.Millisecond)
	ar.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ar.Wait(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "cpu"), "the CPU sub-request saw the cancellation: %v", err)

	// Reusable afterwards, through Infer and StartAsync.
	require.NoError(t, ar.Infer(context.Background()))
	require.NoError(t, ar.StartAsync(context.Background()))
	require.NoError(t, ar.Wait(ctx))
}

func TestAsyncChainMatchesSync(t *testing.T) {
	m := chain(t, static(2, 4)...)
	p := newHetero(t)
	cm, err := p.CompileModel(context.Background(), m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	defer cm.Close()
	const n = 4
	var reqs []*driver.AsyncInferRequest
	var xs []*tensor.Tensor
	for i := range n {
		ar, err := cm.(driver.AsyncCompiledModel).CreateAsyncInferRequest()
		require.NoError(t, err)
		defer ar.Close()
		x := input(t, uint32(100+i), tensor.Shape{2, 4})
		require.NoError(t, ar.SetTensor("x", x))
		require.NoError(t, ar.StartAsync(context.Background()))
		reqs = append(reqs, ar)
		xs = append(xs, x)
	}
	for i, ar := range reqs {
		require.NoError(t, ar.Wait(context.Background()))
		want := reference(t, m, map[string]*tensor.Tensor{"x": xs[i]})
		for _, name := range []string{"y", "z"} {
			got, err := ar.Tensor(name)
			require.NoError(t, err)
			assert.InDeltaSlice(t, want[name].F32(), got.Contiguous().F32(), 1e-6, "request %d output %q", i, name)
		}
	}
}

// TestSuites runs the shared device suite on HETERO over the test device
// and the CPU: the suite's Relu lands on the CPU.
func TestSuites(t *testing.T) {
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		p, err := New()
		require.NoError(t, err)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}))
		return p
	})
}

// TestRandomGraphsSplit pins the nodes of seeded random graphs to random
// devices: every split must run subgraphs in order (each reads only
// earlier ones), cut only where needed, and compute what the CPU computes.
func TestRandomGraphsSplit(t *testing.T) {
	unary := []string{"Abs", "Neg", "Relu", "Sigmoid"}
	binary := []string{"Add", "Mul", "Sub"}
	for seed := range uint64(12) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
			vals := []graph.Output{x.Out(0)}
			var ops []*graph.Node
			n := 4 + rng.IntN(12)
			for i := range n {
				name := "n" + strconv.Itoa(i)
				var nd *graph.Node
				if rng.IntN(2) == 0 {
					nd = graph.NewNode(unary[rng.IntN(len(unary))], name, []graph.Output{vals[rng.IntN(len(vals))]}, nil, 1)
				} else {
					nd = graph.NewNode(binary[rng.IntN(len(binary))], name, []graph.Output{vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]}, nil, 1)
				}
				nd.RT.Affinity = []string{"CPU", testDevice}[rng.IntN(2)]
				if nd.OpType == "Relu" {
					nd.RT.Affinity = "CPU"
				}
				ops = append(ops, nd)
				vals = append(vals, nd.Out(0))
			}
			results := []*graph.Node{graph.NewResult("y0", ops[len(ops)-1].Out(0)), graph.NewResult("y1", ops[rng.IntN(len(ops))].Out(0))}
			m := graph.NewModel("random", []*graph.Node{x}, results)
			require.NoError(t, m.InferShapes())
			xv := input(t, uint32(seed), tensor.Shape{2, 3})
			plain := m.Clone()
			nodes, err := plain.Nodes()
			require.NoError(t, err)
			for _, nd := range nodes {
				nd.RT.Affinity = ""
			}
			want := reference(t, plain, map[string]*tensor.Tensor{"x": xv})
			p := newHetero(t)
			cm, got := run(t, p, m, map[string]string{driver.KeyDevicePriorities: "CPU," + testDevice}, map[string]*tensor.Tensor{"x": xv})
			assertSame(t, want, got)
			hc := cm.(*CompiledModel)
			for k, sg := range hc.subs {
				for _, in := range sg.inputs {
					assert.Less(t, in.from.sub, k, "%s input %q", sg.name, in.name)
				}
				if k > 0 {
					assert.NotEqual(t, hc.subs[k-1].device, sg.device, "subgraphs %d and %d on one device could have been one", k-1, k)
				}
				nodes, err := sg.model.Nodes()
				require.NoError(t, err)
				for _, nd := range nodes {
					if !isHousekeeping(nd) && nd.OpType != graph.OpResult {
						assert.Equal(t, sg.device, nd.RT.Affinity, "node %q in %s", nd.Name, sg.name)
					}
				}
			}
		})
	}
}

// TestShapeMathRecomputed: a Reshape's target shape computed in an earlier
// subgraph is recomputed in the Reshape's subgraph (from the data it
// describes) instead of arriving as an i64 input, so that devices which
// plan on shape values (GPU) see where it comes from.
func TestShapeMathRecomputed(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 6))
	a := graph.NewNode("Abs", "a", []graph.Output{x.Out(0)}, nil, 1)
	sh := graph.NewNode("Shape", "sh", []graph.Output{a.Out(0)}, nil, 1)
	e := graph.NewNode("Expand", "e", []graph.Output{a.Out(0), sh.Out(0)}, nil, 1)
	r := graph.NewNode("Relu", "r", []graph.Output{e.Out(0)}, nil, 1)
	rs := graph.NewNode("Reshape", "rs", []graph.Output{r.Out(0), sh.Out(0)}, nil, 1)
	m := graph.NewModel("shapemath", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", rs.Out(0))})
	require.NoError(t, m.InferShapes())
	xv := input(t, 21, tensor.Shape{2, 6})
	want := reference(t, m, map[string]*tensor.Tensor{"x": xv})
	p := newHetero(t)
	cm, got := run(t, p, m, map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}, map[string]*tensor.Tensor{"x": xv})
	assertSame(t, want, got)
	hc := cm.(*CompiledModel)
	require.Len(t, hc.subs, 3)
	last := hc.subs[2].model
	for _, prm := range last.Parameters {
		assert.Equal(t, tensor.F32, prm.Outputs[0].Type, "subgraph2 receives %q", prm.Name)
	}
	require.NotNil(t, last.Node("sh"), "subgraph2 recomputes the shape")
	assert.Equal(t, "Shape", last.Node("sh").OpType)
}
