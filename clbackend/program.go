package clbackend

import (
	"sort"

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
)

// instr is one program instruction.
type instr struct {
	op     opcode
	launch int
	target int
	loop   int
	cond   int
	copy   copySpec
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
	if n == 0 || b.val(src).root == b.val(dst).root {
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
