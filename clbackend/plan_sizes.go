package clbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Data-dependent output sizes. A node of a DataSized op (NonZero,
// Compress, Unique, NonMaxSuppression: graph.OpSpec.DataSized) whose
// output size the planner cannot know is lowered in two parts. Its
// lowering's count emits the launches that compute the size on the
// device; the nodes that need the node's outputs wait, and the plan ends
// there, its other nodes planned. An inference of that plan reads the
// sizes back, once, in one wait, and goes on with the plan's continuation
// for those sizes: the rest of the model, planned on a copy of the model
// whose data-sized nodes carry the sizes (graph.AttrDataSize), starting
// with the node's own lowering (its scatter, say), which finds what count
// left for it (auxOf). A continuation uses its parent's buffers for the
// values the parent computed, and may end in a read-back of its own. A
// data-sized node folded on the host has its size known at plan time: its
// continuation needs no read-back.

// pendingSize is a data-sized node whose size a continuation needs: in
// device value v (one i32), or known on the host (v < 0).
type pendingSize struct {
	node string
	v    int
	size int64
}

// dataSizes is the builder's state of data-dependent sizes.
type dataSizes struct {
	pending []pendingSize
	waiting []*graph.Node
	// aux holds what a count lowering hands its lowering in the
	// continuation, by node name.
	aux map[string]any
	// keep are values the continuation reads: live to the plan's end.
	keep []int
}

// contState is what a plan that reads sizes back keeps to build its
// continuations.
type contState struct {
	model   *graph.Model
	outs    map[string][]int // node name -> value of each output (-1: none yet)
	pending []pendingSize
	aux     map[string]any
}

// setAux records what n's count lowering hands its lowering; the values
// in it stay alive into the continuation.
func (b *builder) setAux(n *graph.Node, v any, values ...int) {
	if b.ds.aux == nil {
		b.ds.aux = map[string]any{}
	}
	b.ds.aux[n.Name] = v
	b.ds.keep = append(b.ds.keep, values...)
}

// auxOf returns what n's count lowering recorded (nil when none ran).
func (b *builder) auxOf(n *graph.Node) any { return b.ds.aux[n.Name] }

// portsStatic reports whether every output of n has a static shape.
func portsStatic(n *graph.Node) bool {
	for _, o := range n.Outputs {
		if !o.Shape.IsStatic() {
			return false
		}
	}
	return true
}

// waits reports (and records) whether an input of n is not planned yet: it
// comes from a node waiting for a size read back.
func (b *builder) waits(n *graph.Node) bool {
	for _, in := range n.Inputs {
		if _, ok := b.of[in]; in.Valid() && !ok {
			b.ds.waiting = append(b.ds.waiting, n)
			return true
		}
	}
	return false
}

// planned reports whether every output of n has a value already.
func (b *builder) planned(n *graph.Node) bool {
	for i := range n.Outputs {
		if _, ok := b.of[n.Out(i)]; !ok {
			return false
		}
	}
	return len(n.Outputs) > 0
}

// sizeLater plans a data-sized node whose output size shape inference
// could not know: folded on the host, its size is known now, but the
// model's shapes after it are not, so a continuation plans them (folding
// it again); otherwise its lowering's count computes the size on the
// device. Either way the nodes that read its outputs wait.
func (b *builder) sizeLater(n *graph.Node, folded bool) error {
	if folded {
		size := int64(0)
		if s := b.val(b.out(n, 0)).shape; len(s) > 0 {
			size = s[dataDim(n)]
		}
		for i := range n.Outputs {
			delete(b.of, n.Out(i))
		}
		b.ds.pending = append(b.ds.pending, pendingSize{node: n.Name, v: -1, size: size})
		return nil
	}
	l, ok := lowerings()[n.OpType]
	if !ok || n.Domain != "" || l.count == nil {
		return errUnsupported(n, "its output size depends on the input values and the GPU has no kernel that counts it")
	}
	first := len(b.pl.launches)
	v, err := l.count(b, n)
	if err != nil {
		return err
	}
	b.ds.pending = append(b.ds.pending, pendingSize{node: n.Name, v: v})
	b.ds.keep = append(b.ds.keep, v)
	for i := range n.Inputs { // its lowering reads them in the continuation
		if in := b.in(n, i); in >= 0 {
			b.ds.keep = append(b.ds.keep, in)
		}
	}
	b.pl.impl[n] = b.impls(first)
	return nil
}

// setImpl records the catalogue entries of n's launches from first on as
// its implementation (after those of its count, for a data-sized node).
func (b *builder) setImpl(n *graph.Node, first int) {
	impl := b.impls(first)
	if named := b.pl.impl[n]; named == implInPlace && impl == "alias" {
		return // a Concat whose inputs its producers wrote in place
	}
	if counted := b.pl.impl[n]; counted != "" && counted != "alias" && graph.IsDataSized(n) { // its count ran in the parent
		impl = counted + "," + impl
	}
	b.pl.impl[n] = impl
}

// dataDim is the axis of n's output 0 whose size is data-dependent.
func dataDim(n *graph.Node) int {
	switch n.OpType {
	case "NonZero":
		return 1
	case "Compress", "Unique":
		if n.Attrs.Has("axis") && len(n.Outputs[0].Shape.Dims) > 0 {
			a := n.Attrs.Int("axis", 0)
			if a < 0 {
				a += int64(len(n.Outputs[0].Shape.Dims))
			}
			return int(a)
		}
	}
	return 0
}

// impls names the catalogue entries of the launches from first on.
func (b *builder) impls(first int) string {
	var impls []string
	for _, l := range b.pl.launches[first:] {
		impls = append(impls, l.kernel.Name+":"+l.kernel.Entry)
	}
	if len(impls) == 0 {
		return "alias"
	}
	return strings.Join(slices.Compact(impls), ",")
}

// finish completes a plan: its results (or, with sizes pending, what its
// continuations need), buffers, budget check and uploads.
func (b *builder) finish() error {
	if len(b.ds.pending) > 0 {
		b.suspend()
	} else {
		for _, r := range b.model.Results {
			if len(r.Inputs) != 1 || !r.Inputs[0].Valid() {
				return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: result %q has no input", b.c.model.Name, r.Name)
			}
			v, ok := b.of[r.Inputs[0]]
			if !ok {
				return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: result %q has no input", b.c.model.Name, r.Name)
			}
			b.pl.results = append(b.pl.results, v)
		}
	}
	if !b.pl.control {
		b.pl.prog = nil // launches in order: no program to walk
	}
	shareCPUGroups(b.pl.launches, b.profile())
	b.planBuffers()
	if err := b.checkTotal(); err != nil {
		return err
	}
	if err := b.uploadConsts(); err != nil {
		return err
	}
	for _, ch := range b.choices {
		b.pl.choices = append(b.pl.choices, ch.report())
	}
	return nil
}

// suspend records what the continuations of a plan with pending sizes
// need, and keeps the values they read alive to the plan's end.
func (b *builder) suspend() {
	cs := &contState{model: b.model, outs: map[string][]int{}, pending: b.ds.pending, aux: b.ds.aux}
	for o, v := range b.of {
		vs := cs.outs[o.Node.Name]
		for len(vs) < len(o.Node.Outputs) {
			vs = append(vs, -1)
		}
		vs[o.Index] = v
		cs.outs[o.Node.Name] = vs
	}
	for _, n := range b.ds.waiting {
		for _, in := range n.Inputs {
			if v, ok := b.of[in]; ok {
				b.ds.keep = append(b.ds.keep, v)
			}
		}
	}
	for _, r := range b.model.Results {
		if len(r.Inputs) == 1 {
			if v, ok := b.of[r.Inputs[0]]; ok {
				b.ds.keep = append(b.ds.keep, v)
			}
		}
	}
	b.pl.cont = cs
}

// continuePlan builds the continuation of parent for the sizes read back
// (in parent.cont.pending order). It is never tuned (it is built while an
// inference waits): its choices are the tuning records' or the
// heuristics'.
func (c *CompiledModel) continuePlan(ctx context.Context, parent *plan, sizes []int64) (_ *plan, err error) {
	cs := parent.cont
	named := make(map[string]int64, len(sizes))
	for i, ps := range cs.pending {
		named[ps.node] = sizes[i]
	}
	model, err := cs.model.WithDataSizes(named)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: plan model %q for data sizes %v: %w", c.model.Name, sizes, err)
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: plan model %q: %w", c.model.Name, err)
	}
	pl := &plan{key: fmt.Sprintf("%s|%v", parent.key, sizes), parent: parent, base: len(parent.values),
		values: slices.Clone(parent.values), params: parent.params, hostIn: parent.hostIn,
		impl: map[*graph.Node]string{}, order: map[*graph.Node]int{}, variants: map[*graph.Node]string{},
		byName: map[string]*graph.Node{}, consts: map[int]*cl.MemObject{}}
	b := &builder{ctx: ctx, p: c.plugin, c: c, model: model, of: map[graph.Output]int{}, probe: true, pl: pl}
	b.ds.aux = cs.aux
	defer func() {
		if err != nil {
			_ = pl.release(c.ctx)
		}
	}()
	for i, n := range nodes {
		pl.order[n], pl.byName[n.Name] = i, n
		if p := parent.nodeByName(n.Name); p != nil {
			if s, ok := parent.impl[p]; ok {
				pl.impl[n] = s
			}
			if s, ok := parent.variants[p]; ok {
				pl.variants[n] = s
			}
		}
		for oi, v := range cs.outs[n.Name] {
			if v >= 0 && oi < len(n.Outputs) {
				b.of[n.Out(oi)] = v
			}
		}
	}
	for _, n := range nodes {
		if n.OpType == graph.OpResult || b.planned(n) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("gpu: plan: %w", err)
		}
		if err := b.lowerNode(n, ""); err != nil {
			return nil, err
		}
	}
	pl.choices = slices.Clone(parent.choices)
	if err := b.finish(); err != nil {
		return nil, err
	}
	_ = c.plugin.cache.saveBinaries(pl.progs) // best effort, as in planFor
	return pl, nil
}
