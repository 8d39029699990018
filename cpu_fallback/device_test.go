package cpufallback

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

func newTestPlugin(t *testing.T) driver.Plugin {
	p, err := New()
	require.NoError(t, err)
	return p
}

func TestDeviceSuite(t *testing.T) {
	devicetest.Run(t, newTestPlugin)
}

func TestRegistered(t *testing.T) {
	assert.Contains(t, driver.Devices(), "CPU")
	core := driver.NewCore()
	defer core.Close()
	name, err := core.Property("CPU", driver.KeyFullDeviceName)
	require.NoError(t, err)
	assert.NotEmpty(t, name)
}

// buildNet is Parameter x[1,3,8,8] -> Conv(4x3x3x3, pad 1, bias) -> Relu
// -> GlobalAveragePool -> Reshape [1,4] -> Gemm(4x5, bias) -> Result y.
func buildNet(rng *rand.Rand) (*graph.Model, map[string]*tensor.Tensor) {
	w := reftest.RandF32(rng, 4, 3, 3, 3)
	b := reftest.RandF32(rng, 4)
	gw := reftest.RandF32(rng, 4, 5)
	gb := reftest.RandF32(rng, 5)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 3, 8, 8))
	wc := graph.NewConstant("w", w)
	bc := graph.NewConstant("b", b)
	conv := graph.NewNode("Conv", "conv", []graph.Output{x.Out(0), wc.Out(0), bc.Out(0)},
		graph.Attrs{"pads": []int64{1, 1, 1, 1}, "kernel_shape": []int64{3, 3}}, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{conv.Out(0)}, nil, 1)
	gap := graph.NewNode("GlobalAveragePool", "gap", []graph.Output{relu.Out(0)}, nil, 1)
	shp := graph.NewConstant("shape", nnI64(tensor.Shape{2}, []int64{1, 4}))
	flatN := graph.NewNode("Reshape", "flat", []graph.Output{gap.Out(0), shp.Out(0)}, nil, 1)
	gwc := graph.NewConstant("gw", gw)
	gbc := graph.NewConstant("gb", gb)
	gemm := graph.NewNode("Gemm", "fc", []graph.Output{flatN.Out(0), gwc.Out(0), gbc.Out(0)}, nil, 1)
	y := graph.NewResult("y", gemm.Out(0))
	m := graph.NewModel("net", []*graph.Node{x}, []*graph.Node{y})
	return m, map[string]*tensor.Tensor{"w": w, "b": b, "gw": gw, "gb": gb}
}

func nnI64(s tensor.Shape, v []int64) *tensor.Tensor {
	t, err := tensor.FromI64(s, v)
	if err != nil {
		panic(err)
	}
	return t
}

// netReference computes buildNet's output directly.
func netReference(x *tensor.Tensor, p map[string]*tensor.Tensor) []float32 {
	conv := reftest.Conv(x, p["w"], p["b"], reftest.ConvParams{Group: 1, Stride: []int64{1, 1}, Dil: []int64{1, 1}, PadB: []int64{1, 1}, PadE: []int64{1, 1}})
	C := conv.Shape()[1]
	plane := conv.NumElements() / C
	feat := make([]float64, C)
	for c := int64(0); c < C; c++ {
		for _, v := range conv.F32()[c*plane : (c+1)*plane] {
			feat[c] += math.Max(float64(v), 0)
		}
		feat[c] /= float64(plane)
	}
	gw, gb := p["gw"].F32(), p["gb"].F32()
	out := make([]float32, 5)
	for j := 0; j < 5; j++ {
		s := float64(gb[j])
		for c := 0; c < int(C); c++ {
			s += feat[c] * float64(gw[c*5+j])
		}
		out[j] = float32(s)
	}
	return out
}

// nnDump renders a model's nodes for before/after comparisons.
func nnDump(t *testing.T, m *graph.Model) []string {
	nodes, err := m.Nodes()
	require.NoError(t, err)
	var out []string
	for _, n := range nodes {
		s := n.String() + " {" + n.Attrs.Format() + "}"
		for _, o := range n.Outputs {
			s += " " + o.Name + ":" + o.Type.String() + o.Shape.String()
		}
		s += " rt=" + n.RT.Affinity
		for k, v := range n.RT.Extra {
			s += " " + k + "=" + v
		}
		out = append(out, s)
	}
	return out
}

func TestCompileAndInfer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m, params := buildNet(rng)
	before := nnDump(t, m)
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	// The checks below name the model's own nodes, so run it unfused;
	// TestFusedRuntimeModel covers the fused plan.
	cm, err := p.CompileModel(context.Background(), m, plugin.Props(plugin.WithDisableTransformations(true)))
	require.NoError(t, err)
	defer cm.Close()
	assert.Equal(t, before, nnDump(t, m), "user's model must be unchanged by compile")

	require.Len(t, cm.Inputs(), 1)
	assert.Equal(t, "x", cm.Inputs()[0].Name)
	require.Len(t, cm.Outputs(), 1)
	assert.Equal(t, "y", cm.Outputs()[0].Name)
	assert.Equal(t, "[1,5]", cm.Outputs()[0].Shape.String())
	for key, want := range map[string]string{
		driver.KeyNetworkName:                  "net",
		driver.KeyExecutionDevices:             "CPU",
		driver.KeyOptimalNumberOfInferRequests: "1",
	} {
		got, err := cm.Property(key)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}

	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	x := reftest.RandF32(rng, 1, 3, 8, 8)
	orig := x.Clone()
	require.NoError(t, req.SetTensor("x", x))
	require.NoError(t, req.Infer(context.Background()))
	assert.Equal(t, orig.F32(), x.F32(), "inference must not modify the input")
	y, err := req.Tensor("y")
	require.NoError(t, err)
	assert.InDeltaSlice(t, netReference(x, params), y.F32(), 1e-4)
	assert.Empty(t, req.ProfilingInfo(), "profiling is off by default")

	// A strided ROI view as input gives the same result as its dense copy.
	big := reftest.RandF32(rng, 1, 3, 10, 10)
	view, err := big.View([]int64{0, 0, 1, 2}, []int64{1, 3, 9, 10})
	require.NoError(t, err)
	require.False(t, view.IsContiguous())
	require.NoError(t, req.SetTensor("x", view))
	require.NoError(t, req.Infer(context.Background()))
	y, err = req.Tensor("y")
	require.NoError(t, err)
	assert.InDeltaSlice(t, netReference(view.Contiguous(), params), y.F32(), 1e-4)

	// A user-bound output receives the result.
	out := tensor.MustNew(tensor.F32, tensor.Shape{1, 5})
	require.NoError(t, req.SetTensor("y", out))
	require.NoError(t, req.Infer(context.Background()))
	assert.InDeltaSlice(t, netReference(view.Contiguous(), params), out.F32(), 1e-4)
	got, err := req.Tensor("y")
	require.NoError(t, err)
	assert.Same(t, out, got)

	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	conv := rm.Node("conv")
	require.NotNil(t, conv)
	assert.Equal(t, "Conv", conv.RT.Extra["LAYER_TYPE"])
	assert.Equal(t, "ref_conv_gonum", conv.RT.Extra["IMPL_TYPE"])
	assert.Equal(t, "conv", conv.RT.Extra["ORIGINAL_NAMES"])
	assert.NotEmpty(t, conv.RT.Extra["EXECUTION_ORDER"])
	_, hasPerf := conv.RT.Extra["PERF_COUNTER"]
	assert.False(t, hasPerf, "no perf counter without profiling")
}

func TestProfiling(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, _ := buildNet(rng)
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	cm, err := p.CompileModel(context.Background(), m, plugin.Props(plugin.WithProfiling(true), plugin.WithDisableTransformations(true)))
	require.NoError(t, err)
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, req.SetTensor("x", reftest.RandF32(rng, 1, 3, 8, 8)))
	require.NoError(t, req.Infer(context.Background()))
	prof := req.ProfilingInfo()
	byName := map[string]driver.ProfilingInfo{}
	for _, e := range prof {
		byName[e.NodeName] = e
	}
	for _, op := range []string{"conv", "relu", "gap", "flat", "fc"} {
		e, ok := byName[op]
		if assert.True(t, ok, "profile entry for %s", op) {
			assert.Equal(t, driver.Executed, e.Status)
		}
	}
	assert.Equal(t, "ref_conv_gonum", byName["conv"].ExecType)
	assert.Equal(t, "Conv", byName["conv"].NodeType)
	for _, st := range []string{"preprocess", "infer", "postprocess"} {
		assert.Equal(t, "Stage", byName[st].NodeType, st)
	}
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	assert.NotEmpty(t, rm.Node("conv").RT.Extra["PERF_COUNTER"])
}

func TestUnsupportedOp(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 4))
	bad := graph.NewNode("NoSuchOp", "weird_node", []graph.Output{x.Out(0)}, nil, 1)
	y := graph.NewResult("y", bad.Out(0))
	m := graph.NewModel("bad", []*graph.Node{x}, []*graph.Node{y})
	p, err := New()
	require.NoError(t, err)
	_, err = p.CompileModel(context.Background(), m, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, driver.ErrUnsupported), "%v", err)
	assert.Contains(t, err.Error(), "weird_node")
	assert.Contains(t, err.Error(), "NoSuchOp")

	// Housekeeping nodes follow their neighbours (as OpenVINO's
	// get_supported_nodes does): x feeds only the unsupported node and y
	// reads only from it, so none of the three is the CPU's.
	q, err := p.QueryModel(context.Background(), m, nil)
	require.NoError(t, err)
	assert.Empty(t, q)
}

func TestQueryModel(t *testing.T) {
	m, _ := buildNet(rand.New(rand.NewPCG(5, 6)))
	p, err := New()
	require.NoError(t, err)
	q, err := p.QueryModel(context.Background(), m, nil)
	require.NoError(t, err)
	want := map[string]string{}
	for _, n := range []string{"x", "w", "b", "conv", "relu", "gap", "shape", "flat", "gw", "gb", "fc", "y"} {
		want[n] = "CPU"
	}
	assert.Equal(t, want, q)
	_, err = p.QueryModel(context.Background(), m, map[string]string{"NO_SUCH_KEY": "1"})
	assert.ErrorIs(t, err, driver.ErrNotFound)
}

func TestPrecisionHint(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyInferencePrecisionHint: "f32"}))
	err = p.SetProperties(map[string]string{driver.KeyInferencePrecisionHint: "f16"})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "f32")
	for _, key := range []string{driver.KeyAvailableDevices, driver.KeyDeviceArchitecture, driver.KeyOptimizationCapabilities,
		driver.KeyRangeForAsyncInferRequests, driver.KeyRangeForStreams, driver.KeyOptimalNumberOfInferRequests, driver.KeySupportedProperties} {
		v, err := p.Property(key)
		require.NoError(t, err, key)
		assert.NotEmpty(t, v, key)
	}
	v, _ := p.Property(driver.KeyAvailableDevices)
	assert.Equal(t, "CPU", v)
	_, err = p.Property(driver.KeyDeviceType)
	assert.ErrorIs(t, err, driver.ErrNotFound)
}

func TestDynamicBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w := reftest.RandF32(rng, 2, 3, 1, 1)
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{RankKnown: true,
		Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(3), graph.DynamicDim("H"), graph.DynamicDim("W")}})
	conv := graph.NewNode("Conv", "conv", []graph.Output{x.Out(0), graph.NewConstant("w", w).Out(0)}, nil, 1)
	sm := graph.NewNode("Softmax", "sm", []graph.Output{conv.Out(0)}, graph.Attrs{"axis": int64(1)}, 1)
	m := graph.NewModel("dyn", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", sm.Out(0)), graph.NewResult("c", conv.Out(0))})
	p, err := New()
	require.NoError(t, err)
	cm, err := p.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	err = req.Infer(context.Background())
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "dynamic input without a tensor")
	for _, s := range []tensor.Shape{{1, 3, 4, 5}, {3, 3, 2, 2}} {
		in := reftest.RandF32(rng, s...)
		require.NoError(t, req.SetTensor("x", in))
		require.NoError(t, req.Infer(context.Background()))
		y, err := req.Tensor("y")
		require.NoError(t, err)
		assert.Equal(t, tensor.Shape{s[0], 2, s[2], s[3]}, y.Shape())
		c, err := req.Tensor("c")
		require.NoError(t, err)
		want := reftest.Conv(in, w, nil, reftest.ConvParams{Group: 1, Stride: []int64{1, 1}, Dil: []int64{1, 1}, PadB: []int64{0, 0}, PadE: []int64{0, 0}})
		assert.InDeltaSlice(t, want.F32(), c.F32(), 1e-5)
	}
}

func TestCancelledInfer(t *testing.T) {
	m, _ := buildNet(rand.New(rand.NewPCG(9, 9)))
	p, err := New()
	require.NoError(t, err)
	cm, err := p.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	err = req.Infer(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestPlanReleasesIntermediates(t *testing.T) {
	defer goleak.VerifyNone(t)
	m, _ := buildNet(reftest.RNG(12))
	p, err := New()
	require.NoError(t, err)
	pcm, err := p.CompileModel(context.Background(), m, plugin.Props(plugin.WithDisableTransformations(true)))
	require.NoError(t, err)
	cm := pcm.(*CompiledModel)
	freedAt := map[int]string{}
	for _, st := range cm.steps {
		for _, s := range st.free {
			_, dup := freedAt[s]
			require.False(t, dup, "slot %d released twice", s)
			freedAt[s] = st.node.Name
		}
	}
	// Each intermediate is released by its only reader; constants never.
	slotOf := func(name string) int {
		for _, st := range cm.steps {
			if st.node.Name == name {
				return st.out[0]
			}
		}
		t.Fatalf("no step %q", name)
		return -1
	}
	assert.Equal(t, "relu", freedAt[slotOf("conv")])
	assert.Equal(t, "gap", freedAt[slotOf("relu")])
	assert.Equal(t, "flat", freedAt[slotOf("gap")])
	assert.Equal(t, "conv", freedAt[slotOf("x")])
	_, constFreed := freedAt[slotOf("w")]
	assert.False(t, constFreed, "constants live as long as the compiled model")

	// Two requests on one compiled model run concurrently without sharing
	// mutable state (run under -race).
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		require.NoError(t, req.SetTensor("x", reftest.RandF32(reftest.RNG(uint64(i)), 1, 3, 8, 8)))
		go func() { errs <- req.Infer(context.Background()) }()
	}
	for i := 0; i < 2; i++ {
		assert.NoError(t, <-errs)
	}
}

// TestNNOpsThroughDevice runs NN ops through CompileModel so the kernels'
// output types and shapes are checked against graph shape inference.
func TestNNOpsThroughDevice(t *testing.T) {
	rng := reftest.RNG(13)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 2, 6, 6))
	mp := graph.NewNode("MaxPool", "mp", []graph.Output{x.Out(0)}, graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}, 2)
	ln := graph.NewNode("LayerNormalization", "ln", []graph.Output{x.Out(0), graph.NewConstant("s", reftest.RandF32(rng, 6)).Out(0)}, nil, 3)
	rs := graph.NewNode("Resize", "rs", []graph.Output{mp.Out(0), {}, graph.NewConstant("scales", reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2)).Out(0)},
		graph.Attrs{"mode": "linear"}, 1)
	pd := graph.NewNode("Pad", "pd", []graph.Output{rs.Out(0), graph.NewConstant("pads", reftest.I64s(0, 0, 1, 1, 0, 0, 1, 1)).Out(0)}, graph.Attrs{"mode": "edge"}, 1)
	sm := graph.NewNode("LogSoftmax", "sm", []graph.Output{pd.Out(0)}, nil, 1)
	results := []*graph.Node{
		graph.NewResult("sm", sm.Out(0)), graph.NewResult("idx", mp.Out(1)),
		graph.NewResult("ln", ln.Out(0)), graph.NewResult("mean", ln.Out(1)), graph.NewResult("inv", ln.Out(2)),
	}
	m := graph.NewModel("nn", []*graph.Node{x}, results)
	p, err := New()
	require.NoError(t, err)
	cm, err := p.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, req.SetTensor("x", reftest.RandF32(rng, 1, 2, 6, 6)))
	require.NoError(t, req.Infer(context.Background()))
	for _, port := range cm.Outputs() {
		got, err := req.Tensor(port.Name)
		require.NoError(t, err, port.Name)
		assert.Equal(t, port.Type, got.Type(), port.Name)
		assert.True(t, port.Shape.Compatible(got.Shape()), "%s: %v does not fit %v", port.Name, got.Shape(), port.Shape)
	}
	sum, err := req.Tensor("sm")
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{1, 2, 8, 8}, sum.Shape())
}

// TestFusedRuntimeModel checks that with transformations on (the default)
// Conv+Relu runs as one FusedConv whose runtime-model entry names both
// original nodes, and that the answer equals the unfused plan's.
func TestFusedRuntimeModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, _ := buildNet(rng)
	p, err := New()
	require.NoError(t, err)
	defer p.Close()

	run := func(props map[string]string) (*tensor.Tensor, driver.CompiledModel) {
		cm, err := p.CompileModel(context.Background(), m, props)
		require.NoError(t, err)
		t.Cleanup(func() { cm.Close() })
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		in := reftest.RandF32(rand.New(rand.NewPCG(7, 8)), 1, 3, 8, 8)
		require.NoError(t, req.SetTensor(m.Parameters[0].Name, in))
		require.NoError(t, req.Infer(context.Background()))
		out, err := req.Tensor(m.Results[0].Name)
		require.NoError(t, err)
		return out, cm
	}
	fused, cm := run(nil)
	plain, _ := run(plugin.Props(plugin.WithDisableTransformations(true)))
	reftest.AssertClose(t, plain.Float64s(), fused, 1e-5)

	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	var found bool
	for _, n := range nodes {
		if n.RT.Extra["LAYER_TYPE"] != graph.OpFusedConv {
			continue
		}
		found = true
		assert.Contains(t, n.RT.Extra["ORIGINAL_NAMES"], "conv")
		assert.Contains(t, n.RT.Extra["ORIGINAL_NAMES"], "relu")
	}
	assert.True(t, found, "Conv+Relu should run as one FusedConv")
}
