package clbackend

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// scaleModel is x f32[1,16,16,4] -> Mul(constant k) -> Relu -> y: the
// second stage of the chains below, fed by convChain's output.
func scaleModel(t testing.TB) *graph.Model {
	t.Helper()
	kv := make([]float32, 4)
	for i := range kv {
		kv[i] = float32(i) - 1.5
	}
	k, err := tensor.FromF32(tensor.Shape{4}, kv)
	require.NoError(t, err)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 16, 16, 4))
	mul := graph.NewNode("Mul", "mul", []graph.Output{x.Out(0), graph.NewConstant("k", k).Out(0)}, nil, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{mul.Out(0)}, nil, 1)
	return graph.NewModel("scale", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", relu.Out(0))})
}

// liveObjects snapshots cl.LiveObjects and, when the test ends, asserts
// that every OpenCL object made since is gone.
func liveObjects(t *testing.T) {
	t.Helper()
	before := cl.LiveObjects()
	t.Cleanup(func() { assert.Equal(t, before, cl.LiveObjects(), "OpenCL objects leaked") })
}

// memStats reads and parses the device's GPU_MEMORY_STATISTICS.
func memStats(t *testing.T, p *Plugin) driver.MemoryStatistics {
	t.Helper()
	v, err := p.Property(driver.KeyMemoryStatistics)
	require.NoError(t, err)
	s, err := driver.ParseMemoryStatistics(v)
	require.NoError(t, err)
	return s
}

// cpuReference runs the chain convChain -> scaleModel on the CPU device.
func cpuReference(t *testing.T, x *tensor.Tensor) (mid, out *tensor.Tensor) {
	t.Helper()
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = cpu.Close() })
	a, _ := runModel(t, cpu, convChain(t, 2, graph.StaticDim(1)), x)
	b, _ := runModel(t, cpu, scaleModel(t), a[0])
	return a[0], b[0]
}

// TestRemoteChainZeroCopy chains two models compiled in the device's own
// context through one remote tensor: the first writes its output into it
// and the second reads its input from it on the device, so the only host
// transfers are the first input and the last output, and the result
// equals the CPU's.
func TestRemoteChainZeroCopy(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	ctx := context.Background()
	x := randInput(t, tensor.Shape{1, 4, 16, 16}, 11)
	wantMid, want := cpuReference(t, x)

	rc, err := p.DefaultContext("")
	require.NoError(t, err)
	defer rc.Close()
	a, err := p.CompileModelIn(ctx, convChain(t, 2, graph.StaticDim(1)), rc, nil)
	require.NoError(t, err)
	defer a.Close()
	b, err := p.CompileModel(ctx, scaleModel(t), nil) // the device's own context too
	require.NoError(t, err)
	defer b.Close()

	mid, err := rc.CreateTensor("det-map", tensor.F32, tensor.Shape{1, 16, 16, 4}, nil)
	require.NoError(t, err)
	defer mid.Close()
	ra, err := a.CreateInferRequest()
	require.NoError(t, err)
	defer ra.Close()
	rb, err := b.CreateInferRequest()
	require.NoError(t, err)
	defer rb.Close()
	require.NoError(t, ra.SetTensor("x", x))
	require.NoError(t, ra.(driver.RemoteBinder).SetRemoteTensor("y", mid))
	require.NoError(t, rb.(driver.RemoteBinder).SetRemoteTensor("x", mid))

	for range 2 { // a second run reuses the bindings
		require.NoError(t, ra.Infer(ctx))
		require.NoError(t, rb.Infer(ctx))
		ta, tb := ra.(driver.TransferCounter).Transfers(), rb.(driver.TransferCounter).Transfers()
		n := int64(16 * 16 * 4 * 4)
		assert.Equal(t, driver.Transfers{HostToDevice: x.ByteSize(), DeviceToDevice: n}, ta, "stage 1: input up, output into the remote tensor")
		assert.Equal(t, driver.Transfers{DeviceToHost: n, DeviceToDevice: n}, tb, "stage 2: input from the remote tensor, output down")
		assert.Zero(t, ta.DeviceToHost+tb.HostToDevice, "no host bytes between the stages")
		y, err := rb.Tensor("y")
		require.NoError(t, err)
		assertClose(t, want, y)
	}
	got := tensor.MustNew(tensor.F32, tensor.Shape{1, 16, 16, 4})
	require.NoError(t, mid.CopyTo(ctx, got))
	assertClose(t, wantMid, got)

	// The remote-bound output is not a host tensor.
	_, err = ra.Tensor("y")
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, `remote tensor "det-map"`)
	// SetTensor binds a host tensor again.
	require.NoError(t, ra.SetTensor("y", tensor.MustNew(tensor.F32, tensor.Shape{1, 16, 16, 4})))
	require.NoError(t, ra.Infer(ctx))
	assert.Equal(t, int64(16*16*4*4), ra.(driver.TransferCounter).Transfers().DeviceToHost)
}

// TestRemoteTensorCopies: CopyFrom and CopyTo round-trip, the tensor
// reports its params, and GPU_MEMORY_STATISTICS counts it until Close.
func TestRemoteTensorCopies(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	ctx := context.Background()
	rc, err := p.DefaultContext("")
	require.NoError(t, err)
	defer rc.Close()
	before := memStats(t, p)
	rt, err := rc.CreateTensor("t", tensor.F32, tensor.Shape{3, 5}, nil)
	require.NoError(t, err)
	assert.Equal(t, before.RemoteTensors+60, memStats(t, p).RemoteTensors)
	assert.Equal(t, driver.SharedMemOCLBuffer, rt.Params()[driver.KeySharedMemType])
	assert.Equal(t, rc.Params()[driver.KeyOCLContext], rt.Params()[driver.KeyOCLContext])
	assert.Equal(t, "GPU.0", rt.DeviceName())

	x := randInput(t, tensor.Shape{3, 5}, 3)
	require.NoError(t, rt.CopyFrom(ctx, x))
	got := tensor.MustNew(tensor.F32, tensor.Shape{3, 5})
	require.NoError(t, rt.CopyTo(ctx, got))
	assert.Equal(t, x.F32(), got.F32())

	err = rt.CopyTo(ctx, tensor.MustNew(tensor.F32, tensor.Shape{5, 3}))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, `remote tensor "t"`)
	assert.ErrorContains(t, err, "want f32[3,5]")

	require.NoError(t, rt.Close())
	require.NoError(t, rt.Close(), "Close is idempotent")
	assert.Equal(t, before.RemoteTensors, memStats(t, p).RemoteTensors)
	err = rt.CopyFrom(ctx, x)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorContains(t, err, `remote tensor "t"`)
}

// TestUserContext runs a model in the caller's own OpenCL context and
// queue, writing its output into the caller's own buffer, which the
// caller then reads on its queue; clinfer's references to the caller's
// handles come and go in pairs, and the caller's buffer outlives the
// remote tensor that wrapped it.
func TestUserContext(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	ctx := context.Background()
	dev := p.devices[0].cl
	uc, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer uc.Close()
	uq, err := uc.CreateCommandQueue(dev, 0)
	require.NoError(t, err)
	defer uq.Close()
	ubuf, err := uc.CreateEmptyBuffer(cl.MemReadWrite, 16*16*4*4)
	require.NoError(t, err)
	defer ubuf.Close()
	// Settle the queue's own references (POCL keeps one to its last
	// command) before counting.
	ev0, err := cl.EnqueueWriteSlice(uq, ubuf, true, 0, []float32{0}, nil)
	require.NoError(t, err)
	require.NoError(t, ev0.Close())
	require.NoError(t, uq.Finish())
	refs := func() [3]int {
		c, err := uc.ReferenceCount()
		require.NoError(t, err)
		q, err := uq.ReferenceCount()
		require.NoError(t, err)
		b, err := ubuf.ReferenceCount()
		require.NoError(t, err)
		return [3]int{c, q, b}
	}
	r0 := refs()

	x := randInput(t, tensor.Shape{1, 4, 16, 16}, 5)
	wantMid, _ := cpuReference(t, x)
	func() {
		rc, err := p.CreateContext(ContextParams(uc, 0, uq))
		require.NoError(t, err)
		defer rc.Close()
		assert.Equal(t, driver.FormatHandle(uq.Handle()), rc.Params()[driver.KeyOCLQueue])
		cm, err := p.CompileModelIn(ctx, convChain(t, 2, graph.StaticDim(1)), rc, nil)
		require.NoError(t, err)
		defer cm.Close()
		// A second model in the context builds no program: it shares the
		// first one's.
		built := p.ProgramCacheStats().SourceBuilds
		cm2, err := p.CompileModelIn(ctx, convChain(t, 2, graph.StaticDim(1)), rc, nil)
		require.NoError(t, err)
		assert.Equal(t, built, p.ProgramCacheStats().SourceBuilds, "programs are shared by the models of a context")
		require.NoError(t, cm2.Close())
		mctx, err := cm.(driver.ContextModel).Context()
		require.NoError(t, err)
		assert.Equal(t, rc.Params(), mctx.Params(), "the model reports the context it was compiled in")
		require.NoError(t, mctx.Close())

		out, err := rc.CreateTensor("user-buffer", tensor.F32, tensor.Shape{1, 16, 16, 4}, BufferParams(ubuf))
		require.NoError(t, err)
		defer out.Close()
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer req.Close()
		require.NoError(t, req.SetTensor("x", x))
		require.NoError(t, req.(driver.RemoteBinder).SetRemoteTensor("y", out))
		require.NoError(t, req.Infer(ctx))

		// The caller's queue is the requests' queue: a read enqueued
		// there comes after the inference.
		got := make([]float32, 16*16*4)
		ev, err := cl.EnqueueReadSlice(uq, ubuf, true, 0, got, nil)
		require.NoError(t, err)
		require.NoError(t, ev.Close())
		want := wantMid.F32()
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-4+1e-3*float64(abs32(want[i])), "element %d", i)
		}
	}()
	require.NoError(t, uq.Finish())
	assert.Equal(t, r0, refs(), "clinfer released exactly the references it took on the caller's context, queue and buffer")
	// The caller's buffer still works.
	ev, err := cl.EnqueueWriteSlice(uq, ubuf, true, 0, []float32{1}, nil)
	require.NoError(t, err)
	require.NoError(t, ev.Close())
}

// TestRemoteErrors: what cannot be bound or made is refused with an error
// that names the tensor and says why.
func TestRemoteErrors(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	ctx := context.Background()
	cm, err := p.CompileModel(ctx, scaleModel(t), nil)
	require.NoError(t, err)
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	bind := req.(driver.RemoteBinder).SetRemoteTensor
	rc, err := p.DefaultContext("")
	require.NoError(t, err)
	defer rc.Close()
	dev := p.devices[0].cl
	uc, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer uc.Close()
	other, err := p.CreateContext(ContextParams(uc, 0, nil))
	require.NoError(t, err)
	defer other.Close()
	shape := tensor.Shape{1, 16, 16, 4}

	for _, tc := range []struct {
		name, tensor, port string
		ctx                driver.RemoteContext
		typ                tensor.ElementType
		shape              tensor.Shape
		sentinel           error
		says               []string
	}{
		{"wrong type", "ints", "x", rc, tensor.I32, shape, driver.ErrInvalidArgument, []string{"element type i32, want f32"}},
		{"wrong shape", "small", "x", rc, tensor.F32, tensor.Shape{1, 4}, driver.ErrInvalidArgument, []string{"does not fit"}},
		{"unknown port", "t", "nope", rc, tensor.F32, shape, driver.ErrNotFound, []string{`no port "nope"`}},
		{"another context", "foreign", "x", other, tensor.F32, shape, driver.ErrInvalidArgument, []string{"a user context", "create it in the model's context"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := tc.ctx.CreateTensor(tc.tensor, tc.typ, tc.shape, nil)
			require.NoError(t, err)
			defer rt.Close()
			err = bind(tc.port, rt)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.ErrorContains(t, err, `remote tensor "`+tc.tensor+`"`)
			for _, want := range tc.says {
				assert.ErrorContains(t, err, want)
			}
		})
	}
	t.Run("closed before binding", func(t *testing.T) {
		rt, err := rc.CreateTensor("gone", tensor.F32, shape, nil)
		require.NoError(t, err)
		require.NoError(t, rt.Close())
		err = bind("x", rt)
		assert.ErrorIs(t, err, driver.ErrClosed)
		assert.ErrorContains(t, err, `remote tensor "gone"`)
	})
	t.Run("closed after binding", func(t *testing.T) {
		rt, err := rc.CreateTensor("gone-later", tensor.F32, shape, nil)
		require.NoError(t, err)
		require.NoError(t, bind("x", rt))
		require.NoError(t, rt.Close())
		err = req.Infer(ctx)
		assert.ErrorIs(t, err, driver.ErrClosed)
		assert.ErrorContains(t, err, `remote tensor "gone-later"`)
		assert.ErrorContains(t, err, `port "x"`)
		// A host tensor makes the request usable again.
		require.NoError(t, req.SetTensor("x", randInput(t, shape, 1)))
		require.NoError(t, req.Infer(ctx))
	})
	t.Run("buffer of another context", func(t *testing.T) {
		b, err := uc.CreateEmptyBuffer(cl.MemReadWrite, 64)
		require.NoError(t, err)
		defer b.Close()
		_, err = rc.CreateTensor("wrapped", tensor.F32, tensor.Shape{16}, BufferParams(b))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, `remote tensor "wrapped"`)
		assert.ErrorContains(t, err, "belongs to OpenCL context")
	})
	t.Run("buffer too small", func(t *testing.T) {
		b, err := uc.CreateEmptyBuffer(cl.MemReadWrite, 16)
		require.NoError(t, err)
		defer b.Close()
		_, err = other.CreateTensor("short", tensor.F32, tensor.Shape{16}, BufferParams(b))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, "holds 16 bytes, and f32[16] needs 64")
	})
	t.Run("caller releases its buffer", func(t *testing.T) {
		// The tensor's own reference keeps the buffer alive: it works
		// until its Close, which releases the last reference.
		b, err := uc.CreateEmptyBuffer(cl.MemReadWrite, 64)
		require.NoError(t, err)
		params := BufferParams(b)
		rt, err := other.CreateTensor("outlives", tensor.F32, tensor.Shape{16}, params)
		require.NoError(t, err)
		require.NoError(t, b.Close())
		x := randInput(t, tensor.Shape{16}, 4)
		require.NoError(t, rt.CopyFrom(ctx, x))
		got := tensor.MustNew(tensor.F32, tensor.Shape{16})
		require.NoError(t, rt.CopyTo(ctx, got))
		assert.Equal(t, x.F32(), got.F32())
		require.NoError(t, rt.Close())
		// A released buffer's handle (0 once the cl package closed it) is
		// refused by name.
		_, err = other.CreateTensor("released", tensor.F32, tensor.Shape{16}, BufferParams(b))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, `remote tensor "released"`)
		assert.ErrorContains(t, err, "MEM_HANDLE")
	})
	t.Run("bad tensor keys", func(t *testing.T) {
		_, err := rc.CreateTensor("k", tensor.F32, shape, map[string]string{"MEM_HANDEL": "0x1"})
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, "unknown key MEM_HANDEL")
		_, err = rc.CreateTensor("usm", tensor.F32, shape, map[string]string{driver.KeySharedMemType: driver.SharedMemUSMHostBuf})
		assert.ErrorContains(t, err, "use CreateHostTensor")
		_, err = rc.CreateTensor("zero", tensor.F32, shape, map[string]string{driver.KeySharedMemType: driver.SharedMemOCLBuffer, driver.KeyMemHandle: "0"})
		assert.ErrorContains(t, err, "non-zero handle")
	})
	t.Run("bad context props", func(t *testing.T) {
		_, err := p.CreateContext(map[string]string{driver.KeyOCLQueue: "0x1"})
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, "OCL_CONTEXT is missing")
		_, err = p.CreateContext(map[string]string{driver.KeyOCLContext: driver.FormatHandle(uc.Handle()), driver.KeyOCLContextDeviceID: "3"})
		assert.ErrorContains(t, err, "OCL_CONTEXT_DEVICE_ID=3")
		_, err = p.CreateContext(map[string]string{driver.KeyOCLContext: driver.FormatHandle(uc.Handle()), "OCL_QUEUES": "1"})
		assert.ErrorContains(t, err, "unknown key OCL_QUEUES")
		ooo, err := uc.CreateCommandQueue(dev, cl.CommandQueueOutOfOrderExecModeEnable)
		if err == nil { // a device without out-of-order queues cannot be asked
			defer ooo.Close()
			_, err = p.CreateContext(ContextParams(uc, 0, ooo))
			assert.ErrorContains(t, err, "out of order")
		}
	})
	t.Run("compile in a foreign context value", func(t *testing.T) {
		_, err := p.CompileModelIn(ctx, scaleModel(t), fakeContext{}, nil)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.ErrorContains(t, err, "not one of this GPU device's")
	})
}

// fakeContext is a remote context of no real device.
type fakeContext struct{ driver.RemoteContext }

func (fakeContext) DeviceName() string { return "GPU.0" }

// TestMemoryStatisticsAndReleaseMemory: weights, activations, staging and
// remote tensors show in GPU_MEMORY_STATISTICS; two models with the same
// weights in one context hold them once; ReleaseMemory takes the
// activations down, and the next inference makes them again and is still
// right.
func TestMemoryStatisticsAndReleaseMemory(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	ctx := context.Background()
	total, err := p.Property(driver.KeyDeviceTotalMemSize)
	require.NoError(t, err)
	assert.NotEqual(t, "0", total)
	s0 := memStats(t, p)
	x := randInput(t, tensor.Shape{1, 4, 16, 16}, 9)
	want, cm := runModel(t, p, convChain(t, 2, graph.StaticDim(1)), x)
	s1 := memStats(t, p)
	assert.Greater(t, s1.Weights, s0.Weights, "weights on the device")
	nweights := len(p.devices[0].ctx.weights)
	_, cm2 := runModel(t, p, convChain(t, 2, graph.StaticDim(1)), x)
	assert.Equal(t, nweights, len(p.devices[0].ctx.weights), "a second model with the same weights in the same context shares them")
	// It adds only its plans' own constants (kernel parameter tables).
	assert.Less(t, memStats(t, p).Weights-s1.Weights, int64(2*4*4*3*3*4), "the second model's weights are not uploaded again")
	require.NoError(t, cm2.Close())

	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	require.NoError(t, req.SetTensor("x", x))
	require.NoError(t, req.Infer(ctx))
	s2 := memStats(t, p)
	assert.Greater(t, s2.Activations, s1.Activations-1, "the request's activation buffers")
	require.NoError(t, cm.(driver.MemoryReleaser).ReleaseMemory())
	s3 := memStats(t, p)
	assert.Less(t, s3.Activations, s2.Activations, "ReleaseMemory frees the activations")
	assert.Equal(t, s2.Weights, s3.Weights, "and keeps the weights")
	require.NoError(t, req.Infer(ctx))
	y, err := req.Tensor("y")
	require.NoError(t, err)
	assertClose(t, want[0], y)
	assert.Equal(t, s2.Activations, memStats(t, p).Activations, "the next inference makes them again")

	rc, err := p.DefaultContext("")
	require.NoError(t, err)
	defer rc.Close()
	ht, err := rc.CreateHostTensor("staging", tensor.F32, tensor.Shape{1, 4, 16, 16})
	require.NoError(t, err)
	assert.Equal(t, s2.Staging+x.ByteSize(), memStats(t, p).Staging)
	require.NoError(t, ht.Tensor().CopyFrom(x))
	require.NoError(t, req.SetTensor("x", ht.Tensor()))
	require.NoError(t, req.Infer(ctx))
	y, err = req.Tensor("y")
	require.NoError(t, err)
	assertClose(t, want[0], y)
	require.NoError(t, req.SetTensor("x", x)) // let go of the mapped memory before unmapping it
	require.NoError(t, ht.Close())
	assert.Equal(t, s2.Staging, memStats(t, p).Staging)
	require.NoError(t, cm.Close())
	assert.Equal(t, s0.Weights, memStats(t, p).Weights, "closing the models gives the weights back")
	assert.Zero(t, memStats(t, p).Activations)
}

// TestQueueHints: MEDIUM is the driver's default and always accepted;
// LOW and HIGH need cl_khr_priority_hints / cl_khr_throttle_hints, and a
// device without them (POCL) refuses with an error naming the extension.
// GPU_HOST_TASK_PRIORITY takes MEDIUM only and says why.
func TestQueueHints(t *testing.T) {
	p := newGPU(t)
	ctx := context.Background()
	for key, ext := range map[string]string{driver.KeyQueuePriority: "cl_khr_priority_hints", driver.KeyQueueThrottle: "cl_khr_throttle_hints"} {
		t.Run(key, func(t *testing.T) {
			v, err := p.Property(key)
			require.NoError(t, err)
			assert.Equal(t, "MEDIUM", v)
			cm, err := p.CompileModel(ctx, scaleModel(t), map[string]string{key: "MEDIUM"})
			require.NoError(t, err)
			require.NoError(t, cm.Close())
			has := p.devices[0].hasExtension(ext)
			cm, err = p.CompileModel(ctx, scaleModel(t), map[string]string{key: "HIGH"})
			if has {
				require.NoError(t, err)
				r, err := cm.CreateInferRequest()
				require.NoError(t, err)
				require.NoError(t, r.Infer(ctx))
				require.NoError(t, r.Close())
				require.NoError(t, cm.Close())
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.ErrorContains(t, err, key)
			assert.ErrorContains(t, err, ext)
			err = p.SetProperties(map[string]string{key: "LOW"})
			assert.ErrorContains(t, err, ext)
		})
	}
	err := p.SetProperties(map[string]string{driver.KeyHostTaskPriority: "HIGH"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, "goroutines have no priorities")
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyHostTaskPriority: "MEDIUM"}))

	// A user queue carries its own hints: asking for them on a model
	// compiled in its context is refused.
	dev := p.devices[0].cl
	uc, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer uc.Close()
	uq, err := uc.CreateCommandQueue(dev, 0)
	require.NoError(t, err)
	defer uq.Close()
	rc, err := p.CreateContext(ContextParams(uc, 0, uq))
	require.NoError(t, err)
	defer rc.Close()
	_, err = p.CompileModelIn(ctx, scaleModel(t), rc, map[string]string{driver.KeyEnableProfiling: "YES"})
	assert.ErrorContains(t, err, "CL_QUEUE_PROFILING_ENABLE")
}

// TestRemoteContextCloseRace closes a context over the caller's OpenCL
// context (its last reference) while tensors are made and a model is
// compiled in it: each either succeeds, holding the context until it is
// closed, or fails with ErrClosed; nothing runs on a released context
// (the race detector and cl.LiveObjects watch) and nothing leaks.
func TestRemoteContextCloseRace(t *testing.T) {
	liveObjects(t) // first: checked after the plugin's Close
	p := newGPU(t)
	dev := p.devices[0].cl
	uc, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer uc.Close()
	m := scaleModel(t)
	for i := range 12 {
		rc, err := p.CreateContext(ContextParams(uc, 0, nil))
		require.NoError(t, err)
		var wg sync.WaitGroup
		var closers []io.Closer
		var mu sync.Mutex
		keep := func(c io.Closer, err error) {
			if err != nil {
				assert.ErrorIs(t, err, driver.ErrClosed, "iteration %d", i)
				return
			}
			mu.Lock()
			closers = append(closers, c)
			mu.Unlock()
		}
		wg.Add(4)
		go func() { defer wg.Done(); keep(rc.CreateTensor("t", tensor.F32, tensor.Shape{64}, nil)) }()
		go func() { defer wg.Done(); keep(rc.CreateHostTensor("h", tensor.F32, tensor.Shape{64})) }()
		go func() { defer wg.Done(); keep(p.CompileModelIn(context.Background(), m, rc, nil)) }()
		go func() { defer wg.Done(); assert.NoError(t, rc.Close()) }()
		wg.Wait()
		for _, c := range closers {
			assert.NoError(t, c.Close())
		}
	}
}
