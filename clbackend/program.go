package clbackend

import (
	"slices"
	"sort"
	"sync/atomic"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Control flow in a plan. A plan with an If decided at run time, a Loop or
// a Scan carries a program: its launches interleaved with device copies,
// branches on a condition read back from the device (one scalar), jumps
// and loops counted on the host. Everything a branch or an iteration runs
// is planned when the plan is built (kernels, work sizes, buffers); the
// request only walks the program. Plans without control flow have no
// program and run their launches in order as before.

// opcode is what one program instruction does.
type opcode uint8

const (
	// opLaunch enqueues launch instr.launch.
	opLaunch opcode = iota
	// opCopy enqueues a device copy (instr.copy).
	opCopy
	// opBranch reads value instr.cond back (one element) and jumps to
	// instr.target when it is false (zero).
	opBranch
	// opJump jumps to instr.target.
	opJump
	// opLoopBegin zeroes the counter of loop instr.loop and jumps to
	// instr.target (past its end) when the loop runs no iteration.
	opLoopBegin
	// opLoopEnd counts an iteration of loop instr.loop and jumps back to
	// instr.target (the body's start) while the counter is below the trip
	// count and, when instr.cond >= 0, that value read back is true.
	opLoopEnd
	// opFail ends the inference with failure instr.target of the plan: a
	// branch the input shapes make invalid was taken.
	opFail
)

// instr is one program instruction.
type instr struct {
	op     opcode
	launch int
	target int
	loop   int
	cond   int
	copy   copySpec
	// warmThrough marks the jump over an If's else branch, which the
	// warm-up run does not take (it runs both branches).
	warmThrough bool
	// host, on a branch, computes the condition on the host from the
	// model's inputs when they are host tensors (no read back).
	host *hostCond
}

// copySpec is a device copy between values: rows rows of bytes bytes
// (rows <= 1: one contiguous run), srcPitch and dstPitch apart, from
// srcOff in src to dstOff in dst. Inside loop (>= 0) the offsets advance
// by srcStep and dstStep per iteration (counted down from the last one
// when reverse is set).
type copySpec struct {
	src, dst           int
	srcOff, dstOff     int
	bytes, rows        int
	srcPitch, dstPitch int
	loop               int
	srcStep, dstStep   int
	srcRev, dstRev     bool
}

// loopInfo is one loop of a program: its trip count (known when the plan
// is built) and where its body starts and ends.
type loopInfo struct {
	trips      int64
	begin, end int // positions of its opLoopBegin and opLoopEnd
}

// ctl appends an instruction to the plan's program and returns its
// position.
func (b *builder) ctl(in instr) int {
	b.pl.prog = append(b.pl.prog, in)
	if in.op != opLaunch {
		b.pl.control = true
	}
	return len(b.pl.prog) - 1
}

// copyAll copies value src into value dst (of the same size).
func (b *builder) copyAll(src, dst int) {
	n := b.val(dst).bytes
	if s, d := b.val(src), b.val(dst); n == 0 || s.root == d.root && s.off == d.off {
		return
	}
	b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: src, dst: dst, bytes: n, rows: 1, loop: -1}})
}

// deviceValue adds a value that lives in device memory (never a host
// constant): what copies write.
func (b *builder) deviceValue(t tensor.ElementType, s tensor.Shape) int {
	return b.newValue(t, s, nil)
}

// progLiveness sets the liveness of the plan's root values over program
// positions, as planBuffers does over launches for a plan without a
// program: a value read inside a loop and made before it stays live to the
// loop's end (its body reads it again in every iteration).
func (b *builder) progLiveness(touch func(v, at int)) int {
	pl := b.pl
	for pos, in := range pl.prog {
		switch in.op {
		case opLaunch:
			for _, a := range pl.launches[in.launch].args {
				if s, ok := a.(slotArg); ok {
					touch(int(s), pos)
				}
			}
		case opCopy:
			touch(in.copy.src, pos)
			touch(in.copy.dst, pos)
		case opBranch, opLoopEnd:
			if in.cond >= 0 {
				touch(in.cond, pos)
			}
		}
	}
	return len(pl.prog)
}

// extendLoops widens liveness around loops (see progLiveness); it runs
// once every use, the plan's results included, is known.
func (b *builder) extendLoops() {
	pl := b.pl
	loops := append([]loopInfo(nil), pl.loops...)
	sort.Slice(loops, func(i, j int) bool { return loops[i].end < loops[j].end })
	for _, l := range loops {
		for i := range pl.values {
			v := &pl.values[i]
			if v.root != i || v.host != nil || v.first == unset {
				continue
			}
			// A value the loop touches that lives before or after it
			// lives through all of it: read again, or written in an
			// iteration and read after the last one.
			if v.first <= l.end && v.last >= l.begin && (v.first < l.begin || v.last > l.end) {
				v.first, v.last = min(v.first, l.begin), max(v.last, l.end)
			}
		}
	}
}

// progUses marks the host values the program reads besides the launches'
// arguments (copy sources, conditions), so that they are uploaded.
func (b *builder) progUses(used map[int]bool) {
	for _, in := range b.pl.prog {
		switch in.op {
		case opCopy:
			used[b.pl.values[in.copy.src].root] = true
		case opBranch, opLoopEnd:
			if in.cond >= 0 {
				used[b.pl.values[in.cond].root] = true
			}
		}
	}
}

// hostCond is a condition that depends only on model inputs and
// constants (Silero's sample rate): the request computes it on the host
// from the input tensors with the reference kernels, so that choosing the
// branch neither waits for the device nor reads anything back.
type hostCond struct {
	nodes  []*graph.Node       // producers first, out's node last
	params map[*graph.Node]int // model input of each Parameter among them
	inputs []int               // the model inputs it reads, ascending
	out    graph.Output
	// ifName is the If at the model's top level whose condition it is
	// ("" for an If of a body): plan_conds.go plans per its outcome.
	ifName string
	// memo is the last outcome computed from small inputs, with their
	// bytes (cached): an inference whose inputs are the same reuses it.
	memo atomic.Pointer[condMemo]
}

// maxHostCond bounds the nodes of a host condition.
const maxHostCond = 32

// hostCondOf returns the host form of condition o, or nil when it reads
// anything but model inputs and constants through small host-foldable
// ops. A MAKE_STATEFUL state input is not one: its value lives in the
// request's state buffer on the device, not in the bound tensor.
func (b *builder) hostCondOf(o graph.Output) *hostCond {
	pindex := map[*graph.Node]int{}
	for i, p := range b.model.Parameters {
		pindex[p] = i
	}
	hc := &hostCond{params: map[*graph.Node]int{}, out: o}
	seen := map[*graph.Node]bool{}
	var visit func(n *graph.Node) bool
	visit = func(n *graph.Node) bool {
		if seen[n] {
			return true
		}
		seen[n] = true
		if len(seen) > maxHostCond {
			return false
		}
		switch n.OpType {
		case graph.OpParameter:
			i, ok := pindex[n]
			if !ok {
				return false // a body's parameter: made on the device
			}
			if _, state := b.c.stateOut[i]; state {
				return false // the state buffer's value, on the device
			}
			hc.params[n] = i
			return true
		case graph.OpConstant:
			return n.Value != nil
		}
		if graph.FoldOf(n) != graph.FoldInputs || n.HasBodies() || !ref.Supports(n) {
			return false
		}
		for _, p := range n.Outputs {
			if s, ok := p.Shape.ToShape(); !ok || s.NumElements() > 64 {
				return false
			}
		}
		for _, in := range n.Inputs {
			if in.Valid() && !visit(in.Node) {
				return false
			}
		}
		hc.nodes = append(hc.nodes, n)
		return true
	}
	if !o.Valid() || !visit(o.Node) || len(hc.params) == 0 {
		return nil
	}
	for _, i := range hc.params {
		if !slices.Contains(hc.inputs, i) {
			hc.inputs = append(hc.inputs, i)
		}
	}
	slices.Sort(hc.inputs)
	return hc
}

// eval computes the condition from the model's input tensors; ok is false
// when one it needs is not on the host.
func (hc *hostCond) eval(inputs []*tensor.Tensor) (cond, ok bool, err error) {
	vals := map[graph.Output]*tensor.Tensor{}
	for p, i := range hc.params {
		if i >= len(inputs) || inputs[i] == nil {
			return false, false, nil
		}
		vals[p.Out(0)] = inputs[i]
	}
	get := func(o graph.Output) *tensor.Tensor {
		if t, ok := vals[o]; ok {
			return t
		}
		if o.Node.OpType == graph.OpConstant {
			return o.Node.Value
		}
		return nil
	}
	for _, n := range hc.nodes {
		in := make([]*tensor.Tensor, len(n.Inputs))
		for i, x := range n.Inputs {
			if x.Valid() {
				in[i] = get(x)
			}
		}
		out, err := ref.Evaluate(n, in)
		if err != nil {
			return false, false, err
		}
		for i := range n.Outputs {
			vals[n.Out(i)] = out[i]
		}
	}
	t := get(hc.out)
	if t == nil || t.NumElements() != 1 {
		return false, false, nil
	}
	return t.Float64s()[0] != 0, true, nil
}
