package clbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// InferRequest runs a GPU compiled model on its own tensors, command queue,
// activation buffers and kernels. Methods are safe for concurrent use;
// while Infer runs, SetTensor fails with driver.ErrBusy.
type InferRequest struct {
	c *CompiledModel

	core driver.RequestCore // bindings, busy/closed state and the lock (core.Mu) for the rest

	// Device resources, owned by the request (released by release); the
	// queue is the context's user queue when ownQueue is false.
	queue    *cl.CommandQueue
	ownQueue bool
	states   map[*plan]*planState
	// conts are the continuations of plans with data-dependent sizes the
	// request ran, most recently used last (request_sizes.go).
	conts []contEntry

	// pending is the inference that uses the request's buffers: from its
	// preprocess until its commands are known to be done; drained by the
	// next run, an error or release. ReleaseMemory leaves the request's
	// memory alone while it is set.
	pending *runState

	// transfers are the last inference's bytes moved (Transfers).
	transfers driver.Transfers

	// held are the state buffers of a stateful model (MAKE_STATEFUL), one
	// per model input (nil for the others): the plan reads the input from
	// it in place, and each inference copies the paired output into it on
	// the device (request_state.go).
	held []*cl.MemObject

	// warmUp marks the compile-time warm-up request (warmup.go), whose
	// profile does not count in the runtime model; warmed holds the
	// launches it has made (warmedUp), each made once.
	warmUp bool
	warmed map[string]bool
	// released is set once release has freed the device resources.
	released bool
	// sync are the stages Infer runs (request_inline.go), over syncState.
	sync      []driver.Stage
	syncState *runState
	// lastSpan is how long the request's last inference took from its
	// enqueue to the end of its last wait for the device (a
	// time.Duration; waitFor): a wait polls only while that stays within
	// GPU_WAIT_SPIN_US.
	lastSpan atomic.Int64
}

var _ driver.InferRequest = (*InferRequest)(nil)

// newInferRequest creates the request's queue and, for a model with
// static input shapes, the buffers and kernels of its plan (on first use
// where plans per outcome of host conditions run instead, which each make
// their own); c.mu is held.
func newInferRequest(c *CompiledModel) (_ *InferRequest, err error) {
	r := &InferRequest{c: c, states: map[*plan]*planState{}}
	r.syncState = &runState{}
	r.sync = r.stagesOf(r.syncState)
	r.core.Init("gpu", c.Inputs(), c.Outputs())
	for i, in := range c.Inputs() {
		// Static inputs start as zero tensors; a dynamic one has none
		// until SetTensor binds it (Infer names it until then).
		s, ok := in.Shape.ToShape()
		if !ok {
			continue
		}
		t, err := tensor.New(in.Type, s)
		if err != nil {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: input %q: %w", in.Name, err)
		}
		r.core.IO.In[i] = t
	}
	defer func() {
		if err != nil {
			_ = r.release()
		}
	}()
	if r.queue, r.ownQueue, err = c.newQueue(); err != nil {
		return nil, driver.Errorf(driver.ErrDevice, "gpu: infer request of %q on %s: command queue: %w", c.model.Name, c.dev.name(), err)
	}
	if err := r.allocStates(); err != nil {
		return nil, err
	}
	if c.static != nil && c.conds == nil {
		if _, err := r.state(c.static); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the result in place.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	return r.core.SetTensor(name, t)
}

// Tensor returns the tensor bound to an input, or an output's tensor
// (valid after Infer). Host tensors stay readable after Close.
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	return r.core.Tensor(name)
}

// Infer runs the plan once: it writes the inputs (non-blocking), enqueues
// every kernel back to back on the request's in-order queue, reads the
// outputs and waits once. A ctx done before anything is enqueued returns
// its error; one done while the device works makes Infer wait for the
// queue to drain and then return ctx's error.
func (r *InferRequest) Infer(ctx context.Context) error {
	c := r.c
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gpu: infer %q: %w", c.model.Name, err)
	}
	c.running.RLock()
	defer c.running.RUnlock()
	return r.core.RunInline(ctx, r.sync)
}

// runState is what the stages of one inference share.
type runState struct {
	// pin pins the kernel binaries of a control-flow program's first run
	// in the thread (runProgram, binPinner).
	pin             binPinner
	inputs, outputs []*tensor.Tensor
	userOut         []bool
	// remoteIn and remoteOut are the remote tensors bound to the ports
	// (nil for host ports); each of them, once in remotes, is read-locked
	// from preprocess to the end of the run so that its buffer stays open.
	remoteIn, remoteOut []*RemoteTensor
	remotes             []*RemoteTensor
	snapIn, snapOut     []driver.RemoteTensor // the bindings' remote tensors, as preprocess found them
	transfers           driver.Transfers

	pl       *plan
	st       *planState
	segs     []segment // the plans run before pl, whose continuation it is
	evs      events
	enqueued bool             // commands may still use buffers and host memory
	tail     bool             // the last command enqueued has its event in evs.last
	next     int              // the next launch of pl to enqueue
	windowed bool             // a window of launches at a time (enqueue), fed by feeder
	ran      []int            // a program's launches, in the order they ran
	feeder   chan error       // the feeder's result, while it runs (windowed inferences)
	hostIn   []*tensor.Tensor // contiguous inputs, referenced until the wait
	seed     []byte           // the random ops' seed (a u64), referenced until the wait
	staged   []*tensor.Tensor // download targets
	unstage  []bool           // staged[i] is filled from the plan state's staging buffer after the wait
	cpu      []time.Duration  // host time of each launch
	upload   time.Duration    // host time of the stages, for the profile
	execute  time.Duration
	download time.Duration
	wait     time.Duration
	// began is when enqueue started: a wait measures the inference's span
	// on the device from it (waitFor).
	began time.Time
	// flying: the inference is counted in inFlight (takeOff, land).
	flying bool
	// cmdbufRan: the plan ran as its command buffer.
	cmdbufRan bool
}

// Stages implements driver.Stager. On the task executor: preprocess
// (snapshot the bindings, find or build the plan of their shapes) and
// enqueue (uploads, kernels and downloads, all non-blocking, then a flush);
// on the wait executor: wait (for the last event, so the task executor is
// free to upload the next request meanwhile); on the task executor again:
// postprocess (outputs into place, the profile). Infer runs the same
// stages in order. A stage that fails drains the queue and releases the
// inference's events; if a run is abandoned between stages (cancelled),
// the next run or Close drains it.
func (r *InferRequest) Stages() []driver.Stage { return r.stagesOf(&runState{}) }

// stagesOf returns the stages of an inference sharing s.
func (r *InferRequest) stagesOf(s *runState) []driver.Stage {
	return []driver.Stage{
		{Name: "preprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.preprocess(ctx, s) }},
		{Name: "enqueue", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.abortOnError(s, r.enqueue(ctx, s)) }},
		{Name: "wait", Executor: driver.ExecutorWait, Run: func(ctx context.Context) error { return r.abortOnError(s, r.wait(ctx, s)) }},
		{Name: "postprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.abortOnError(s, r.postprocess(s)) }},
	}
}

// fail wraps a device error of an inference.
func (r *InferRequest) fail(what string, err error) error {
	return driver.Errorf(driver.ErrDevice, "gpu: infer %q on %s: %s: %w", r.c.model.Name, r.c.dev.name(), what, err)
}

// preprocess snapshots the bindings and finds (or builds) the plan of the
// input shapes and the request's state for it.
func (r *InferRequest) preprocess(ctx context.Context, s *runState) error {
	c := r.c
	drain := func() error {
		if err := r.drainPendingLocked(); err != nil {
			return r.fail("draining an abandoned inference", err)
		}
		return nil
	}
	locked := func() error {
		s.snapIn, s.snapOut = r.core.IO.SnapshotRemoteInto(s.snapIn, s.snapOut)
		return drain()
	}
	var err error
	if s.inputs, s.outputs, s.userOut, err = r.core.BeginInto(ctx, c.model.Name, c.check, locked, s.inputs, s.outputs, s.userOut); err != nil {
		return err
	}
	s.reset()
	remoteIn := s.snapIn
	if err := r.lockRemotes(s, s.snapIn, s.snapOut); err != nil {
		return err
	}
	pl, err := c.planFor(ctx, s.inputs, remoteIn)
	if err != nil {
		s.unlockRemotes()
		return fmt.Errorf("gpu: infer %q: %w", c.model.Name, err)
	}
	r.core.Mu.Lock()
	st, err := r.state(pl)
	if err == nil {
		r.pending = s // the request's buffers are in use from here
	}
	r.core.Mu.Unlock()
	if err != nil {
		s.unlockRemotes()
		return err
	}
	s.pl, s.st = pl, st
	s.seed = binary.LittleEndian.AppendUint64(s.seed[:0], driver.RequestSeed(ctx, c.core.Props()))
	return nil
}

// postprocess copies results into user-bound outputs that could not be
// read into directly, records the profile and publishes the outputs.
func (r *InferRequest) postprocess(s *runState) error {
	c := r.c
	results := s.staged
	r.unstage(s)
	for i := range results {
		if s.userOut[i] && results[i] != s.outputs[i] {
			if err := s.outputs[i].CopyFrom(results[i]); err != nil {
				return driver.Errorf(driver.ErrInvalidArgument, "gpu: infer %q: output %q: %w", c.model.Name, c.core.Output(i).Name, err)
			}
			results[i] = s.outputs[i]
		}
	}
	var prof []driver.ProfilingInfo
	if c.profiling && !r.warmUp { // the warm-up skips launches (warmedUp)
		var err error
		prof, err = r.profile(s.segments(), &s.evs, s.upload, s.execute, s.download, s.wait)
		if err != nil {
			return r.fail("reading profiling info", err)
		}
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.pending == s {
		r.pending = nil
	}
	if err := s.evs.close(); err != nil {
		return r.fail("releasing events", err)
	}
	s.unlockRemotes()
	r.core.IO.Publish(results)
	s.forget()
	r.core.Prof = prof
	c.planMu.Lock()
	c.lastRun = s.pl // its chain's last plan: the runtime model's
	c.planMu.Unlock()
	r.transfers = s.transfers
	if c.profiling && !r.warmUp {
		c.core.RecordPerf(prof)
	}
	return nil
}

// abortOnError, when err is not nil, drains what the inference left on the
// queue (commands may still use its buffers and host memory) and releases
// its events before returning err.
func (r *InferRequest) abortOnError(s *runState, err error) error {
	if err == nil {
		return nil
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.pending == s {
		r.pending = nil
	}
	derr := r.drain(s)
	s.forget()
	if derr != nil {
		return errors.Join(err, r.fail("draining after an error", derr))
	}
	return err
}

// Abort implements driver.Aborter: it drains an inference that stopped
// between stages (its later stages skipped because ctx was done), so that
// no command of it is left on the device when the run's error is reported.
func (r *InferRequest) Abort() error {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if s := r.pending; s != nil {
		defer s.forget()
	}
	if err := r.drainPendingLocked(); err != nil {
		return r.fail("draining a stopped inference", err)
	}
	return nil
}

// drainPendingLocked drains an inference abandoned between stages; r.core.Mu
// is held.
func (r *InferRequest) drainPendingLocked() error {
	s := r.pending
	r.pending = nil
	if s == nil {
		return nil
	}
	return r.drain(s)
}

// drain waits for the queue if s may still have commands on it, then
// releases s's events.
func (r *InferRequest) drain(s *runState) error {
	// The feeder stops once ctx is done or its work is queued; what it
	// reports is superseded by the error being handled.
	_ = s.joinFeeder()
	var errs []error
	if s.enqueued && r.queue != nil {
		errs = append(errs, r.queue.Finish())
		s.enqueued = false
	}
	s.land()
	errs = append(errs, s.evs.close())
	s.evs = events{}
	s.unlockRemotes()
	return errors.Join(errs...)
}

// profile turns the events of one inference into per-kernel entries (device
// time from OpenCL event profiling) followed by the stages.
func (r *InferRequest) profile(segs []segment, evs *events, upload, execute, download, wait time.Duration) ([]driver.ProfilingInfo, error) {
	var prof []driver.ProfilingInfo
	k := 0
	for _, sg := range segs {
		pl := sg.pl
		if pl.prog != nil {
			// A program runs a launch once per iteration, or not at all in
			// the branch not taken: one entry per launch that ran.
			for _, i := range sg.ran {
				l := pl.launches[i]
				p, err := evs.kernels[k].Profile()
				if err != nil {
					return nil, err
				}
				k++
				prof = append(prof, driver.ProfilingInfo{NodeName: l.node.Name, NodeType: l.node.OpType, ExecType: l.kernel.Entry,
					Status: driver.Executed, Bytes: l.bytes, RealTime: max(p.Duration(), 0)})
			}
			continue
		}
		for i, l := range pl.launches {
			e := driver.ProfilingInfo{NodeName: l.node.Name, NodeType: l.node.OpType, ExecType: l.kernel.Entry, Status: driver.OptimizedOut, Bytes: l.bytes}
			if l.n != 0 {
				p, err := evs.kernels[k].Profile()
				if err != nil {
					return nil, err
				}
				k++
				e.Status, e.RealTime, e.CPUTime = driver.Executed, max(p.Duration(), 0), sg.cpu[i]
			}
			prof = append(prof, e)
		}
	}
	return r.stageProfile(prof, evs, upload, execute, download, wait)
}

// stageProfile appends the upload, execute, download and wait stages to
// prof.
func (r *InferRequest) stageProfile(prof []driver.ProfilingInfo, evs *events, upload, execute, download, wait time.Duration) ([]driver.ProfilingInfo, error) {
	stage := func(name string, list []*cl.Event, host time.Duration) error {
		var dev time.Duration
		for _, ev := range list {
			p, err := ev.Profile()
			if err != nil {
				return err
			}
			dev += max(p.Duration(), 0)
		}
		prof = append(prof, driver.ProfilingInfo{NodeName: name, NodeType: "Stage", ExecType: "opencl", Status: driver.Executed, RealTime: dev, CPUTime: host})
		return nil
	}
	if err := stage("upload", evs.upload, upload); err != nil {
		return nil, err
	}
	if err := stage("execute", append(append([]*cl.Event(nil), evs.kernels...), evs.copies...), execute); err != nil {
		return nil, err
	}
	if err := stage("download", evs.download, download); err != nil {
		return nil, err
	}
	prof = append(prof, driver.ProfilingInfo{NodeName: "wait", NodeType: "Stage", ExecType: "clWaitForEvents", Status: driver.Executed, RealTime: wait, CPUTime: wait})
	return prof, nil
}

// ProfilingInfo returns per-kernel entries and the upload, execute,
// download and wait stages of the last Infer when ENABLE_PROFILING is on.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo {
	return r.core.ProfilingInfo()
}

// Close releases the request's queue, buffers and kernels. It fails with
// driver.ErrBusy while Infer runs and is idempotent.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	if r.core.Busy {
		r.core.Mu.Unlock()
		return fmt.Errorf("gpu: close infer request: %w", driver.ErrBusy)
	}
	r.core.Closed = true
	err := r.releaseLocked()
	r.core.Mu.Unlock()
	r.c.forget(r)
	if err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close infer request: %w", err)
	}
	return nil
}

// release frees the device resources; later calls do nothing. The
// compiled model's Close calls it: the request is not closed (its host
// tensors stay readable, its Infer fails with the model's ErrClosed).
func (r *InferRequest) release() error {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	return r.releaseLocked()
}

// releaseLocked is release with r.core.Mu held.
func (r *InferRequest) releaseLocked() error {
	if r.released {
		return nil
	}
	r.released = true
	var errs []error
	errs = append(errs, r.drainPendingLocked())
	for _, st := range r.states {
		errs = append(errs, st.close(r.c.ctx))
	}
	r.states = nil
	errs = append(errs, r.releaseConts())
	errs = append(errs, r.releaseStates())
	if r.queue != nil && r.ownQueue {
		errs = append(errs, r.queue.Close())
	}
	r.queue = nil
	return errors.Join(errs...)
}
