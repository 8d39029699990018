package clbackend

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// convChain is x f32[1,4,16,16] -> a chain of depth (Conv 3x3 + bias ->
// Relu) -> Transpose -> Softmax: every intermediate dies after its
// consumer, so the plan needs a few buffers however deep the chain is.
func convChain(t testing.TB, depth int, batch graph.Dim) *graph.Model {
	t.Helper()
	return convChainHW(t, depth, batch, graph.StaticDim(16), graph.StaticDim(16))
}

// convChainHW is convChain with input height and width h and w.
func convChainHW(t testing.TB, depth int, batch, h, w graph.Dim) *graph.Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	shape := graph.PartialShape{RankKnown: true, Dims: []graph.Dim{batch, graph.StaticDim(4), h, w}}
	x := graph.NewParameter("x", tensor.F32, shape)
	cur := x.Out(0)
	for i := range depth {
		w := make([]float32, 4*4*3*3)
		for j := range w {
			w[j] = float32(rng.NormFloat64() * 0.3)
		}
		wt, err := tensor.FromF32(tensor.Shape{4, 4, 3, 3}, w)
		require.NoError(t, err)
		bt, err := tensor.FromF32(tensor.Shape{4}, []float32{0.1, -0.2, 0.3, 0})
		require.NoError(t, err)
		s := strconv.Itoa(i)
		conv := graph.NewNode("Conv", "conv"+s, []graph.Output{cur, graph.NewConstant("w"+s, wt).Out(0), graph.NewConstant("b"+s, bt).Out(0)},
			graph.Attrs{"pads": []int64{1, 1, 1, 1}}, 1)
		relu := graph.NewNode("Relu", "relu"+s, []graph.Output{conv.Out(0)}, nil, 1)
		cur = relu.Out(0)
	}
	tr := graph.NewNode("Transpose", "tr", []graph.Output{cur}, graph.Attrs{"perm": []int64{0, 2, 3, 1}}, 1)
	sm := graph.NewNode("Softmax", "sm", []graph.Output{tr.Out(0)}, graph.Attrs{"axis": int64(-1)}, 1)
	return graph.NewModel("convchain", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", sm.Out(0))})
}

func randInput(t testing.TB, s tensor.Shape, seed uint64) *tensor.Tensor {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, s.NumElements())
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	x, err := tensor.FromF32(s, v)
	require.NoError(t, err)
	return x
}

// run compiles m on p, infers with x bound to "x" and returns output "y".
func runModel(t testing.TB, p driver.Plugin, m *graph.Model, xs ...*tensor.Tensor) ([]*tensor.Tensor, driver.CompiledModel) {
	t.Helper()
	cm, err := p.CompileModel(context.Background(), m, nil)
	require.NoError(t, err, p.Name())
	t.Cleanup(func() { _ = cm.Close() })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	var out []*tensor.Tensor
	for _, x := range xs {
		require.NoError(t, r.SetTensor("x", x))
		require.NoError(t, r.Infer(context.Background()), p.Name())
		y, err := r.Tensor("y")
		require.NoError(t, err)
		out = append(out, y.Clone())
	}
	return out, cm
}

func assertClose(t *testing.T, want, got *tensor.Tensor) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape())
	w, g := want.Contiguous().F32(), got.Contiguous().F32()
	for i := range w {
		assert.InDelta(t, w[i], g[i], 1e-4+1e-3*float64(abs32(w[i])), "element %d", i)
	}
}

func abs32(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// TestBufferPlan: activations reuse buffers by liveness (planned bytes well
// under the naive sum for a deep chain) and results still match the CPU.
func TestBufferPlan(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m := convChain(t, 6, graph.StaticDim(1))
	x := randInput(t, tensor.Shape{1, 4, 16, 16}, 1)
	got, cm := runModel(t, gpu, m, x)
	want, _ := runModel(t, cpu, m, x)
	assertClose(t, want[0], got[0])

	planned, err := cm.Property(KeyActivationBytesPlanned)
	require.NoError(t, err)
	naive, err := cm.Property(KeyActivationBytesNaive)
	require.NoError(t, err)
	pb, _ := strconv.Atoi(planned)
	nb, _ := strconv.Atoi(naive)
	act := 4 * 16 * 16 * 4 // bytes of one activation
	assert.Equal(t, 9*act, nb, "input, 6 FusedConv (Conv+Relu) outputs, transpose, softmax")
	assert.LessOrEqual(t, pb, 3*act, "a chain needs at most three live activations (planned %d, naive %d)", pb, nb)
	assert.Positive(t, pb)
}

// TestDynamicBatch: a model with a dynamic batch compiles once and plans
// each new input shape on first use, reusing the plan afterwards.
func TestDynamicBatch(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m := convChain(t, 2, graph.DynamicDim("N"))
	xs := []*tensor.Tensor{randInput(t, tensor.Shape{1, 4, 16, 16}, 2), randInput(t, tensor.Shape{3, 4, 16, 16}, 3), randInput(t, tensor.Shape{1, 4, 16, 16}, 4)}
	got, cm := runModel(t, gpu, m, xs...)
	want, _ := runModel(t, cpu, m, xs...)
	for i := range xs {
		assertClose(t, want[i], got[i])
	}
	c := cm.(*CompiledModel)
	c.planMu.Lock()
	assert.Len(t, c.plans, 2, "one plan per distinct input shape (the batch-1 one planned at compile time)")
	c.planMu.Unlock()
}

// TestDynamicShapesBuildAtCompile: a model with dynamic batch and spatial
// dims builds every program it needs when it is compiled; requests with
// new shapes re-plan from those programs and build none.
func TestDynamicShapesBuildAtCompile(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m := convChainHW(t, 2, graph.DynamicDim("N"), graph.DynamicDim("H"), graph.DynamicDim("W"))
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	built := gpu.ProgramCacheStats()
	require.Positive(t, built.SourceBuilds, "compiling builds the programs")
	ref, err := cpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer ref.Close()
	for i, s := range []tensor.Shape{{1, 4, 9, 13}, {2, 4, 16, 5}, {1, 4, 1, 1}} {
		x := randInput(t, s, uint64(10+i))
		got := inferOnce(t, cm, x)
		want := inferOnce(t, ref, x)
		assertClose(t, want, got)
	}
	after := gpu.ProgramCacheStats()
	assert.Equal(t, built.SourceBuilds, after.SourceBuilds, "no program built during inference")
	assert.Equal(t, built.BinaryLoads, after.BinaryLoads, "no program loaded during inference")
	c := cm.(*CompiledModel)
	c.planMu.Lock()
	assert.Len(t, c.plans, 4, "the compile-time probe plan and one per new shape")
	c.planMu.Unlock()
}

// inferOnce runs one request of cm on input x and returns output y.
func inferOnce(t testing.TB, cm driver.CompiledModel, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	return y.Clone()
}

// TestReduceAxesFromModelInput runs every reduction with its axes given as
// a model input: the plan must treat the axes as host values (graph's op
// table says so), for all nine reductions, not only those a hand-kept list
// named.
func TestReduceAxesFromModelInput(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
		"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"} {
		t.Run(op, func(t *testing.T) {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3, 4))
			axes := graph.NewParameter("axes", tensor.I64, graph.ShapeOf(1))
			n := graph.NewNode(op, "red", []graph.Output{x.Out(0), axes.Out(0)}, graph.Attrs{"keepdims": int64(0)}, 1)
			m := graph.NewModel(op, []*graph.Node{x, axes}, []*graph.Node{graph.NewResult("y", n.Out(0))})
			av, err := tensor.FromI64(tensor.Shape{1}, []int64{-2})
			require.NoError(t, err)
			ins := map[string]*tensor.Tensor{"x": randInput(t, tensor.Shape{2, 3, 4}, 11), "axes": av}
			want, _ := inferAll(t, cpu, m, ins)
			got, _ := inferAll(t, gpu, m, ins)
			assertOutputsClose(t, want, got, 1e-4, 1e-3)
			assert.Equal(t, tensor.Shape{2, 4}, got[0].Shape())
		})
	}
}

// TestEmitChecksSignature: a lowering whose arguments do not match the
// kernel's signature fails at plan time naming the node, the kernel and
// the argument, before any program is built.
func TestEmitChecksSignature(t *testing.T) {
	b := &builder{pl: &plan{}}
	n := graph.NewNode("Relu", "act", nil, nil, 1)
	err := b.emit(n, "relu", "", 3, slotArg(0), slotArg(1), uint64(3), float32(0), uint64(1))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorIs(t, err, kernels.ErrArgs)
	assert.Contains(t, err.Error(), `node "act"`)
	assert.Contains(t, err.Error(), "kernel relu (eltwise_unary in eltwise_unary.cl)")
	assert.Contains(t, err.Error(), "argument 4 (float p1)")
	err = b.emit(n, "relu", "", 3, slotArg(0), slotArg(1), uint64(3))
	assert.ErrorContains(t, err, "takes 5 arguments (TIN* in, TOUT* out, ulong n, float p0, float p1), the launch passes 3")
}

// TestOutputShapes: the compiled model tells the output shapes of an
// inference before it runs, equal to the inference's, from the input
// shapes and the values of its host inputs (HostInputs); an output that
// depends on a host input given no value is nil, and a wrong number of
// shapes is an error naming the model.
func TestOutputShapes(t *testing.T) {
	gpu := newGPU(t)
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(4)}, RankKnown: true})
	axes := graph.NewParameter("axes", tensor.I64, graph.ShapeOf(1))
	red := graph.NewNode("ReduceSum", "red", []graph.Output{x.Out(0), axes.Out(0)}, graph.Attrs{"keepdims": int64(0)}, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	m := graph.NewModel("shapes", []*graph.Node{x, axes}, []*graph.Node{graph.NewResult("sum", red.Out(0)), graph.NewResult("relu", relu.Out(0))})
	require.NoError(t, m.InferShapes())
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	c := cm.(*CompiledModel)
	assert.Equal(t, []bool{false, true}, c.HostInputs())
	av, err := tensor.FromI64(tensor.Shape{1}, []int64{-1})
	require.NoError(t, err)
	for _, n := range []int64{3, 5, 3} {
		shapes := []tensor.Shape{{n, 4}, {1}}
		got, err := c.OutputShapes(shapes, []*tensor.Tensor{nil, av})
		require.NoError(t, err)
		outs, _ := inferAll(t, gpu, m, map[string]*tensor.Tensor{"x": randInput(t, tensor.Shape{n, 4}, 3), "axes": av})
		require.Len(t, got, len(outs))
		for i, o := range outs {
			assert.Equal(t, o.Shape(), got[i], "batch %d output %d", n, i)
		}
		blind, err := c.OutputShapes(shapes, nil)
		require.NoError(t, err)
		assert.Equal(t, []tensor.Shape{nil, {n, 4}}, blind, "batch %d: the sum's shape needs the axes' value", n)
	}
	_, err = c.OutputShapes([]tensor.Shape{{3, 4}}, nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, `"shapes"`)
}

// TestEmitGEMMRefusesPackedAOnTiled: an A operand packed for A_PACKED
// (the Winograd weights) read by fused_gemm_tiled, which knows no packing,
// would give wrong results silently; the launch is refused naming the node.
func TestEmitGEMMRefusesPackedAOnTiled(t *testing.T) {
	b := &builder{pl: &plan{}}
	n := graph.NewNode("Conv", "wino", nil, nil, 1)
	v := poclSkylake.tiled("gemm", "tiled", 64, 64, 1)
	require.Equal(t, "tiled", v.Algorithm)
	err := b.emitGEMM(n, v, gemmOp{aPacked: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"wino"`)
	assert.Contains(t, err.Error(), "A_PACKED")
}
