package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/tensor"
)

// ErrCallback is wrapped by the error Wait returns when a request's
// callback panicked.
var ErrCallback = errors.New("plugin: callback failed")

// Stage is one step of an inference, bound to the kind of executor it runs
// on. A GPU request's stages are preprocess (task), upload and enqueue
// (task, non-blocking), wait (wait executor, on the device's events) and
// download/postprocess (task); the CPU's are preprocess, infer and
// postprocess, all on the task executor.
type Stage struct {
	// Name names the stage in traces and errors ("preprocess").
	Name string
	// Executor is the kind of executor the stage runs on: ExecutorTask or
	// ExecutorWait. A kind the request has no executor for falls back to
	// the task executor.
	Executor string
	// Run does the stage's work. It must return promptly with ctx's error
	// (wrapped) once ctx is done.
	Run func(ctx context.Context) error
}

// Stager is implemented by sync requests that split an inference into
// stages. Stages returns the stages of one inference, in order; the
// asynchronous request calls it once per run, runs the stages one after
// another and stops at the first error, so the stages of one call may
// share state through their closures. Running the stages in order on one
// goroutine must be equivalent to the request's Infer. Stages must not
// change what SetTensor bound.
//
// A request that is not a Stager runs as one stage, "infer", on the task
// executor.
type Stager interface {
	Stages() []Stage
}

// Aborter is implemented by Stagers whose runs can leave work behind when
// they stop before their last stage (a stage failed, or ctx was done
// between stages and the rest were skipped): the asynchronous request
// calls Abort once such a run has stopped and before it reports the run's
// result, so that nothing of the run is still going on by then (a GPU
// request drains its queue).
type Aborter interface {
	Abort() error
}

// AsyncCompiledModel is implemented by compiled models that hand out
// asynchronous requests running on the model's executors; closing such a
// model waits for its running requests. Options given here override the
// model's (a test may pass its own executor).
type AsyncCompiledModel interface {
	CreateAsyncInferRequest(opts ...AsyncOption) (*AsyncInferRequest, error)
}

// CreateAsyncInferRequest returns an asynchronous request of cm: from
// AsyncCompiledModel when cm implements it, and otherwise a new sync request
// wrapped by NewAsyncInferRequest with opts (whose stages then run on the
// executors given in opts, or on the request's own goroutine).
func CreateAsyncInferRequest(cm CompiledModel, opts ...AsyncOption) (*AsyncInferRequest, error) {
	if ac, ok := cm.(AsyncCompiledModel); ok {
		return ac.CreateAsyncInferRequest(opts...)
	}
	r, err := cm.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	return NewAsyncInferRequest(r, opts...), nil
}

// AsyncOption configures an AsyncInferRequest.
type AsyncOption func(*asyncOptions)

type asyncOptions struct {
	execs   map[string]*Executor
	tracker *RequestTracker
	tracer  *Tracer
	device  string
	id      int
	hasID   bool
	wrap    []func(Stage) Stage
}

// WithExecutor runs the stages of that kind (ExecutorTask, ExecutorWait,
// ExecutorCallback) on e. The request does not own e: it neither starts nor
// closes it.
func WithExecutor(kind string, e *Executor) AsyncOption {
	return func(o *asyncOptions) {
		if o.execs == nil {
			o.execs = map[string]*Executor{}
		}
		o.execs[kind] = e
	}
}

// WithTracker counts the request's runs in t, so that t.Close (called by
// the compiled model's Close) waits for them and later starts fail.
func WithTracker(t *RequestTracker) AsyncOption {
	return func(o *asyncOptions) { o.tracker = t }
}

// WithTracer records every stage the request runs in t.
func WithTracer(t *Tracer) AsyncOption {
	return func(o *asyncOptions) { o.tracer = t }
}

// WithDevice names the device in traces.
func WithDevice(name string) AsyncOption {
	return func(o *asyncOptions) { o.device = name }
}

// WithStageMiddleware passes every stage through f before it runs
// (instrumentation, fault injection in tests); middlewares apply in the
// order given.
func WithStageMiddleware(f func(Stage) Stage) AsyncOption {
	return func(o *asyncOptions) { o.wrap = append(o.wrap, f) }
}

// WithRequestID sets the request's ID (the thread of its trace events).
func WithRequestID(id int) AsyncOption {
	return func(o *asyncOptions) { o.id, o.hasID = id, true }
}

// nextRequestID numbers requests that get no WithRequestID.
var nextRequestID atomic.Int64

// AsyncInferRequest runs a sync request's stages on executors so that the
// stages of different requests overlap. StartAsync returns at once; Wait,
// WaitFor or the callback report the result. It also implements
// InferRequest: Infer runs the same stages on the caller's goroutine and
// never calls the callback. It is safe for concurrent use.
//
// Each StartAsync starts one goroutine that drives the run: it hands each
// stage to its executor, waits for it, then runs the callback on the
// callback executor, and exits; Wait, Close and the RequestTracker wait for
// it.
type AsyncInferRequest struct {
	sync InferRequest
	opts asyncOptions
	id   int

	mu       sync.Mutex
	closed   bool
	busy     bool      // stages are running (StartAsync or Infer)
	inline   bool      // the stages running are Infer's, on its caller's goroutine
	run      *asyncRun // the latest run StartAsync started
	runs     int64
	callback func(error)
	drivers  sync.WaitGroup
	// inCallback counts, per goroutine ID, the request's callbacks that
	// goroutine is running, so that Wait and Close called from inside one
	// (which would wait for themselves) fail with ErrBusy at once.
	inCallback map[uint64]int
}

// asyncRun is one StartAsync.
type asyncRun struct {
	n      int64
	cancel context.CancelFunc
	done   chan struct{} // closed when stages and callback are over
	err    error         // set before done is closed
}

var _ InferRequest = (*AsyncInferRequest)(nil)

// NewAsyncInferRequest wraps sync. Its stages come from sync's Stager
// implementation (one "infer" stage otherwise) and run on the executors
// given with WithExecutor; stages whose executor kind is missing run on the
// task executor, and without one on the run's own goroutine. The request
// owns sync: Close closes it.
func NewAsyncInferRequest(sync InferRequest, opts ...AsyncOption) *AsyncInferRequest {
	r := &AsyncInferRequest{sync: sync}
	for _, o := range opts {
		o(&r.opts)
	}
	r.id = r.opts.id
	if !r.opts.hasID {
		r.id = int(nextRequestID.Add(1))
	}
	return r
}

// ID returns the request's ID (the tid of its trace events).
func (r *AsyncInferRequest) ID() int { return r.id }

// Streams returns the number of streams of the request's task executor, or
// 0 when its stages run on its own goroutine.
func (r *AsyncInferRequest) Streams() int {
	if e := r.opts.execs[ExecutorTask]; e != nil {
		return e.Config().Streams
	}
	return 0
}

// Sync returns the wrapped request.
func (r *AsyncInferRequest) Sync() InferRequest { return r.sync }

// stages returns the stages of one run.
func (r *AsyncInferRequest) stages() []Stage {
	var stages []Stage
	if s, ok := r.sync.(Stager); ok {
		stages = s.Stages()
	} else {
		stages = []Stage{{Name: "infer", Executor: ExecutorTask, Run: r.sync.Infer}}
	}
	for _, w := range r.opts.wrap {
		for i := range stages {
			stages[i] = w(stages[i])
		}
	}
	return stages
}

// executor returns the executor for a stage kind, or nil to run inline.
func (r *AsyncInferRequest) executor(kind string) *Executor {
	if e := r.opts.execs[kind]; e != nil {
		return e
	}
	return r.opts.execs[ExecutorTask]
}

// closedErr is the error of a method called after Close.
func (r *AsyncInferRequest) closedErr(what string) error {
	return errorf(ErrClosed, "plugin: request %d is closed (%s)", r.id, what)
}

// usable reports ErrClosed or ErrBusy; r.mu is held.
func (r *AsyncInferRequest) usable(what string) error {
	if r.closed {
		return r.closedErr(what)
	}
	if r.busy {
		return errorf(ErrBusy, "plugin: request %d is running (%s)", r.id, what)
	}
	return nil
}

// StartAsync starts a run and returns without waiting for it. The run
// stops early, with an error wrapping context.Canceled, when ctx is
// cancelled or Cancel is called; ctx must stay valid until the run ends. A
// running request is an error wrapping ErrBusy, a closed one ErrClosed (as
// is a compiled model being closed); a done ctx returns its error and
// starts nothing.
func (r *AsyncInferRequest) StartAsync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plugin: request %d: start: %w", r.id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable("start"); err != nil {
		return err
	}
	if t := r.opts.tracker; t != nil {
		if err := t.Add(); err != nil {
			return fmt.Errorf("plugin: request %d: start: %w", r.id, err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.runs++
	run := &asyncRun{n: r.runs, cancel: cancel, done: make(chan struct{})}
	r.run = run
	r.busy = true
	stages := r.stages()
	r.drivers.Add(1)
	// The driver exits when the stages and the callback are over; stages
	// return promptly once runCtx is done (Cancel, Close, ctx).
	go r.drive(runCtx, run, stages)
	return nil
}

// drive runs one StartAsync: the stages on their executors, then the
// callback.
func (r *AsyncInferRequest) drive(ctx context.Context, run *asyncRun, stages []Stage) {
	defer r.drivers.Done()
	if t := r.opts.tracker; t != nil {
		defer t.Done()
	}
	err := r.runStages(ctx, run.n, stages, false)
	run.cancel()

	r.mu.Lock()
	r.busy = false
	cb := r.callback
	r.mu.Unlock()
	if cb != nil {
		err = errors.Join(err, r.runCallback(cb, err))
	}
	run.err = err
	close(run.done)
}

// runStages runs stages in order, on their executors or, when inline, on
// the calling goroutine.
func (r *AsyncInferRequest) runStages(ctx context.Context, n int64, stages []Stage, inline bool) error {
	for _, st := range stages {
		if err := ctx.Err(); err != nil {
			return r.abort(fmt.Errorf("plugin: request %d: stage %q not started: %w", r.id, st.Name, err))
		}
		var e *Executor
		if !inline {
			e = r.executor(st.Executor)
		}
		execName := "inline"
		if e != nil {
			execName = e.Name()
		}
		f := func(ctx context.Context) error {
			start := time.Now()
			err := st.Run(ctx)
			if tr := r.opts.tracer; tr != nil {
				tr.Record(TraceEvent{Device: r.opts.device, Request: r.id, Run: n, Stage: st.Name, Executor: execName, Start: start, Duration: time.Since(start), Err: err})
			}
			return err
		}
		var err error
		if e != nil {
			err = e.Run(ctx, f)
		} else {
			err = f(ctx)
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				return r.abort(fmt.Errorf("plugin: request %d: stage %q: %w (%w)", r.id, st.Name, err, cerr))
			}
			return r.abort(fmt.Errorf("plugin: request %d: stage %q: %w", r.id, st.Name, err))
		}
	}
	return nil
}

// abort lets the wrapped request clean up after a run that stopped early
// (Aborter) and returns err with what that cleanup reported.
func (r *AsyncInferRequest) abort(err error) error {
	if a, ok := r.sync.(Aborter); ok {
		if aerr := a.Abort(); aerr != nil {
			return errors.Join(err, fmt.Errorf("plugin: request %d: cleaning up after the run: %w", r.id, aerr))
		}
	}
	return err
}

// Cancel stops the run StartAsync started: stages not yet started are
// skipped, the running one sees its ctx done, and Wait returns an error
// wrapping context.Canceled. The callback still runs (with that error).
// Before a start, after the run's stages, or during Infer it does nothing.
// The request is reusable afterwards.
func (r *AsyncInferRequest) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != nil && r.busy {
		r.run.cancel()
	}
}

// Wait waits for the latest run StartAsync started, including its
// callback, and returns its error: a stage's error, a cancellation, or a
// callback panic. Without a start it returns nil at once. If ctx is done
// first it returns ctx's error and the run goes on. After Close it returns
// an error wrapping ErrClosed (Close has waited for the run). From the
// request's own callback it returns an error wrapping ErrBusy at once.
func (r *AsyncInferRequest) Wait(ctx context.Context) error {
	r.mu.Lock()
	run, closed := r.run, r.closed
	busy := r.fromCallbackLocked("Wait")
	r.mu.Unlock()
	if closed {
		return r.closedErr("wait")
	}
	if busy != nil {
		return busy
	}
	if run == nil {
		return nil
	}
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return fmt.Errorf("plugin: request %d: wait: %w", r.id, ctx.Err())
	}
}

// WaitFor waits at most d for the latest run and reports whether it is over
// and, if so, its error. WaitFor(0) only looks: (false, nil) while the run
// is going on. Without a start it returns (true, nil); after Close, true
// and an error wrapping ErrClosed; from the request's own callback, false
// and an error wrapping ErrBusy.
func (r *AsyncInferRequest) WaitFor(d time.Duration) (done bool, err error) {
	r.mu.Lock()
	run, closed := r.run, r.closed
	busy := r.fromCallbackLocked("WaitFor")
	r.mu.Unlock()
	if closed {
		return true, r.closedErr("wait")
	}
	if busy != nil {
		return false, busy
	}
	if run == nil {
		return true, nil
	}
	if d <= 0 {
		select {
		case <-run.done:
			return true, run.err
		default:
			return false, nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-run.done:
		return true, run.err
	case <-t.C:
		return false, nil
	}
}

// Infer runs the stages on the calling goroutine and returns the first
// error; the callback is not called. A running request is an error
// wrapping ErrBusy. The compiled model's Close (through the request's
// RequestTracker) waits for it as for a StartAsync.
func (r *AsyncInferRequest) Infer(ctx context.Context) error {
	r.mu.Lock()
	if err := r.usable("infer"); err != nil {
		r.mu.Unlock()
		return err
	}
	// The compiled model's Close waits for Infer as for a StartAsync: the
	// stages use what it releases.
	if t := r.opts.tracker; t != nil {
		if err := t.Add(); err != nil {
			r.mu.Unlock()
			return fmt.Errorf("plugin: request %d: infer: %w", r.id, err)
		}
		defer t.Done()
	}
	r.busy, r.inline = true, true
	r.runs++
	n := r.runs
	stages := r.stages()
	r.mu.Unlock()
	err := r.runStages(ctx, n, stages, true)
	r.mu.Lock()
	r.busy, r.inline = false, false
	r.mu.Unlock()
	return err
}

// SetTensor binds a tensor as the wrapped request's SetTensor does; while
// the request runs it is an error wrapping ErrBusy.
func (r *AsyncInferRequest) SetTensor(name string, t *tensor.Tensor) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(fmt.Sprintf("set tensor %q", name)); err != nil {
		return err
	}
	return r.sync.SetTensor(name, t)
}

// SetRemoteTensor binds a remote tensor on the wrapped request (see
// RemoteBinder); it fails with ErrBusy while a run is in progress, and
// with ErrNotImplemented when the device takes host tensors only.
func (r *AsyncInferRequest) SetRemoteTensor(name string, t RemoteTensor) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(fmt.Sprintf("set remote tensor %q", name)); err != nil {
		return err
	}
	rb, ok := r.sync.(RemoteBinder)
	if !ok {
		rt := "<nil>"
		if t != nil {
			rt = fmt.Sprintf("%q of %s", t.Name(), t.DeviceName())
		}
		return errorf(ErrNotImplemented, "plugin: set remote tensor %s for port %q: device %s takes host tensors only; copy it into a host tensor (RemoteTensor.CopyTo) and bind that with SetTensor", rt, name, r.opts.device)
	}
	return rb.SetRemoteTensor(name, t)
}

// RemoteTensor returns the remote tensor bound to a port of the wrapped
// request (see RemoteBinder).
func (r *AsyncInferRequest) RemoteTensor(name string) (RemoteTensor, error) {
	if r.isClosed() {
		return nil, r.closedErr(fmt.Sprintf("remote tensor %q", name))
	}
	rb, ok := r.sync.(RemoteBinder)
	if !ok {
		return nil, errorf(ErrNotImplemented, "plugin: device %s takes host tensors only: no remote tensor for %q", r.opts.device, name)
	}
	return rb.RemoteTensor(name)
}

// QueryState returns the wrapped request's states (see Stateful); none
// when its model is not stateful.
func (r *AsyncInferRequest) QueryState() []VariableState {
	if s, ok := r.sync.(Stateful); ok {
		return s.QueryState()
	}
	return nil
}

// Transfers returns the wrapped request's transfers of its last run (see
// TransferCounter); zero when the device does not count them.
func (r *AsyncInferRequest) Transfers() Transfers {
	if tc, ok := r.sync.(TransferCounter); ok {
		return tc.Transfers()
	}
	return Transfers{}
}

// Tensor returns the wrapped request's tensor; outputs are valid once Wait
// has returned nil. After Close it is an error wrapping ErrClosed.
func (r *AsyncInferRequest) Tensor(name string) (*tensor.Tensor, error) {
	if r.isClosed() {
		return nil, r.closedErr(fmt.Sprintf("tensor %q", name))
	}
	return r.sync.Tensor(name)
}

// ProfilingInfo returns the wrapped request's profile of its last run;
// nothing after Close.
func (r *AsyncInferRequest) ProfilingInfo() []ProfilingInfo {
	if r.isClosed() {
		return nil
	}
	return r.sync.ProfilingInfo()
}

// isClosed reports whether Close was called.
func (r *AsyncInferRequest) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Running reports whether the request's stages are running.
func (r *AsyncInferRequest) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy
}

// Close cancels a run StartAsync started, waits for it (callback
// included) and closes the wrapped request. Later calls return nil; other
// methods fail with ErrClosed. While Infer runs, and from the request's
// own callback (where it would wait for itself), it returns an error
// wrapping ErrBusy and the request stays open.
func (r *AsyncInferRequest) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	if err := r.fromCallbackLocked("Close"); err != nil {
		r.mu.Unlock()
		return err
	}
	if r.inline {
		r.mu.Unlock()
		return errorf(ErrBusy, "plugin: request %d: close while Infer runs", r.id)
	}
	r.closed = true
	if r.run != nil && r.busy {
		r.run.cancel()
	}
	r.mu.Unlock()
	r.drivers.Wait()
	return r.sync.Close()
}
