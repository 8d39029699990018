package clbackend

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/faultinject"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// TestLaunchPaths runs one model several ways: the plan recorded as a
// command buffer (GPU_COMMAND_BUFFERS=YES on a device with
// cl_khr_command_buffer), launched kernel by kernel without events (NO),
// each with its ports in shared memory (GPU_SHARED_HOST_IO=YES on a
// device with it) and through pinned staging buffers (NO), and profiled
// (every command with its event, no staging); each twice, so the second
// inference reuses what the first made. The outputs agree to the bit;
// small ports are shared or staged except when profiling; and the
// models' buffers, kernels, events and command buffers are released with
// them.
func TestLaunchPaths(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	base := cl.LiveObjects()
	run := func(props map[string]string) ([]*tensor.Tensor, *planState) {
		cm, err := gpu.CompileModel(context.Background(), m, props)
		require.NoError(t, err)
		defer func() { require.NoError(t, cm.Close()) }()
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		for name, x := range ins {
			require.NoError(t, r.SetTensor(name, x))
		}
		var out []*tensor.Tensor
		for range 2 {
			require.NoError(t, r.Infer(context.Background()))
			out = nil
			for _, o := range cm.Outputs() {
				y, err := r.Tensor(o.Name)
				require.NoError(t, err)
				out = append(out, y.Clone())
			}
		}
		req := r.(*InferRequest)
		st := req.states[cm.(*CompiledModel).static]
		// What the state held, before Close releases it.
		copies := func(ss []*stage) []*stage {
			var c []*stage
			for _, s := range ss {
				if s != nil {
					cp := *s
					s = &cp
				}
				c = append(c, s)
			}
			return c
		}
		snap := &planState{in: copies(st.in), out: copies(st.out), cmdbuf: st.cmdbuf}
		return out, snap
	}
	cbOut, cbState := run(map[string]string{KeyCommandBuffers: "YES"})
	oneOut, oneState := run(map[string]string{KeyCommandBuffers: "NO"})
	stagedOut, stagedState := run(map[string]string{KeyCommandBuffers: "YES", KeySharedHostIO: "NO"})
	stagedOneOut, stagedOneState := run(map[string]string{KeyCommandBuffers: "NO", KeySharedHostIO: "NO"})
	profOut, profState := run(map[string]string{KeyCommandBuffers: "YES", driver.KeyEnableProfiling: "YES"})
	blockOut, _ := run(map[string]string{KeyWaitSpin: "0"})
	pollOut, _ := run(map[string]string{KeyWaitSpin: "1000000"})
	for i := range cbOut {
		assert.Equal(t, oneOut[i].Bytes(), cbOut[i].Bytes(), "output %d: command buffer vs single launches", i)
		assert.Equal(t, oneOut[i].Bytes(), stagedOut[i].Bytes(), "output %d: staged, command buffer", i)
		assert.Equal(t, oneOut[i].Bytes(), stagedOneOut[i].Bytes(), "output %d: staged, single launches", i)
		assert.Equal(t, oneOut[i].Bytes(), profOut[i].Bytes(), "output %d: profiled", i)
		assert.Equal(t, oneOut[i].Bytes(), blockOut[i].Bytes(), "output %d: blocking waits", i)
		assert.Equal(t, oneOut[i].Bytes(), pollOut[i].Bytes(), "output %d: polling waits", i)
	}
	if gpu.devices[gpu.def].cmdbufs {
		assert.NotNil(t, cbState.cmdbuf, "the plan ran as a command buffer")
	} else {
		t.Logf("%s has no usable cl_khr_command_buffer: the plan launched kernel by kernel", gpu.devices[gpu.def].fullName)
	}
	assert.Nil(t, oneState.cmdbuf)
	assert.Nil(t, profState.cmdbuf, "profiled runs time every kernel")
	shared := gpu.devices[gpu.def].sharedIO
	if !shared {
		t.Logf("%s shares no fine-grained buffer SVM with the host: every run staged its ports", gpu.devices[gpu.def].fullName)
	}
	for _, st := range []*planState{cbState, oneState, stagedState, stagedOneState} {
		require.Len(t, st.in, 2)
		require.NotNil(t, st.in[0], "x is staged")
		require.NotNil(t, st.out[0], "y is staged")
		isShared := shared && st != stagedState && st != stagedOneState
		assert.Equal(t, isShared, st.in[0].shared != nil, "x in shared memory")
		assert.Equal(t, isShared, st.out[0].shared != nil, "y in shared memory")
		assert.Equal(t, !isShared, st.in[0].mapped != nil, "x through a pinned staging buffer")
	}
	assert.Nil(t, profState.in[0], "profiled runs move tensors with events of their own")
	after := cl.LiveObjects()
	for _, k := range []string{"MemObject", "Kernel", "Event", "CommandBuffer"} {
		// The plugin keeps its context, queue and programs for later
		// models; the model's own handles are gone.
		assert.Equal(t, base[k], after[k], "%s handles left after the models closed", k)
	}
}

// TestWaitSpinConcurrent: under the latency hint with a long poll bound,
// several requests inferring at once (each on its own goroutine, as a
// server's handlers do) get the single request's outputs, and every
// inference leaves the process's count of GPU inferences in flight
// (inFlight, by which a wait polls only while it is the one in flight)
// as it found it, a cancelled one included; cl's TestWaitSpinAlone holds
// the wait's side (blocking at once, or as soon as another joins).
func TestWaitSpinConcurrent(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	props := map[string]string{driver.KeyPerformanceHint: driver.HintLatency.String(), KeyWaitSpin: "1000000"}
	cm, err := gpu.CompileModel(context.Background(), m, props)
	require.NoError(t, err)
	defer func() { require.NoError(t, cm.Close()) }()
	base := inFlight.Load()
	infer := func(r driver.InferRequest, ctx context.Context) ([][]byte, error) {
		for name, x := range ins {
			if err := r.SetTensor(name, x); err != nil {
				return nil, err
			}
		}
		if err := r.Infer(ctx); err != nil {
			return nil, err
		}
		var out [][]byte
		for _, o := range cm.Outputs() {
			y, err := r.Tensor(o.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, append([]byte(nil), y.Bytes()...))
		}
		return out, nil
	}
	ref, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer ref.Close()
	want, err := infer(ref, context.Background())
	require.NoError(t, err)
	assert.Equal(t, base, inFlight.Load(), "a lone inference landed")

	const workers, runs = 4, 5
	got := make([][][]byte, workers)
	errs := make([]error, workers)
	done := make(chan int, workers)
	for w := range workers {
		go func() {
			defer func() { done <- w }()
			r, err := cm.CreateInferRequest()
			if err != nil {
				errs[w] = err
				return
			}
			defer r.Close()
			for range runs {
				if got[w], errs[w] = infer(r, context.Background()); errs[w] != nil {
					return
				}
			}
		}()
	}
	for range workers {
		w := <-done
		require.NoError(t, errs[w], "worker %d", w)
		assert.Equal(t, want, got[w], "worker %d's outputs", w)
	}
	assert.Equal(t, base, inFlight.Load(), "concurrent inferences landed")

	// A cancelled inference is not counted, and one abandoned between
	// stages is drained (and uncounted) by the next.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = infer(ref, ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, base, inFlight.Load(), "a cancelled inference landed")
	req := ref.(*InferRequest)
	s := &runState{}
	stages := req.stagesOf(s)
	req.core.Mu.Lock()
	req.core.Busy = true
	req.core.Mu.Unlock()
	for _, st := range stages[:2] { // preprocess, enqueue; no wait
		require.NoError(t, st.Run(context.Background()))
	}
	assert.Equal(t, base+1, inFlight.Load(), "an enqueued inference is in flight")
	require.NoError(t, req.Abort())
	assert.Equal(t, base, inFlight.Load(), "a drained inference landed")
	req.core.Mu.Lock()
	req.core.Busy = false
	req.core.Mu.Unlock()
	_, err = infer(ref, context.Background())
	require.NoError(t, err)
	assert.Equal(t, base, inFlight.Load())
}

// TestWaitSpinPolicy: GPU_WAIT_SPIN_US is AUTO by default (a bound of
// latencySpinUS under the latency hint, none under the throughput hints),
// takes a number of microseconds (0 included) and refuses anything else;
// a wait polls for the bound while the request's last inference ended
// within it, enqueue to wait (spinFor).
func TestWaitSpinPolicy(t *testing.T) {
	for _, c := range []struct{ last, bound, want time.Duration }{
		{0, 100 * time.Microsecond, 100 * time.Microsecond},
		{100 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond},
		{101 * time.Microsecond, 100 * time.Microsecond, 0},
		{0, 0, 0},
		{time.Second, 0, 0},
	} {
		assert.Equal(t, c.want, spinFor(c.last, c.bound), "last %v bound %v", c.last, c.bound)
	}
	gpu := newGPU(t)
	m, _ := tuningModel(t)
	for _, c := range []struct {
		value, hint, stored string
		want                time.Duration
	}{
		{"", "", "AUTO", latencySpinUS * time.Microsecond},
		{"auto", "LATENCY", "AUTO", latencySpinUS * time.Microsecond},
		{"", "THROUGHPUT", "AUTO", 0},
		{"0", "", "0", 0},
		{" 250", "THROUGHPUT", "250", 250 * time.Microsecond},
	} {
		props := map[string]string{}
		if c.value != "" {
			props[KeyWaitSpin] = c.value
		}
		if c.hint != "" {
			props[driver.KeyPerformanceHint] = c.hint
			props[driver.KeyAllowAutoBatching] = "NO"
		}
		cm, err := gpu.CompileModel(context.Background(), m, props)
		require.NoError(t, err)
		assert.Equal(t, c.want, cm.(*CompiledModel).waitSpin, "GPU_WAIT_SPIN_US=%q hint %q", c.value, c.hint)
		v, err := cm.Property(KeyWaitSpin)
		require.NoError(t, err)
		assert.Equal(t, c.stored, v)
		require.NoError(t, cm.Close())
	}
	for _, bad := range []string{"-1", "fast", "1.5", "1000001", "9300000000000000000"} {
		_, err := gpu.CompileModel(context.Background(), m, map[string]string{KeyWaitSpin: bad})
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "GPU_WAIT_SPIN_US=%q", bad)
	}
}

// TestStatefulCommandBuffer: a stateful model (MAKE_STATEFUL) run as a
// command buffer records the copy of its next state into the request's
// state buffer as the buffer's last command (where the device records
// copies), so an inference enqueues no copy of its own; inference after
// inference its outputs and states equal, to the bit, those of the same
// model launched kernel by kernel with the copies enqueued singly.
func TestStatefulCommandBuffer(t *testing.T) {
	gpu := newGPU(t)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(2, 3))
	next := graph.NewNode("Add", "next", []graph.Output{s.Out(0), x.Out(0)}, nil, 1)
	y := graph.NewNode("Sigmoid", "y", []graph.Output{next.Out(0)}, nil, 1)
	m := graph.NewModel("acc", []*graph.Node{x, s}, []*graph.Node{graph.NewResult("y", y.Out(0)), graph.NewResult("s_next", next.Out(0))})
	xs, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{0.5, -1, 0.25, 2, -0.125, 1})
	require.NoError(t, err)
	run := func(cmdbufs string) ([][]byte, *InferRequest) {
		cm, err := gpu.CompileModel(context.Background(), m, map[string]string{driver.KeyMakeStateful: "s:s_next", KeyCommandBuffers: cmdbufs})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cm.Close() })
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		require.NoError(t, r.SetTensor("x", xs))
		var out [][]byte
		for range 4 {
			require.NoError(t, r.Infer(context.Background()))
			yt, err := r.Tensor("y")
			require.NoError(t, err)
			out = append(out, append([]byte(nil), yt.Bytes()...))
		}
		st, err := r.(*InferRequest).HoldState("s", "s_next")
		require.NoError(t, err)
		v, err := st.State()
		require.NoError(t, err)
		return append(out, v.Bytes()), r.(*InferRequest)
	}
	withCB, req := run("YES")
	single, _ := run("NO")
	assert.Equal(t, single, withCB, "outputs of four inferences and the state after them")
	if !gpu.devices[gpu.def].cmdbufs {
		t.Skipf("%s has no usable cl_khr_command_buffer: nothing recorded; POCL 3.x has it (apt-get install pocl-opencl-icd, make deps)", gpu.devices[gpu.def].fullName)
	}
	st := req.states[req.c.static]
	require.NotNil(t, st.cmdbuf, "the plan ran as a command buffer")
	if !st.cmdbufStates {
		t.Skipf("%s records no copies in command buffers: the state copy is enqueued singly; POCL 3.1's cl_khr_command_buffer 0.9.0 records them (apt-get install pocl-opencl-icd, make deps)", gpu.devices[gpu.def].fullName)
	}
	assert.True(t, req.syncState.cmdbufRan)
	assert.Empty(t, req.syncState.evs.copies, "no copy enqueued besides the command buffer")
}

// TestRequestKeepsNoUserTensors: once Infer returns, a request holds the
// caller's tensors only through its bindings: an input tensor replaced in
// the binding after an inference (and a bound output replaced likewise) is
// collected, on the straight-line path and after a failed inference.
func TestRequestKeepsNoUserTensors(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cm.Close()) }()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	collected := func(ctx context.Context, bind func(x *tensor.Tensor) error, src *tensor.Tensor) bool {
		x := src.Clone()
		done := make(chan struct{})
		runtime.AddCleanup(x, func(ch chan struct{}) { close(ch) }, done)
		require.NoError(t, bind(x))
		_ = r.Infer(ctx) // a cancelled ctx fails it
		require.NoError(t, bind(src.Clone()))
		x = nil
		for range 20 {
			runtime.GC()
			select {
			case <-done:
				return true
			case <-time.After(10 * time.Millisecond):
			}
		}
		return false
	}
	var name string
	var src *tensor.Tensor
	for n, x := range ins {
		name, src = n, x
		require.NoError(t, r.SetTensor(n, x))
	}
	bindIn := func(x *tensor.Tensor) error { return r.SetTensor(name, x) }
	assert.True(t, collected(context.Background(), bindIn, src), "an input replaced after the inference")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	assert.True(t, collected(cancelled, bindIn, src), "an input replaced after a cancelled inference")
	require.NoError(t, r.Infer(context.Background()))
	out := cm.Outputs()[0].Name
	y, err := r.Tensor(out)
	require.NoError(t, err)
	bindOut := func(x *tensor.Tensor) error { return r.SetTensor(out, x) }
	assert.True(t, collected(context.Background(), bindOut, y), "a bound output replaced after the inference")
}

// TestSharedPortsFallBack: where the driver refuses a shared buffer
// (clSVMAlloc fails) a request makes an ordinary one and stages that
// buffer's ports through pinned staging buffers; its outputs equal a
// request's whose ports are all shared.
func TestSharedPortsFallBack(t *testing.T) {
	gpu := newGPU(t)
	if !gpu.devices[gpu.def].sharedIO {
		t.Skipf("%s shares no fine-grained buffer SVM with the host: POCL 3.x does (apt-get install pocl-opencl-icd, via make deps)", gpu.devices[gpu.def].fullName)
	}
	m, ins := tuningModel(t)
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cm.Close()) }()
	infer := func(refuse bool) ([]byte, *planState) {
		if refuse {
			faultinject.ArmMatching("clSVMAlloc", 1, int32(cl.ErrMemObjectAllocationFailure))
		}
		r, err := cm.CreateInferRequest()
		faultinject.Disarm()
		require.NoError(t, err)
		defer r.Close()
		for name, x := range ins {
			require.NoError(t, r.SetTensor(name, x))
		}
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor(cm.Outputs()[0].Name)
		require.NoError(t, err)
		st := r.(*InferRequest).states[cm.(*CompiledModel).static]
		return append([]byte(nil), y.Bytes()...), &planState{in: append([]*stage(nil), st.in...), out: append([]*stage(nil), st.out...)}
	}
	want, shared := infer(false)
	got, refused := infer(true)
	assert.Equal(t, want, got)
	assert.NotNil(t, shared.in[0].shared)
	assert.NotNil(t, shared.out[0].shared)
	staged := 0
	for _, s := range append(refused.in, refused.out...) {
		if s != nil && s.shared == nil {
			staged++
		}
	}
	assert.Positive(t, staged, "the refused buffer's ports are staged")
}

// TestCommandsPerInference counts the commands one synchronous inference
// enqueues (the binding's clEnqueue* calls, faultinject.Trace), after a
// first inference made the request's buffers and command buffer: with the
// ports in shared memory (GPU_SHARED_HOST_IO on a device with it) a
// one-node model is its launch alone, and a model of several launches its
// command buffer alone (cl_khr_command_buffer) — no write, read or marker;
// staged, the inputs' writes and the outputs' reads come around them.
func TestCommandsPerInference(t *testing.T) {
	gpu := newGPU(t)
	dev := gpu.devices[gpu.def]
	ctx := context.Background()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	one := graph.NewModel("one", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", relu.Out(0))})
	multi, _ := tuningModel(t)
	enqueues := func(m *graph.Model, shared string) []string {
		t.Helper()
		cm, err := gpu.CompileModel(ctx, m, map[string]string{KeySharedHostIO: shared})
		require.NoError(t, err)
		defer func() { require.NoError(t, cm.Close()) }()
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		require.NoError(t, r.Infer(ctx))
		faultinject.Trace()
		err = r.Infer(ctx)
		ops := faultinject.Ops()
		faultinject.Disarm()
		require.NoError(t, err)
		var enq []string
		for _, op := range ops {
			if strings.HasPrefix(op, "clEnqueue") {
				enq = append(enq, op)
			}
		}
		return enq
	}
	launches := []string{"clEnqueueNDRangeKernel"}
	if dev.cmdbufs {
		launches = []string{"clEnqueueCommandBufferKHR"}
	}
	staged := enqueues(one, "NO")
	assert.Equal(t, []string{"clEnqueueWriteBuffer", "clEnqueueNDRangeKernel", "clEnqueueReadBuffer"}, staged, "one launch, staged")
	stagedMulti := enqueues(multi, "NO")
	require.NotEmpty(t, stagedMulti)
	assert.Equal(t, "clEnqueueWriteBuffer", stagedMulti[0], "several launches, staged: the inputs are written first")
	assert.Equal(t, "clEnqueueReadBuffer", stagedMulti[len(stagedMulti)-1], "and the output read last")
	if !dev.sharedIO {
		t.Skipf("%s shares no fine-grained buffer SVM with the host: POCL 3.x does (apt-get install pocl-opencl-icd, via make deps)", dev.fullName)
	}
	assert.Equal(t, []string{"clEnqueueNDRangeKernel"}, enqueues(one, "YES"), "one launch, shared ports")
	if dev.cmdbufs {
		assert.Equal(t, launches, enqueues(multi, "YES"), "several launches, shared ports: the command buffer alone")
	} else {
		for _, op := range enqueues(multi, "YES") {
			assert.Equal(t, "clEnqueueNDRangeKernel", op, "several launches, shared ports: launches alone")
		}
	}
}
