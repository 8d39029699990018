package clbackend

import (
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// controlLowerings are the control-flow ops. Their bodies are planned into
// the same plan as the rest of the model (program.go): an If whose
// condition is known at plan time plans only the branch it takes; one
// decided at run time plans both, reads its condition back (one scalar)
// and runs one; a Loop or a Scan plans its body once and runs it for every
// iteration, moving carried values and slices with device copies.
func controlLowerings() map[string]lowering {
	return map[string]lowering{
		graph.OpIf:   {lower: lowerIf, count: countIf},
		graph.OpLoop: {lower: lowerLoop},
		graph.OpScan: {lower: lowerScan},
	}
}

// maxUnroll bounds the iterations of a Loop whose body needs its
// iteration number or condition on the host (a slice bound): such a body
// is planned once per iteration.
const maxUnroll = 256

// lowerBody plans body's nodes into the plan with its Parameters bound to
// the values params, and returns the values of its Results. The body's
// constants are weights named under the owner and attribute.
func (b *builder) lowerBody(owner *graph.Node, attr string, body *graph.Model, params []int) ([]int, error) {
	sb, err := b.specializeBody(owner, attr, body, params)
	if err != nil {
		return nil, err
	}
	return b.lowerSpecialized(owner, attr, sb, params)
}

// specializeBody returns a copy of body specialised on what the plan knows
// of the values params bound to its Parameters: their shapes, and the
// values known on the host (an unrolled Loop's iteration number), as the
// model itself is for its inputs. A body these shapes make invalid is an
// error wrapping graph.ErrInvalidModel.
func (b *builder) specializeBody(owner *graph.Node, attr string, body *graph.Model, params []int) (*graph.Model, error) {
	if len(params) != len(body.Parameters) {
		return nil, errUnsupported(owner, "%s %q has %d parameters for %d values", attr, body.Name, len(body.Parameters), len(params))
	}
	shapes := make([]tensor.Shape, len(params))
	hostVals := make([]*tensor.Tensor, len(params))
	for i, v := range params {
		shapes[i], hostVals[i] = b.val(v).shape, b.val(v).host
		if p := body.Parameters[i].Outputs[0]; p.Type.Valid() && p.Type != b.val(v).typ {
			return nil, errUnsupported(owner, "%s %q: parameter %d is %v and gets %v", attr, body.Name, i, p.Type, b.val(v).typ)
		}
		body.Parameters[i].Outputs[0].Type = b.val(v).typ
	}
	sb, err := body.Specialize(shapes, hostVals)
	if err != nil {
		return nil, fmt.Errorf("gpu: node %q: %s %q for these shapes: %w", owner.Name, attr, body.Name, err)
	}
	return sb, nil
}

// lowerSpecialized plans a body specializeBody made.
func (b *builder) lowerSpecialized(owner *graph.Node, attr string, body *graph.Model, params []int) ([]int, error) {
	nodes, err := body.Nodes()
	if err != nil {
		return nil, errUnsupported(owner, "%s %q: %v", attr, body.Name, err)
	}
	isParam := map[*graph.Node]bool{}
	for i, p := range body.Parameters {
		b.of[p.Out(0)] = params[i]
		isParam[p] = true
	}
	prefix := owner.Name + "/" + attr + "/"
	for _, n := range nodes {
		if n.OpType == graph.OpParameter || (n.OpType == graph.OpConstant && isParam[n]) {
			if _, ok := b.of[n.Out(0)]; !ok {
				return nil, errUnsupported(owner, "%s %q reads parameter %q, which is not in its parameter list", attr, body.Name, n.Name)
			}
			continue
		}
		if err := b.lowerNode(n, prefix); err != nil {
			return nil, fmt.Errorf("%s %q of node %q: %w", attr, body.Name, owner.Name, err)
		}
	}
	res := make([]int, len(body.Results))
	for j, r := range body.Results {
		res[j] = b.of[r.Input(0)]
	}
	return res, nil
}

// inputs returns the values of n's inputs from..len-1.
func (b *builder) inputs(n *graph.Node, from int) []int {
	var out []int
	for i := from; i < len(n.Inputs); i++ {
		out = append(out, b.in(n, i))
	}
	return out
}

// lowerIf plans the branch a condition known at plan time takes, or both
// branches around a branch on the condition read back at run time.
func lowerIf(b *builder, n *graph.Node) error {
	then, els, err := graph.IfBranches(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	caps := b.inputs(n, 1)
	c, ok := b.hostFloat(b.in(n, 0))
	if n.Attrs.Has(graph.AttrDataSize) { // a continuation, for the condition read back (countIf)
		c, ok = float64(n.Attrs.Int(graph.AttrDataSize, 0)), true
	}
	if ok {
		attr, branch := graph.AttrElseBranch, els
		if c != 0 {
			attr, branch = graph.AttrThenBranch, then
		}
		first := len(b.pl.launches)
		res, err := b.lowerBody(n, attr, branch, caps)
		if err != nil {
			return err
		}
		for j, v := range res {
			b.of[n.Out(j)] = v
		}
		how := "condition known at plan time"
		if _, ok := b.forced[n.Name]; ok {
			how = "the condition computed on the host from the inputs: one plan per outcome"
		}
		b.pl.impl[n] = fmt.Sprintf("if:%s planned (%s, %d launches)", attr, how, len(b.pl.launches)-first)
		return nil
	}
	// Both branches specialised first: their output shapes are the
	// node's (a branch these shapes make invalid fails only if it runs).
	branches := []struct {
		attr string
		body *graph.Model
		err  error
	}{{attr: graph.AttrThenBranch, body: then}, {attr: graph.AttrElseBranch, body: els}}
	for i := range branches {
		br := &branches[i]
		br.body, br.err = b.specializeBody(n, br.attr, br.body, caps)
		if br.err != nil && !errors.Is(br.err, graph.ErrInvalidModel) {
			return br.err
		}
	}
	if branches[0].err != nil && branches[1].err != nil {
		return errUnsupported(n, "neither branch is valid for these shapes: %v", branches[0].err)
	}
	for j := range n.Outputs {
		var shape tensor.Shape
		for _, br := range branches {
			if br.err != nil {
				continue
			}
			s, ok := br.body.Results[j].Outputs[0].Shape.ToShape()
			if !ok || (shape != nil && !s.Equal(shape)) {
				return errUnsupported(n, "output %d is %v in branch %q and %v in the other: branches whose outputs differ in shape run on the CPU (HETERO:GPU,CPU)",
					j, br.body.Results[j].Outputs[0].Shape, br.body.Name, shape)
			}
			shape = s
		}
		if v, ok := b.of[n.Out(j)]; !ok || !b.val(v).shape.Equal(shape) {
			if err := b.checkOutput(n, n.Outputs[j], shape); err != nil {
				return err
			}
			b.of[n.Out(j)] = b.newValue(n.Outputs[j].Type, shape, nil)
		}
	}
	hc := b.hostCondOf(n.Input(0))
	if hc != nil && b.pl.byName[n.Name] == n {
		hc.ifName = n.Name // an If of the model's top level
	}
	branch := b.ctl(instr{op: opBranch, cond: b.in(n, 0), loop: -1, host: hc})
	counts := [2]int{}
	for i, br := range branches {
		if i == 1 {
			b.pl.prog[branch].target = len(b.pl.prog)
		}
		first := len(b.pl.launches)
		if br.err != nil {
			b.pl.failures = append(b.pl.failures, br.err.Error())
			b.ctl(instr{op: opFail, target: len(b.pl.failures) - 1, loop: -1, cond: -1})
		} else {
			res, err := b.lowerSpecialized(n, br.attr, br.body, caps)
			if err != nil {
				return err
			}
			for j, v := range res {
				b.copyAll(v, b.out(n, j))
			}
		}
		counts[i] = len(b.pl.launches) - first
		if i == 0 {
			jump := b.ctl(instr{op: opJump, loop: -1, cond: -1, warmThrough: true})
			defer func() { b.pl.prog[jump].target = len(b.pl.prog) }()
		}
	}
	how := "one scalar read back"
	if hc != nil {
		how = "the condition computed on the host from the inputs"
	}
	b.pl.impl[n] = fmt.Sprintf("if:runtime (both branches planned: then %d launches, else %d; %s)", counts[0], counts[1], how)
	return nil
}

// countIf is the count of an If whose branches' outputs differ in shape
// (graph's If is DataSized): its condition as one i32, which the request
// reads back to plan the rest of the model for the branch it takes
// (plan_sizes.go); the branch is planned there, in the continuation.
func countIf(b *builder, n *graph.Node) (int, error) {
	cond := b.in(n, 0)
	v := b.temp(tensor.I32, tensor.Shape{1})
	if b.val(cond).shape.NumElements() != 1 {
		return 0, errUnsupported(n, "condition of shape %v", b.val(cond).shape)
	}
	ct, err := b.numType(n, b.val(cond).typ)
	if err != nil {
		return 0, err
	}
	return v, b.emit(n, "cast", "-DSRC_T="+ct+" -DDST_T=int", 1, slotArg(cond), slotArg(v), uint64(1))
}

// feedsHost reports whether the value of body Parameter p reaches an input
// the planner needs on the host (a shape, a slice bound).
func feedsHost(body *graph.Model, p *graph.Node) bool {
	cons, err := body.Consumers()
	return err != nil || feedsShapeInput(cons, p.Out(0))
}

// loopSetup checks what a Loop node needs on the GPU and returns its trip
// count and whether its body's condition is its input passed on.
func (b *builder) loopTrips(n *graph.Node, body *graph.Model, l graph.LoopLayout) (int64, bool, error) {
	if !n.Input(0).Valid() {
		return 0, false, errUnsupported(n, "a Loop without a trip count runs on the CPU (HETERO:GPU,CPU)")
	}
	m, ok := b.hostInts(b.in(n, 0))
	if !ok || len(m) != 1 {
		return 0, false, errUnsupported(n, "the trip count is not known at plan time")
	}
	trips := max(m[0], 0)
	if n.Input(1).Valid() {
		c, ok := b.hostFloat(b.in(n, 1))
		if !ok {
			return 0, false, errUnsupported(n, "the initial condition is not known at plan time")
		}
		if c == 0 {
			trips = 0
		}
	}
	pass := graph.LoopCondPassThrough(body)
	if !pass && l.ScanOutputs > 0 {
		return 0, false, errUnsupported(n, "its body may stop it early, so its scan outputs have no shape at plan time: it runs on the CPU (HETERO:GPU,CPU)")
	}
	return trips, pass, nil
}

// carry copies each body result res[i] into the Parameter value p[i] it
// feeds in the next iteration, through a temporary where a result is
// another Parameter's value (a swap would overwrite it first).
func (b *builder) carry(res, p []int) {
	roots := map[int]bool{}
	for _, v := range p {
		roots[b.val(v).root] = true
	}
	src := append([]int(nil), res...)
	for i, v := range res {
		if r := b.val(v).root; roots[r] && r != b.val(p[i]).root {
			t := b.deviceValue(b.val(v).typ, b.val(v).shape)
			b.copyAll(v, t)
			src[i] = t
		}
	}
	for i, v := range src {
		b.copyAll(v, p[i])
	}
}

// newLoop starts loop id over trips iterations: its opLoopBegin, and the
// position its body starts at.
func (b *builder) newLoop(trips int64) (id, begin int) {
	id = len(b.pl.loops)
	b.pl.loops = append(b.pl.loops, loopInfo{trips: trips})
	begin = b.ctl(instr{op: opLoopBegin, loop: id, cond: -1})
	return id, begin
}

// endLoop closes loop id: its opLoopEnd jumps back to the body while it
// runs (reading cond back, when >= 0, after each iteration).
func (b *builder) endLoop(id, begin, cond int) {
	end := b.ctl(instr{op: opLoopEnd, loop: id, target: begin + 1, cond: cond})
	b.pl.prog[begin].target = end + 1
	b.pl.loops[id].begin, b.pl.loops[id].end = begin, end
}

// deviceParams adds device values for body Parameters from..to-1, of their
// bound (static) types and shapes.
func (b *builder) deviceParams(n *graph.Node, body *graph.Model, from, to int) ([]int, error) {
	var out []int
	for i := from; i < to; i++ {
		port := body.Parameters[i].Outputs[0]
		s, ok := port.Shape.ToShape()
		if !ok {
			return nil, errUnsupported(n, "body parameter %q has shape %v at plan time (it changes between iterations)", body.Parameters[i].Name, port.Shape)
		}
		out = append(out, b.deviceValue(port.Type, s))
	}
	return out, nil
}

// lowerLoop plans a Loop whose trip count is known at plan time: its body
// once, run trips times (or until its condition, read back after each
// iteration, is false), or, when the body needs its iteration number on
// the host, once per iteration.
func lowerLoop(b *builder, n *graph.Node) error {
	body, l, err := graph.LoopBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	trips, pass, err := b.loopTrips(n, body, l)
	if err != nil {
		return err
	}
	caps := b.inputs(n, 2+l.Carried)
	init := b.inputs(n, 2)[:l.Carried]
	if trips == 0 {
		for i, v := range init {
			b.of[n.Out(i)] = v
		}
		b.pl.impl[n] = "loop: no iteration"
		return nil
	}
	if feedsHost(body, body.Parameters[0]) || feedsHost(body, body.Parameters[1]) {
		return b.unrollLoop(n, body, l, trips, init, caps)
	}
	params, err := b.deviceParams(n, body, 0, 2+l.Carried)
	if err != nil {
		return err
	}
	iota := make([]int64, trips)
	for i := range iota {
		iota[i] = int64(i)
	}
	it, _ := tensor.FromI64(tensor.Shape{trips}, iota)
	iv := b.newValue(tensor.I64, it.Shape(), it)
	yes, _ := tensor.FromBool(tensor.Shape{}, []bool{true})
	b.copyAll(b.newValue(tensor.Bool, tensor.Shape{}, yes), params[1])
	for i, v := range init {
		b.copyAll(v, params[2+i])
	}
	id, begin := b.newLoop(trips)
	b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: iv, dst: params[0], bytes: 8, rows: 1, loop: id, srcStep: 8}})
	first := len(b.pl.launches)
	res, err := b.lowerBody(n, graph.AttrBody, body, append(params, caps...))
	if err != nil {
		return err
	}
	for j := 0; j < l.ScanOutputs; j++ {
		src, dst := res[1+l.Carried+j], b.out(n, l.Carried+j)
		sz := b.val(src).bytes
		b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: src, dst: dst, bytes: sz, rows: 1, loop: id, dstStep: sz}})
	}
	b.carry(append([]int{res[0]}, res[1:1+l.Carried]...), params[1:2+l.Carried])
	cond := -1
	if !pass {
		cond = params[1]
	}
	b.endLoop(id, begin, cond)
	for i := 0; i < l.Carried; i++ {
		b.of[n.Out(i)] = params[2+i]
	}
	b.pl.impl[n] = fmt.Sprintf("loop: body planned once (%d launches), %d iterations", len(b.pl.launches)-first, trips)
	return nil
}

// unrollLoop plans the body once per iteration, with the iteration number
// and condition known on the host.
func (b *builder) unrollLoop(n *graph.Node, body *graph.Model, l graph.LoopLayout, trips int64, vals, caps []int) error {
	if trips > maxUnroll {
		return errUnsupported(n, "its body needs the iteration number at plan time (a shape or bound), and %d iterations are more than %d planned copies of it", trips, maxUnroll)
	}
	first := len(b.pl.launches)
	run := int64(0)
	scans := make([][]int, l.ScanOutputs)
	for k := int64(0); k < trips; k++ {
		it, _ := tensor.FromI64(tensor.Shape{}, []int64{k})
		yes, _ := tensor.FromBool(tensor.Shape{}, []bool{true})
		params := append([]int{b.newValue(tensor.I64, tensor.Shape{}, it), b.newValue(tensor.Bool, tensor.Shape{}, yes)}, vals...)
		res, err := b.lowerBody(n, graph.AttrBody, body, append(params, caps...))
		if err != nil {
			return err
		}
		for j := range scans {
			scans[j] = append(scans[j], res[1+l.Carried+j])
		}
		vals = res[1 : 1+l.Carried]
		run++
		c, ok := b.hostFloat(res[0])
		if !ok {
			return errUnsupported(n, "its body needs the iteration number at plan time and decides its condition on the device")
		}
		if c == 0 {
			break
		}
	}
	// The scan outputs, now that every iteration's shape is known: the
	// iterations' values stacked by copies.
	for j, list := range scans {
		e := b.val(list[0])
		for k, v := range list {
			if !b.val(v).shape.Equal(e.shape) || b.val(v).typ != e.typ {
				return errUnsupported(n, "scan output %d is %v in iteration %d and %v in iteration 0", j, b.val(v).shape, k, e.shape)
			}
		}
		shape := append(tensor.Shape{int64(len(list))}, e.shape...)
		if err := b.checkOutput(n, n.Outputs[l.Carried+j], shape); err != nil {
			return err
		}
		dst := b.newValue(e.typ, shape, nil)
		for k, v := range list {
			b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: v, dst: dst, dstOff: k * e.bytes, bytes: e.bytes, rows: 1, loop: -1}})
		}
		b.of[n.Out(l.Carried+j)] = dst
	}
	for i, v := range vals {
		b.of[n.Out(i)] = v
	}
	b.pl.impl[n] = fmt.Sprintf("loop: unrolled (%d iterations, %d launches)", run, len(b.pl.launches)-first)
	return nil
}

// sliceCopy describes moving slice k of a tensor of shape s along axis
// (of element size esz) to or from a contiguous slice: rows runs of
// bytes, pitch apart in the whole tensor, step further per slice.
func sliceCopy(s tensor.Shape, axis, esz int) (rows, bytes, pitch, step int) {
	inner := int(prod(s[axis+1:])) * esz
	return int(prod(s[:axis])), inner, int(s[axis]) * inner, inner
}

// lowerScan plans a Scan's body once and runs it for every slice of the
// scan inputs (known from their shapes), moving slices in and out with
// device copies.
func lowerScan(b *builder, n *graph.Node) error {
	body, l, err := graph.ScanBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	if l.ScanInputs == 0 {
		return errUnsupported(n, "no scan input")
	}
	x0 := b.val(b.in(n, l.States)).shape
	trips := x0[l.InAxes[0]]
	states, err := b.deviceParams(n, body, 0, l.States)
	if err != nil {
		return err
	}
	slices, err := b.deviceParams(n, body, l.States, l.States+l.ScanInputs)
	if err != nil {
		return err
	}
	for i, v := range b.inputs(n, 0)[:l.States] {
		b.copyAll(v, states[i])
	}
	caps := b.inputs(n, l.States+l.ScanInputs)
	id, begin := b.newLoop(trips)
	for j := 0; j < l.ScanInputs; j++ {
		src := b.in(n, l.States+j)
		sv := b.val(src)
		rows, bytes, pitch, step := sliceCopy(sv.shape, l.InAxes[j], sv.typ.Size())
		b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: src, dst: slices[j], bytes: bytes, rows: rows,
			srcPitch: pitch, dstPitch: bytes, loop: id, srcStep: step, srcRev: l.InReverse[j]}})
	}
	first := len(b.pl.launches)
	res, err := b.lowerBody(n, graph.AttrBody, body, append(append(append([]int(nil), states...), slices...), caps...))
	if err != nil {
		return err
	}
	for j := 0; j < l.ScanOutputs; j++ {
		dst := b.out(n, l.States+j)
		dv := b.val(dst)
		rows, bytes, pitch, step := sliceCopy(dv.shape, l.OutAxes[j], dv.typ.Size())
		b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: res[l.States+j], dst: dst, bytes: bytes, rows: rows,
			srcPitch: bytes, dstPitch: pitch, loop: id, dstStep: step, dstRev: l.OutReverse[j]}})
	}
	b.carry(res[:l.States], states)
	b.endLoop(id, begin, -1)
	for i := range states {
		b.of[n.Out(i)] = states[i]
	}
	b.pl.impl[n] = fmt.Sprintf("scan: body planned once (%d launches), %d iterations", len(b.pl.launches)-first, trips)
	return nil
}
