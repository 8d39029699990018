package fusion

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Rule is one declarative rewrite: where Pattern matches, Rewrite builds the
// value that replaces output 0 of the match's root. Adding a fusion is one
// Rule (next to its kernel) in a PatternPass; the engine needs no change.
//
// Rewrite returns the zero Output to decline. It may return a new node made
// with Match.NewNode (named after the root, given the fused names of every
// op node the match covers) or an existing value (Identity removal), which
// then absorbs the names of the nodes that go away. It must not modify the
// matched nodes.
type Rule struct {
	// Name identifies the rule in errors and reports.
	Name string
	// Pattern is what the rule looks for.
	Pattern *Pattern
	// Rewrite builds the replacement.
	Rewrite func(m *Match) (graph.Output, error)
}

// NewNode makes a node for the replacement: op type, inputs and attributes;
// its output ports are inferred when the rule returns. The first node a
// rewrite makes takes the root's name (the root goes away); later ones get
// a suffix.
func (m *Match) NewNode(op string, inputs []graph.Output, attrs graph.Attrs, numOutputs int) *graph.Node {
	name := m.Root.Name
	if len(m.rw.created) > 0 {
		name = m.rw.uniqueName(name)
	}
	n := graph.NewNode(op, name, inputs, attrs, numOutputs)
	m.rw.created = append(m.rw.created, n)
	return n
}

// NewConst makes a Constant holding t, named after the root with suffix.
func (m *Match) NewConst(suffix string, t *tensor.Tensor) graph.Output {
	n := graph.NewConstant(m.rw.uniqueName(m.Root.Name+"/"+suffix), t)
	return n.Out(0)
}

// rewriter applies rules to one model.
type rewriter struct {
	m       *graph.Model
	names   map[string]bool
	created []*graph.Node
}

func newRewriter(m *graph.Model) (*rewriter, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	rw := &rewriter{m: m, names: make(map[string]bool, len(nodes))}
	for _, n := range nodes {
		rw.names[n.Name] = true
	}
	return rw, nil
}

// uniqueName returns base, or base#k, not used by any node so far.
func (rw *rewriter) uniqueName(base string) string {
	name := base
	for k := 1; rw.names[name]; k++ {
		name = base + "#" + strconv.Itoa(k)
	}
	rw.names[name] = true
	return name
}

// maxSweeps bounds the fixpoint iteration of ApplyRules.
const maxSweeps = 32

// ApplyRules rewrites m with rules until none matches (at most 32 sweeps
// over the graph) and returns the number of rewrites. Nodes are visited in
// topological order and rules tried in order, so a chain (Conv, Add, Relu)
// is absorbed front to back in one sweep. Errors name the rule and the
// root node.
func ApplyRules(ctx context.Context, m *graph.Model, rules ...Rule) (int, error) {
	rw, err := newRewriter(m)
	if err != nil {
		return 0, err
	}
	total := 0
	for range maxSweeps {
		n, err := rw.sweep(ctx, rules)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, nil
}

// sweep makes one pass over the nodes in topological order.
func (rw *rewriter) sweep(ctx context.Context, rules []Rule) (int, error) {
	nodes, err := rw.m.Nodes()
	if err != nil {
		return 0, err
	}
	cons, err := rw.m.Consumers()
	if err != nil {
		return 0, err
	}
	alive := make(map[*graph.Node]bool, len(nodes))
	for _, n := range nodes {
		alive[n] = true
	}
	count := 0
	for _, n := range nodes {
		if !alive[n] {
			continue
		}
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
			continue
		}
		if err := ctx.Err(); err != nil {
			return count, err
		}
		for _, r := range rules {
			done, err := rw.try(r, n, cons)
			if err != nil {
				return count, err
			}
			if !done {
				continue
			}
			count++
			if nodes, err = rw.m.Nodes(); err != nil {
				return count, err
			}
			if cons, err = rw.m.Consumers(); err != nil {
				return count, err
			}
			alive = make(map[*graph.Node]bool, len(nodes))
			for _, x := range nodes {
				alive[x] = true
			}
			break
		}
	}
	return count, nil
}

// try applies rule r at node n; done reports whether the graph changed.
func (rw *rewriter) try(r Rule, n *graph.Node, cons map[graph.Output][]graph.Input) (bool, error) {
	// Only output 0 is replaced: other outputs must be unused.
	for i := 1; i < len(n.Outputs); i++ {
		if len(cons[n.Out(i)]) > 0 {
			return false, nil
		}
	}
	m := MatchAt(r.Pattern, n, cons)
	if m == nil {
		return false, nil
	}
	rw.created = rw.created[:0]
	m.rw = rw
	repl, err := r.Rewrite(m)
	m.rw = nil
	if err != nil {
		return false, fmt.Errorf("fusion: rule %s at %w", r.Name, n.Errorf("%w", err))
	}
	if !repl.Valid() || repl == n.Out(0) {
		return false, nil
	}
	// The replacement may keep one matched node (Relu(Relu(x)) -> the
	// inner Relu); every other interior node must go away entirely.
	if !m.closed(cons, repl.Node) {
		return false, nil
	}
	for _, c := range rw.created {
		if err := graph.InferNode(c); err != nil {
			return false, fmt.Errorf("fusion: rule %s at %s: replacement does not infer: %w", r.Name, n, err)
		}
	}
	old := n.Out(0)
	if repl.Type() != old.Type() {
		return false, fmt.Errorf("fusion: rule %s at %s: replacement %s has element type %v, want %v", r.Name, n, repl, repl.Type(), old.Type())
	}
	names := fusedNames(m, repl.Node)
	if isCreated(rw.created, repl.Node) {
		carryExtra(m, repl.Node)
		repl.Node.RT.FusedNames = names
		repl.Node.Outputs[repl.Index].Name = old.Port().Name
		if repl.Node.RT.Affinity == "" {
			repl.Node.RT.Affinity = n.RT.Affinity
		}
	} else {
		repl.Node.RT.FusedNames = mergeNames(repl.Node.OriginalNames(), names)
	}
	replaceUses(cons, old, repl)
	return true, nil
}

// carryExtra gives the replacement the runtime annotations (RT.Extra) of
// the op nodes it stands for, such as why a quantized pattern runs in
// float (KeyQuantization), unless it has its own.
func carryExtra(m *Match, repl *graph.Node) {
	for _, n := range m.Nodes() {
		for k, v := range n.RT.Extra {
			if _, ok := repl.RT.Extra[k]; ok {
				continue
			}
			if repl.RT.Extra == nil {
				repl.RT.Extra = map[string]string{}
			}
			repl.RT.Extra[k] = v
		}
	}
}

func isCreated(created []*graph.Node, n *graph.Node) bool {
	for _, c := range created {
		if c == n {
			return true
		}
	}
	return false
}

// fusedNames is the union of the original names of the match's op nodes
// (except keep), producers first and the root last.
func fusedNames(m *Match, keep *graph.Node) []string {
	var names []string
	nodes := m.Nodes()
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i] == keep {
			continue
		}
		names = mergeNames(names, nodes[i].OriginalNames())
	}
	return names
}

// mergeNames appends the names of b not already in a.
func mergeNames(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// replaceUses points every consumer of old at repl.
func replaceUses(cons map[graph.Output][]graph.Input, old, repl graph.Output) {
	for _, c := range cons[old] {
		c.Node.Inputs[c.Index] = repl
	}
}

// replaceByKernelFusion puts a graph.OpKernelFusion node of body (the
// subgraph it runs, over inputs) with kernel, launch and params in place
// of last, the subgraph's last node: it takes last's name, runtime info
// and output name, fused names names, and last's consumers.
func replaceByKernelFusion(cons map[graph.Output][]graph.Input, last *graph.Node, inputs []graph.Output, body *graph.Model, kernel, launch string, params any, names []string) error {
	node := graph.NewNode(graph.OpKernelFusion, last.Name, inputs, graph.Attrs{
		graph.AttrKernel: kernel,
		graph.AttrLaunch: launch,
		graph.AttrBody:   body,
		graph.AttrParams: params,
	}, 1)
	node.RT = last.RT.Clone()
	node.RT.FusedNames = names
	if err := graph.InferNode(node); err != nil {
		return err
	}
	node.Outputs[0].Name = last.Outputs[0].Name
	replaceUses(cons, last.Out(0), node.Out(0))
	return nil
}

// PatternPass returns a pass that applies rules with ApplyRules.
func PatternPass(name, doc string, rules ...Rule) Pass {
	var ops []string
	for _, r := range rules {
		r.Pattern.walk(func(p *Pattern) {
			if p.kind == patOp {
				ops = append(ops, p.ops...)
			}
		})
	}
	slices.Sort(ops)
	return Pass{Name: name, Doc: doc, Ops: slices.Compact(ops), Run: func(ctx context.Context, m *graph.Model, _ *Options) (int, error) {
		return ApplyRules(ctx, m, rules...)
	}}
}

// bodyCopy returns a copy of node n on inputs ins, for the body of a
// KernelFusion node: its name, op, attributes and output ports.
func bodyCopy(n *graph.Node, ins ...graph.Output) *graph.Node {
	c := &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: n.Attrs.Clone(), Inputs: ins}
	for _, p := range n.Outputs {
		c.Outputs = append(c.Outputs, graph.Port{Name: p.Name, Type: p.Type, Shape: p.Shape.Clone()})
	}
	return c
}
