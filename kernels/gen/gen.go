package gen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// Entry is the entry point of every generated chain kernel.
const Entry = "generated_chain"

// binaryMacros are the two-input ops a chain takes and their macros in
// eltwise_ops.clh (the float forms).
var binaryMacros = map[string]string{
	"Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "DIV", "Pow": "POW",
	"Max": "MAX", "Min": "MIN", "PRelu": "PRELU",
}

// UnaryKernels maps each single-input op of the eltwise, activation and
// compare families whose name in snake case is an operation macro of
// eltwise_ops.clh ("LeakyRelu": "leaky_relu") to that catalogue entry of
// eltwise_unary.cl; the GPU device lowers those ops to it and chains print
// its macro.
var UnaryKernels = sync.OnceValue(func() map[string]string {
	t := map[string]string{}
	for _, op := range graph.OpTypes() {
		s, _ := graph.Lookup(op)
		switch s.Family {
		case graph.FamilyEltwise, graph.FamilyActivation, graph.FamilyCompare:
		default:
			continue
		}
		if k := SnakeCase(op); s.MaxInputs == 1 && slices.Contains(kernels.UnaryOps(), k) {
			t[op] = k
		}
	}
	return t
})

// SnakeCase is an op type in snake case: a word starts at each capital
// that follows a lower-case letter or starts a capitalised word after a
// run of capitals ("ThresholdedRelu": "thresholded_relu", "GatherND":
// "gather_nd"), and a last single capital joins its word ("IsNaN":
// "is_nan").
func SnakeCase(op string) string {
	var words []string
	start := 0
	for i := 1; i < len(op); i++ {
		c, prev := op[i], op[i-1]
		upper := c >= 'A' && c <= 'Z'
		prevUpper := prev >= 'A' && prev <= 'Z'
		nextLower := i+1 < len(op) && op[i+1] >= 'a' && op[i+1] <= 'z'
		if upper && (!prevUpper || nextLower) && i+1 < len(op) {
			words = append(words, op[start:i])
			start = i
		}
	}
	words = append(words, op[start:])
	return strings.ToLower(strings.Join(words, "_"))
}

// unaryMacro is the macro of a single-input op of a chain: its catalogue
// entry in upper case, GELU_TANH for Gelu's tanh form; "" for an op a
// chain does not take (a comparison, whose output is boolean).
func unaryMacro(n *graph.Node) string {
	k, ok := UnaryKernels()[n.OpType]
	if !ok {
		return ""
	}
	if s, _ := graph.Lookup(n.OpType); s.Family == graph.FamilyCompare {
		return ""
	}
	if n.OpType == "Gelu" && n.Attrs.String("approximate", "none") == "tanh" {
		k = "gelu_tanh"
	}
	return strings.ToUpper(k)
}

// Supports reports whether op node n can be part of a generated chain: a
// float unary activation or math op, Clip with constant (or no) bounds,
// or a binary arithmetic op (Add, Sub, Mul, Div, Pow, Max and Min of two,
// PRelu), of the default domain, whose inputs and output are f32.
func Supports(n *graph.Node) bool {
	if n.Domain != "" || len(n.Outputs) != 1 || n.Outputs[0].Type != tensor.F32 {
		return false
	}
	for _, in := range n.Inputs {
		if in.Valid() && in.Type() != tensor.F32 {
			return false
		}
	}
	switch {
	case binaryMacros[n.OpType] != "":
		return len(n.Inputs) == 2 && n.Input(0).Valid() && n.Input(1).Valid()
	case n.OpType == "Clip":
		for i := 1; i < len(n.Inputs); i++ {
			if t, ok := n.ConstInput(i); n.Input(i).Valid() && (!ok || t.NumElements() != 1) {
				return false
			}
		}
		return n.Input(0).Valid()
	}
	return unaryMacro(n) != "" && len(n.Inputs) == 1 && n.Input(0).Valid()
}

// File names generated chain kernels in build logs, program caches and
// messages (kernels.Kernel.File).
const File = "generated_chain.cl"

// Kernel is a generated kernel: its source, with the headers it includes
// expanded as kernels.Source expands a catalogue file's, and the float
// params it reads (the p argument of the KernelFusion conventions: the
// ops' attributes and the body's scalar constants).
type Kernel struct {
	Source string
	Params []float32
}

// Spec is k as the GPU device's planner launches kernels: entry Entry of
// the generated source, named generated_chain in File.
func (k *Kernel) Spec() kernels.Kernel {
	return kernels.Kernel{Name: Entry, File: File, Entry: Entry, Generated: k.Source}
}

// Elementwise prints body, the body of a KernelFusion node (one Parameter
// per input, op nodes Supports takes, scalar Constants, one Result), as a
// kernel of graph.LaunchElementwise's convention called Entry: work item
// i locates element i of the output in every input through the shape
// table m (rank, output dims, each input's strides), loads them, computes
// the ops in the body's order in float and stores the result. The source
// depends only on the ops and how they connect, never on names, shapes or
// constants, so equal chains share one program.
func Elementwise(body *graph.Model) (*Kernel, error) {
	nodes, err := body.Nodes()
	if err != nil {
		return nil, err
	}
	if len(body.Results) != 1 {
		return nil, fmt.Errorf("gen: body %q has %d results, a chain has one", body.Name, len(body.Results))
	}
	k := &Kernel{}
	names := map[graph.Output]string{}
	param := func(v float32) string {
		k.Params = append(k.Params, v)
		return fmt.Sprintf("p[%d]", len(k.Params)-1)
	}
	nin := len(body.Parameters)
	var code, ops []string
	for i, p := range body.Parameters {
		names[p.Out(0)] = fmt.Sprintf("v%d", i)
		code = append(code, fmt.Sprintf("    const float v%d = LD(in%d, o%d);", i, i, i))
	}
	arg := func(n *graph.Node, i int) (string, error) {
		s, ok := names[n.Input(i)]
		if !ok {
			return "", fmt.Errorf("gen: node %q reads %s, which the chain does not compute", n.Name, n.Input(i))
		}
		return s, nil
	}
	t := 0
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
			continue
		case graph.OpConstant:
			if n.Value == nil || n.Value.NumElements() != 1 || !n.Value.Type().IsFloat() {
				return nil, fmt.Errorf("gen: constant %q of the chain is not a float scalar (chains take tensors as inputs)", n.Name)
			}
			names[n.Out(0)] = param(float32(n.Value.Float64s()[0]))
			continue
		}
		if !Supports(n) {
			return nil, fmt.Errorf("gen: op %s (node %q) is not one a chain takes", n.OpType, n.Name)
		}
		var expr string
		switch m := binaryMacros[n.OpType]; {
		case m != "":
			a, err := arg(n, 0)
			if err != nil {
				return nil, err
			}
			b, err := arg(n, 1)
			if err != nil {
				return nil, err
			}
			expr = fmt.Sprintf("%s(%s, %s)", m, a, b)
		case n.OpType == "Clip":
			// The bounds are the chain's scalar constants (Supports), or
			// none: -Inf, +Inf.
			b := [2]string{}
			for i := 0; i < len(n.Inputs) && i < 3; i++ {
				s, err := arg(n, i)
				if err != nil {
					return nil, err
				}
				if i == 0 {
					expr = s
				} else {
					b[i-1] = s
				}
			}
			if b[0] == "" {
				b[0] = param(float32(math.Inf(-1)))
			}
			if b[1] == "" {
				b[1] = param(float32(math.Inf(1)))
			}
			expr = fmt.Sprintf("CLIP(%s, %s, %s)", expr, b[0], b[1])
		default:
			x, err := arg(n, 0)
			if err != nil {
				return nil, err
			}
			pv := append(graph.ParamValues(n), 0, 0)
			expr = fmt.Sprintf("%s(%s, %s, %s)", unaryMacro(n), x, param(pv[0]), param(pv[1]))
		}
		names[n.Out(0)] = fmt.Sprintf("t%d", t)
		code = append(code, fmt.Sprintf("    const float t%d = %s;", t, expr))
		ops = append(ops, n.OpType)
		t++
	}
	out, ok := names[body.Results[0].Input(0)]
	if !ok {
		return nil, fmt.Errorf("gen: the result of body %q is not computed by the chain", body.Name)
	}
	code = append(code, fmt.Sprintf("    ST(out0, gid, %s);", out))
	src, err := kernels.Expand(File, source(nin, ops, code))
	if err != nil {
		return nil, err
	}
	k.Source = src
	if len(k.Params) == 0 {
		k.Params = []float32{0}
	}
	return k, nil
}

// source is the kernel of nin inputs whose body lines are code; ops name
// the chain's ops in the leading comment.
func source(nin int, ops, code []string) string {
	var s strings.Builder
	fmt.Fprintf(&s, `// generated_chain.cl: %s, one element-wise chain printed by
// kernels/gen at compile time from the body of a KernelFusion node.
//
// Work-size contract (graph.LaunchElementwise): 1-D NDRange with global
// size >= n; any local size. Work item i computes output element i; items
// with i >= n do nothing. Arguments: the inputs in0..in%d, the output out0,
// n, the int array m (m[0] = rank r, r dims of the output, then r element
// strides per input, 0 on broadcast axes) and the float params p (the ops'
// attributes and scalar constants). Built with -DHALF every tensor is f16
// (half.clh); the math is float.

#define T float
#define IS_FLOAT 1
#include "half.clh"
#include "eltwise_ops.clh"

__kernel void %s(`, strings.Join(ops, " -> "), nin-1, Entry)
	for i := range nin {
		fmt.Fprintf(&s, "__global const FT* in%d, ", i)
	}
	s.WriteString("__global FT* out0, const ulong n, __global const int* m, __global const float* p)\n{\n")
	s.WriteString("    const size_t gid = get_global_id(0);\n    if (gid >= n) return;\n    const int r = m[0];\n")
	offs := make([]string, nin)
	for i := range offs {
		offs[i] = fmt.Sprintf("o%d = 0", i)
	}
	fmt.Fprintf(&s, "    long %s;\n    ulong rem = gid;\n", strings.Join(offs, ", "))
	s.WriteString("    for (int d = r - 1; d >= 0; --d) {\n        const ulong dim = (ulong)m[1 + d];\n")
	s.WriteString("        const long c = (long)(rem % dim);\n        rem /= dim;\n")
	for i := range nin {
		fmt.Fprintf(&s, "        o%d += c * m[1 + %d * r + d];\n", i, i+1)
	}
	s.WriteString("    }\n")
	s.WriteString(strings.Join(code, "\n"))
	s.WriteString("\n}\n")
	return s.String()
}
