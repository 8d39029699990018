package gen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// reduction is how a chain's reduction folds a row: acc starts at init,
// takes each value v by step, and the row's result is final (D the row
// length), all in float.
type reduction struct{ init, step, final string }

// reductions are the reductions a chain may end in.
var reductions = map[string]reduction{
	"ReduceSum":       {"0.0f", "acc + v", "acc"},
	"ReduceMean":      {"0.0f", "acc + v", "acc / (float)D"},
	"ReduceSumSquare": {"0.0f", "acc + v * v", "acc"},
	"ReduceL1":        {"0.0f", "acc + fabs(v)", "acc"},
	"ReduceL2":        {"0.0f", "acc + v * v", "sqrt(acc)"},
}

// SupportsReduction reports whether op node n can end a generated chain:
// ReduceSum, ReduceMean, ReduceSumSquare, ReduceL1 or ReduceL2 of the
// default domain on f32, over constant axes (or all of them) that are the
// trailing axes of an input of known rank, so that each output element
// reduces one contiguous row of the chain's elements.
func SupportsReduction(n *graph.Node) bool {
	if _, ok := reductions[n.OpType]; !ok || n.Domain != "" || len(n.Outputs) != 1 || n.Outputs[0].Type != tensor.F32 {
		return false
	}
	_, ok := ReducedAxes(n)
	return ok && n.Input(0).Type() == tensor.F32
}

// ReducedAxes returns how many trailing axes reduction node n reduces, and
// false when its axes are not known at compile time, are empty with
// noop_with_empty_axes, or are not the input's trailing axes.
func ReducedAxes(n *graph.Node) (int, bool) {
	if !n.Input(0).Valid() {
		return 0, false
	}
	s := n.Input(0).Shape()
	if !s.RankKnown || len(s.Dims) == 0 {
		return 0, false
	}
	r := len(s.Dims)
	var axes []int64
	if n.Input(1).Valid() {
		v, ok := n.ConstInts(1)
		if !ok {
			return 0, false
		}
		axes = v
	}
	if len(axes) == 0 {
		if n.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			return 0, false
		}
		return r, true
	}
	norm := make([]int, 0, len(axes))
	for _, a := range axes {
		if a < 0 {
			a += int64(r)
		}
		if a < 0 || a >= int64(r) || slices.Contains(norm, int(a)) {
			return 0, false
		}
		norm = append(norm, int(a))
	}
	slices.Sort(norm)
	for i, a := range norm {
		if a != r-len(norm)+i {
			return 0, false
		}
	}
	return len(norm), true
}

// Reduction prints body, the body of a KernelFusion node whose result is
// a reduction SupportsReduction takes of an element-wise chain (the
// chain's ops Supports takes, scalar Constants, the reduction's constant
// axes), as a kernel of graph.LaunchReduceRows called Entry: work item r
// folds row r of the chain's elements (the reduced trailing axes of the
// reduction's input), locating them in the inputs through the table that
// follows the row length in m, and stores one output element. Like
// Elementwise's, the source depends only on the ops.
func Reduction(body *graph.Model) (*Kernel, error) {
	if len(body.Results) != 1 || !body.Results[0].Input(0).Valid() {
		return nil, fmt.Errorf("gen: body %q has %d results, a chain has one", body.Name, len(body.Results))
	}
	root := body.Results[0].Input(0).Node
	red, ok := reductions[root.OpType]
	if !ok || !SupportsReduction(root) {
		return nil, fmt.Errorf("gen: the result of body %q is %s (node %q), not a reduction a chain ends in", body.Name, root.OpType, root.Name)
	}
	c, err := printChain(body, root)
	if err != nil {
		return nil, err
	}
	return c.kernel(reductionSource(c.nin, append(c.ops, root.OpType), c.code, red))
}

// reductionSource is the kernel of nin inputs whose chain_value lines are
// code, folding each row by red.
func reductionSource(nin int, ops, code []string, red reduction) string {
	var s strings.Builder
	fmt.Fprintf(&s, `// generated_chain.cl: %s, one element-wise chain and its reduction
// printed by kernels/gen at compile time from the body of a KernelFusion
// node.
//
// Work-size contract (graph.LaunchReduceRows): 1-D NDRange with global
// size >= n, the output's elements; any local size. Work item r folds row
// r, the m[0] consecutive elements r*m[0].. of the chain's iteration space,
// into output element r; items with r >= n do nothing. Arguments: the
// inputs in0..in%d, the output out0, n, the int array m (m[0] = the row
// length D, then the element-wise table of the iteration space: rank r, r
// dims, r element strides per input, 0 on broadcast axes) and the float
// params p (the ops' attributes and scalar constants). Built with -DHALF
// every tensor is f16 (half.clh); the math and the accumulation are float.

#define T float
#define IS_FLOAT 1
#include "half.clh"
#include "eltwise_ops.clh"

#define RANK m[0]
`, strings.Join(ops, " -> "), nin-1)
	s.WriteString(chainValue(nin, code))
	s.WriteString(locateFn(nin))
	fmt.Fprintf(&s, "\n__kernel void %s(%s, __global FT* out0, const ulong n, __global const int* m, __global const float* p)\n{\n", Entry, perInput(nin, "__global const FT* in#", ", "))
	fmt.Fprintf(&s, `    const ulong r = get_global_id(0);
    if (r >= n) return;
    const ulong D = (ulong)m[0];
    __global const int* t = m + 1; // the iteration space's table
    const int rank = t[0];
    const uint inner = (uint)t[rank]; // its innermost dim
    const ulong total = n * D;
    long o[%d];
    float acc = %s;
    ulong i = r * D;
    const ulong end = i + D;
    while (i < end) {
        // Locate the run's first element, then step along the innermost axis.
        locate(i, total, t, o);
        for (uint c = (uint)(i %% inner); c < inner && i < end; ++c, ++i) {
            const float v = chain_value(%s, p);
            acc = %s;
%s        }
    }
    ST(out0, r, %s);
}
`, nin, red.init, perInput(nin, "in#", ", ")+", "+perInput(nin, "o[#]", ", "), red.step, perInput(nin, "            o[#] += t[(# + 2) * rank];\n", ""), red.final)
	return s.String()
}

// ChainOps returns the op types a generated chain may hold, sorted: those
// Supports takes on f32, the reductions SupportsReduction takes and the
// QuantizeLinear SupportsQuantizeTail takes (the op support matrix lists
// FuseElementwiseChains for them).
func ChainOps() []string {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4))
	var ops []string
	probe := func(op string, in ...graph.Output) {
		n := graph.NewNode(op, op, in, nil, 1)
		if graph.InferNode(n) == nil && Supports(n) {
			ops = append(ops, op)
		}
	}
	for op := range UnaryKernels() {
		probe(op, x.Out(0))
	}
	for op := range binaryMacros {
		probe(op, x.Out(0), x.Out(0))
	}
	probe("Clip", x.Out(0))
	for op := range reductions {
		ops = append(ops, op)
	}
	ops = append(ops, "QuantizeLinear")
	slices.Sort(ops)
	return slices.Compact(ops)
}
