package driver

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// RequestTracker counts the running requests of a compiled model so that
// the model's Close can wait for them: requests call Add when a run starts
// and Done when it ends; Close refuses new runs and waits. Devices embed
// one in their compiled model (or use Pipeline, which has one). Its zero
// value is ready; it is safe for concurrent use.
type RequestTracker struct {
	mu      sync.Mutex
	closed  bool
	running int
	wg      sync.WaitGroup
}

// Add counts a run that starts. After Close it is an error wrapping
// ErrClosed.
func (t *RequestTracker) Add() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errorf(ErrClosed, "plugin: compiled model is closed")
	}
	t.running++
	t.wg.Add(1)
	return nil
}

// Done counts a run that ended.
func (t *RequestTracker) Done() {
	t.mu.Lock()
	t.running--
	t.mu.Unlock()
	t.wg.Done()
}

// Running returns the number of runs in progress.
func (t *RequestTracker) Running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

// Close makes later Adds fail and waits for the runs in progress. It is
// idempotent; it must not be called from a request's callback.
func (t *RequestTracker) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// PipelineConfig describes the executors of a Pipeline.
type PipelineConfig struct {
	// Device names the device in executor names and traces ("CPU").
	Device string
	// Streams is the number of task-executor streams (see PlanStreams).
	Streams int
	// WaitStreams is the number of wait-executor streams; 0 means no wait
	// executor (stages of that kind run on the task executor).
	WaitStreams int
	// CallbackStreams is the number of callback-executor streams; values
	// below 1 mean Streams.
	CallbackStreams int
}

// Pipeline is what a compiled model's asynchronous requests share: a task
// executor, an optional wait executor and a callback executor (from the
// plugin's ExecutorManager, or its own), and a RequestTracker so that
// Close waits for running requests. A device's compiled model makes one
// when it compiles, creates requests with NewRequest and calls Close first
// thing in its own Close.
type Pipeline struct {
	tracker RequestTracker
	mgr     *ExecutorManager
	device  string
	execs   map[string]*Executor
	nextID  atomic.Int64
	once    sync.Once
	err     error
}

// NewPipeline acquires the executors cfg describes from mgr; a nil mgr
// gives the pipeline executors of its own, which Close stops. Executors
// are named DEVICE.KIND.STREAMS ("CPU.task.2"), so compiled models with the
// same stream count share them.
func NewPipeline(mgr *ExecutorManager, cfg PipelineConfig) (*Pipeline, error) {
	p := &Pipeline{mgr: mgr, device: cfg.Device, execs: map[string]*Executor{}}
	streams := max(cfg.Streams, 1)
	cbStreams := cfg.CallbackStreams
	if cbStreams < 1 {
		cbStreams = streams
	}
	cfgs := map[string]ExecutorConfig{
		ExecutorTask:     TaskExecutorConfig(fmt.Sprintf("%s.%s.%d", cfg.Device, ExecutorTask, streams), streams),
		ExecutorCallback: CallbackExecutorConfig(fmt.Sprintf("%s.%s.%d", cfg.Device, ExecutorCallback, cbStreams), cbStreams),
	}
	if cfg.WaitStreams > 0 {
		cfgs[ExecutorWait] = WaitExecutorConfig(fmt.Sprintf("%s.%s.%d", cfg.Device, ExecutorWait, cfg.WaitStreams), cfg.WaitStreams)
	}
	for _, kind := range sortedNames(cfgs) {
		c := cfgs[kind]
		if mgr == nil {
			p.execs[kind] = NewExecutor(c)
			continue
		}
		e, err := mgr.Acquire(c)
		if err != nil {
			_ = p.release()
			return nil, fmt.Errorf("plugin: pipeline for %s: %w", cfg.Device, err)
		}
		p.execs[kind] = e
	}
	return p, nil
}

// Executor returns the pipeline's executor of that kind, or nil.
func (p *Pipeline) Executor(kind string) *Executor { return p.execs[kind] }

// Running returns the number of runs in progress.
func (p *Pipeline) Running() int { return p.tracker.Running() }

// NewRequest wraps sync in an AsyncInferRequest on the pipeline's
// executors, tracked by the pipeline, with a fresh ID; opts are applied
// after the pipeline's own (WithExecutor overrides an executor). After
// Close it fails with ErrClosed.
func (p *Pipeline) NewRequest(sync InferRequest, opts ...AsyncOption) (*AsyncInferRequest, error) {
	p.tracker.mu.Lock()
	closed := p.tracker.closed
	p.tracker.mu.Unlock()
	if closed {
		return nil, errorf(ErrClosed, "plugin: %s compiled model is closed", p.device)
	}
	base := []AsyncOption{WithTracker(&p.tracker), WithDevice(p.device), WithRequestID(int(p.nextID.Add(1)))}
	for kind, e := range p.execs {
		base = append(base, WithExecutor(kind, e))
	}
	return NewAsyncInferRequest(sync, append(base, opts...)...), nil
}

// Close refuses new runs, waits for the running ones (callbacks included)
// and releases the executors. It is idempotent and returns the first
// call's error; it must not be called from a request's callback.
func (p *Pipeline) Close() error {
	p.once.Do(func() {
		p.tracker.Close()
		p.err = p.release()
	})
	return p.err
}

func (p *Pipeline) release() error {
	var errs []error
	for _, kind := range sortedNames(p.execs) {
		e := p.execs[kind]
		if p.mgr == nil {
			errs = append(errs, e.Close())
		} else if err := p.mgr.Release(e); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
