package onnx

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
)

// Scopes of subgraphs. An ONNX subgraph (If's branches, Loop's and Scan's
// bodies) may read any value of an enclosing graph by name. The frontend
// makes those reads explicit, as graph's bodies want them (graph/bodies.go):
// a subgraph's builder resolves a name it does not define in its parent
// scope, recursively, and binds what it finds to a new trailing Parameter of
// the subgraph, named after the value; the op's importer then passes the
// outer values as the node's trailing captured inputs.

// capture is one outer value a subgraph reads: the value in the parent
// scope and the subgraph's Parameter bound to it.
type capture struct {
	name  string
	outer graph.Output
	param *graph.Node
}

// lookup returns the value called name in b's scope, capturing it from
// the enclosing scopes when b does not define it.
func (b *builder) lookup(name string) (graph.Output, bool) {
	if v, ok := b.values[name]; ok {
		return v, true
	}
	if b.parent == nil {
		return graph.Output{}, false
	}
	outer, ok := b.parent.lookup(name)
	if !ok {
		return graph.Output{}, false
	}
	// The Parameter's type and shape are bound by the node's inference.
	p := graph.NewParameter(name, 0, graph.DynamicRank)
	b.captures = append(b.captures, capture{name: name, outer: outer, param: p})
	b.values[name] = p.Out(0)
	return p.Out(0), true
}

// defined reports whether name is a value of b's scope or of an enclosing
// one, without capturing it.
func (b *builder) defined(name string) bool {
	for s := b; s != nil; s = s.parent {
		if _, ok := s.values[name]; ok {
			return true
		}
	}
	return false
}

// implicitInputs returns the names n's subgraphs read from the scope n is
// in (their free names), in first-use order.
func implicitInputs(n *nodeProto) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range n.attrs {
		gs := a.graphs
		if a.g != nil {
			gs = append([]*graphProto{a.g}, gs...)
		}
		for _, g := range gs {
			for _, name := range freeNames(g, 0) {
				if !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// freeNames returns the names g reads that it does not define: inputs of
// its nodes and nested subgraphs, and its outputs, minus its inputs,
// initializers and node outputs.
func freeNames(g *graphProto, depth int) []string {
	if depth > maxGraphDepth {
		return nil
	}
	def := map[string]bool{"": true}
	for _, in := range g.inputs {
		def[in.name] = true
	}
	for _, t := range g.initializers {
		def[t.name] = true
	}
	for _, n := range g.nodes {
		for _, o := range n.outputs {
			def[o] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if !def[name] && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, n := range g.nodes {
		for _, in := range n.inputs {
			add(in)
		}
		for _, a := range n.attrs {
			gs := a.graphs
			if a.g != nil {
				gs = append([]*graphProto{a.g}, gs...)
			}
			for _, sub := range gs {
				for _, name := range freeNames(sub, depth+1) {
					add(name)
				}
			}
		}
	}
	for _, o := range g.outputs {
		add(o.name)
	}
	return out
}

// body converts the node's GRAPH attribute attr into a model whose
// Parameters are the subgraph's inputs followed by one per outer value it
// reads, and returns those outer values (in the node's scope) in the same
// order.
func (c *nodeCtx) body(attr string) (*graph.Model, []capture, error) {
	var g *graphProto
	for _, a := range c.n.attrs {
		if a.name == attr && a.g != nil {
			g = a.g
		}
	}
	if g == nil {
		return nil, nil, c.invalidf("attribute %q (a graph) is missing", attr)
	}
	if c.bodies == nil {
		c.bodies = map[string]bool{}
	}
	c.bodies[attr] = true
	sub := &builder{src: c.b.src, opsets: c.b.opsets, values: map[string]graph.Output{}, names: c.b.names,
		consumed: map[string]bool{}, parent: c.b}
	m, err := sub.graph(g)
	if err != nil {
		return nil, nil, fmt.Errorf("node %q (%s): %s %q: %w", c.name, c.n.opType, attr, g.name, err)
	}
	if m.Name == "" {
		m.Name = c.name + "/" + attr
	}
	for _, cp := range sub.captures {
		m.Parameters = append(m.Parameters, cp.param)
	}
	return m, sub.captures, nil
}

// withCaptures returns the node inputs ins followed by the outer values
// of caps, the union of what every body reads (in first-seen order), and
// appends to each body the Parameters for the union so that all of them
// bind the same trailing inputs. bodies[i] has, as its last Parameters,
// those of caps[i].
func withCaptures(ins []graph.Output, bodies []*graph.Model, caps [][]capture) ([]graph.Output, int) {
	var union []capture
	index := map[graph.Output]int{}
	for _, list := range caps {
		for _, cp := range list {
			if _, ok := index[cp.outer]; !ok {
				index[cp.outer] = len(union)
				union = append(union, cp)
			}
		}
	}
	for i, m := range bodies {
		own := len(m.Parameters) - len(caps[i])
		params := append([]*graph.Node(nil), m.Parameters[:own]...)
		have := map[graph.Output]*graph.Node{}
		for _, cp := range caps[i] {
			have[cp.outer] = cp.param
		}
		for _, cp := range union {
			p := have[cp.outer]
			if p == nil {
				p = graph.NewParameter(cp.name, 0, graph.DynamicRank)
			}
			params = append(params, p)
		}
		m.Parameters = params
	}
	out := append([]graph.Output(nil), ins...)
	for _, cp := range union {
		out = append(out, cp.outer)
	}
	return out, len(union)
}
