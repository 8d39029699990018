package clbackend

import (
	"fmt"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// runProgram enqueues the kernels and copies of a plan with control flow
// (program.go) on the request's in-order queue, walking its program: a
// branch or a loop that depends on a value of the device reads that one
// element back (counted in Transfers), which waits for the queue to reach
// it. ctx is checked between instructions, so a cancelled inference stops
// enqueueing at once (what is queued drains). The compile-time warm-up
// runs both branches of every If, so that whichever inputs come, no
// kernel runs for the first time in a user's inference.
func (r *InferRequest) runProgram(ctx contextDone, s *runState) error {
	pl := s.pl
	t1 := time.Now()
	s.pin = r.pinning(pl)
	defer func() { s.pin = binPinner{} }()
	counters := make([]int64, len(pl.loops))
	iter := func(loop int, rev bool) int64 {
		if loop < 0 {
			return 0
		}
		if rev {
			return pl.loops[loop].trips - 1 - counters[loop]
		}
		return counters[loop]
	}
	for pc := 0; pc < len(pl.prog); {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gpu: infer %q: %w", r.c.model.Name, err)
		}
		in := &pl.prog[pc]
		switch in.op {
		case opLaunch:
			l := pl.launches[in.launch]
			if l.n != 0 {
				ts := time.Now()
				if err := r.programLaunch(s, in.launch); err != nil {
					return r.fail(fmt.Sprintf("launching %s for node %q", l.kernel.Entry, l.node.Name), err)
				}
				s.cpu[in.launch] += time.Since(ts)
			}
		case opCopy:
			c := in.copy
			if c.bytes == 0 || c.rows == 0 {
				break
			}
			src, dst := r.buffer(pl, s.st, c.src), r.buffer(pl, s.st, c.dst)
			so := c.srcOff + int(iter(c.loop, c.srcRev))*c.srcStep
			do := c.dstOff + int(iter(c.loop, c.dstRev))*c.dstStep
			var ev *cl.Event
			var err error
			if c.rows <= 1 {
				ev, err = r.queue.EnqueueCopyBuffer(src, dst, so, do, c.bytes, nil)
			} else {
				ev, err = r.queue.EnqueueCopyBufferRect(src, dst, so, do, c.bytes, c.rows, c.srcPitch, c.dstPitch, nil)
			}
			if err != nil {
				return r.fail("copying between the values of a control-flow op", err)
			}
			s.keep(&s.evs.copies, ev)
		case opBranch:
			if r.warmUp {
				break // warm every branch: run then, and else after it
			}
			ok, known := false, false
			if in.host != nil {
				var err error
				if ok, known, err = in.host.cached(s.hostInputs()); err != nil {
					return r.fail("computing a condition on the host", err)
				}
			}
			if !known {
				var err error
				if ok, err = r.readCond(s, in.cond); err != nil {
					return err
				}
			}
			if !ok {
				pc = in.target
				continue
			}
		case opJump:
			if r.warmUp && in.warmThrough {
				break
			}
			pc = in.target
			continue
		case opFail:
			if r.warmUp {
				break
			}
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: infer %q: the condition took a branch these inputs' shapes make invalid: %s", r.c.model.Name, pl.failures[in.target])
		case opLoopBegin:
			counters[in.loop] = 0
			if pl.loops[in.loop].trips <= 0 {
				pc = in.target
				continue
			}
		case opLoopEnd:
			counters[in.loop]++
			more := counters[in.loop] < pl.loops[in.loop].trips
			if more && in.cond >= 0 {
				ok, err := r.readCond(s, in.cond)
				if err != nil {
					return err
				}
				more = ok
			}
			if more {
				pc = in.target
				continue
			}
		}
		pc++
	}
	s.next = len(pl.launches)
	s.pin.done(true) // the branches this run took
	s.execute += time.Since(t1)
	return nil
}

// programLaunch enqueues launch i of a program: with an event when the
// profile times it (the launches that ran, in order, in s.ran), else
// without one, as straight-line plans launch (an event per command costs
// the driver and the host work for nothing).
func (r *InferRequest) programLaunch(s *runState, i int) error {
	l := s.pl.launches[i]
	if !r.c.profiling {
		if err := r.queue.EnqueueNDRangeKernelNoEvent(s.st.kernels[i], nil, l.global, l.local); err != nil {
			return err
		}
		s.pin.launched()
		s.untracked()
		return nil
	}
	ev, err := r.queue.EnqueueNDRangeKernel(s.st.kernels[i], nil, l.global, l.local, nil)
	if err != nil {
		return err
	}
	s.pin.launched()
	s.keep(&s.evs.kernels, ev)
	s.ran = append(s.ran, i)
	return nil
}

// contextDone is what runProgram needs of a context.
type contextDone interface{ Err() error }

// readCond reads value v (one element) back to the host, waiting for the
// queue to reach it, and says whether it is true (not zero).
func (r *InferRequest) readCond(s *runState, v int) (bool, error) {
	val := s.pl.values[v]
	buf := make([]byte, val.typ.Size())
	ev, err := cl.EnqueueReadSlice(r.queue, r.buffer(s.pl, s.st, v), true, 0, buf, nil)
	if err != nil {
		return false, r.fail("reading back a condition", err)
	}
	s.keep(&s.evs.download, ev)
	s.transfers.DeviceToHost += int64(len(buf))
	t, err := tensor.FromBytes(val.typ, tensor.Shape{}, buf)
	if err != nil {
		return false, r.fail("reading back a condition", err)
	}
	return t.Float64s()[0] != 0, nil
}

// hostInputs returns the inference's input tensors that are on the host
// (nil for remote ones). A host condition reads no state input
// (hostCondOf), whose bound tensor is not the held value.
func (s *runState) hostInputs() []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(s.inputs))
	for i, t := range s.inputs {
		if i < len(s.remoteIn) && s.remoteIn[i] != nil {
			continue
		}
		out[i] = t
	}
	return out
}
