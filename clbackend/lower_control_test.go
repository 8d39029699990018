package clbackend

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// bodyOf builds a body over Parameters named names (types bound by the
// owner's inference) whose results are what f makes of them.
func bodyOf(name string, names []string, f func(p []graph.Output) []graph.Output) *graph.Model {
	var params []*graph.Node
	var outs []graph.Output
	for _, n := range names {
		p := graph.NewParameter(n, 0, graph.DynamicRank)
		params = append(params, p)
		outs = append(outs, p.Out(0))
	}
	var res []*graph.Node
	for i, o := range f(outs) {
		res = append(res, graph.NewResult(fmt.Sprintf("%s_out%d", name, i), o))
	}
	return graph.NewModel(name, params, res)
}

var nodeSeq int

// nn builds one node of op with one output.
func nn(op string, attrs graph.Attrs, in ...graph.Output) graph.Output {
	nodeSeq++
	return graph.NewNode(op, fmt.Sprintf("%s_%d", op, nodeSeq), in, attrs, 1).Out(0)
}

// scalarConst is a rank-0 constant of type t.
func scalarConst(t tensor.ElementType, v float64) graph.Output {
	x, _ := tensor.FromFloat64s(t, tensor.Shape{}, []float64{v})
	nodeSeq++
	return graph.NewConstant(fmt.Sprintf("k%d", nodeSeq), x).Out(0)
}

// controlCases are the GPU-vs-CPU cases of If, Loop and Scan: conditions
// decided on the device (both branches planned), at plan time, nested; a
// Loop whose body is planned once (carried values, the iteration number
// as data, an early exit read back), one unrolled; a Scan over a middle
// axis in reverse.
func controlCases() map[string][]lowerCase {
	ifNode := func(g *caseGen, cond graph.Output, then, els *graph.Model, caps ...graph.Output) *graph.Model {
		return g.model(graph.NewNode(graph.OpIf, "if", append([]graph.Output{cond}, caps...),
			graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(len(caps))}, 2))
	}
	branches := func() (*graph.Model, *graph.Model) {
		then := bodyOf("then", []string{"x", "w"}, func(p []graph.Output) []graph.Output {
			return []graph.Output{nn("Relu", nil, nn("Mul", nil, p[0], p[1])), nn("Neg", nil, p[0])}
		})
		els := bodyOf("else", []string{"x", "w"}, func(p []graph.Output) []graph.Output {
			return []graph.Output{nn("Sigmoid", nil, p[0]), p[0]}
		})
		return then, els
	}
	sumPositive := func(x graph.Output) graph.Output {
		return nn("Greater", nil, nn("ReduceSum", graph.Attrs{"keepdims": int64(0)}, x), scalarConst(tensor.F32, 0))
	}
	return map[string][]lowerCase{
		graph.OpIf: {
			{"runtime_then", func(g *caseGen) *graph.Model {
				x := g.x("pos", 2, g.dim(40, 50)) // decided by a large value of the device: read back
				then, els := branches()
				return ifNode(g, sumPositive(nn("Relu", nil, x)), then, els, x, g.c(-1, 1, 1))
			}},
			{"host_condition", func(g *caseGen) *graph.Model {
				x := g.x("pos", 2, g.dim(2, 6)) // a condition of a small input: decided on the host
				then, els := branches()
				return ifNode(g, sumPositive(x), then, els, x, g.c(-1, 1, 1))
			}},
			{"runtime_else", func(g *caseGen) *graph.Model {
				x := g.x("x", 2, g.dim(2, 6))
				then, els := branches()
				return ifNode(g, sumPositive(nn("Neg", nil, nn("Abs", nil, x))), then, els, x, g.c(-1, 1, 1))
			}},
			{"plan_time", func(g *caseGen) *graph.Model {
				x := g.x("x", 2, 3)
				then, els := branches()
				return ifNode(g, nn("Equal", nil, nn("Size", nil, x), scalarConst(tensor.I64, 6)), then, els, x, g.c(-1, 1, 1))
			}},
			{"nested", func(g *caseGen) *graph.Model {
				x := g.x("pos", 3, g.dim(2, 5))
				inT, inE := branches()
				then := bodyOf("outer_then", []string{"x", "w"}, func(p []graph.Output) []graph.Output {
					c := nn("Greater", nil, nn("ReduceMax", graph.Attrs{"keepdims": int64(0)}, p[0]), scalarConst(tensor.F32, 0.5))
					n := graph.NewNode(graph.OpIf, "inner", []graph.Output{c, p[0], p[1]},
						graph.Attrs{graph.AttrThenBranch: inT, graph.AttrElseBranch: inE, graph.AttrCaptures: int64(2)}, 2)
					return []graph.Output{n.Out(0), n.Out(1)}
				})
				_, els := branches()
				return ifNode(g, sumPositive(x), then, els, x, g.c(-1, 1, 1))
			}},
		},
		graph.OpLoop: {
			{"carried", func(g *caseGen) *graph.Model {
				return loopCase(g, 4, false, func(p []graph.Output) []graph.Output {
					v := nn("Tanh", nil, nn("Add", nil, nn("Mul", nil, p[2], p[3]), p[3]))
					return []graph.Output{p[1], v, nn("Neg", nil, v)}
				})
			}},
			{"iteration_as_data", func(g *caseGen) *graph.Model {
				return loopCase(g, 5, false, func(p []graph.Output) []graph.Output {
					i := nn("Cast", graph.Attrs{"to": int64(tensor.F32)}, p[0])
					v := nn("Add", nil, p[2], nn("Mul", nil, i, p[3]))
					return []graph.Output{p[1], v, v}
				})
			}},
			{"early_exit", func(g *caseGen) *graph.Model {
				return loopCase(g, 50, true, func(p []graph.Output) []graph.Output {
					v := nn("Add", nil, p[2], nn("Mul", nil, nn("Abs", nil, p[3]), scalarConst(tensor.F32, 0.1)))
					c := nn("Less", nil, nn("ReduceMax", graph.Attrs{"keepdims": int64(0)}, v), scalarConst(tensor.F32, 3))
					return []graph.Output{c, v}
				})
			}},
			{"unrolled", func(g *caseGen) *graph.Model {
				return loopCase(g, 3, false, func(p []graph.Output) []graph.Output {
					one := scalarConst(tensor.I64, 1)
					start := nn("Unsqueeze", nil, p[0], g.ints(0))
					end := nn("Unsqueeze", nil, nn("Add", nil, p[0], one), g.ints(0))
					s := nn("Slice", nil, p[3], start, end, g.ints(1))
					v := nn("Add", nil, p[2], s)
					return []graph.Output{p[1], v, s}
				})
			}},
		},
		graph.OpScan: {
			{"middle_axis_reverse", func(g *caseGen) *graph.Model {
				s0 := g.x("s", 3)
				xs := g.x("xs", 3, g.dim(2, 5), 2)
				body := bodyOf("body", []string{"s", "xt"}, func(p []graph.Output) []graph.Output {
					r := nn("ReduceSum", graph.Attrs{"keepdims": int64(0)}, p[1], g.ints(1))
					s := nn("Add", nil, p[0], r)
					return []graph.Output{s, nn("Mul", nil, p[1], p[1]), s}
				})
				n := graph.NewNode(graph.OpScan, "scan", []graph.Output{s0, xs}, graph.Attrs{graph.AttrBody: body, "num_scan_inputs": int64(1),
					"scan_input_axes": []int64{1}, "scan_input_directions": []int64{1},
					"scan_output_axes": []int64{2, 0}, "scan_output_directions": []int64{1, 0}}, 3)
				return g.model(n)
			}},
		},
	}
}

// loopCase is Loop(trips, [cond], v) over a [2, k] carried value with a
// captured [2, k] input; body gets (iteration, condition, v, x).
func loopCase(g *caseGen, trips int64, withCond bool, f func(p []graph.Output) []graph.Output) *graph.Model {
	k := g.dim(2, 4)
	v := g.x("v", 2, k)
	x := g.x("pos", 2, k)
	m := scalarConst(tensor.I64, float64(trips))
	cond := graph.Output{}
	if withCond {
		cond = scalarConst(tensor.Bool, 1)
	}
	body := bodyOf("body", []string{"i", "c", "v", "x"}, f)
	outs := len(body.Results) - 1
	return g.model(graph.NewNode(graph.OpLoop, "loop", []graph.Output{m, cond, v, x}, graph.Attrs{graph.AttrBody: body, graph.AttrCaptures: int64(1)}, outs))
}

// TestControlPlans: what the plan of each control-flow form is. An If
// decided at run time reads back exactly one condition (one byte) per
// inference besides the outputs, none when its condition depends only on
// small model inputs (computed on the host); one known at plan time reads
// back none
// and plans only its branch; a Loop plans its body once and runs it per
// iteration (one launch per iteration per body op); an early exit reads
// back one condition per iteration.
func TestControlPlans(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	for _, c := range []struct {
		op, name   string
		impl       string
		readBack   int64 // condition bytes read back per inference
		launchesOf string
		launches   int // launches of nodes named launchesOf (-1: not checked)
	}{
		{graph.OpIf, "runtime_then", "one scalar read back", 1, "", -1},
		{graph.OpIf, "host_condition", "the condition computed on the host", 0, "", -1},
		{graph.OpIf, "plan_time", "if:then_branch planned", 0, "", -1},
		{graph.OpLoop, "carried", "loop: body planned once (4 launches), 4 iterations", 0, "Tanh", 4},
		{graph.OpLoop, "early_exit", "loop: body planned once", -1, "", -1},
		{graph.OpLoop, "unrolled", "loop: unrolled (3 iterations", 0, "", -1},
	} {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			var lc lowerCase
			for i, x := range controlCases()[c.op] {
				if x.name == c.name {
					lc = controlCases()[c.op][i]
				}
			}
			require.NotNil(t, lc.build)
			m, ins := lc.instance(t, c.op, 0)
			want, _ := inferAll(t, cpu, m, ins)
			got, cm := inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyEnableProfiling: "YES"})
			assertOutputsClose(t, want, got, 1e-4, 1e-3)
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			nodes, err := rm.Nodes()
			require.NoError(t, err)
			impl := ""
			for _, n := range nodes {
				if n.OpType == c.op {
					impl = n.RT.Extra["IMPL_TYPE"]
				}
			}
			assert.Contains(t, impl, c.impl)
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer r.Close()
			for name, x := range ins {
				require.NoError(t, r.SetTensor(name, x))
			}
			require.NoError(t, r.Infer(context.Background()))
			var outBytes int64
			for _, y := range got {
				outBytes += y.ByteSize()
			}
			tr := r.(*InferRequest).Transfers()
			if c.readBack >= 0 {
				assert.Equal(t, outBytes+c.readBack, tr.DeviceToHost, "outputs and %d condition bytes", c.readBack)
			} else {
				assert.Greater(t, tr.DeviceToHost, outBytes+1, "an early exit reads its condition back every iteration")
			}
			if c.launches >= 0 {
				count := 0
				for _, p := range r.ProfilingInfo() {
					if strings.HasPrefix(p.NodeName, c.launchesOf) && p.NodeType != "Stage" {
						count++
					}
				}
				assert.Equal(t, c.launches, count, "launches of %s nodes", c.launchesOf)
			}
		})
	}
}

// TestIfShapesDifferGPU: an If whose branches' outputs differ in shape is
// decided at run time on the GPU too: the plan reads the condition back
// and goes on with a continuation planned for the branch it takes (the
// shapes after it follow), and both values of the condition run in one
// compiled model.
func TestIfShapesDifferGPU(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(3, 4))
	c := graph.NewParameter("c", tensor.Bool, graph.ShapeOf())
	axes, _ := tensor.FromI64(tensor.Shape{1}, []int64{1})
	then := bodyOf("then", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("ReduceSum", graph.Attrs{"keepdims": int64(0)}, p[0], graph.NewConstant("axes", axes).Out(0))}
	})
	els := bodyOf("else", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Flatten", graph.Attrs{"axis": int64(0)}, p[0])}
	})
	n := graph.NewNode(graph.OpIf, "if", []graph.Output{c.Out(0), x.Out(0)},
		graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(1)}, 1)
	y := graph.NewNode("Neg", "neg", []graph.Output{n.Out(0)}, nil, 1)
	m := graph.NewModel("differ", []*graph.Node{x, c}, []*graph.Node{graph.NewResult("y", y.Out(0))})
	require.NoError(t, m.Validate())
	xv, _ := tensor.FromF32(tensor.Shape{3, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	for _, cond := range []bool{true, false, true} {
		cv, _ := tensor.FromBool(tensor.Shape{}, []bool{cond})
		ins := map[string]*tensor.Tensor{"x": xv, "c": cv}
		want, _ := inferAll(t, cpu, m, ins)
		for name, v := range ins {
			require.NoError(t, r.SetTensor(name, v))
		}
		require.NoError(t, r.Infer(context.Background()), "cond %v", cond)
		got, err := r.Tensor("y")
		require.NoError(t, err)
		assertOutputsClose(t, want, []*tensor.Tensor{got}, 1e-6, 1e-6)
	}
}

// TestIfPlansPerOutcome: a static model whose If is decided from a small
// integer input alone (Silero VAD's `sr == 16000`) runs a straight-line
// plan per outcome of the condition: the outputs match the CPU's for both
// outcomes in one compiled model, the plan has no program, no launch
// computes the condition and nothing is read back for it, the input only
// the condition read is not written to the device, the runtime model
// says so, and a request makes buffers only for the plans it runs (not
// for the static one). With the condition input bound as a remote tensor the static
// plan (both branches, the condition read back) runs instead.
func TestIfPlansPerOutcome(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m := sampleRateModel(t)

	cm, err := gpu.CompileModel(context.Background(), m, map[string]string{driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	defer cm.Close()
	cmp := cm.(*CompiledModel)
	require.NotNil(t, cmp.conds, "the If is planned per outcome")
	xs, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{0.5, 1, -1, 2, -0.25, 3})
	require.NoError(t, err)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	assert.Empty(t, r.(*InferRequest).states, "no buffers for the static plan, which only a remote condition input runs")
	for i, c := range []struct {
		rate   int64
		branch string
	}{{16000, "then_branch"}, {8000, "else_branch"}, {16000, "then_branch"}} {
		y := inferRate(t, cpu, m, r, xs, c.rate)
		req := r.(*InferRequest)
		pl := req.c.lastRun
		assert.Nil(t, pl.prog, "sr=%d: a straight-line plan", c.rate)
		assert.Len(t, req.states, min(i+1, 2), "sr=%d: buffers for the outcomes run so far", c.rate)
		assert.Contains(t, pl.key, "conditions=")
		tr := req.Transfers()
		assert.Equal(t, y.ByteSize(), tr.DeviceToHost, "sr=%d: only the output is read back", c.rate)
		assert.Equal(t, xs.ByteSize(), tr.HostToDevice, "sr=%d: sr, read only by the condition, is not written", c.rate)
		for _, p := range r.ProfilingInfo() {
			assert.NotEqual(t, "Equal", p.NodeType, "sr=%d: no launch computes the condition", c.rate)
		}
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		nodes, err := rm.Nodes()
		require.NoError(t, err)
		for _, n := range nodes {
			if n.OpType == graph.OpIf {
				assert.Contains(t, n.RT.Extra["IMPL_TYPE"], "if:"+c.branch+" planned (the condition computed on the host from the inputs: one plan per outcome")
			}
		}
	}
	// A remote sample rate: the static plan, reading the condition back.
	rate, err := tensor.FromFloat64s(tensor.I64, tensor.Shape{}, []float64{8000})
	require.NoError(t, err)
	rc, err := gpu.DefaultContext("")
	require.NoError(t, err)
	defer rc.Close()
	rt, err := rc.CreateTensor("sr", tensor.I64, tensor.Shape{}, nil)
	require.NoError(t, err)
	defer rt.Close()
	require.NoError(t, rt.CopyFrom(context.Background(), rate))
	require.NoError(t, r.(driver.RemoteBinder).SetRemoteTensor("sr", rt))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	want, _ := inferAll(t, cpu, m, map[string]*tensor.Tensor{"x": xs, "sr": rate})
	assertOutputsClose(t, want, []*tensor.Tensor{y}, 1e-5, 1e-5)
	assert.Same(t, cmp.static, r.(*InferRequest).c.lastRun, "a remote condition input runs the static plan")
}

// TestIfOnStateInput: an If whose condition reads a MAKE_STATEFUL state
// (s > 0, the state counting up from its zero start) takes the branch of
// the state the request holds, inference after inference: the else branch
// first, the then branch from the second on. A state is not a host
// condition input (hostCondOf): its bound tensor never changes, the held
// value lives on the device, and deciding from the tensor froze the branch
// at the first outcome.
func TestIfOnStateInput(t *testing.T) {
	gpu := newGPU(t)
	x := graph.NewParameter("x", tensor.F32, graph.StaticShape(tensor.Shape{2, 3}))
	s := graph.NewParameter("s", tensor.F32, graph.StaticShape(tensor.Shape{1}))
	then := bodyOf("then", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Relu", nil, p[0])}
	})
	els := bodyOf("else", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Neg", nil, p[0])}
	})
	cond := nn("Squeeze", nil, nn("Greater", nil, s.Out(0), scalarConst(tensor.F32, 0)))
	ifn := graph.NewNode(graph.OpIf, "if", []graph.Output{cond, x.Out(0)},
		graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(1)}, 1)
	next := nn("Add", nil, s.Out(0), scalarConst(tensor.F32, 1))
	m := graph.NewModel("state_cond", []*graph.Node{x, s}, []*graph.Node{graph.NewResult("y", ifn.Out(0)), graph.NewResult("s_next", next)})
	require.NoError(t, m.InferShapes())
	xv := []float32{1, -2, 3, -4, 5, -6}
	xs, err := tensor.FromF32(tensor.Shape{2, 3}, xv)
	require.NoError(t, err)
	{
		dev := gpu
		cm, err := dev.CompileModel(context.Background(), m, map[string]string{driver.KeyMakeStateful: "s:s_next"})
		require.NoError(t, err)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		require.NoError(t, r.SetTensor("x", xs))
		for i := range 3 {
			require.NoError(t, r.Infer(context.Background()))
			y, err := r.Tensor("y")
			require.NoError(t, err)
			want := make([]float32, len(xv))
			for j, v := range xv {
				if i == 0 {
					want[j] = -v // s = 0: else
				} else {
					want[j] = max(v, 0) // s = i > 0: then
				}
			}
			assert.Equal(t, want, y.F32(), "%T, inference %d (state %d)", dev, i, i)
		}
		require.NoError(t, r.Close())
		require.NoError(t, cm.Close())
	}
}

// TestConcatInPlaceOutcomePlan: in the plan of an outcome of a host
// condition the If is its branch, straight-line, so a Concat in that
// branch places its inputs in its output (no copy launches), as in a
// model without control flow (Silero VAD's next state: the LSTM's two
// states). Both outcomes give the CPU's outputs.
func TestConcatInPlaceOutcomePlan(t *testing.T) {
	gpu := newGPU(t)
	if gpu.devices[gpu.def].subAlign <= 0 {
		t.Skipf("%s reports no CL_DEVICE_MEM_BASE_ADDR_ALIGN: no sub-buffers to place into", gpu.devices[gpu.def].fullName)
	}
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	const n = 1024 // 4 KiB blocks: a multiple of any device's sub-buffer alignment
	x := graph.NewParameter("x", tensor.F32, graph.StaticShape(tensor.Shape{1, n}))
	sr := graph.NewParameter("sr", tensor.I64, graph.StaticShape(tensor.Shape{}))
	then := bodyOf("then", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Concat", graph.Attrs{"axis": int64(0)}, nn("Relu", nil, p[0]), nn("Sigmoid", nil, p[0]))}
	})
	els := bodyOf("else", []string{"x"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Concat", graph.Attrs{"axis": int64(0)}, nn("Neg", nil, p[0]), p[0])}
	})
	cond := nn("Equal", nil, sr.Out(0), scalarConst(tensor.I64, 16000))
	ifn := graph.NewNode(graph.OpIf, "if", []graph.Output{cond, x.Out(0)},
		graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(1)}, 1)
	m := graph.NewModel("concat_branch", []*graph.Node{x, sr}, []*graph.Node{graph.NewResult("y", ifn.Out(0))})
	require.NoError(t, m.InferShapes())
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	require.NotNil(t, cm.(*CompiledModel).conds, "the If is planned per outcome")
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	xs, err := tensor.FromF32(tensor.Shape{1, n}, seeded.Float32s(7, n, -2, 2))
	require.NoError(t, err)
	for _, rate := range []int64{16000, 8000} {
		inferRate(t, cpu, m, r, xs, rate)
		if rate != 16000 {
			continue
		}
		pl := r.(*InferRequest).c.lastRun
		require.Nil(t, pl.prog, "a straight-line plan")
		var concat []string
		for node, impl := range pl.impl {
			if node.OpType == "Concat" {
				concat = append(concat, impl)
			}
		}
		assert.Equal(t, []string{implInPlace}, concat, "the then branch's Concat writes nothing")
	}
}

// inferRate runs r (of model m, inputs x and sr) with x = xs and sr =
// rate, checks output y against the CPU's and returns it.
func inferRate(t *testing.T, cpu driver.Plugin, m *graph.Model, r driver.InferRequest, xs *tensor.Tensor, rate int64) *tensor.Tensor {
	t.Helper()
	rt, err := tensor.FromFloat64s(tensor.I64, tensor.Shape{}, []float64{float64(rate)})
	require.NoError(t, err)
	ins := map[string]*tensor.Tensor{"x": xs, "sr": rt}
	want, _ := inferAll(t, cpu, m, ins)
	for name, v := range ins {
		require.NoError(t, r.SetTensor(name, v))
	}
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	assertOutputsClose(t, want, []*tensor.Tensor{y}, 1e-5, 1e-5)
	return y
}

// sampleRateModel is y = If(sr == 16000, Relu(x * w), Sigmoid(x)) on x
// [2, 3] and an i64 scalar sr: Silero VAD's sample-rate If.
func sampleRateModel(t *testing.T) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.StaticShape(tensor.Shape{2, 3}))
	sr := graph.NewParameter("sr", tensor.I64, graph.StaticShape(tensor.Shape{}))
	w, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{1, -2, 3, -4, 5, -6})
	require.NoError(t, err)
	then := bodyOf("then", []string{"x", "w"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Relu", nil, nn("Mul", nil, p[0], p[1]))}
	})
	els := bodyOf("else", []string{"x", "w"}, func(p []graph.Output) []graph.Output {
		return []graph.Output{nn("Sigmoid", nil, p[0])}
	})
	cond := nn("Equal", nil, sr.Out(0), scalarConst(tensor.I64, 16000))
	ifn := graph.NewNode(graph.OpIf, "if", []graph.Output{cond, x.Out(0), graph.NewConstant("w", w).Out(0)},
		graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(2)}, 1)
	m := graph.NewModel("sample_rate", []*graph.Node{x, sr}, []*graph.Node{graph.NewResult("y", ifn.Out(0))})
	require.NoError(t, m.InferShapes())
	return m
}

// TestHostCondMemo: a host condition's outcome is remembered with the
// bytes of the inputs it was computed from: the same inputs again pick
// the plan without running the reference kernels (no allocation), and a
// bound tensor rewritten in place or another tensor is evaluated anew, so
// every inference runs the branch of its own inputs.
func TestHostCondMemo(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m := sampleRateModel(t)
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	cmp := cm.(*CompiledModel)
	require.NotNil(t, cmp.conds)
	xs, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{0.5, 1, -1, 2, -0.25, 3})
	require.NoError(t, err)
	rate, err := tensor.FromFloat64s(tensor.I64, tensor.Shape{}, []float64{16000})
	require.NoError(t, err)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetTensor("x", xs))
	require.NoError(t, r.SetTensor("sr", rate))
	for _, v := range []int64{16000, 16000, 8000, 8000, 16000, 8000} {
		d, err := tensor.Data[int64](rate)
		require.NoError(t, err)
		d[0] = v // in place: the binding stays
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor("y")
		require.NoError(t, err)
		want, _ := inferAll(t, cpu, m, map[string]*tensor.Tensor{"x": xs, "sr": rate})
		assertOutputsClose(t, want, []*tensor.Tensor{y}, 1e-5, 1e-5)
		mask := 0
		if v == 16000 {
			mask = 1
		}
		assert.Same(t, cmp.conds.plans[mask], cmp.lastRun, "sr=%d: the plan of its outcome", v)
	}
	ins := []*tensor.Tensor{xs, rate}
	var pl *plan
	assert.Zero(t, testing.AllocsPerRun(20, func() { pl = cmp.conds.pickFrom(ins, nil) }), "the remembered outcome: nothing evaluated")
	assert.Same(t, cmp.conds.plans[0], pl)
	other, err := tensor.FromFloat64s(tensor.I64, tensor.Shape{}, []float64{16000})
	require.NoError(t, err)
	assert.Same(t, cmp.conds.plans[1], cmp.conds.pickFrom([]*tensor.Tensor{xs, other}, nil), "another tensor, another value")
	assert.Same(t, cmp.conds.plans[0], cmp.conds.pickFrom(ins, nil), "the first value again")
}
