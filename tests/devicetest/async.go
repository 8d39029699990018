package devicetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// LoadInferences is the number of inferences AsyncLoad runs.
const LoadInferences = 10000

// LoadRequests is the number of asynchronous requests AsyncLoad runs them
// through.
const LoadRequests = 8

// patience bounds every wait of the async suite, so a hang fails the test
// instead of the whole binary's timeout.
const patience = 20 * time.Second

// blocked is an executor whose only stream is held by a task until
// release is called: a stage submitted to it waits for a stream (Queue 0),
// so the request stays "running" for as long as the test wants, on any
// device and without timing assumptions.
type blocked struct {
	e       *driver.Executor
	release func()
}

func newBlocked(t *testing.T) *blocked {
	t.Helper()
	e := driver.NewExecutor(driver.ExecutorConfig{Name: "devicetest.blocked", Streams: 1, Queue: 0})
	hold, started := make(chan struct{}), make(chan struct{})
	require.NoError(t, e.Submit(context.Background(), func() { close(started); <-hold }))
	<-started
	var once sync.Once
	b := &blocked{e: e, release: func() { once.Do(func() { close(hold) }) }}
	t.Cleanup(func() {
		b.release()
		assert.NoError(t, e.Close())
	})
	return b
}

// newAsync compiles the test model and creates an asynchronous request of
// it, closed at the end of the test.
func newAsync(t *testing.T, newPlugin NewPlugin, opts ...driver.AsyncOption) (driver.Plugin, driver.CompiledModel, *driver.AsyncInferRequest, bool) {
	t.Helper()
	p := open(t, newPlugin)
	cm, relu := compile(t, p, nil)
	ac, ok := cm.(driver.AsyncCompiledModel)
	require.True(t, ok, "the compiled model of %s (%T) does not implement driver.AsyncCompiledModel", p.Name(), cm)
	r, err := ac.CreateAsyncInferRequest(opts...)
	require.NoError(t, err)
	require.NotNil(t, r)
	t.Cleanup(func() { assert.NoError(t, r.Close(), "closing the async request") })
	return p, cm, r, relu
}

// loadInput returns the i-th seeded input of the load test.
func loadInput(i int) *tensor.Tensor {
	x, err := tensor.FromF32(tensor.Shape{1, 4}, seeded.Float32s(uint32(1000+i), 4, -2, 2))
	if err != nil {
		panic(err) // a fixed, valid shape: cannot fail
	}
	return x
}

// want is the model's output for x.
func want(x *tensor.Tensor, relu bool) []float32 {
	out := append([]float32(nil), x.F32()...)
	if relu {
		for i, v := range out {
			out[i] = float32(math.Max(float64(v), 0))
		}
	}
	return out
}

// checkOutput checks the request's output against want(x).
func checkOutput(t *testing.T, r driver.InferRequest, x *tensor.Tensor, relu bool, msg string) {
	t.Helper()
	y, err := r.Tensor(OutputName)
	require.NoError(t, err, msg)
	require.Equal(t, tensor.Shape{1, 4}, y.Shape(), msg)
	assert.InDeltaSlice(t, want(x, relu), y.Contiguous().F32(), 1e-6, msg)
}

// waitDone waits for ch, failing the test after patience.
func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		require.FailNow(t, "timed out waiting for "+what)
	}
}

// waitCtx is a context that bounds a Wait by patience.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

// Async checks the asynchronous request of the device's compiled models:
// callbacks, errors, Wait and WaitFor, ErrBusy, Cancel and ctx
// cancellation, Close waiting for running requests, tracing, and
// correctness under load (AsyncLoad). The compiled model must implement
// driver.AsyncCompiledModel.
func Async(t *testing.T, newPlugin NewPlugin) {
	ctx := context.Background()

	t.Run("CallbackOnceAfterStartAsyncNeverAfterInfer", func(t *testing.T) {
		_, _, r, relu := newAsync(t, newPlugin)
		var calls atomic.Int32
		var mu sync.Mutex
		var got []error
		r.SetCallback(func(err error) {
			calls.Add(1)
			mu.Lock()
			got = append(got, err)
			mu.Unlock()
		})
		x := loadInput(1)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		assert.Equal(t, int32(1), calls.Load(), "callbacks after one StartAsync")
		mu.Lock()
		assert.Equal(t, []error{nil}, got, "the callback's error")
		mu.Unlock()
		checkOutput(t, r, x, relu, "after StartAsync")

		x2 := loadInput(2)
		require.NoError(t, r.SetTensor(InputName, x2))
		require.NoError(t, r.Infer(ctx))
		checkOutput(t, r, x2, relu, "after Infer")
		assert.Equal(t, int32(1), calls.Load(), "sync Infer must not call the callback")
		// Wait still reports the last async run, which succeeded.
		require.NoError(t, r.Wait(waitCtx(t)))
	})

	t.Run("CallbackRestartsRequest", func(t *testing.T) {
		_, _, r, relu := newAsync(t, newPlugin)
		const runs = 5
		var calls atomic.Int32
		var mu sync.Mutex
		var errs []error
		var outs [][]float32
		done := make(chan struct{})
		r.SetCallback(func(err error) {
			n := int(calls.Add(1))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if y, terr := r.Tensor(OutputName); terr == nil {
				outs = append(outs, append([]float32(nil), y.Contiguous().F32()...))
			} else {
				errs = append(errs, terr)
			}
			if n == runs {
				close(done)
				return
			}
			if err := r.SetTensor(InputName, loadInput(n+1)); err != nil {
				errs = append(errs, err)
			}
			if err := r.StartAsync(context.Background()); err != nil {
				errs = append(errs, err)
			}
		})
		require.NoError(t, r.SetTensor(InputName, loadInput(1)))
		require.NoError(t, r.StartAsync(ctx))
		waitDone(t, done, "the chain of callbacks")
		require.NoError(t, r.Wait(waitCtx(t)))
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, errs, "errors inside the callbacks")
		assert.Equal(t, int32(runs), calls.Load())
		require.Len(t, outs, runs)
		for i, o := range outs {
			assert.InDeltaSlice(t, want(loadInput(i+1), relu), o, 1e-6, "run %d", i+1)
		}
	})

	t.Run("StageErrorComesOutOfWait", func(t *testing.T) {
		injected := errors.New("devicetest: injected stage failure")
		var ran atomic.Int32
		fail := func(s driver.Stage) driver.Stage {
			run := s.Run
			s.Run = func(ctx context.Context) error {
				if ran.Add(1) == 1 {
					return injected
				}
				return run(ctx)
			}
			return s
		}
		_, _, r, relu := newAsync(t, newPlugin, driver.WithStageMiddleware(fail))
		cbErr := make(chan error, 1)
		r.SetCallback(func(err error) { cbErr <- err })
		require.NoError(t, r.StartAsync(ctx))
		err := r.Wait(waitCtx(t))
		require.Error(t, err)
		assert.ErrorIs(t, err, injected)
		assert.Equal(t, int32(1), ran.Load(), "stages after the failed one must not run")
		select {
		case e := <-cbErr:
			assert.ErrorIs(t, e, injected, "the callback gets the stage's error")
		default:
			assert.Fail(t, "the callback did not run before Wait returned")
		}
		done, err2 := r.WaitFor(0)
		assert.True(t, done)
		assert.ErrorIs(t, err2, injected, "WaitFor reports the same error")
		// The request is reusable: the next run succeeds.
		x := loadInput(3)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		assert.NoError(t, <-cbErr)
		checkOutput(t, r, x, relu, "run after a failed one")
	})

	t.Run("CallbackErrorComesOutOfWait", func(t *testing.T) {
		_, _, r, _ := newAsync(t, newPlugin)
		r.SetCallback(func(error) { panic("devicetest: callback fails") })
		require.NoError(t, r.StartAsync(ctx))
		err := r.Wait(waitCtx(t))
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrCallback)
		assert.Contains(t, err.Error(), "devicetest: callback fails")
		r.SetCallback(nil)
		require.NoError(t, r.StartAsync(ctx))
		assert.NoError(t, r.Wait(waitCtx(t)), "the request is reusable after a failed callback")
	})

	t.Run("WaitAndCloseInOwnCallbackAreBusy", func(t *testing.T) {
		// Wait, WaitFor and Close from the request's own callback would
		// wait for the callback: each must fail with ErrBusy at once and
		// leave the request usable.
		_, _, r, relu := newAsync(t, newPlugin)
		type result struct {
			what string
			err  error
		}
		got := make(chan result, 3)
		r.SetCallback(func(error) {
			got <- result{"Wait", r.Wait(waitCtx(t))}
			_, err := r.WaitFor(patience)
			got <- result{"WaitFor", err}
			got <- result{"Close", r.Close()}
		})
		x := loadInput(4)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		for range 3 {
			var res result
			select {
			case res = <-got:
			case <-time.After(patience):
				require.FailNow(t, "a call inside the callback hangs")
			}
			require.Error(t, res.err, "%s from the request's own callback", res.what)
			assert.ErrorIs(t, res.err, driver.ErrBusy, "%s from the request's own callback", res.what)
			assert.Contains(t, res.err.Error(), "own callback", "%s: the message says why", res.what)
		}
		require.NoError(t, r.Wait(waitCtx(t)), "Wait outside the callback")
		checkOutput(t, r, x, relu, "after the callback")
		r.SetCallback(nil)
		require.NoError(t, r.StartAsync(ctx), "the request is still open")
		require.NoError(t, r.Wait(waitCtx(t)))
	})

	t.Run("WaitWithoutStart", func(t *testing.T) {
		_, _, r, _ := newAsync(t, newPlugin)
		// A done ctx: Wait must not even look at it when nothing started.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		assert.NoError(t, r.Wait(cctx))
		done, err := r.WaitFor(0)
		assert.True(t, done, "WaitFor(0) without a start")
		assert.NoError(t, err)
	})

	t.Run("WhileRunning", func(t *testing.T) {
		b := newBlocked(t)
		_, _, r, relu := newAsync(t, newPlugin, driver.WithExecutor(driver.ExecutorTask, b.e), driver.WithExecutor(driver.ExecutorWait, b.e))
		x := loadInput(4)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		done, err := r.WaitFor(0)
		assert.False(t, done, "WaitFor(0) must report the request still running")
		assert.NoError(t, err)
		done, err = r.WaitFor(10 * time.Millisecond)
		assert.False(t, done, "WaitFor(10ms) on a blocked request")
		assert.NoError(t, err)
		assert.ErrorIs(t, r.SetTensor(InputName, loadInput(5)), driver.ErrBusy, "SetTensor while running")
		assert.ErrorIs(t, r.StartAsync(ctx), driver.ErrBusy, "StartAsync while running")
		assert.ErrorIs(t, r.Infer(ctx), driver.ErrBusy, "Infer while running")
		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, r.Wait(short), context.DeadlineExceeded, "Wait with a ctx that expires first")
		b.release()
		require.NoError(t, r.Wait(waitCtx(t)))
		done, err = r.WaitFor(0)
		assert.True(t, done)
		assert.NoError(t, err)
		checkOutput(t, r, x, relu, "the input bound before the start is the one used")
		assert.NoError(t, r.SetTensor(InputName, loadInput(5)), "SetTensor after the run")
	})

	t.Run("CancelBeforeStartIsNoop", func(t *testing.T) {
		_, _, r, relu := newAsync(t, newPlugin)
		r.Cancel()
		x := loadInput(6)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		checkOutput(t, r, x, relu, "run after Cancel before start")
		r.Cancel() // after the run: also nothing
		require.NoError(t, r.Wait(waitCtx(t)))
	})

	cancelWays := []struct {
		name   string
		cancel func(r *driver.AsyncInferRequest, cancelCtx context.CancelFunc)
	}{
		{"Cancel", func(r *driver.AsyncInferRequest, _ context.CancelFunc) { r.Cancel() }},
		{"Context", func(_ *driver.AsyncInferRequest, cancelCtx context.CancelFunc) { cancelCtx() }},
	}
	for _, cw := range cancelWays {
		t.Run("CancelWhileRunning/"+cw.name, func(t *testing.T) {
			b := newBlocked(t)
			_, _, r, relu := newAsync(t, newPlugin, driver.WithExecutor(driver.ExecutorTask, b.e), driver.WithExecutor(driver.ExecutorWait, b.e))
			cbErr := make(chan error, 2)
			r.SetCallback(func(err error) { cbErr <- err })
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			require.NoError(t, r.StartAsync(runCtx))
			cw.cancel(r, cancel)
			// The blocker still holds the stream: Wait must return anyway.
			err := r.Wait(waitCtx(t))
			require.Error(t, err, "Wait after cancelling a running request")
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, <-cbErr, context.Canceled, "the callback gets the cancellation")
			b.release()
			// Reusable: a new run on the device's own executors succeeds.
			x := loadInput(7)
			require.NoError(t, r.SetTensor(InputName, x))
			require.NoError(t, r.StartAsync(ctx))
			require.NoError(t, r.Wait(waitCtx(t)), "the request must be reusable after a cancellation")
			assert.NoError(t, <-cbErr)
			checkOutput(t, r, x, relu, "run after a cancellation")
		})
	}

	t.Run("StartWithDoneContext", func(t *testing.T) {
		_, _, r, _ := newAsync(t, newPlugin)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		assert.ErrorIs(t, r.StartAsync(cctx), context.Canceled)
		assert.NoError(t, r.Wait(waitCtx(t)), "nothing started")
	})

	t.Run("CloseWaitsForRunningRequests", func(t *testing.T) {
		b := newBlocked(t)
		_, cm, r, relu := newAsync(t, newPlugin, driver.WithExecutor(driver.ExecutorTask, b.e), driver.WithExecutor(driver.ExecutorWait, b.e))
		var finished atomic.Bool
		r.SetCallback(func(error) { finished.Store(true) })
		x := loadInput(8)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		closed := make(chan error, 1)
		go func() { closed <- cm.Close() }() // exits when Close returns
		select {
		case err := <-closed:
			assert.Fail(t, "Close returned while a request was running", "err %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		b.release()
		select {
		case err := <-closed:
			assert.NoError(t, err)
		case <-time.After(patience):
			require.FailNow(t, "Close did not return after the request finished")
		}
		assert.True(t, finished.Load(), "Close returned before the request's callback")
		require.NoError(t, r.Wait(waitCtx(t)), "the running request completes normally")
		checkOutput(t, r, x, relu, "request that ran during Close")
		err := r.StartAsync(ctx)
		assert.ErrorIs(t, err, driver.ErrClosed, "StartAsync after the compiled model was closed")
	})

	t.Run("Trace", func(t *testing.T) {
		tr := driver.NewTracer(0)
		p, _, r, _ := newAsync(t, newPlugin, driver.WithTracer(tr))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		first := tr.Events()
		require.NotEmpty(t, first, "no trace events after a run")
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		evs := tr.Events()
		require.Len(t, evs, 2*len(first), "each run records the same stages")
		var prevEnd time.Time
		for i, ev := range evs {
			// The plugin's name, or one of its devices ("GPU.0").
			assert.True(t, ev.Device == p.Name() || strings.HasPrefix(ev.Device, p.Name()+"."), "event %d: device %q is not %s or %s.n", i, ev.Device, p.Name(), p.Name())
			assert.Equal(t, r.ID(), ev.Request, "event %d", i)
			assert.NotEmpty(t, ev.Stage, "event %d", i)
			assert.NotEmpty(t, ev.Executor, "event %d", i)
			assert.NoError(t, ev.Err, "event %d", i)
			assert.GreaterOrEqual(t, ev.Duration, time.Duration(0), "event %d", i)
			assert.False(t, ev.Start.Before(prevEnd), "event %d starts before the previous stage of the same request ended", i)
			prevEnd = ev.Start.Add(ev.Duration)
			assert.Equal(t, int64(1+i/len(first)), ev.Run-evs[0].Run+1, "event %d run number", i)
		}
	})

	t.Run("Load", func(t *testing.T) { AsyncLoad(t, newPlugin, LoadInferences, LoadRequests) })
}

// AsyncLoad runs n inferences through nreq asynchronous requests whose
// callbacks restart them with the next input, and checks that every
// inference completed exactly once and that its output equals the output
// of a plain sync request for the same input.
func AsyncLoad(t *testing.T, newPlugin NewPlugin, n, nreq int) {
	p := open(t, newPlugin)
	cm, _ := compile(t, p, map[string]string{driver.KeyPerformanceHint: driver.HintThroughput.String()})
	ac, ok := cm.(driver.AsyncCompiledModel)
	require.True(t, ok, "the compiled model of %s (%T) does not implement driver.AsyncCompiledModel", p.Name(), cm)

	// References from a plain sync request, one per distinct input.
	const distinct = 64
	ref := make([][]float32, distinct)
	inputs := make([]*tensor.Tensor, distinct)
	sr, err := cm.CreateInferRequest()
	require.NoError(t, err)
	for i := range ref {
		inputs[i] = loadInput(i)
		require.NoError(t, sr.SetTensor(InputName, inputs[i]))
		require.NoError(t, sr.Infer(context.Background()))
		y, err := sr.Tensor(OutputName)
		require.NoError(t, err)
		ref[i] = append([]float32(nil), y.Contiguous().F32()...)
	}
	require.NoError(t, sr.Close())

	var next atomic.Int64 // the next inference to start
	counts := make([]atomic.Int32, n)
	outs := make([][]float32, n) // outs[i] is written by inference i's callback only
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var chains sync.WaitGroup
	reqs := make([]*driver.AsyncInferRequest, nreq)
	for k := range reqs {
		r, err := ac.CreateAsyncInferRequest()
		require.NoError(t, err)
		reqs[k] = r
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		cur := -1 // the inference r runs; touched by r's callback and the start below only
		start := func() bool {
			i := int(next.Add(1) - 1)
			if i >= n {
				return false
			}
			cur = i
			if err := r.SetTensor(InputName, inputs[i%distinct]); err != nil {
				fail(fmt.Errorf("inference %d: set tensor: %w", i, err))
				return false
			}
			if err := r.StartAsync(context.Background()); err != nil {
				fail(fmt.Errorf("inference %d: start: %w", i, err))
				return false
			}
			return true
		}
		r.SetCallback(func(err error) {
			i := cur
			counts[i].Add(1)
			if err != nil {
				fail(fmt.Errorf("inference %d: %w", i, err))
			} else if y, err := r.Tensor(OutputName); err != nil {
				fail(fmt.Errorf("inference %d: output: %w", i, err))
			} else {
				outs[i] = append([]float32(nil), y.Contiguous().F32()...)
			}
			if !start() {
				chains.Done()
			}
		})
		chains.Add(1)
		if !start() {
			chains.Done()
		}
	}
	all := make(chan struct{})
	go func() { chains.Wait(); close(all) }() // exits when every chain has ended
	waitDone(t, all, fmt.Sprintf("%d inferences through %d requests", n, nreq))
	for _, r := range reqs {
		require.NoError(t, r.Wait(waitCtx(t)))
	}
	mu.Lock()
	require.Empty(t, errs, "errors during the load run")
	mu.Unlock()
	lost, dup, wrong := 0, 0, 0
	for i := range counts {
		switch c := counts[i].Load(); {
		case c == 0:
			lost++
		case c > 1:
			dup++
		}
		if outs[i] == nil {
			continue
		}
		for j, v := range outs[i] {
			if math.Abs(float64(v-ref[i%distinct][j])) > 1e-6 {
				wrong++
				break
			}
		}
	}
	assert.Zero(t, lost, "inferences that never completed")
	assert.Zero(t, dup, "inferences that completed more than once")
	assert.Zero(t, wrong, "inferences whose output differs from the sync request's")
}
