package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// countingDevice is the fake device with OPTIMAL_NUMBER_OF_INFER_REQUESTS
// = poolSize on its compiled models, which count the requests they make
// and the inferences running at once, and hold every inference until gate
// is closed (when gate is not nil).
const (
	countingDevice = "PLUGINCOUNT"
	poolSize       = 3
)

// counts is what the counting device's compiled models saw.
type counts struct {
	created, running, maxRunning atomic.Int32
	gate                         chan struct{} // nil: no hold
	started                      chan struct{} // an inference started (buffered)
}

// current is the counts of the model compiled last.
var current atomic.Pointer[counts]

func init() {
	driver.Register(countingDevice, func() (driver.Plugin, error) {
		return &countingPlugin{Plugin: drivertest.New(countingDevice, drivertest.Faults{})}, nil
	})
}

type countingPlugin struct{ *drivertest.Plugin }

func (p *countingPlugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	cm, err := p.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &countingModel{CompiledModel: cm, n: current.Load()}, nil
}

type countingModel struct {
	driver.CompiledModel
	n *counts
}

func (c *countingModel) Property(key string) (string, error) {
	if key == driver.KeyOptimalNumberOfInferRequests {
		return fmt.Sprint(poolSize), nil
	}
	return c.CompiledModel.Property(key)
}

func (c *countingModel) CreateInferRequest() (driver.InferRequest, error) {
	r, err := c.CompiledModel.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	c.n.created.Add(1)
	return &countingRequest{InferRequest: r, n: c.n}, nil
}

type countingRequest struct {
	driver.InferRequest
	n *counts
}

func (r *countingRequest) Infer(ctx context.Context) error {
	now := r.n.running.Add(1)
	defer r.n.running.Add(-1)
	for {
		old := r.n.maxRunning.Load()
		if now <= old || r.n.maxRunning.CompareAndSwap(old, now) {
			break
		}
	}
	if r.n.started != nil {
		r.n.started <- struct{}{}
	}
	if r.n.gate != nil {
		select {
		case <-r.n.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.InferRequest.Infer(ctx)
}

// compileCounting compiles the Relu model on the counting device with
// fresh counts.
func compileCounting(t *testing.T, n *counts) *plugin.CompiledModel {
	t.Helper()
	current.Store(n)
	var core plugin.Core
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), countingDevice, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	return cm
}

// reluOf is the model's output for x.
func reluOf(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = max(v, 0)
	}
	return out
}

// TestInferFromManyGoroutines: CompiledModel.Infer from 32 goroutines
// gives each its own answer, with at most OPTIMAL_NUMBER_OF_INFER_REQUESTS
// requests made and running at once.
func TestInferFromManyGoroutines(t *testing.T) {
	n := &counts{}
	cm := compileCounting(t, n)
	const callers, calls = 32, 10
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() { // exits after its calls
			defer wg.Done()
			for i := range calls {
				in := seeded.Float32s(uint32(g*calls+i), 4, -2, 2)
				x, err := tensor.From(tensor.Shape{1, 4}, in)
				if !assert.NoError(t, err) {
					return
				}
				out, err := cm.Infer(context.Background(), map[string]*tensor.Tensor{devicetest.InputName: x})
				if !assert.NoError(t, err) {
					return
				}
				got, err := tensor.Data[float32](out[devicetest.OutputName])
				if assert.NoError(t, err) {
					assert.InDeltaSlice(t, reluOf(in), got, 1e-6, "caller %d call %d", g, i)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, n.created.Load(), int32(poolSize), "requests made")
	assert.LessOrEqual(t, n.maxRunning.Load(), int32(poolSize), "inferences at once")
	assert.Positive(t, n.created.Load())
}

// TestInferWaitsForAFreeRequest: with every pooled request busy, Infer
// waits, and gives up with ctx's error.
func TestInferWaitsForAFreeRequest(t *testing.T) {
	n := &counts{gate: make(chan struct{}), started: make(chan struct{}, poolSize)}
	cm := compileCounting(t, n)
	x, err := tensor.From(tensor.Shape{1, 4}, []float32{-1, 2, -3, 4})
	require.NoError(t, err)
	in := map[string]*tensor.Tensor{devicetest.InputName: x}
	var wg sync.WaitGroup
	for range poolSize {
		wg.Add(1)
		go func() { // exits when the gate opens
			defer wg.Done()
			_, err := cm.Infer(context.Background(), in)
			assert.NoError(t, err)
		}()
	}
	for range poolSize {
		<-n.started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = cm.Infer(ctx, in)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Infer with every request busy")
	assert.Contains(t, err.Error(), "waiting for a free request")
	close(n.gate)
	wg.Wait()
	out, err := cm.Infer(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 2, 0, 4}, out[devicetest.OutputName].F32())
	assert.Equal(t, int32(poolSize), n.created.Load())
}

// TestInferErrors: bad input maps, a done context and a closed model.
func TestInferErrors(t *testing.T) {
	x, err := tensor.From(tensor.Shape{1, 4}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		ctx      context.Context
		inputs   map[string]*tensor.Tensor
		close    bool
		sentinel error
		mention  []string
	}{
		{"Missing", context.Background(), nil, false, plugin.ErrInvalidArgument, []string{`input "x"`, "missing"}},
		{"Unknown", context.Background(), map[string]*tensor.Tensor{"x": x, "z": x}, false, plugin.ErrNotFound, []string{`"z"`, "x"}},
		{"WrongType", context.Background(), map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.I32, tensor.Shape{1, 4})}, false, plugin.ErrInvalidArgument, []string{`"x"`, "i32", "f32"}},
		{"WrongShape", context.Background(), map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.F32, tensor.Shape{2, 4})}, false, plugin.ErrInvalidArgument, []string{`"x"`, "[2,4]"}},
		{"DoneContext", cancelled, map[string]*tensor.Tensor{"x": x}, false, context.Canceled, nil},
		{"Closed", context.Background(), map[string]*tensor.Tensor{"x": x}, true, plugin.ErrClosed, []string{"infer after Close"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := compileCounting(t, &counts{})
			if tc.close {
				require.NoError(t, cm.Close())
			}
			out, err := cm.Infer(tc.ctx, tc.inputs)
			require.Error(t, err)
			assert.Nil(t, out)
			assert.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.mention {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestTypedGetters: the typed getters read what the string form says,
// with NUM_STREAMS resolved to a number.
func TestTypedGetters(t *testing.T) {
	var core plugin.Core
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	dir := t.TempDir()
	cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), fakeDevice, plugin.Props(
		plugin.WithPerformanceHint(plugin.HintThroughput), plugin.WithProfiling(true), plugin.WithCacheDir(dir)))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })

	hint, err := cm.PerformanceHint()
	require.NoError(t, err)
	assert.Equal(t, plugin.HintThroughput, hint)
	streams, err := cm.NumStreams()
	require.NoError(t, err)
	assert.Positive(t, streams)
	prec, err := cm.InferencePrecision()
	require.NoError(t, err)
	assert.Equal(t, tensor.F32, prec)
	prof, err := cm.Profiling()
	require.NoError(t, err)
	assert.True(t, prof)
	cache, err := cm.CacheDir()
	require.NoError(t, err)
	assert.Equal(t, dir, cache)
	devs, err := cm.ExecutionDevices()
	require.NoError(t, err)
	assert.Equal(t, []string{fakeDevice}, devs)
	reqs, err := cm.OptimalNumberOfInferRequests()
	require.NoError(t, err)
	assert.Equal(t, 1, reqs)

	require.NoError(t, cm.Close())
	_, err = cm.PerformanceHint()
	assert.ErrorIs(t, err, plugin.ErrClosed)
}

// TestCompiledModelAfterClose: every method that returns an error returns
// one wrapping ErrClosed; a device without export says so first.
func TestCompiledModelAfterClose(t *testing.T) {
	var core plugin.Core
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), fakeDevice, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, cm.Export(&bytes.Buffer{}), plugin.ErrNotImplemented, "the fake device does not export")
	require.NoError(t, cm.Close())
	errs := map[string]error{
		"Property":                second(cm.Property(plugin.KeyNetworkName)),
		"Infer":                   second(cm.Infer(context.Background(), nil)),
		"CreateInferRequest":      second(cm.CreateInferRequest()),
		"CreateAsyncInferRequest": second(cm.CreateAsyncInferRequest()),
		"Export":                  cm.Export(&bytes.Buffer{}),
		"RuntimeModel":            second(cm.RuntimeModel()),
	}
	for name, err := range errs {
		assert.ErrorIs(t, err, plugin.ErrClosed, name)
	}
	assert.Len(t, cm.Inputs(), 1, "ports stay readable")
	assert.NoError(t, cm.Close())
}

// TestRequestsAfterClose: every method of a closed InferRequest and
// AsyncInferRequest returns an error wrapping ErrClosed.
func TestRequestsAfterClose(t *testing.T) {
	var core plugin.Core
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), fakeDevice, plugin.Props(plugin.WithProfiling(true)))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	x, err := tensor.From(tensor.Shape{1, 4}, []float32{1, -2, 3, -4})
	require.NoError(t, err)
	ctx := context.Background()

	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(ctx))
	prof, err := r.ProfilingInfo()
	require.NoError(t, err)
	assert.NotEmpty(t, prof)
	require.NoError(t, r.Close())

	a, err := cm.CreateAsyncInferRequest()
	require.NoError(t, err)
	require.NoError(t, a.SetTensor("x", x))
	require.NoError(t, a.StartAsync(ctx))
	require.NoError(t, a.Wait(ctx))
	require.NoError(t, a.Close())
	_, waitForErr := a.WaitFor(0)

	errs := map[string]error{
		"InferRequest.SetTensor":          r.SetTensor("x", x),
		"InferRequest.Tensor":             second(r.Tensor("y")),
		"InferRequest.Infer":              r.Infer(ctx),
		"InferRequest.ProfilingInfo":      second(r.ProfilingInfo()),
		"AsyncInferRequest.SetTensor":     a.SetTensor("x", x),
		"AsyncInferRequest.Tensor":        second(a.Tensor("y")),
		"AsyncInferRequest.StartAsync":    a.StartAsync(ctx),
		"AsyncInferRequest.Wait":          a.Wait(ctx),
		"AsyncInferRequest.WaitFor":       waitForErr,
		"AsyncInferRequest.Infer":         a.Infer(ctx),
		"AsyncInferRequest.ProfilingInfo": second(a.ProfilingInfo()),
	}
	for name, err := range errs {
		assert.ErrorIs(t, err, plugin.ErrClosed, name)
	}
	assert.NoError(t, r.Close())
	assert.NoError(t, a.Close())
}

// second returns the error of a two-result call.
func second[T any](_ T, err error) error { return err }
