package driver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Executor kinds: the roles a Stage names to say where it runs.
const (
	// ExecutorTask runs host work: preprocessing, enqueueing device work,
	// postprocessing, and whole inferences on the CPU.
	ExecutorTask = "task"
	// ExecutorWait waits for device completion (events); its tasks block
	// without using a core, so it has more streams than there are cores.
	ExecutorWait = "wait"
	// ExecutorCallback runs the user callbacks of asynchronous requests.
	ExecutorCallback = "callback"
)

// ExecutorConfig describes an Executor.
type ExecutorConfig struct {
	// Name identifies the executor in Stats, traces and the ExecutorManager
	// ("CPU.task.4"). An ExecutorManager shares executors by name.
	Name string
	// Streams is the number of tasks that run at once (worker goroutines);
	// values below 1 mean 1.
	Streams int
	// Queue is the number of tasks that may wait for a free stream; beyond
	// it Submit and Run block (honouring their ctx). Values below 0 mean 0:
	// a submitter waits until a stream takes its task.
	Queue int
}

// TaskExecutorConfig returns the configuration of a task executor with the
// given number of streams and a queue of twice as many tasks.
func TaskExecutorConfig(name string, streams int) ExecutorConfig {
	streams = max(streams, 1)
	return ExecutorConfig{Name: name, Streams: streams, Queue: 2 * streams}
}

// WaitExecutorConfig returns the configuration of a wait executor: its tasks
// block on device events, so it gets one stream per request that may be in
// flight (requests) and a queue as long.
func WaitExecutorConfig(name string, requests int) ExecutorConfig {
	requests = max(requests, 1)
	return ExecutorConfig{Name: name, Streams: requests, Queue: requests}
}

// CallbackExecutorConfig returns the configuration of a callback executor:
// streams callbacks at once. A callback that waits for another request whose
// callback is queued behind it would wait forever with one stream, so give
// it as many streams as callbacks may wait on each other.
func CallbackExecutorConfig(name string, streams int) ExecutorConfig {
	streams = max(streams, 1)
	return ExecutorConfig{Name: name, Streams: streams, Queue: 4 * streams}
}

// ExecutorStats are an executor's counters, like sql.DBStats.
type ExecutorStats struct {
	Name    string
	Streams int // worker goroutines
	Queue   int // queue capacity

	Running int // tasks running now
	Queued  int // tasks waiting for a stream now

	Submitted int64 // tasks accepted since the executor started
	Completed int64 // tasks that ran to the end (with or without an error)
	Abandoned int64 // tasks whose ctx was done before a stream took them

	// WaitCount and WaitDuration count submitters that found the queue
	// full and the total time they waited for room.
	WaitCount    int64
	WaitDuration time.Duration
}

// Executor runs tasks on a fixed number of streams (worker goroutines) fed
// by a bounded queue: at most Streams tasks run and at most Queue wait; a
// submitter beyond that blocks until there is room or its ctx is done, the
// semaphore pattern of errgroup.SetLimit and net/http's connection limits.
//
// The workers start in NewExecutor and exit in Close, after the queue is
// drained; no goroutine of the executor outlives Close.
type Executor struct {
	cfg   ExecutorConfig
	tasks chan *execTask
	quit  chan struct{} // closed by Close: blocked submitters give up

	mu      sync.RWMutex // guards closed against senders.Add
	closed  bool
	senders sync.WaitGroup // submitters between the closed check and the send
	workers sync.WaitGroup

	running, submitted, completed, abandoned, waitCount, waitNanos atomic.Int64
}

// Task states.
const (
	taskQueued int32 = iota
	taskRunning
	taskAbandoned
)

type execTask struct {
	ctx   context.Context // the submitter's; lives only as long as the call
	f     func(ctx context.Context) error
	state atomic.Int32
	done  chan error // buffered: the worker never blocks on it
}

// NewExecutor starts an executor's workers.
func NewExecutor(cfg ExecutorConfig) *Executor {
	cfg.Streams = max(cfg.Streams, 1)
	cfg.Queue = max(cfg.Queue, 0)
	e := &Executor{cfg: cfg, tasks: make(chan *execTask, cfg.Queue), quit: make(chan struct{})}
	e.workers.Add(cfg.Streams)
	for range cfg.Streams {
		// Each worker exits when Close closes e.tasks and the queue is
		// empty.
		go e.work()
	}
	return e
}

// Name returns the executor's name.
func (e *Executor) Name() string { return e.cfg.Name }

// Config returns the executor's configuration (with Streams and Queue
// normalised).
func (e *Executor) Config() ExecutorConfig { return e.cfg }

func (e *Executor) work() {
	defer e.workers.Done()
	for t := range e.tasks {
		if !t.state.CompareAndSwap(taskQueued, taskRunning) {
			continue // the submitter gave up; it reported ctx.Err()
		}
		var err error
		if err = t.ctx.Err(); err == nil {
			e.running.Add(1)
			err = e.call(t)
			e.running.Add(-1)
		}
		e.completed.Add(1)
		t.done <- err
	}
}

// call runs a task, turning a panic into an error so one bad task does
// not take the process down with a worker.
func (e *Executor) call(t *execTask) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plugin: executor %q: task panicked: %v", e.cfg.Name, r)
		}
	}()
	return t.f(t.ctx)
}

// enqueue puts t in the queue, waiting for room while ctx allows.
func (e *Executor) enqueue(ctx context.Context, t *execTask) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return errorf(ErrClosed, "plugin: executor %q is closed", e.cfg.Name)
	}
	e.senders.Add(1)
	e.mu.RUnlock()
	defer e.senders.Done()
	select {
	case e.tasks <- t:
		e.submitted.Add(1)
		return nil
	default:
	}
	start := time.Now()
	defer func() {
		e.waitCount.Add(1)
		e.waitNanos.Add(int64(time.Since(start)))
	}()
	select {
	case e.tasks <- t:
		e.submitted.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.quit:
		return errorf(ErrClosed, "plugin: executor %q is closed", e.cfg.Name)
	}
}

// Run runs f on one of the executor's streams and returns its error. It
// waits for room in the queue and, while f is still queued, for a stream;
// if ctx is done first it returns ctx.Err() and f never runs. Once f has
// started Run waits for it: f receives ctx and must honour it itself. A
// panic in f becomes an error. After Close, Run fails with ErrClosed.
func (e *Executor) Run(ctx context.Context, f func(ctx context.Context) error) error {
	t := &execTask{ctx: ctx, f: f, done: make(chan error, 1)}
	if err := e.enqueue(ctx, t); err != nil {
		return err
	}
	select {
	case err := <-t.done:
		return err
	case <-ctx.Done():
		if t.state.CompareAndSwap(taskQueued, taskAbandoned) {
			e.abandoned.Add(1)
			return ctx.Err()
		}
		return <-t.done
	}
}

// Submit queues f to run on one of the executor's streams and returns
// without waiting for it; it waits only for room in the queue, and returns
// ctx.Err() if ctx is done first. f runs with context.WithoutCancel(ctx)
// (values only), so a cancellation after Submit returned does not skip it.
// After Close, Submit fails with ErrClosed.
func (e *Executor) Submit(ctx context.Context, f func()) error {
	t := &execTask{ctx: context.WithoutCancel(ctx), f: func(context.Context) error { f(); return nil }, done: make(chan error, 1)}
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

// Stats returns the executor's counters.
func (e *Executor) Stats() ExecutorStats {
	return ExecutorStats{
		Name: e.cfg.Name, Streams: e.cfg.Streams, Queue: e.cfg.Queue,
		Running:      int(e.running.Load()),
		Queued:       len(e.tasks),
		Submitted:    e.submitted.Load(),
		Completed:    e.completed.Load(),
		Abandoned:    e.abandoned.Load(),
		WaitCount:    e.waitCount.Load(),
		WaitDuration: time.Duration(e.waitNanos.Load()),
	}
}

// Close stops accepting tasks, lets the queued ones run, and returns when
// every worker has exited. Submitters blocked on a full queue fail with
// ErrClosed. Close is idempotent; it must not be called from one of the
// executor's own tasks (it would wait for itself).
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.workers.Wait()
		return nil
	}
	e.closed = true
	close(e.quit)
	e.mu.Unlock()
	e.senders.Wait() // no send can be in progress past this point
	close(e.tasks)
	e.workers.Wait()
	return nil
}
