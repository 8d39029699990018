// Mid-request failures of the GPU device need a build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/internal/faultinject"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// asyncFixture is the embedded small CNN compiled on the GPU with a few
// seeded inputs and the GPU's own outputs for them (the reference: the same
// kernels must give the same bits whatever failed before).
type asyncFixture struct {
	cm     driver.CompiledModel
	inputs []*tensor.Tensor
	want   []*tensor.Tensor
}

func newAsyncFixture(t *testing.T, props map[string]string) *asyncFixture {
	t.Helper()
	m, err := onnx.Read(defaultmodel.ONNX)
	require.NoError(t, err)
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	all := map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}
	maps.Copy(all, props)
	cm, err := core.CompileModel(context.Background(), m, "GPU", all)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	f := &asyncFixture{cm: cm}
	shape := tensor.Shape{1, 3, 64, 64} // the small CNN's dynamic batch, fixed
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	for i := range 4 {
		x, err := tensor.FromF32(shape, seeded.Float32s(uint32(100+i), int(shape.NumElements()), -1, 1))
		require.NoError(t, err)
		require.NoError(t, r.SetTensor(defaultmodel.InputName, x))
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor(defaultmodel.OutputName)
		require.NoError(t, err)
		f.inputs = append(f.inputs, x)
		f.want = append(f.want, y.Clone())
	}
	return f
}

// check compares a request's output with the reference of input i.
func (f *asyncFixture) check(r driver.InferRequest, i int) error {
	y, err := r.Tensor(defaultmodel.OutputName)
	if err != nil {
		return err
	}
	return conformance.Compare(y, f.want[i], exact)
}

// TestAsyncRequestsWithRandomDeviceFailures runs 10,000 asynchronous
// inferences over 4 requests while 1 in 400 OpenCL calls fails at random
// (kernel launches, writes, read-backs, waits, ...). Every run must end
// exactly once (one callback per start), a failure must be an error
// wrapping driver.ErrDevice, every success must equal the reference, and
// after the storm the same compiled model must run right with nothing
// leaked.
func TestAsyncRequestsWithRandomDeviceFailures(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after the fixture's cleanups.
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	f := newAsyncFixture(t, nil)
	const nreq, total = 4, 10000
	var (
		started, callbacks, ok, failed atomic.Int64
		mu                             sync.Mutex
		badErrs                        []error
	)
	reqs := make([]*driver.AsyncInferRequest, nreq)
	for i := range reqs {
		r, err := driver.CreateAsyncInferRequest(f.cm)
		require.NoError(t, err)
		reqs[i] = r
	}
	// Closed once the failures are disarmed: a failed release on Close is
	// not what this test is about (TestFaultInjectionEveryOpenCLCall is).
	defer func() {
		for _, r := range reqs {
			assert.NoError(t, r.Close())
		}
	}()
	faultinject.ArmRandom(7, 1.0/400, int32(cl.ErrOutOfResources))
	var wg sync.WaitGroup
	for ri, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[int64]int{}
			var runID atomic.Int64
			r.SetCallback(func(err error) {
				callbacks.Add(1)
				mu.Lock()
				seen[runID.Load()]++
				mu.Unlock()
			})
			for k := ri; k < total; k += nreq {
				in := k % len(f.inputs)
				if err := r.SetTensor(defaultmodel.InputName, f.inputs[in]); err != nil {
					mu.Lock()
					badErrs = append(badErrs, err)
					mu.Unlock()
					continue
				}
				runID.Store(int64(k))
				if err := r.StartAsync(context.Background()); err != nil {
					mu.Lock()
					badErrs = append(badErrs, err)
					mu.Unlock()
					continue
				}
				started.Add(1)
				err := r.Wait(context.Background())
				switch {
				case err == nil:
					if cerr := f.check(r, in); cerr != nil {
						mu.Lock()
						badErrs = append(badErrs, cerr)
						mu.Unlock()
					}
					ok.Add(1)
				case errors.Is(err, driver.ErrDevice):
					failed.Add(1)
				default:
					mu.Lock()
					badErrs = append(badErrs, err)
					mu.Unlock()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for id, n := range seen {
				if n != 1 {
					t.Errorf("request %d run %d: callback ran %d times", ri, id, n)
				}
			}
		}()
	}
	wg.Wait()
	injected := faultinject.Failures()
	faultinject.Disarm()
	for i, err := range badErrs {
		if i == 5 {
			t.Errorf("... %d more", len(badErrs)-5)
			break
		}
		t.Errorf("an error that is not a device failure, or a wrong result: %v", err)
	}
	assert.Equal(t, int64(total), started.Load(), "every run started")
	assert.Equal(t, started.Load(), callbacks.Load(), "one callback per run: none lost, none twice")
	assert.Equal(t, started.Load(), ok.Load()+failed.Load())
	assert.Positive(t, failed.Load(), "some runs failed (%d calls failed)", injected)
	assert.Positive(t, ok.Load())
	t.Logf("%d runs: %d right, %d failed with a device error; %d OpenCL calls failed", total, ok.Load(), failed.Load(), injected)

	r, err := f.cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetTensor(defaultmodel.InputName, f.inputs[1]))
	require.NoError(t, r.Infer(context.Background()), "the compiled model works after the failures")
	assert.NoError(t, f.check(r, 1))
}

// TestMidRequestFailures fails one OpenCL call of a chosen kind in the
// middle of an asynchronous run (the kernel launches, the upload, the
// flush, the marker ending the run, the wait on the device, the read-back)
// and makes the callback panic: the run reports the error, and
// the next run on the same request and compiled model is right.
func TestMidRequestFailures(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after the fixture's cleanups.
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	// The ports through transfer commands (GPU_SHARED_HOST_IO=NO), and as
	// the device runs them by default: in shared memory, without transfer
	// commands, where it shares memory with the host.
	for _, io := range []string{"NO", "YES"} {
		t.Run("GPU_SHARED_HOST_IO="+io, func(t *testing.T) { midRequestFailures(t, io) })
	}
}

// midRequestFailures is TestMidRequestFailures with GPU_SHARED_HOST_IO=io.
func midRequestFailures(t *testing.T, io string) {
	f := newAsyncFixture(t, map[string]string{clbackend.KeySharedHostIO: io})
	d, _, err := clbackend.DefaultCLDevice()
	require.NoError(t, err)
	unified, _ := d.HostUnifiedMemory()
	transfers := io == "NO" || !unified || !d.FineGrainBufferSVM()
	r, err := driver.CreateAsyncInferRequest(f.cm)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	run := func(in int) error {
		require.NoError(t, r.SetTensor(defaultmodel.InputName, f.inputs[in]))
		require.NoError(t, r.StartAsync(context.Background()))
		return r.Wait(context.Background())
	}
	type failure struct {
		name, op  string
		n         int64
		tolerated bool
	}
	// The plan's kernels go in one command buffer where the device has
	// cl_khr_command_buffer, else one by one.
	launch := failure{"third kernel launch", "clEnqueueNDRangeKernel", 3, false}
	if d.CommandBuffersSupported() {
		launch = failure{"kernel launches (command buffer)", "clEnqueueCommandBufferKHR", 1, false}
	}
	for _, c := range []failure{
		launch,
		{"read-back", "clEnqueueReadBuffer", 1, false},
		{"upload", "clEnqueueWriteBuffer", 1, false},
		{"flush", "clFlush", 1, false},
		// Staged, the transfers go through pinned staging buffers and the
		// read of the last output carries the run's last event (no marker
		// follows it); shared, the command buffer (or the last launch)
		// carries it. The request waits on that event in clWaitForEvents.
		// The binding's wait when a transfer's own callback fails is cl's
		// TestTransferCallbackFailure.
		{"wait", "clWaitForEvents", 1, false},
	} {
		if !transfers && (c.op == "clEnqueueReadBuffer" || c.op == "clEnqueueWriteBuffer") {
			continue // shared ports: no transfer command to fail
		}
		t.Run(c.name, func(t *testing.T) {
			faultinject.ArmMatching(c.op, c.n, int32(cl.ErrOutOfResources))
			err := run(0)
			_, hit := faultinject.Disarm()
			require.Equal(t, c.op, hit, "the run made the call")
			if c.tolerated {
				require.NoError(t, err)
				assert.NoError(t, f.check(r, 0))
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrDevice)
			assert.ErrorIs(t, err, cl.ErrOutOfResources)
			assert.Contains(t, err.Error(), c.op)
			require.NoError(t, run(2), "the next run")
			assert.NoError(t, f.check(r, 2))
		})
	}
	t.Run("callback panics", func(t *testing.T) {
		r.SetCallback(func(error) { panic("user callback bug") })
		err := run(1)
		assert.ErrorIs(t, err, driver.ErrCallback)
		r.SetCallback(nil)
		require.NoError(t, run(3), "the next run")
		assert.NoError(t, f.check(r, 3))
	})
}
