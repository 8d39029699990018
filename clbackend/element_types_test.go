package clbackend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// elementTypes are the element types TestElementTypesMatchCPU gives the
// data inputs of every op of the GPU's table (f32 is every other test's).
var elementTypes = []tensor.ElementType{
	tensor.F16, tensor.BF16, tensor.F64,
	tensor.I8, tensor.I16, tensor.I32, tensor.I64, tensor.U8, tensor.U16, tensor.U32, tensor.U64,
	tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ, tensor.Bool,
}

// retyped returns the case model m (one node of op over parameters and
// constants) with its data inputs of the node's leading data type (the
// type of its first input that is not a host input) retyped to t, or nil
// when m is not of that form or op's row (graph.InferNode: the op set's
// type constraints) refuses t there.
func retyped(m *graph.Model, op string, t tensor.ElementType) *graph.Model {
	nodes, err := m.Nodes()
	if err != nil {
		return nil
	}
	var target *graph.Node
	for _, n := range nodes {
		switch {
		case n.OpType == graph.OpParameter || n.OpType == graph.OpConstant || n.OpType == graph.OpResult:
		case n.OpType == op && target == nil:
			target = n
		default:
			return nil
		}
	}
	if target == nil || target.HasBodies() {
		return nil
	}
	spec, _ := graph.Lookup(op)
	source := func(o graph.Output) bool {
		return o.Valid() && (o.Node.OpType == graph.OpParameter || o.Node.OpType == graph.OpConstant)
	}
	lead := tensor.Undefined
	for i, in := range target.Inputs {
		if source(in) && !spec.IsHostInput(i) {
			lead = in.Type()
			break
		}
	}
	if lead == tensor.Undefined || lead == t {
		return nil
	}
	var params []*graph.Node
	ins := slices.Clone(target.Inputs)
	done := map[*graph.Node]graph.Output{}
	for i, in := range ins {
		if !source(in) || spec.IsHostInput(i) || in.Type() != lead {
			continue
		}
		if o, ok := done[in.Node]; ok {
			ins[i] = o
			continue
		}
		if in.Node.OpType == graph.OpParameter {
			ins[i] = graph.NewParameter(in.Node.Name, t, in.Shape()).Out(0)
		} else {
			v, err := in.Node.Value.Convert(t)
			if err != nil {
				return nil
			}
			ins[i] = graph.NewConstant(in.Node.Name, v).Out(0)
		}
		done[in.Node] = ins[i]
	}
	seen := map[*graph.Node]bool{}
	for _, in := range ins {
		if in.Valid() && in.Node.OpType == graph.OpParameter && !seen[in.Node] {
			seen[in.Node] = true
			params = append(params, in.Node)
		}
	}
	n := graph.NewNode(op, "node", ins, target.Attrs, len(target.Outputs))
	if err := graph.InferNode(n); err != nil {
		return nil
	}
	var res []*graph.Node
	for i := range n.Outputs {
		name := "y"
		if i > 0 {
			name = fmt.Sprintf("y%d", i)
		}
		res = append(res, graph.NewResult(name, n.Out(i)))
	}
	rm := graph.NewModel(op+"/"+t.String(), params, res)
	if rm.Validate() != nil {
		return nil
	}
	return rm
}

// typedFill fills parameter p with seeded values of its type: integers in
// [-5, 5] ([0, 10] unsigned; from 1 for a "pos" parameter), booleans,
// and floats of a normal distribution (in [0.5, 2) for "pos").
func typedFill(t *testing.T, r *rand.Rand, p *graph.Node) *tensor.Tensor {
	s, ok := p.Outputs[0].Shape.ToShape()
	require.True(t, ok)
	typ := p.Outputs[0].Type
	pos := strings.HasPrefix(p.Name, "pos")
	v := make([]float64, s.NumElements())
	for i := range v {
		switch {
		case typ == tensor.Bool:
			v[i] = float64(r.IntN(2))
		case typ.IsInteger() && pos:
			v[i] = float64(1 + r.IntN(5))
		case typ.IsInteger() && !typ.IsSigned():
			v[i] = float64(r.IntN(11))
		case typ.IsInteger():
			v[i] = float64(r.IntN(11) - 5)
		case pos:
			v[i] = 0.5 + 1.5*r.Float64()
		default:
			v[i] = r.NormFloat64()
		}
	}
	x, err := tensor.FromFloat64s(typ, s, v)
	require.NoError(t, err)
	return x
}

// typeTolerance is the relative tolerance of a result of type t: a few
// units in the last place (the GPU computes a low-precision type in f32,
// as the CPU reference does, but rounding at the end may differ by one).
func typeTolerance(t tensor.ElementType) float64 {
	switch t {
	case tensor.F16:
		return 4e-3
	case tensor.BF16:
		return 2e-2
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ:
		return 0.13
	case tensor.F8E5M2, tensor.F8E5M2FNUZ:
		return 0.26
	case tensor.F64:
		return 1e-6 // the CPU reference computes some f64 ops in f32
	}
	return 1e-3
}

// TestElementTypesMatchCPU enumerates every (op, element type) pair that
// the op set allows for the ops of the GPU's lowering table: the first case
// of each op (its example or lowerCases' case) that retypes, with its data
// inputs retyped to each of elementTypes, kept where the op's row accepts
// the type (graph.InferNode) and the CPU reference runs it. On each such
// pair the GPU must compile the model and give the CPU's outputs: integers
// and booleans bit for bit, floats within a few units in the last place of
// the type. The only refusals it accepts are named ones, which QueryModel
// must report too (so HETERO places the node on the CPU): f64 on the ops
// whose lowering entry says noF64 (their kernels compute in f32), and, on
// a device without cl_khr_fp64, what needs double. The summary (go test
// -v) logs the counts.
func TestElementTypesMatchCPU(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	all := lowerCases()
	var ops []string
	for op, l := range lowerings() {
		if l.lower != nil && l.hostPart == "" {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	fp64 := gpu.devices[gpu.def].fp64
	allowed, matched, cpuRefused := 0, 0, 0
	var gaps, named []string
	for _, op := range ops {
		cs := all[op]
		if len(cs) == 0 {
			continue
		}
		for _, typ := range elementTypes {
			// The first case whose form retypes (seeded as in
			// TestLoweringsMatchCPU).
			var m *graph.Model
			var g *caseGen
			for ci, c := range cs {
				g = &caseGen{t: t, r: rand.New(rand.NewPCG(uint64(len(op))*1000+uint64(ci), 7))}
				if m = retyped(c.build(g), op, typ); m != nil {
					break
				}
			}
			if m == nil {
				continue
			}
			ins := map[string]*tensor.Tensor{}
			for _, p := range m.Parameters {
				ins[p.Name] = typedFill(t, g.r, p)
			}
			ctx := context.Background()
			props := map[string]string{driver.KeyDisableTransformations: "YES"}
			ccm, err := cpu.CompileModel(ctx, m, props)
			var want []*tensor.Tensor
			if err == nil {
				want, err = runCompiled(ctx, ccm, ins)
				_ = ccm.Close()
			}
			if err != nil {
				// The op's row accepts the type but the reference
				// refuses it: a CPU gap, not a pair the GPU must run.
				t.Logf("%s %s: the CPU reference refuses it: %v", op, typ, err)
				cpuRefused++
				continue
			}
			allowed++
			t.Run(op+"/"+typ.String(), func(t *testing.T) {
				gcm, err := gpu.CompileModel(ctx, m, props)
				pending := typ == tensor.F64 && lowerings()[op].noF64
				if err != nil && errors.Is(err, driver.ErrUnsupported) && (pending || (!fp64 && strings.Contains(err.Error(), fp64Extension))) {
					// A named refusal: f64 on an op whose lowering entry
					// says noF64, or a device without
					// cl_khr_fp64 refusing what needs double. QueryModel
					// says so, and HETERO:GPU,CPU places the node on the CPU.
					named = append(named, op+"/"+typ.String())
					q, err := gpu.QueryModel(ctx, m, props)
					require.NoError(t, err)
					assert.NotContains(t, q, "node", "QueryModel claims %s on %s", op, typ)
					return
				}
				if !assert.NoError(t, err, "the GPU refuses %s on %s", op, typ) {
					gaps = append(gaps, op+"/"+typ.String())
					return
				}
				if pending {
					_ = gcm.Close()
					assert.Fail(t, "the GPU runs f64 "+op, "drop noF64 from %s's lowering entry", op)
					return
				}
				defer gcm.Close()
				got, err := runCompiled(ctx, gcm, ins)
				require.NoError(t, err)
				require.Len(t, got, len(want))
				ok := true
				for i := range want {
					require.Equal(t, want[i].Shape(), got[i].Shape(), "output %d", i)
					require.Equal(t, want[i].Type(), got[i].Type(), "output %d", i)
					w, gv := want[i].Float64s(), got[i].Float64s()
					tol := typeTolerance(want[i].Type())
					exact := !want[i].Type().IsFloat() && !want[i].Type().IsFloat8()
					for j := range w {
						switch {
						case exact:
							ok = assert.Equal(t, w[j], gv[j], "output %d element %d", i, j) && ok
						case math.IsNaN(w[j]):
							ok = assert.True(t, math.IsNaN(gv[j]), "output %d element %d: got %v, want NaN", i, j, gv[j]) && ok
						default:
							ok = assert.InDelta(t, w[j], gv[j], tol+tol*math.Abs(w[j]), "output %d element %d", i, j) && ok
						}
					}
				}
				if ok {
					matched++
				}
			})
		}
	}
	t.Logf("element types: %d (op, type) pairs the op set allows and the CPU runs: %d match on the GPU, %d named refusals %v, %d gaps %v; %d more pass the op rows' inference but the CPU reference refuses them",
		allowed, matched, len(named), named, len(gaps), gaps, cpuRefused)
}

// runCompiled runs one inference of cm on ins and returns every output.
func runCompiled(ctx context.Context, cm driver.CompiledModel, ins map[string]*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, err := cm.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for name, x := range ins {
		if err := r.SetTensor(name, x); err != nil {
			return nil, err
		}
	}
	if err := r.Infer(ctx); err != nil {
		return nil, err
	}
	var out []*tensor.Tensor
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, y.Clone())
	}
	return out, nil
}
