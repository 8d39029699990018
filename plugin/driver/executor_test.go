package driver_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/plugin/driver"
)

func TestExecutorRunsOnBoundedStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		name    string
		streams int
		tasks   int
	}{
		{"OneStream", 1, 20},
		{"TwoStreams", 2, 40},
		{"FourStreams", 4, 80},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := driver.NewExecutor(driver.TaskExecutorConfig("test.task", tc.streams))
			var running, peak atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, tc.tasks)
			for range tc.tasks {
				wg.Add(1)
				go func() { // exits when its Run returns
					defer wg.Done()
					errs <- e.Run(context.Background(), func(context.Context) error {
						n := running.Add(1)
						for {
							p := peak.Load()
							if n <= p || peak.CompareAndSwap(p, n) {
								break
							}
						}
						time.Sleep(time.Millisecond)
						running.Add(-1)
						return nil
					})
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				assert.NoError(t, err)
			}
			assert.LessOrEqual(t, int(peak.Load()), tc.streams, "more tasks ran at once than there are streams")
			st := e.Stats()
			assert.Equal(t, int64(tc.tasks), st.Submitted)
			assert.Equal(t, int64(tc.tasks), st.Completed)
			assert.Equal(t, tc.streams, st.Streams)
			assert.Zero(t, st.Running)
			assert.Zero(t, st.Queued)
			require.NoError(t, e.Close())
		})
	}
}

func TestExecutorReturnsTaskErrorAndPanic(t *testing.T) {
	defer goleak.VerifyNone(t)
	e := driver.NewExecutor(driver.TaskExecutorConfig("test.err", 1))
	defer e.Close()
	boom := errors.New("boom")
	assert.ErrorIs(t, e.Run(context.Background(), func(context.Context) error { return boom }), boom)
	err := e.Run(context.Background(), func(context.Context) error { panic("kaput") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kaput")
	assert.Contains(t, err.Error(), "test.err", "the error names the executor")
	// The worker survived the panic.
	assert.NoError(t, e.Run(context.Background(), func(context.Context) error { return nil }))
}

// hold occupies e's only stream until the returned func is called.
func hold(t *testing.T, e *driver.Executor) func() {
	t.Helper()
	release, started := make(chan struct{}), make(chan struct{})
	require.NoError(t, e.Submit(context.Background(), func() { close(started); <-release }))
	<-started
	var once sync.Once
	return func() { once.Do(func() { close(release) }) }
}

func TestExecutorHonoursContextWhileWaitingForASlot(t *testing.T) {
	defer goleak.VerifyNone(t)
	e := driver.NewExecutor(driver.ExecutorConfig{Name: "test.full", Streams: 1, Queue: 1})
	release := hold(t, e)
	// Fill the queue's only slot.
	require.NoError(t, e.Submit(context.Background(), func() {}))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var ran atomic.Bool
	err := e.Run(ctx, func(context.Context) error { ran.Store(true); return nil })
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Run on a full queue with an expiring ctx")
	assert.ErrorIs(t, e.Submit(ctx, func() { ran.Store(true) }), context.DeadlineExceeded)
	st := e.Stats()
	assert.Equal(t, 1, st.Queued)
	assert.Equal(t, 1, st.Running)
	assert.GreaterOrEqual(t, st.WaitCount, int64(1))
	assert.Positive(t, st.WaitDuration)
	release()
	require.NoError(t, e.Close())
	assert.False(t, ran.Load(), "a task whose ctx expired before it was queued ran")
}

func TestExecutorAbandonsQueuedTaskOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	e := driver.NewExecutor(driver.ExecutorConfig{Name: "test.abandon", Streams: 1, Queue: 4})
	release := hold(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	done := make(chan error, 1)
	go func() { // exits when Run returns
		done <- e.Run(ctx, func(context.Context) error { ran.Store(true); return nil })
	}()
	require.Eventually(t, func() bool { return e.Stats().Queued == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Run did not return after its queued task's ctx was cancelled")
	}
	release()
	require.NoError(t, e.Close())
	assert.False(t, ran.Load(), "an abandoned task ran")
	assert.Equal(t, int64(1), e.Stats().Abandoned)
}

func TestExecutorCloseDrainsAndRefuses(t *testing.T) {
	defer goleak.VerifyNone(t)
	e := driver.NewExecutor(driver.ExecutorConfig{Name: "test.close", Streams: 1, Queue: 8})
	release := hold(t, e)
	var n atomic.Int32
	for range 5 {
		require.NoError(t, e.Submit(context.Background(), func() { n.Add(1) }))
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }() // exits when Close returns
	release()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Close did not return")
	}
	assert.Equal(t, int32(5), n.Load(), "queued tasks run before Close returns")
	assert.ErrorIs(t, e.Submit(context.Background(), func() {}), driver.ErrClosed)
	assert.ErrorIs(t, e.Run(context.Background(), func(context.Context) error { return nil }), driver.ErrClosed)
	assert.NoError(t, e.Close(), "Close is idempotent")
}

func TestExecutorCloseReleasesBlockedSubmitter(t *testing.T) {
	defer goleak.VerifyNone(t)
	e := driver.NewExecutor(driver.ExecutorConfig{Name: "test.blocked", Streams: 1, Queue: 0})
	release := hold(t, e)
	done := make(chan error, 1)
	go func() { done <- e.Submit(context.Background(), func() {}) }()                                     // exits when Submit returns
	require.Eventually(t, func() bool { return e.Stats().Submitted == 1 }, time.Second, time.Millisecond) // the holder only
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }() // exits when Close returns
	select {
	case err := <-done:
		assert.ErrorIs(t, err, driver.ErrClosed, "a submitter blocked on a full executor fails when it closes")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the blocked submitter was not released by Close")
	}
	release()
	require.NoError(t, <-closed)
}

func TestExecutorManagerSharesByName(t *testing.T) {
	defer goleak.VerifyNone(t)
	var m driver.ExecutorManager
	a, err := m.Acquire(driver.TaskExecutorConfig("DEV.task.2", 2))
	require.NoError(t, err)
	b, err := m.Acquire(driver.TaskExecutorConfig("DEV.task.2", 2))
	require.NoError(t, err)
	assert.Same(t, a, b, "the same name gives the same executor")
	c, err := m.Acquire(driver.TaskExecutorConfig("DEV.task.1", 1))
	require.NoError(t, err)
	assert.NotSame(t, a, c)

	_, err = m.Acquire(driver.TaskExecutorConfig("DEV.task.2", 3))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "same name, other configuration")
	assert.ErrorContains(t, err, "DEV.task.2")

	stats := m.Stats()
	require.Len(t, stats, 2)
	assert.Equal(t, "DEV.task.1", stats[0].Name)
	assert.Equal(t, "DEV.task.2", stats[1].Name)

	require.NoError(t, m.Release(a))
	assert.NoError(t, b.Run(context.Background(), func(context.Context) error { return nil }), "still referenced once")
	require.NoError(t, m.Release(b))
	assert.ErrorIs(t, a.Run(context.Background(), func(context.Context) error { return nil }), driver.ErrClosed, "the last release stops it")
	assert.ErrorIs(t, m.Release(a), driver.ErrNotFound)
	assert.Len(t, m.Stats(), 1)

	// Close stops what is left, even though c is still referenced.
	require.NoError(t, m.Close())
	assert.ErrorIs(t, c.Run(context.Background(), func(context.Context) error { return nil }), driver.ErrClosed)
	_, err = m.Acquire(driver.TaskExecutorConfig("DEV.task.1", 1))
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.NoError(t, m.Close())
}

func TestPlanStreams(t *testing.T) {
	cpu := driver.DeviceFacts{Cores: 8, MaxStreams: 8, RequestsPerStream: 1}
	gpu := driver.DeviceFacts{ComputeUnits: 32, RequestsPerStream: 2}
	cfg := func(h driver.PerformanceHint, streams, requests int) driver.Config {
		c := driver.DefaultConfig()
		c.PerformanceHint, c.NumStreams, c.NumRequests = h, streams, requests
		return c
	}
	cases := []struct {
		name  string
		cfg   driver.Config
		facts driver.DeviceFacts
		want  driver.StreamPlan
	}{
		{"CPULatency", cfg(driver.HintLatency, 0, 0), cpu, driver.StreamPlan{Streams: 1, Requests: 1}},
		{"CPUThroughput", cfg(driver.HintThroughput, 0, 0), cpu, driver.StreamPlan{Streams: 8, Requests: 8}},
		{"CPUCumulative", cfg(driver.HintCumulativeThroughput, 0, 0), cpu, driver.StreamPlan{Streams: 8, Requests: 8}},
		{"CPUThroughputNumRequests", cfg(driver.HintThroughput, 0, 3), cpu, driver.StreamPlan{Streams: 3, Requests: 3}},
		{"CPUExplicitStreams", cfg(driver.HintThroughput, 2, 0), cpu, driver.StreamPlan{Streams: 2, Requests: 2}},
		{"CPUExplicitStreamsLatency", cfg(driver.HintLatency, 4, 0), cpu, driver.StreamPlan{Streams: 4, Requests: 4}},
		{"CPUStreamsCapped", cfg(driver.HintThroughput, 64, 0), cpu, driver.StreamPlan{Streams: 8, Requests: 8}},
		{"GPULatency", cfg(driver.HintLatency, 0, 0), gpu, driver.StreamPlan{Streams: 1, Requests: 1}},
		{"GPUThroughput", cfg(driver.HintThroughput, 0, 0), gpu, driver.StreamPlan{Streams: 2, Requests: 4}},
		{"GPUThroughputNumRequests", cfg(driver.HintThroughput, 0, 3), gpu, driver.StreamPlan{Streams: 2, Requests: 3}},
		{"NoFacts", cfg(driver.HintThroughput, 0, 0), driver.DeviceFacts{}, driver.StreamPlan{Streams: 1, Requests: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, driver.PlanStreams(tc.cfg, tc.facts))
		})
	}
}
