package fusion

import (
	"maps"
	"math"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// patKind is what a Pattern matches.
type patKind uint8

const (
	patAny   patKind = iota // any value
	patOp                   // output 0 of a node of one of the op types
	patConst                // a Constant node's value
	patSame                 // the value captured earlier under a name
	patOneOf                // the first alternative that matches
)

// Pattern is a declarative description of a subgraph, matched against a
// value (a node's output) and its producers: op types, attributes,
// constant inputs, consumer conditions and named captures. Patterns are
// built with Op, Any, Const, ConstScalar, Same and OneOf and refined with
// the chaining methods; they are immutable once built and safe to share.
//
//	// HardSigmoid written out as Div(Clip(Add(x, 3), 0, 6), 6):
//	fusion.Op("Div",
//		fusion.Op("Clip", fusion.Op("Add", fusion.Any().As("x"), fusion.ConstScalar(3)).Commutative(),
//			fusion.ConstScalar(0), fusion.ConstScalar(6)),
//		fusion.ConstScalar(6))
//
// Every op node a pattern matches, other than the root, must have all its
// consumers inside the match (so the rewrite can remove it without
// duplicating work); OneUse asks for exactly one consumer.
type Pattern struct {
	kind        patKind
	ops         []string
	inputs      []*Pattern
	capture     string
	commutative bool
	oneUse      bool
	preds       []func(*graph.Node) bool
	constPred   func(*tensor.Tensor) bool
	alts        []*Pattern
	// want and sample record what Attr and ConstScalar require, so that
	// KernelFusion.Instance can build a graph the pattern matches.
	want   map[string]any
	sample *float64
}

// Any matches any value, including an omitted optional input only when
// used as an input pattern of a node that has that input.
func Any() *Pattern { return &Pattern{kind: patAny} }

// Op matches output 0 of a node whose op type is one of ops ("Conv" or
// "Conv|FusedConv"), with input i matching inputs[i]. A nil input pattern
// matches anything; inputs beyond those listed are unconstrained. A node
// with fewer inputs than patterns listed does not match.
func Op(ops string, inputs ...*Pattern) *Pattern {
	return &Pattern{kind: patOp, ops: strings.Split(ops, "|"), inputs: inputs}
}

// Const matches a Constant node's value.
func Const() *Pattern { return &Pattern{kind: patConst} }

// ConstScalar matches a Constant holding one floating-point element equal
// to v within a relative tolerance of 1e-5 (models store 1/6 as f32).
func ConstScalar(v float64) *Pattern {
	p := Const().ConstWhere(func(t *tensor.Tensor) bool {
		x, ok := scalarValue(t)
		return ok && math.Abs(x-v) <= 1e-5*math.Max(1, math.Abs(v))
	})
	p.sample = &v
	return p
}

// Same matches the value captured earlier in the same match under name (a
// value used twice, like x in x*relu6(x+3)/6).
func Same(name string) *Pattern { return &Pattern{kind: patSame, capture: name} }

// OneOf matches the first of alts that matches.
func OneOf(alts ...*Pattern) *Pattern { return &Pattern{kind: patOneOf, alts: alts} }

// clone copies the pattern's top level so chaining never mutates a shared
// pattern.
func (p *Pattern) clone() *Pattern {
	c := *p
	c.preds = append([]func(*graph.Node) bool(nil), p.preds...)
	return &c
}

// As captures the matched value (and node) under name, for Match.Value,
// Match.Node, Match.Const and Same.
func (p *Pattern) As(name string) *Pattern {
	if p.kind == patSame {
		panic("fusion: Same patterns cannot be captured again")
	}
	c := p.clone()
	c.capture = name
	return c
}

// Commutative lets a two-input op match its input patterns in either
// order.
func (p *Pattern) Commutative() *Pattern { c := p.clone(); c.commutative = true; return c }

// OneUse requires the matched node's outputs to have exactly one consumer.
func (p *Pattern) OneUse() *Pattern { c := p.clone(); c.oneUse = true; return c }

// Where adds a condition on the matched node (an Op or Const pattern).
func (p *Pattern) Where(f func(*graph.Node) bool) *Pattern {
	c := p.clone()
	c.preds = append(c.preds, f)
	return c
}

// Attr requires attribute name to equal want (int64, float32 within 1e-6,
// string, or []int64), with def standing in for an absent attribute.
func (p *Pattern) Attr(name string, want, def any) *Pattern {
	c := p.Where(func(n *graph.Node) bool {
		v, ok := n.Attrs[name]
		if !ok {
			v = def
		}
		return attrEqual(v, want)
	})
	c.want = maps.Clone(p.want)
	if c.want == nil {
		c.want = map[string]any{}
	}
	c.want[name] = want
	return c
}

// ConstWhere adds a condition on a Const pattern's value.
func (p *Pattern) ConstWhere(f func(*tensor.Tensor) bool) *Pattern {
	c := p.clone()
	prev := c.constPred
	c.constPred = func(t *tensor.Tensor) bool { return (prev == nil || prev(t)) && f(t) }
	return c
}

func attrEqual(v, want any) bool {
	switch w := want.(type) {
	case int64:
		x, ok := v.(int64)
		return ok && x == w
	case int:
		x, ok := v.(int64)
		return ok && x == int64(w)
	case float32:
		x, ok := v.(float32)
		return ok && math.Abs(float64(x-w)) <= 1e-6*math.Max(1, math.Abs(float64(w)))
	case string:
		x, ok := v.(string)
		return ok && x == w
	case []int64:
		x, ok := v.([]int64)
		if !ok || len(x) != len(w) {
			return false
		}
		for i := range x {
			if x[i] != w[i] {
				return false
			}
		}
		return true
	}
	return false
}

// scalarValue returns the single element of a one-element numeric tensor.
func scalarValue(t *tensor.Tensor) (float64, bool) {
	if t == nil || t.NumElements() != 1 || t.Type() == tensor.Bool {
		return 0, false
	}
	return t.Float64s()[0], true
}

// Match is one occurrence of a pattern: the root node and the captures.
type Match struct {
	// Root is the node the pattern's outermost Op matched.
	Root *graph.Node

	values  map[string]graph.Output
	matched []*graph.Node // op and constant nodes, in match order
	rw      *rewriter     // set while a Rule's Rewrite runs
}

// Value returns the value captured under name (the zero Output if none).
func (m *Match) Value(name string) graph.Output { return m.values[name] }

// Node returns the node whose output was captured under name, or nil.
func (m *Match) Node(name string) *graph.Node { return m.values[name].Node }

// Const returns the value of the Constant captured under name, or nil.
func (m *Match) Const(name string) *tensor.Tensor {
	n := m.Node(name)
	if n == nil || n.OpType != graph.OpConstant {
		return nil
	}
	return n.Value
}

// Nodes returns the op nodes the match covers (Constants and values
// matched by Any excluded), root first.
func (m *Match) Nodes() []*graph.Node {
	var out []*graph.Node
	for _, n := range m.matched {
		if n.OpType != graph.OpConstant {
			out = append(out, n)
		}
	}
	return out
}

// matchState is the mutable state of one match attempt; snapshots make
// backtracking (commutative inputs, OneOf) cheap for small patterns.
type matchState struct {
	values  map[string]graph.Output
	matched []*graph.Node
	cons    map[graph.Output][]graph.Input
	// swapFirst holds the commutative op patterns that try their inputs
	// swapped first (MatchAt's retries).
	swapFirst map[*Pattern]bool
}

type snapshot struct {
	values  map[string]graph.Output
	matched int
}

func (s *matchState) save() snapshot {
	v := make(map[string]graph.Output, len(s.values))
	for k, x := range s.values {
		v[k] = x
	}
	return snapshot{values: v, matched: len(s.matched)}
}

func (s *matchState) restore(sn snapshot) {
	s.values = sn.values
	s.matched = s.matched[:sn.matched]
}

// match reports whether p matches value v, recording captures in s. On
// failure s may hold partial state; callers restore a snapshot.
func (p *Pattern) match(v graph.Output, s *matchState) bool {
	if p == nil {
		return true
	}
	switch p.kind {
	case patSame:
		prev, ok := s.values[p.capture]
		return ok && prev == v
	case patOneOf:
		for _, alt := range p.alts {
			sn := s.save()
			if alt.match(v, s) {
				return p.captureValue(v, s)
			}
			s.restore(sn)
		}
		return false
	case patAny:
		if !v.Valid() {
			return false
		}
		return p.captureValue(v, s)
	}
	if !v.Valid() {
		return false
	}
	n := v.Node
	switch p.kind {
	case patConst:
		if n.OpType != graph.OpConstant || n.Value == nil {
			return false
		}
		if p.constPred != nil && !p.constPred(n.Value) {
			return false
		}
	case patOp:
		if v.Index != 0 || !containsString(p.ops, n.OpType) || n.Domain != "" {
			return false
		}
	}
	for _, f := range p.preds {
		if !f(n) {
			return false
		}
	}
	if p.oneUse {
		uses := 0
		for i := range n.Outputs {
			uses += len(s.cons[n.Out(i)])
		}
		if uses != 1 {
			return false
		}
	}
	for _, m := range s.matched {
		if m == n && p.kind == patOp {
			return false // a node matched twice would be a cyclic pattern
		}
	}
	s.matched = append(s.matched, n)
	if p.kind == patOp {
		if len(n.Inputs) < len(p.inputs) {
			return false
		}
		first := s.swapFirst[p]
		if !p.matchInputs(n, s, first) {
			if !p.commutative || len(p.inputs) != 2 {
				return false
			}
			if !p.matchInputs(n, s, !first) {
				return false
			}
		}
	}
	return p.captureValue(v, s)
}

// matchInputs matches the node's inputs against the input patterns, the
// first two swapped when swap is set; on failure it restores s.
func (p *Pattern) matchInputs(n *graph.Node, s *matchState, swap bool) bool {
	sn := s.save()
	for i, ip := range p.inputs {
		j := i
		if swap && i < 2 {
			j = 1 - i
		}
		if ip == nil {
			continue
		}
		if !ip.match(n.Input(j), s) {
			s.restore(sn)
			return false
		}
	}
	return true
}

func (p *Pattern) captureValue(v graph.Output, s *matchState) bool {
	if p.capture == "" || p.kind == patSame {
		return true
	}
	if prev, ok := s.values[p.capture]; ok && prev != v {
		return false
	}
	s.values[p.capture] = v
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MatchAt matches p against output 0 of root. cons are the model's
// consumers (Model.Consumers), used by OneUse and the closure condition.
// It returns nil when p does not match or when an interior op node of the
// match has a consumer outside it.
//
// A match whose interior nodes are used outside it is retried with the
// commutative ops' inputs in the other orders (the first four such ops):
// Add(a, Conv(a)) with a used elsewhere matches a residual pattern
// Add(Conv, r) as Conv = Conv(a), r = a, not as the closed-off Conv = a.
func MatchAt(p *Pattern, root *graph.Node, cons map[graph.Output][]graph.Input) *Match {
	if len(root.Outputs) == 0 {
		return nil
	}
	var comm []*Pattern
	p.walk(func(q *Pattern) {
		if q.kind == patOp && q.commutative && len(q.inputs) == 2 && len(comm) < 4 {
			comm = append(comm, q)
		}
	})
	for mask := 0; mask < 1<<len(comm); mask++ {
		s := &matchState{values: map[string]graph.Output{}, cons: cons, swapFirst: map[*Pattern]bool{}}
		for i, q := range comm {
			s.swapFirst[q] = mask>>i&1 == 1
		}
		if !p.match(root.Out(0), s) {
			return nil // every order was tried: none matches at all
		}
		m := &Match{Root: root, values: s.values, matched: s.matched}
		if m.closed(cons, nil) {
			return m
		}
	}
	return nil
}

// closed reports whether every matched op node other than the root and
// keep has all its consumers inside the match.
func (m *Match) closed(cons map[graph.Output][]graph.Input, keep *graph.Node) bool {
	in := make(map[*graph.Node]bool, len(m.matched))
	for _, n := range m.matched {
		in[n] = true
	}
	for _, n := range m.matched {
		if n == m.Root || n == keep || n.OpType == graph.OpConstant {
			continue
		}
		for i := range n.Outputs {
			for _, c := range cons[n.Out(i)] {
				if !in[c.Node] {
					return false
				}
			}
		}
	}
	return true
}
