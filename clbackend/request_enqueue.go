package clbackend

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The launches of one inference: the enqueue stage (uploads, a window of
// kernel launches a feeder refills while ctx allows, downloads) and the
// wait stage.

// launchWindow is how many kernel launches a cancellable inference keeps
// queued ahead of the device: a feeder goroutine of the run refills the
// queue by half a window each time the device has run half of it,
// checking ctx in between, so a deadline or a cancel stops the inference
// after at most a window of kernels instead of after all of them (OpenCL
// cannot take commands back off a queue). The feeder runs beside the
// executors, so other requests' stages go on meanwhile. An inference
// whose ctx can never be done enqueues everything at once.
const launchWindow = 32

// enqueue puts the inference on the request's in-order queue without
// blocking: input writes, the kernels (all of them, or the first window
// when ctx can be cancelled), and then, when every kernel is queued, the
// output reads; then a flush so the device starts while the host moves
// on.
func (r *InferRequest) enqueue(ctx context.Context, s *runState) error {
	c, pl := r.c, s.pl
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gpu: infer %q: %w", c.model.Name, err)
	}
	r.core.Mu.Lock()
	r.pending = s
	r.core.Mu.Unlock()

	t0 := time.Now()
	s.began = t0
	s.takeOff()
	// Upload: the input bytes stay referenced (pinned by cl) until the wait.
	s.hostIn = resized(s.hostIn, len(s.inputs))
	for i, t := range s.inputs {
		if pl.hostIn[i] || r.holds(i) || i < len(pl.unread) && pl.unread[i] {
			continue // part of the plan, a state the request holds, or read by nothing
		}
		dst := r.buffer(pl, s.st, pl.params[i])
		if src := s.remoteIn[i]; src != nil {
			// On the device, from the remote tensor: no host memory.
			n := pl.values[pl.params[i]].bytes
			if n == 0 {
				continue
			}
			ev, err := r.queue.EnqueueCopyBuffer(src.buf, dst, 0, 0, n, nil)
			if err != nil {
				return r.fail(fmt.Sprintf("copying input %s from remote tensor %q", c.core.Input(i).Name, src.name), err)
			}
			s.keep(&s.evs.upload, ev)
			s.transfers.DeviceToDevice += int64(n)
			continue
		}
		s.hostIn[i] = t.Contiguous()
		b := s.hostIn[i].Bytes()
		if len(b) == 0 {
			continue
		}
		if stg := s.st.in[i]; stg != nil && stg.shared != nil {
			// Into the shared buffer the kernels read: no command.
			copy(stg.shared, b)
			s.transfers.HostToDevice += int64(len(b))
			continue
		}
		if stg := s.st.in[i]; stg != nil {
			// Through the pinned staging buffer: no event, no callback.
			copy(stg.mapped.Bytes(), b)
			if err := r.queue.EnqueueWriteMappedNoEvent(dst, 0, stg.mapped, 0, len(b)); err != nil {
				return r.fail("writing input "+c.core.Input(i).Name, err)
			}
			s.untracked()
			s.transfers.HostToDevice += int64(len(b))
			continue
		}
		ev, err := cl.EnqueueWriteSlice(r.queue, dst, false, 0, b, nil)
		if err != nil {
			return r.fail("writing input "+c.core.Input(i).Name, err)
		}
		s.keep(&s.evs.upload, ev)
		s.transfers.HostToDevice += int64(len(b))
	}
	if pl.seed > 0 {
		ev, err := cl.EnqueueWriteSlice(r.queue, r.buffer(pl, s.st, pl.seed-1), false, 0, s.seed, nil)
		if err != nil {
			return r.fail("writing the random seed", err)
		}
		s.keep(&s.evs.upload, ev)
	}
	s.upload = time.Since(t0)

	s.cpu = resized(s.cpu, len(pl.launches))
	if pl.prog != nil {
		// Control flow: the program decides what runs; it is enqueued
		// here, reading back conditions as it goes.
		if err := r.runProgram(ctx, s); err != nil {
			return err
		}
	} else {
		end := len(pl.launches)
		if ctx.Done() != nil && end > r.window() && pl.cont == nil {
			end = r.window()
			s.windowed = true
		}
		cb := r.commandBuffer(s)
		if cb != nil {
			// The whole plan in one call (cl_khr_command_buffer). A driver
			// without simultaneous use may still hold the last inference's
			// enqueue pending: this one then launches singly.
			t1 := time.Now()
			ev, err := cb.Enqueue(s.st.sharedOut)
			switch {
			case err == nil:
				if ev != nil {
					s.keep(&s.evs.kernels, ev) // the wait's (sharedOut); no profile or feeder runs beside a command buffer
				} else {
					s.untracked()
				}
				s.cmdbufRan = true
				s.next = end
				s.execute += time.Since(t1)
			case errors.Is(err, cl.ErrInvalidOperation):
				cb = nil
			default:
				return r.fail("enqueueing the plan's command buffer", err)
			}
		}
		if cb == nil {
			if err := r.launch(s, end); err != nil {
				return err
			}
		}
	}
	for s.next == len(s.pl.launches) && s.pl.cont != nil {
		// Data-dependent sizes: read them back, go on with the rest.
		if err := r.resume(ctx, s); err != nil {
			return err
		}
	}
	if s.next == len(s.pl.launches) {
		if err := r.download(s); err != nil {
			return err
		}
	}
	if s.enqueued {
		if err := r.queue.Flush(); err != nil {
			return r.fail("flushing the queue", err)
		}
	}
	if s.next < len(s.pl.launches) {
		s.feeder = make(chan error, 1)
		go func() { s.feeder <- r.feed(ctx, s) }()
	}
	return nil
}

// feed enqueues the rest of a windowed inference: half a window of kernels
// each time the device has caught up to half a window behind, then the
// output reads. It stops when ctx is done. It runs on its own goroutine,
// which ends with the inference's commands all queued or with ctx; the
// wait stage (or a drain) receives its result.
func (r *InferRequest) feed(ctx context.Context, s *runState) error {
	for s.next < len(s.pl.launches) {
		if k := len(s.evs.kernels) - r.window()/2; k >= 0 {
			if err := s.evs.kernels[k].WaitContext(ctx); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("gpu: infer %q: %w", r.c.model.Name, ctx.Err())
				}
				return r.fail("waiting for the device", err)
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gpu: infer %q: %w", r.c.model.Name, err)
		}
		if err := r.launch(s, min(s.next+r.window()/2, len(s.pl.launches))); err != nil {
			return err
		}
		if s.next == len(s.pl.launches) {
			if err := r.download(s); err != nil {
				return err
			}
		}
		if err := r.queue.Flush(); err != nil {
			return r.fail("flushing the queue", err)
		}
	}
	return nil
}

// joinFeeder waits for the run's feeder, if any, and returns its error.
func (s *runState) joinFeeder() error {
	if s.feeder == nil {
		return nil
	}
	err := <-s.feeder
	s.feeder = nil
	return err
}

// events collects the events of one inference and closes them.
type events struct {
	upload, download []*cl.Event
	kernels          []*cl.Event
	copies           []*cl.Event // a program's device copies
	last             *cl.Event
}

func (e *events) close() error {
	var errs []error
	for _, list := range [...][]*cl.Event{e.upload, e.kernels, e.copies, e.download} {
		for _, ev := range list {
			if err := ev.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// keep records ev as one of list's events and as the inference's last.
func (s *runState) keep(list *[]*cl.Event, ev *cl.Event) {
	*list = append(*list, ev)
	s.evs.last = ev
	s.enqueued = true
	s.tail = true
}

// untracked notes a command enqueued without an event: the inference's
// last event no longer covers every command (finish adds a marker).
func (s *runState) untracked() {
	s.enqueued = true
	s.tail = false
}

// finish makes the inference's last event cover every command: when the
// last one was enqueued without an event, a marker after it.
func (r *InferRequest) finish(s *runState) error {
	if !s.enqueued || s.tail {
		return nil
	}
	ev, err := r.queue.EnqueueMarkerWithWaitList(nil)
	if err != nil {
		return r.fail("marking the end of the inference", err)
	}
	s.keep(&s.evs.download, ev)
	return nil
}

// launch enqueues the kernels from s.next up to end: the in-order queue
// orders them, no wait lists, and no events unless the profile times
// them or a windowed inference's feeder waits on them.
func (r *InferRequest) launch(s *runState, end int) error {
	t1 := time.Now()
	pl := s.pl
	events := r.c.profiling || s.windowed
	sampled := r.warmUp && s.pl.cont == nil && s.pl.parent == nil
	tail := -1 // the launch that carries the wait's event (sharedOut)
	if !events && s.st.sharedOut && end == len(pl.launches) {
		tail = pl.lastLaunch()
	}
	pin := r.pinning(pl)
	for ; s.next < end; s.next++ {
		l := pl.launches[s.next]
		if l.n == 0 || sampled && r.warmedUp(l) {
			continue
		}
		global := l.global
		if sampled {
			global = warmUpGlobal(l)
		}
		ts := time.Now()
		if !events && s.next != tail {
			if err := r.queue.EnqueueNDRangeKernelNoEvent(s.st.kernels[s.next], nil, global, l.local); err != nil {
				return r.fail(fmt.Sprintf("launching %s for node %q", l.kernel.Entry, l.node.Name), err)
			}
			pin.launched()
			s.untracked()
			s.cpu[s.next] = time.Since(ts)
			continue
		}
		ev, err := r.queue.EnqueueNDRangeKernel(s.st.kernels[s.next], nil, global, l.local, nil)
		if err != nil {
			return r.fail(fmt.Sprintf("launching %s for node %q", l.kernel.Entry, l.node.Name), err)
		}
		pin.launched()
		s.keep(&s.evs.kernels, ev)
		s.cpu[s.next] = time.Since(ts)
	}
	pin.done(s.next == len(pl.launches))
	s.execute += time.Since(t1)
	return nil
}

// launchesUpTo counts pl's launches that run, up to n.
func (pl *plan) launchesUpTo(n int) int {
	k := 0
	for _, l := range pl.launches {
		if l.n != 0 {
			if k++; k == n {
				break
			}
		}
	}
	return k
}

// lastLaunch is the index of pl's last launch that runs (-1: none).
func (pl *plan) lastLaunch() int {
	for i := len(pl.launches) - 1; i >= 0; i-- {
		if pl.launches[i].n != 0 {
			return i
		}
	}
	return -1
}

// download enqueues the output reads, into fresh tensors or straight into
// the ones the user bound.
func (r *InferRequest) download(s *runState) error {
	c, pl := r.c, s.pl
	t2 := time.Now()
	s.staged = resized(s.staged, len(s.pl.results))
	s.unstage = resized(s.unstage, len(s.pl.results))
	for i, v := range pl.results {
		sl := pl.values[v]
		if _, ok := r.c.stateIn[i]; ok {
			continue // after every other result's read (below)
		}
		if r.warmUp {
			continue // thrown away: no host tensor, read or copy (IS-Net medium: 25 MB)
		}
		if rdst := s.remoteOut[i]; rdst != nil {
			// On the device, into the remote tensor: no host memory.
			if sl.typ != rdst.typ || !sl.shape.Equal(rdst.shape) {
				return driver.Errorf(driver.ErrInvalidArgument, "gpu: infer %q: output %q is %s%s for these inputs, and its remote tensor %q is %s%s; bind one of the output's shape", c.model.Name, c.core.Output(i).Name, sl.typ, sl.shape, rdst.name, rdst.typ, rdst.shape)
			}
			if sl.bytes == 0 {
				continue
			}
			ev, err := r.queue.EnqueueCopyBuffer(r.buffer(pl, s.st, v), rdst.buf, 0, 0, sl.bytes, nil)
			if err != nil {
				return r.fail(fmt.Sprintf("copying output %s into remote tensor %q", c.core.Output(i).Name, rdst.name), err)
			}
			s.keep(&s.evs.download, ev)
			s.transfers.DeviceToDevice += int64(sl.bytes)
			continue
		}
		dst := s.outputs[i]
		switch {
		case s.userOut[i] && dst.IsContiguous() && dst.HasShape(sl.shape) && dst.Type() == sl.typ:
			s.staged[i] = dst
		default:
			t, err := tensor.New(sl.typ, sl.shape)
			if err != nil {
				return driver.Errorf(driver.ErrResourceExhausted, "gpu: infer %q: output %q: %w", c.model.Name, c.Outputs()[i].Name, err)
			}
			s.staged[i] = t
		}
		b := s.staged[i].Bytes()
		if len(b) == 0 {
			continue
		}
		if stg := s.st.out[i]; stg != nil && stg.shared != nil {
			// In the shared buffer the kernels wrote: postprocess copies
			// it out after the wait, no command.
			s.unstage[i] = true
			s.transfers.DeviceToHost += int64(len(b))
			continue
		}
		if stg := s.st.out[i]; stg != nil {
			// Into the pinned staging buffer; postprocess copies it out.
			// The last output's read carries the inference's last event,
			// which spares finish a marker: one command less per
			// inference, which on POCL is a worker-thread handoff.
			last := i == len(pl.results)-1
			ev, err := r.queue.EnqueueReadMapped(r.buffer(pl, s.st, v), 0, stg.mapped, 0, len(b), last)
			if err != nil {
				return r.fail("reading output "+c.core.Output(i).Name, err)
			}
			if ev != nil {
				s.keep(&s.evs.download, ev)
			} else {
				s.untracked()
			}
			s.unstage[i] = true
			s.transfers.DeviceToHost += int64(len(b))
			continue
		}
		ev, err := cl.EnqueueReadSlice(r.queue, r.buffer(pl, s.st, v), false, 0, b, nil)
		if err != nil {
			return r.fail("reading output "+c.core.Output(i).Name, err)
		}
		s.keep(&s.evs.download, ev)
		s.transfers.DeviceToHost += int64(len(b))
	}
	if !s.cmdbufRan || !s.st.cmdbufStates {
		// The next states: into the request's state buffers, on the
		// device, once the results that read a state buffer have been
		// read (or the command buffer's last commands, when it ran).
		if err := r.keepStates(s); err != nil {
			return err
		}
	}
	s.download = time.Since(t2)
	return r.finish(s)
}

// wait blocks until the last command of the inference is done (the queue
// is in order, so one event covers all), after the feeder of a windowed
// inference has queued the rest (at most a window of kernels once ctx is
// done), and returns ctx's error if ctx is done by then (waitFor).
func (r *InferRequest) wait(ctx context.Context, s *runState) error {
	t0 := time.Now()
	if err := s.joinFeeder(); err != nil {
		return err
	}
	if s.evs.last != nil {
		if err := r.waitFor(ctx, s, s.evs.last, "waiting for the device"); err != nil {
			return err
		}
	}
	s.enqueued = false // everything has completed
	s.land()
	s.wait = time.Since(t0)
	return nil
}

// inFlight counts the GPU inferences of this process from the start of
// their enqueue to the end of their wait (or their drain), on every
// device: a wait polls only while it is 1 (waitFor), because concurrent
// inferences' polls would each take a core from the driver's threads,
// which run every device's kernels (POCL) or feed them (a GPU's driver).
var inFlight atomic.Int32

// takeOff counts s's inference in inFlight, once.
func (s *runState) takeOff() {
	if !s.flying {
		s.flying = true
		inFlight.Add(1)
	}
}

// land takes s's inference out of inFlight, if it is counted.
func (s *runState) land() {
	if s.flying {
		s.flying = false
		inFlight.Add(-1)
	}
}

// waitFor blocks until ev's command is done, then returns ctx's error if
// ctx is done by then. It polls the command's status for up to
// GPU_WAIT_SPIN_US first when the request's last inference took no longer
// than that from its enqueue to the end of its wait (a small model, whose
// kernels leave the other cores idle), and otherwise blocks in
// clWaitForEvents at once: a larger model's kernels want every core, and
// a poll beside them slows them more than it saves (Silero VAD, whose
// wait alone is short: 150-170 us blocking, 210-270 polling, POCL
// skylake-avx512, load 5). It does not return early when ctx is done: an
// inference's commands cannot be taken back off the queue, so a cancelled
// one is drained anyway (abortOnError) and ends no sooner. What it spares
// is WaitContext's event callback, which on POCL costs each inference a
// hop through a driver thread into Go (about 50 µs of a 90 µs wake-word
// inference, BenchmarkOverhead); a windowed inference's feeder keeps
// WaitContext, so that a cancel stops it between windows. It polls only
// while this is the one GPU inference of the process in flight (inFlight):
// with several, each polling wait took a core from the driver's threads
// running the others' kernels (cl.Event.WaitSpinAlone: it blocks at once,
// or as soon as another inference starts).
func (r *InferRequest) waitFor(ctx context.Context, s *runState, ev *cl.Event, what string) error {
	_, err := ev.WaitSpinAlone(spinFor(time.Duration(r.lastSpan.Load()), r.c.waitSpin), &inFlight)
	r.lastSpan.Store(int64(time.Since(s.began)))
	if err != nil {
		return r.fail(what, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gpu: infer %q: %w", r.c.model.Name, err)
	}
	return nil
}

// spinFor is how long a wait polls under GPU_WAIT_SPIN_US bound when the
// request's last inference spanned last (enqueue to the end of its wait):
// the bound while that was within it, else nothing. A blocking wait whose
// inference ends within the bound turns polling back on.
func spinFor(last, bound time.Duration) time.Duration {
	if last > bound {
		return 0
	}
	return bound
}

// maxCommandBuffer is the most launches a plan records as a command
// buffer: what pays is a small model's per-inference overhead, and POCL
// 3.1 takes time quadratic in the recorded commands to enqueue one (a
// 6,250-launch plan took minutes).
const maxCommandBuffer = 256

// commandBuffer returns the plan's command buffer for run s, recording it
// at the first run that can use one: a device with cl_khr_command_buffer
// (cl.Device.CommandBuffersSupported) and GPU_COMMAND_BUFFERS=YES, a run
// that neither profiles (events per kernel) nor feeds a window (a
// cancellable ctx), of a request that is not the compile's throwaway
// warm-up, for a plan of at most maxCommandBuffer launches (of a
// data-sized plan, the launches before its first read-back). It returns nil when the launches go one by one: a
// recording the driver refuses is dropped for the plan, and the launches
// are enqueued singly as before.
func (r *InferRequest) commandBuffer(s *runState) *cl.CommandBuffer {
	st, c := s.st, r.c
	if st.cmdbuf != nil {
		if s.windowed || c.profiling {
			return nil
		}
		return st.cmdbuf
	}
	if st.noCmdbuf || s.windowed || c.profiling || !c.commandBuffers || r.warmUp || len(s.pl.launches) == 0 || len(s.pl.launches) > maxCommandBuffer || r.pinning(s.pl).pl != nil {
		return nil // (a first run in the thread launches singly, to pin each binary)
	}
	if len(c.stateIn) == 0 && s.pl.launchesUpTo(2) < 2 {
		// One launch is one command either way, and POCL 3.1 takes longer
		// to enqueue a command buffer than a kernel (a wake-word head's
		// dense_chain: 41 against 27 µs an inference, BenchmarkOverhead).
		return nil
	}
	st.noCmdbuf = true // until the recording succeeds
	// With the next states' copies (as download would enqueue them:
	// keepState) where the device records copies, one enqueue fewer;
	// else the launches alone, download copying the states.
	// A plan continued after sizes read back (pl.cont) has its results
	// in the continuation: its states are copied there.
	// Not where another result reads a state buffer: the copies would
	// overwrite it before download reads it.
	withStates := len(c.stateIn) > 0 && s.pl.cont == nil && !r.resultReadsState(s.pl)
	cb, states := r.recordPlan(s, withStates)
	if cb == nil && withStates {
		cb, states = r.recordPlan(s, false)
	}
	if cb == nil {
		return nil
	}
	st.cmdbuf, st.noCmdbuf, st.cmdbufStates = cb, false, states
	return cb
}

// recordPlan records s's plan as a finalized command buffer: its launches
// and, with states, then the copies of the next states into the
// request's state buffers. It returns nil when the device refuses a
// command, and whether copies were recorded.
func (r *InferRequest) recordPlan(s *runState, states bool) (*cl.CommandBuffer, bool) {
	st := s.st
	cb, err := r.queue.CreateCommandBuffer()
	if err != nil {
		return nil, false
	}
	for i, l := range s.pl.launches {
		if l.n == 0 {
			continue
		}
		if err := cb.NDRangeKernel(st.kernels[i], nil, l.global, l.local); err != nil {
			_ = cb.Close()
			return nil, false
		}
	}
	order, saved := st.stateOrder, st.stateSaved
	states = states && len(saved) == 0 // a cycle's scratch copies: download's
	for _, i := range order {
		if !states {
			break
		}
		pi, v := r.c.stateIn[i], s.pl.results[i]
		n := s.pl.values[v].bytes
		if n == 0 || s.pl.values[s.pl.values[v].root].held == pi+1 {
			continue
		}
		if err := cb.CopyBuffer(r.buffer(s.pl, st, v), r.held[pi], 0, 0, n); err != nil {
			_ = cb.Close()
			return nil, false
		}
	}
	if err := cb.Finalize(); err != nil {
		_ = cb.Close()
		return nil, false
	}
	return cb, states
}
