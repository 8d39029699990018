package fusion

import (
	"context"
	"strconv"

	"github.com/clinfer/clinfer/graph"
)

// PassFoldControlFlow is the name of the pass that folds control flow
// decided before inference.
const PassFoldControlFlow = "FoldControlFlow"

// FoldControlFlow folds control flow known before inference: a constant
// an If, Loop or Scan captures from the outer scope moves into its bodies
// (where constant folding then reaches it), and an If whose condition is
// known (a constant, or arithmetic on static shapes) is replaced by the
// branch it takes, inlined into the enclosing graph. It repeats this with
// constant folding until nothing changes, so that conditions an inlined
// branch makes known fold too: for fixed input shapes every shape-decided
// If disappears (Silero VAD's nested Ifs). The manager runs it, like every
// pass, inside bodies as well.
func FoldControlFlow() Pass {
	return Pass{Name: PassFoldControlFlow, Doc: "move captured constants into bodies and inline the branch an If with a known condition takes",
		Ops: []string{graph.OpIf, graph.OpLoop, graph.OpScan}, Run: foldControl}
}

func foldControl(ctx context.Context, m *graph.Model, opts *Options) (int, error) {
	total := 0
	for range maxSweeps {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := inlineConstCaptures(m)
		if err != nil {
			return total, err
		}
		k, err := inlineKnownBranches(m)
		if err != nil {
			return total, err
		}
		if n+k == 0 {
			break
		}
		total += n + k
		if err := m.InferShapes(); err != nil {
			return total, err
		}
		f, err := foldConstants(ctx, m, opts, notDequantize)
		if err != nil {
			return total, err
		}
		total += f
		if err := m.InferShapes(); err != nil {
			return total, err
		}
	}
	return total, nil
}

// inlineConstCaptures moves every Constant a control node captures into
// each of its bodies and drops the input.
func inlineConstCaptures(m *graph.Model) (int, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		if !n.Attrs.Has(graph.AttrCaptures) {
			continue
		}
		k, err := graph.Captures(n)
		if err != nil {
			return count, err
		}
		first := len(n.Inputs) - k
		for j := k - 1; j >= 0; j-- {
			in := n.Inputs[first+j]
			if !in.Valid() || in.Node.OpType != graph.OpConstant || in.Node.Value == nil {
				continue
			}
			for _, b := range n.Bodies() {
				pi := len(b.Model.Parameters) - k + j
				p := b.Model.Parameters[pi]
				c := graph.NewConstant(p.Name, in.Node.Value)
				c.Outputs[0].Name = in.Port().Name
				if err := replaceParam(b.Model, p, c.Out(0)); err != nil {
					return count, err
				}
				b.Model.Parameters = append(b.Model.Parameters[:pi:pi], b.Model.Parameters[pi+1:]...)
			}
			n.Inputs = append(n.Inputs[:first+j:first+j], n.Inputs[first+j+1:]...)
			k--
			n.Attrs[graph.AttrCaptures] = int64(k)
			count++
		}
	}
	return count, nil
}

// replaceParam points every reader of body Parameter p at v.
func replaceParam(body *graph.Model, p *graph.Node, v graph.Output) error {
	cons, err := body.Consumers()
	if err != nil {
		return err
	}
	replaceUses(cons, p.Out(0), v)
	return nil
}

// inlineKnownBranches replaces each If whose condition is known with the
// nodes of the branch it takes.
func inlineKnownBranches(m *graph.Model) (int, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return 0, err
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	count := 0
	for _, n := range nodes {
		if n.OpType != graph.OpIf || n.Domain != "" {
			continue
		}
		cond, ok := graph.ConstCond(n.Input(0))
		if !ok {
			continue
		}
		then, els, err := graph.IfBranches(n)
		if err != nil {
			return count, err
		}
		branch := els
		if cond {
			branch = then
		}
		if err := inlineBody(m, n, branch, n.Inputs[1:], names); err != nil {
			return count, err
		}
		count++
	}
	return count, nil
}

// inlineBody splices body into m in place of node n: body Parameter i
// becomes bound[i], and output j of n becomes what body Result j reads.
// The body's nodes take names not used in m (names, updated) and stand
// for n's original names. The body is consumed.
func inlineBody(m *graph.Model, n *graph.Node, body *graph.Model, bound []graph.Output, names map[string]bool) error {
	if len(bound) != len(body.Parameters) {
		return n.Errorf("inlining %q: %d values for %d parameters", body.Name, len(bound), len(body.Parameters))
	}
	bnodes, err := body.Nodes()
	if err != nil {
		return err
	}
	subst := make(map[*graph.Node]graph.Output, len(bound))
	for i, p := range body.Parameters {
		subst[p] = bound[i]
	}
	orig := n.OriginalNames()
	for _, bn := range bnodes {
		switch bn.OpType {
		case graph.OpParameter, graph.OpResult:
			continue
		}
		for i, in := range bn.Inputs {
			if in.Node != nil {
				if v, ok := subst[in.Node]; ok {
					bn.Inputs[i] = v
				}
			}
		}
		name := bn.Name
		for k := 1; names[name]; k++ {
			name = bn.Name + "#" + strconv.Itoa(k)
		}
		names[name] = true
		bn.Name = name
		bn.RT.FusedNames = append([]string(nil), orig...)
		if bn.RT.Affinity == "" {
			bn.RT.Affinity = n.RT.Affinity
		}
	}
	cons, err := m.Consumers()
	if err != nil {
		return err
	}
	for j, r := range body.Results {
		src := r.Input(0)
		if v, ok := subst[src.Node]; ok {
			src = v
		}
		replaceUses(cons, n.Out(j), src)
	}
	return nil
}
