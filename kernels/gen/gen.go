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

// SupportsQuantizeTail reports whether node n can end a generated chain:
// a QuantizeLinear of f32 data to i8 or u8 per tensor (a constant scalar
// f32 scale, a constant scalar zero point or none, no blocks); the chain
// then stores the quantized values (quant.clh's rounding and saturation,
// bit for bit the CPU reference's) instead of the f32 ones the next
// QuantizeLinear would read back.
func SupportsQuantizeTail(n *graph.Node) bool {
	if n.OpType != "QuantizeLinear" || n.Domain != "" || len(n.Outputs) != 1 || n.Attrs.Int("block_size", 0) != 0 {
		return false
	}
	if t := n.Outputs[0].Type; t != tensor.U8 && t != tensor.I8 {
		return false
	}
	if x := n.Input(0); !x.Valid() || x.Type() != tensor.F32 {
		return false
	}
	if s, ok := n.ConstInput(1); !ok || s.Type() != tensor.F32 || s.NumElements() != 1 {
		return false
	}
	if z, ok := n.ConstInput(2); n.Input(2).Valid() && (!ok || z.NumElements() != 1) {
		return false
	}
	return true
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
// constants (but for a Pow by a constant 2, printed as a product), so
// equal chains share one program.
func Elementwise(body *graph.Model) (*Kernel, error) {
	c, err := printChain(body, nil)
	if err != nil {
		return nil, err
	}
	src := source(c.nin, c.ops, c.code)
	if c.quant != tensor.Undefined {
		src = quantizedSource(src, c.quant)
	}
	return c.kernel(src)
}

// quantizedSource is src, a chain kernel whose last op is a QuantizeLinear
// (SupportsQuantizeTail) to t, storing into t's buffer: without FP
// contraction (each op rounded as the CPU reference rounds it, as the
// quantization needs), with quant.clh for QUANTIZE.
func quantizedSource(src string, t tensor.ElementType) string {
	lo, hi, _ := t.IntRange()
	ct := "uchar"
	if t == tensor.I8 {
		ct = "char"
	}
	head := fmt.Sprintf(`#pragma OPENCL FP_CONTRACT OFF
// The chain ends in a QuantizeLinear to %[1]s: out0 holds %[1]s.
#define QT %[2]s
#define QMIN %[3]d
#define QMAX %[4]d
#include "quant.clh"
#define QUANTIZE(x, s, z) ((float)round_sat(quant_div((x), (s)), (int)(z)))
#define STQ(p, i, v) ((p)[i] = (QT)(v))
`, t, ct, lo, hi)
	src = strings.ReplaceAll(src, "__global FT* out0", "__global QT* out0")
	src = strings.ReplaceAll(src, "ST(out0, ", "STQ(out0, ")
	return strings.Replace(src, "#define T float\n", head+"#define T float\n", 1)
}

// printed is a chain printed as the lines of chain_value (the loads of
// v0.., the ops' t0.. and the return of the chain's value) and the params
// they read.
type printed struct {
	nin    int
	ops    []string
	code   []string
	params []float32
	quant  tensor.ElementType // the type a QuantizeLinear tail stores (Undefined: f32)
}

// kernel expands the headers of src, a kernel printed from c.
func (c *printed) kernel(src string) (*Kernel, error) {
	src, err := kernels.Expand(File, src)
	if err != nil {
		return nil, err
	}
	k := &Kernel{Source: src, Params: c.params}
	if len(k.Params) == 0 {
		k.Params = []float32{0}
	}
	return k, nil
}

// printChain prints the element-wise chain of body whose value is the
// body's result, or, given root (a reduction whose input the chain
// computes: Reduction), root's input 0; root and its constant axes are
// left to the caller.
func printChain(body *graph.Model, root *graph.Node) (*printed, error) {
	nodes, err := body.Nodes()
	if err != nil {
		return nil, err
	}
	if len(body.Results) != 1 {
		return nil, fmt.Errorf("gen: body %q has %d results, a chain has one", body.Name, len(body.Results))
	}
	k := &printed{}
	names := map[graph.Output]string{}
	param := func(v float32) string {
		k.params = append(k.params, v)
		return fmt.Sprintf("p[%d]", len(k.params)-1)
	}
	nin := len(body.Parameters)
	var code, ops []string
	for i, p := range body.Parameters {
		names[p.Out(0)] = fmt.Sprintf("v%d", i)
		code = append(code, fmt.Sprintf("    const float v%d = LD(in%d, x%d);", i, i, i))
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
			if root != nil && slices.ContainsFunc(root.Inputs[1:], func(x graph.Output) bool { return x.Node == n }) {
				continue // the reduction's axes
			}
			// Float scalars, and a QuantizeLinear tail's zero point.
			if n.Value == nil || n.Value.NumElements() != 1 || !n.Value.Type().IsFloat() && n.Value.Type() != tensor.U8 && n.Value.Type() != tensor.I8 {
				return nil, fmt.Errorf("gen: constant %q of the chain is not a float scalar (chains take tensors as inputs)", n.Name)
			}
			names[n.Out(0)] = param(float32(n.Value.Float64s()[0]))
			continue
		}
		if n == root {
			continue
		}
		isTail := root == nil && n == body.Results[0].Input(0).Node && SupportsQuantizeTail(n)
		if !isTail && !Supports(n) {
			return nil, fmt.Errorf("gen: op %s (node %q) is not one a chain takes", n.OpType, n.Name)
		}
		var expr string
		switch m := binaryMacros[n.OpType]; {
		case isTail:
			x, err := arg(n, 0)
			if err != nil {
				return nil, err
			}
			sc, err := arg(n, 1)
			if err != nil {
				return nil, err
			}
			z := "0.0f"
			if n.Input(2).Valid() {
				if z, err = arg(n, 2); err != nil {
					return nil, err
				}
			}
			expr = fmt.Sprintf("QUANTIZE(%s, %s, %s)", x, sc, z)
			k.quant = n.Outputs[0].Type
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
	value := body.Results[0].Input(0)
	if root != nil {
		value = root.Input(0)
	}
	out, ok := names[value]
	if !ok {
		return nil, fmt.Errorf("gen: the value of body %q is not computed by the chain", body.Name)
	}
	code = append(code, fmt.Sprintf("    return %s;", out))
	k.nin, k.ops, k.code = nin, ops, code
	return k, nil
}

// source is the kernel of nin inputs whose body lines are code
// (chain_value's: one output element); ops name the chain's ops in the leading
// comment.
func source(nin int, ops, code []string) string {
	list := func(format, sep string) string { return perInput(nin, format, sep) }
	// each prints line (its # replaced by the input's index) once per input.
	each := func(line string) string { return perInput(nin, line+"\n", "") }
	var s strings.Builder
	fmt.Fprintf(&s, `// generated_chain.cl: %s, one element-wise chain printed by
// kernels/gen at compile time from the body of a KernelFusion node.
//
// Work-size contract (graph.LaunchElementwise, the eltwise family's runs):
// 1-D NDRange with global size >= ceil(n / EPT); any local size. Work item
// i computes output elements i*EPT.. (build option EPT, default 1); items
// with i*EPT >= n do nothing. With -DROWS: 2-D NDRange with global size >=
// (ceil(D / EPT), n / D), D the innermost dim of m; item (i, r) computes
// elements i*EPT.. of row r (no index division for rank 2); items outside
// do nothing. Arguments: the inputs in0..in%d, the output out0, n, the int
// array m (m[0] = rank r, r dims of the output, then r element strides per
// input, 0 on broadcast axes) and the float params p (the ops' attributes
// and scalar constants). Optional build options fix what the host knows
// at plan time: -DRANK=r, and -DS<i>=s input i's stride on the innermost
// axis (1 and 0 let the runs vectorize). Built with -DHALF every tensor is
// f16 (half.clh); the math is float.

#define T float
#define IS_FLOAT 1
#include "half.clh"
#include "eltwise_ops.clh"

#ifndef EPT
#define EPT 1
#endif
#ifndef RANK
#define RANK m[0]
#endif
`, strings.Join(ops, " -> "), nin-1)
	for i := range nin {
		fmt.Fprintf(&s, "#ifndef S%[1]d\n#define S%[1]d m[%[2]d * RANK]\n#endif\n", i, i+2)
	}
	params := list("__global const FT* in#", ", ")
	ins := list("in#", ", ")
	s.WriteString(chainValue(nin, code))
	s.WriteString(locateFn(nin))
	run := func(indent, cnt string) string {
		return fmt.Sprintf("%sfor (int e = 0; e < %s; ++e) ST(out0, i0 + e, chain_value(%s, %s, p));\n", indent, cnt, ins, list("o[#] + (long)e * S#", ", "))
	}
	fmt.Fprintf(&s, "\n__kernel void %s(%s, __global FT* out0, const ulong n, __global const int* m, __global const float* p)\n{\n", Entry, params)
	fmt.Fprintf(&s, "    long o[%d];\n", nin)
	s.WriteString("#ifdef ROWS\n    const uint inner = (uint)m[RANK];\n    const uint c0 = (uint)get_global_id(0) * EPT;\n    ulong q = get_global_id(1);\n    if (c0 >= inner || q * inner >= n) return;\n    const ulong i0 = q * inner + c0;\n")
	s.WriteString(each("    o[#] = (long)c0 * S#;"))
	s.WriteString("    for (int d = RANK - 2; d >= 1; --d) {\n        const ulong dim = (ulong)m[1 + d];\n        const long c = (long)(q % dim);\n        q /= dim;\n")
	s.WriteString(each("        o[#] += c * m[1 + (# + 1) * RANK + d];"))
	s.WriteString("    }\n    if (RANK >= 2) {\n")
	s.WriteString(each("        o[#] += (long)q * m[1 + (# + 1) * RANK];"))
	s.WriteString("    }\n    const uint cnt = min((uint)EPT, inner - c0);\n    if (cnt == EPT) {\n")
	s.WriteString(run("        ", "EPT"))
	s.WriteString("    } else {\n")
	s.WriteString(run("        ", "(int)cnt"))
	s.WriteString("    }\n#else\n    const ulong i0 = (ulong)get_global_id(0) * EPT;\n    if (i0 >= n) return;\n    if (RANK == 1) { // same shapes, scalars, contiguous blocks: no index division\n")
	s.WriteString(each("        o[#] = (long)i0 * S#;"))
	s.WriteString("    } else {\n        locate(i0, n, m, o);\n    }\n    const uint inner = (uint)m[RANK];\n")
	s.WriteString("    // A run inside one row steps by the innermost strides; one that\n    // crosses a row's end locates each element.\n")
	s.WriteString("    if (EPT == 1 || (i0 + EPT <= n && (RANK == 1 || (n <= 0xffffffffUL ? (uint)i0 % inner : (uint)(i0 % inner)) + EPT <= inner))) {\n")
	s.WriteString(run("        ", "EPT"))
	s.WriteString("        return;\n    }\n    const int cnt = (int)min((ulong)EPT, n - i0);\n    for (int e = 0; e < cnt; ++e) {\n        locate(i0 + e, n, m, o);\n")
	fmt.Fprintf(&s, "        ST(out0, i0 + e, chain_value(%s, %s, p));\n    }\n#endif\n}\n", ins, list("o[#]", ", "))
	return s.String()
}

// chainValue prints chain_value, the chain's value from the inputs of nin
// at element offsets x0.., whose lines are code.
func chainValue(nin int, code []string) string {
	params, offs := make([]string, nin), make([]string, nin)
	for i := range nin {
		params[i] = fmt.Sprintf("__global const FT* in%d", i)
		offs[i] = fmt.Sprintf("const long x%d", i)
	}
	return fmt.Sprintf("\n// chain_value computes the chain's value from the inputs' elements x0...\nstatic inline float chain_value(%s, %s, __global const float* p)\n{\n%s\n}\n",
		strings.Join(params, ", "), strings.Join(offs, ", "), strings.Join(code, "\n"))
}

// perInput joins format once per input of nin, its # replaced by the
// input's index, with sep.
func perInput(nin int, format, sep string) string {
	parts := make([]string, nin)
	for i := range parts {
		parts[i] = strings.ReplaceAll(format, "#", fmt.Sprint(i))
	}
	return strings.Join(parts, sep)
}

// locateFn prints locate, which sets the offsets o of nin inputs of flat
// index i < n of the element-wise table m.
func locateFn(nin int) string {
	each := func(line string) string { return perInput(nin, line+"\n", "") }
	var s strings.Builder
	s.WriteString("\n// locate sets o to the inputs' offsets of flat output index i < n.\nstatic inline void locate(const ulong i, const ulong n, __global const int* m, long* o)\n{\n")
	s.WriteString(each("    o[#] = 0;"))
	s.WriteString("    if (n <= 0xffffffffUL) {\n        uint q = (uint)i;\n        for (int d = RANK - 1; d >= 0; --d) {\n            const uint dim = (uint)m[1 + d];\n            const uint c = q % dim;\n            q /= dim;\n")
	s.WriteString(each("            o[#] += (long)c * m[1 + (# + 1) * RANK + d];"))
	s.WriteString("        }\n    } else {\n        ulong q = i;\n        for (int d = RANK - 1; d >= 0; --d) {\n            const ulong dim = (ulong)m[1 + d];\n            const long c = (long)(q % dim);\n            q /= dim;\n")
	s.WriteString(each("            o[#] += c * m[1 + (# + 1) * RANK + d];"))
	s.WriteString("        }\n    }\n}\n")
	return s.String()
}
