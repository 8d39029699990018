package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// gpuLike is a sync request with GPU-shaped stages: upload on the task
// executor, wait on the wait executor (blocking until gate is closed, as a
// device event would), download on the task executor. It records the
// order in which stages ran.
type gpuLike struct {
	name string
	gate <-chan struct{} // the wait stage blocks on it; nil: no blocking
	mu   *sync.Mutex
	log  *[]string
}

func (g *gpuLike) record(s string) {
	g.mu.Lock()
	*g.log = append(*g.log, g.name+"."+s)
	g.mu.Unlock()
}

func (g *gpuLike) Stages() []driver.Stage {
	return []driver.Stage{
		{Name: "upload", Executor: driver.ExecutorTask, Run: func(context.Context) error { g.record("upload"); return nil }},
		{Name: "wait", Executor: driver.ExecutorWait, Run: func(ctx context.Context) error {
			if g.gate != nil {
				select {
				case <-g.gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			g.record("wait")
			return nil
		}},
		{Name: "download", Executor: driver.ExecutorTask, Run: func(context.Context) error { g.record("download"); return nil }},
	}
}

func (g *gpuLike) SetTensor(string, *tensor.Tensor) error { return nil }
func (g *gpuLike) Tensor(string) (*tensor.Tensor, error)  { return nil, driver.ErrNotFound }
func (g *gpuLike) ProfilingInfo() []driver.ProfilingInfo  { return nil }
func (g *gpuLike) Close() error                           { return nil }
func (g *gpuLike) Infer(ctx context.Context) error        { return errNoSyncInfer }

var errNoSyncInfer = driver.Errorf(driver.ErrNotImplemented, "gpuLike: Infer is not used: stages are")

// TestStagesOfRequestsOverlap: request A's wait stage cannot finish until
// request B has uploaded, which only works if B's upload runs on the task
// executor while A waits on the wait executor; the trace shows the
// overlap.
func TestStagesOfRequestsOverlap(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, err := driver.NewPipeline(nil, driver.PipelineConfig{Device: "FAKEGPU", Streams: 1, WaitStreams: 2})
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	tr := driver.NewTracer(0)
	var mu sync.Mutex
	var log []string
	gate := make(chan struct{})
	a, err := p.NewRequest(&gpuLike{name: "A", gate: gate, mu: &mu, log: &log}, driver.WithTracer(tr))
	require.NoError(t, err)
	b, err := p.NewRequest(&gpuLike{name: "B", mu: &mu, log: &log}, driver.WithTracer(tr),
		driver.WithStageMiddleware(func(s driver.Stage) driver.Stage {
			if s.Name == "upload" {
				run := s.Run
				s.Run = func(ctx context.Context) error { err := run(ctx); close(gate); return err }
			}
			return s
		}))
	require.NoError(t, err)
	defer a.Close()
	defer b.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.StartAsync(ctx))
	// A is now in (or queued for) its wait stage; B uploads meanwhile.
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(log) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, b.StartAsync(ctx))
	require.NoError(t, a.Wait(ctx))
	require.NoError(t, b.Wait(ctx))
	mu.Lock()
	// A's wait can only end after B's upload; B's own wait may race A's
	// once the gate is open (two wait streams), so only that order is fixed.
	assert.Equal(t, []string{"A.upload", "B.upload"}, log[:2])
	assert.Greater(t, slices.Index(log, "A.wait"), slices.Index(log, "B.upload"))
	assert.ElementsMatch(t, []string{"A.upload", "B.upload", "A.wait", "A.download", "B.wait", "B.download"}, log)
	mu.Unlock()

	// The trace: A's wait overlaps B's upload, and each stage names its
	// executor.
	evs := tr.Events()
	require.Len(t, evs, 6)
	find := func(req int, stage string) driver.TraceEvent {
		for _, ev := range evs {
			if ev.Request == req && ev.Stage == stage {
				return ev
			}
		}
		require.FailNow(t, "no trace event", "request %d stage %s", req, stage)
		return driver.TraceEvent{}
	}
	aw, bu := find(a.ID(), "wait"), find(b.ID(), "upload")
	assert.Equal(t, "FAKEGPU.wait.2", aw.Executor)
	assert.Equal(t, "FAKEGPU.task.1", bu.Executor)
	assert.True(t, bu.Start.Before(aw.Start.Add(aw.Duration)), "B's upload started after A's wait ended: no overlap")
	assert.Equal(t, "FAKEGPU", aw.Device)

	var buf bytes.Buffer
	require.NoError(t, tr.WriteChromeTrace(&buf))
	var ct struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Ts   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &ct))
	complete, tids := 0, map[int]bool{}
	var procName string
	for _, e := range ct.TraceEvents {
		switch e.Ph {
		case "X":
			complete++
			tids[e.Tid] = true
			assert.GreaterOrEqual(t, e.Ts, 0.0)
			assert.GreaterOrEqual(t, e.Dur, 0.0)
			assert.Equal(t, 1, e.Pid)
			assert.Contains(t, e.Args, "executor")
		case "M":
			if e.Name == "process_name" {
				procName, _ = e.Args["name"].(string)
			}
		}
	}
	assert.Equal(t, 6, complete)
	assert.Equal(t, map[int]bool{a.ID(): true, b.ID(): true}, tids, "one thread per request")
	assert.Equal(t, "FAKEGPU", procName)

	sum := tr.Summary()
	require.Len(t, sum, 3)
	for _, s := range sum {
		assert.Equal(t, 2, s.Count, "stage %s", s.Stage)
	}
}

func TestTracerLimit(t *testing.T) {
	tr := driver.NewTracer(2)
	now := time.Now()
	for i := range 5 {
		tr.Record(driver.TraceEvent{Device: "D", Request: 1, Stage: "s", Start: now.Add(time.Duration(5-i) * time.Millisecond)})
	}
	evs := tr.Events()
	require.Len(t, evs, 2)
	assert.True(t, evs[0].Start.Before(evs[1].Start), "events are sorted by start")
	assert.Equal(t, int64(3), tr.Dropped())
	tr.Reset()
	assert.Empty(t, tr.Events())
	ct := tr.ChromeTrace()
	assert.NotNil(t, ct.TraceEvents, "an empty trace still has a traceEvents array")
}

// TestAsyncWithoutExecutors: a request with no executors runs its stages
// on its own goroutine, which ends with the run.
func TestAsyncWithoutExecutors(t *testing.T) {
	defer goleak.VerifyNone(t)
	var mu sync.Mutex
	var log []string
	r := driver.NewAsyncInferRequest(&gpuLike{name: "R", mu: &mu, log: &log})
	done := make(chan error, 1)
	r.SetCallback(func(err error) { done <- err })
	require.NoError(t, r.StartAsync(context.Background()))
	require.NoError(t, r.Wait(context.Background()))
	assert.NoError(t, <-done)
	assert.Equal(t, []string{"R.upload", "R.wait", "R.download"}, log)
	// Sync Infer runs the stages too, without the callback.
	require.NoError(t, r.Infer(context.Background()))
	assert.Len(t, log, 6)
	assert.Empty(t, done)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.StartAsync(context.Background()), driver.ErrClosed)
	assert.ErrorIs(t, r.SetTensor("x", nil), driver.ErrClosed)
	assert.NoError(t, r.Close())
}

// TestRequestCloseCancelsRun: closing a request whose run waits on a
// device event cancels the run and waits for it; the pipeline then has
// nothing running and closes at once.
func TestRequestCloseCancelsRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, err := driver.NewPipeline(nil, driver.PipelineConfig{Device: "D", Streams: 1, WaitStreams: 1})
	require.NoError(t, err)
	var mu sync.Mutex
	var log []string
	r, err := p.NewRequest(&gpuLike{name: "R", gate: make(chan struct{}), mu: &mu, log: &log})
	require.NoError(t, err)
	runErr := make(chan error, 1)
	r.SetCallback(func(err error) { runErr <- err })
	require.NoError(t, r.StartAsync(context.Background()))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(log) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, p.Running())
	require.NoError(t, r.Close(), "Close cancels the run blocked in its wait stage")
	select {
	case err := <-runErr:
		assert.ErrorIs(t, err, context.Canceled, "the run Close cancelled")
	default:
		assert.Fail(t, "Close returned before the run's callback")
	}
	assert.ErrorIs(t, r.Wait(context.Background()), driver.ErrClosed, "Wait after Close")
	assert.Zero(t, p.Running())
	require.NoError(t, p.Close())
	_, err = p.NewRequest(&gpuLike{name: "S", mu: &mu, log: &log})
	assert.ErrorIs(t, err, driver.ErrClosed)
}

// abortable is a Stager whose first stage cancels the run's context (as a
// deadline expiring between stages would) and that counts Abort calls.
type abortable struct {
	gpuLike
	cancel func()
	aborts int
}

func (a *abortable) Stages() []driver.Stage {
	st := a.gpuLike.Stages()
	up := st[0].Run
	st[0].Run = func(ctx context.Context) error {
		err := up(ctx)
		a.cancel()
		return err
	}
	return st
}

func (a *abortable) Abort() error {
	a.aborts++
	return nil
}

// TestAbortAfterSkippedStages: a run whose ctx is done between stages skips
// the rest, and the request's Abort runs once before the run's error is
// reported, so a device can drain what the run left (a GPU queue); a run
// that completes does not call it.
func TestAbortAfterSkippedStages(t *testing.T) {
	defer goleak.VerifyNone(t)
	var mu sync.Mutex
	var log []string
	a := &abortable{gpuLike: gpuLike{name: "a", mu: &mu, log: &log}}
	r := driver.NewAsyncInferRequest(a)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	require.NoError(t, r.StartAsync(ctx))
	err := r.Wait(context.Background())
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), `stage "wait" not started`)
	assert.Equal(t, 1, a.aborts, "Abort ran once, before Wait returned")
	assert.Equal(t, []string{"a.upload"}, log)

	a.cancel = func() {}
	require.NoError(t, r.StartAsync(context.Background()))
	require.NoError(t, r.Wait(context.Background()))
	assert.Equal(t, 1, a.aborts, "a complete run does not abort")
}
