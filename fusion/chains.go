package fusion

import (
	"context"
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels/gen"
)

// PassFuseElementwiseChains is the pass name of FuseElementwiseChains.
const PassFuseElementwiseChains = "FuseElementwiseChains"

// FuseElementwiseChains groups chains of element-wise and broadcast ops
// that no hand-written kernel fusion covers (Add, Mul, Sub, Div, Pow,
// Max, Min, PRelu, the unary activations and math ops: gen.Supports),
// each optionally ending in a reduction over trailing axes (ReduceSum,
// Mean, SumSquare, L1, L2: gen.SupportsReduction) or in a QuantizeLinear
// per tensor to i8 or u8 (gen.SupportsQuantizeTail: the chain stores the
// quantized values, as a QDQ model's residual Adds and gate Muls feed
// their QuantizeLinear), into one KernelFusion
// node each, whose kernel package gen generates at
// compile time from the node's body (graph.GeneratedKernel): one launch
// and one pass over memory instead of one per op. A chain grows from its
// last op back through producers whose every consumer is in the chain and
// whose output broadcasts to the chain's; tensors from outside become the
// node's inputs, scalar constants stay in the body (the kernel reads them
// as params). It runs after the fusions into kernel-shaped ops, so what
// FuseConv and the declared kernel fusions absorb stays theirs; a chain
// of one op is left alone. It runs only for a device that generates such
// kernels (Options.Chains), and leaves out the op types it excludes.
func FuseElementwiseChains() Pass {
	return Pass{Name: PassFuseElementwiseChains,
		Doc: "group chains of element-wise and broadcast ops, optionally ending in a reduction over trailing axes, into one KernelFusion node each, its kernel generated from its body (kernels/gen), on a device that generates them",
		Ops: gen.ChainOps(),
		Run: func(ctx context.Context, m *graph.Model, o *Options) (int, error) {
			return fuseChains(ctx, m, o, false)
		}}
}

// PassFuseQuantizeChains is the pass name of FuseQuantizeChains.
const PassFuseQuantizeChains = "FuseQuantizeChains"

// FuseQuantizeChains is FuseElementwiseChains for the chains that end in
// a QuantizeLinear only (gen.SupportsQuantizeTail), run before the
// declared kernel fusions: an op those would take (x + x*gate, the
// squeeze-excitation residual of FuseSEResidual) whose f32 output only a
// QuantizeLinear reads is worth more in the chain, which stores the
// quantized values in the same launch, than in a kernel that stores f32
// for a QuantizeLinear launch to read back. A model without
// QuantizeLinear is left as it is.
func FuseQuantizeChains() Pass {
	return Pass{Name: PassFuseQuantizeChains,
		Doc: "group the chains of element-wise ops that end in a QuantizeLinear into one generated KernelFusion node each (storing u8/i8), before the declared kernel fusions take their ops",
		Ops: gen.ChainOps(),
		Run: func(ctx context.Context, m *graph.Model, o *Options) (int, error) {
			return fuseChains(ctx, m, o, true)
		}}
}

// fuseChains is FuseElementwiseChains' rewrite, of only the chains that
// end in a QuantizeLinear when quantOnly is set.
func fuseChains(ctx context.Context, m *graph.Model, o *Options, quantOnly bool) (int, error) {
	if o == nil || o.Chains == nil {
		return 0, nil
	}
	takes := func(n *graph.Node) bool { return gen.Supports(n) && !o.Chains.Exclude[n.OpType] }
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	taken := map[*graph.Node]bool{}
	pos := make(map[*graph.Node]int, len(nodes))
	for i, n := range nodes {
		pos[n] = i
	}
	count := 0
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return count, err
		}
		root := nodes[i]
		reduces := gen.SupportsReduction(root) && !o.Chains.Exclude[root.OpType]
		quantizes := gen.SupportsQuantizeTail(root) && !o.Chains.Exclude[root.OpType]
		if taken[root] || !quantizes && (quantOnly || !takes(root) && !reduces) {
			continue
		}
		group := growChain(root, reduces, cons, taken, takes)
		if len(group) < 2 {
			continue
		}
		for _, n := range group {
			taken[n] = true
		}
		slices.SortFunc(group, func(a, b *graph.Node) int { return pos[a] - pos[b] })
		if err := replaceChain(root, reduces, group, cons); err != nil {
			return count, err
		}
		count++
	}
	return count, nil
}

// maxChainOps bounds the ops of one chain: a longer run of element-wise
// ops becomes several chains (a generated kernel stays a few dozen lines,
// and runs of the same ops share its program).
const maxChainOps = 16

// growChain returns root and the producers a chain ending in root takes:
// ops takes accepts that no other chain took, whose every consumer is
// already in the chain (a value read elsewhere must exist on its own),
// and whose output broadcasts to the chain's iteration space: root's
// output, or, when root reduces (gen.SupportsReduction), root's input 0,
// the only input of root the chain follows.
func growChain(root *graph.Node, reduces bool, cons map[graph.Output][]graph.Input, taken map[*graph.Node]bool, takes func(*graph.Node) bool) []*graph.Node {
	in := map[*graph.Node]bool{root: true}
	group := []*graph.Node{root}
	space := root.Outputs[0].Shape
	if reduces {
		space = root.Input(0).Shape()
	}
	// A worklist: a member's producers are looked at when it joins; a
	// producer refused for a consumer outside the chain is looked at again
	// when that consumer joins (as its producer).
	for work := []*graph.Node{root}; len(work) > 0; {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		for j, x := range n.Inputs {
			p := x.Node
			if n == root && reduces && j > 0 || !x.Valid() || in[p] || taken[p] || !takes(p) || !broadcastsTo(p.Outputs[0].Shape, space) {
				continue
			}
			if slices.ContainsFunc(cons[p.Out(0)], func(c graph.Input) bool { return !in[c.Node] }) {
				continue
			}
			in[p] = true
			group = append(group, p)
			work = append(work, p)
			if len(group) == maxChainOps {
				return group
			}
		}
	}
	return group
}

// broadcastsTo reports whether a value of shape s broadcasts to out without
// growing it, as far as the partial shapes tell: the ranks are known, s's
// is at most out's, and each dim of s is 1 or out's (the same size, or
// the same dynamic dim).
func broadcastsTo(s, out graph.PartialShape) bool {
	if !s.RankKnown || !out.RankKnown || len(s.Dims) > len(out.Dims) {
		return false
	}
	off := len(out.Dims) - len(s.Dims)
	for i, d := range s.Dims {
		if d.Size != 1 && d != out.Dims[off+i] {
			return false
		}
	}
	return true
}

// replaceChain replaces the chain group (in the graph's order, root last)
// with a KernelFusion node of the generated kernel: the values from
// outside the chain (scalar float constants and a reduction's axes aside,
// which the body keeps) are its inputs, in the order the chain reads them.
// A chain that ends in a reduction launches by graph.LaunchReduceRows.
func replaceChain(root *graph.Node, reduces bool, group []*graph.Node, cons map[graph.Output][]graph.Input) error {
	in := map[*graph.Node]bool{}
	for _, n := range group {
		in[n] = true
	}
	var inputs []graph.Output
	var params []*graph.Node
	index := map[graph.Output]*graph.Node{}
	copies := map[*graph.Node]*graph.Node{}
	var names []string
	for _, n := range group { // producers first
		c := &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: n.Attrs.Clone(),
			Outputs: []graph.Port{{Name: n.Outputs[0].Name, Type: n.Outputs[0].Type, Shape: n.Outputs[0].Shape.Clone()}},
			Inputs:  make([]graph.Output, len(n.Inputs))}
		for i, x := range n.Inputs {
			switch {
			case !x.Valid():
			case in[x.Node]:
				c.Inputs[i] = copies[x.Node].Out(0)
			case x.Node.OpType == graph.OpConstant && x.Node.Value != nil && (x.Node.Value.NumElements() == 1 || n == root && reduces):
				k := graph.NewConstant(x.Node.Name, x.Node.Value.Clone())
				c.Inputs[i] = k.Out(x.Index)
			default:
				p, ok := index[x]
				if !ok {
					p = graph.NewParameter(paramName(len(params)), x.Type(), x.Shape())
					index[x] = p
					params = append(params, p)
					inputs = append(inputs, x)
				}
				c.Inputs[i] = p.Out(0)
			}
		}
		copies[n] = c
		names = mergeNames(names, n.OriginalNames())
	}
	body := graph.NewModel("generated_chain", params, []*graph.Node{graph.NewResult("y", copies[root].Out(0))})
	print, launch := gen.Elementwise, graph.LaunchElementwise
	if reduces {
		print, launch = gen.Reduction, graph.LaunchReduceRows
	}
	k, err := print(body)
	if err != nil {
		return root.Errorf("generating its chain's kernel: %w", err)
	}
	return replaceByKernelFusion(cons, root, inputs, body, graph.GeneratedKernel, launch, k.Params, names)
}

// paramName names input i of a generated chain's body.
func paramName(i int) string { return fmt.Sprintf("x%d", i) }
