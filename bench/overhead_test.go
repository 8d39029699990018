package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// BenchmarkOverhead measures what a small model pays per inference on the
// GPU device beyond its kernels' work, in three layers:
//
//   - floor: the OpenCL driver alone, on one context and in-order queue —
//     an empty marker waited on, one tiny kernel and a clFinish, one tiny
//     kernel and a blocking 4-byte read, the same kernel recorded in a
//     command buffer (where the device has cl_khr_command_buffer), and
//     100 kernels back to back: the least any runtime on this driver pays.
//   - infer: synchronous Infer of a chain of n Sigmoid nodes on 1x16 (the
//     chain fusion off, so n launches), n = 1 and 16, in alternating
//     blocks of overheadBlock inferences (inferBlocks), with a
//     plain ctx and a cancellable one, command buffers on and off, the
//     wait polling (GPU_WAIT_SPIN_US AUTO) and blocking at once (0): the
//     fixed cost per inference (n = 1), the cost per kernel (the slope) and
//     the Go allocations per Infer (bound-allocs: with the output bound by
//     SetTensor, so that the request makes no output tensor).
//   - models: the wake-word heads and Silero VAD v5 (stateful) from
//     `make models`, interleaved with ONNX Runtime (scripts/ortref/bench.js
//     as a peer process, 2 threads) in rounds, on the defaults, without
//     command buffers, without polling waits and without FuseDenseChain
//     (gpu-perlayer): medians and the ratios.
//
// All times are medians (other processes' load skews a mean):
//
//	go test -run '^$' -bench BenchmarkOverhead -benchtime 100x ./bench/
func BenchmarkOverhead(b *testing.B) {
	b.Run("floor", benchFloor)
	b.Run("infer", benchInferOverhead)
	b.Run("models", benchSmallModels)
}

// tinyKernel builds movement_copy.cl's copy_words on a one-word buffer of
// e: the smallest launch there is.
func tinyKernel(b *testing.B, e *deviceEnv) (*cl.Kernel, *cl.MemObject) {
	b.Helper()
	k := kernels.MustLookup("copy_words")
	src, err := k.Source()
	if err != nil {
		b.Fatal(err)
	}
	prog, err := e.ctx.CreateProgramWithSource([]string{src})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = prog.Close() })
	if err := prog.BuildProgram(nil, k.Options+" -cl-std=CL1.2"); err != nil {
		b.Fatal(err)
	}
	kern, err := prog.CreateKernel(k.Entry)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = kern.Close() })
	buf, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, 64)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = buf.Close() })
	if err := kern.SetArgs(buf, buf, uint64(1)); err != nil {
		b.Fatal(err)
	}
	return kern, buf
}

// stageBuffer makes e.staged: 64 bytes of host memory the driver
// allocates, mapped for the benchmark's life (a request's pinned staging).
func stageBuffer(b *testing.B, e *deviceEnv) {
	b.Helper()
	buf, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite|cl.MemAllocHostPtr, 64)
	if err != nil {
		b.Fatal(err)
	}
	mapped, ev, err := e.q.EnqueueMapBuffer(buf, true, cl.MapFlagRead|cl.MapFlagWrite, 0, 64, nil)
	if err != nil {
		b.Fatal(errors.Join(err, buf.Close()))
	}
	b.Cleanup(func() {
		ev, err := e.q.EnqueueUnmapMemObject(buf, mapped, nil)
		if err == nil {
			err = errors.Join(ev.Wait(), ev.Close())
		}
		if err = errors.Join(err, buf.Close()); err != nil {
			b.Error(err)
		}
	})
	e.staged = mapped
	if err := ev.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchFloor times the driver's own round trips (see BenchmarkOverhead).
func benchFloor(b *testing.B) {
	one := []int{1}
	cases := []struct {
		name string
		n    int // commands per round trip, for µs/command
		run  func(e *deviceEnv, k *cl.Kernel, buf *cl.MemObject, cb *cl.CommandBuffer) error
	}{
		{"marker-wait", 1, func(e *deviceEnv, _ *cl.Kernel, _ *cl.MemObject, _ *cl.CommandBuffer) error {
			ev, err := e.q.EnqueueMarkerWithWaitList(nil)
			if err != nil {
				return err
			}
			return errors.Join(ev.Wait(), ev.Close())
		}},
		{"kernel-finish", 1, func(e *deviceEnv, k *cl.Kernel, _ *cl.MemObject, _ *cl.CommandBuffer) error {
			if err := e.q.EnqueueNDRangeKernelNoEvent(k, nil, one, nil); err != nil {
				return err
			}
			return e.q.Finish()
		}},
		{"kernel-blocking-read", 2, func(e *deviceEnv, k *cl.Kernel, buf *cl.MemObject, _ *cl.CommandBuffer) error {
			if err := e.q.EnqueueNDRangeKernelNoEvent(k, nil, one, nil); err != nil {
				return err
			}
			var w [1]uint32
			_, err := cl.EnqueueReadSlice(e.q, buf, true, 0, w[:], nil)
			return err
		}},
		{"inference-sequence", 3, func(e *deviceEnv, k *cl.Kernel, buf *cl.MemObject, _ *cl.CommandBuffer) error {
			// What a one-kernel inference enqueues: the input written from
			// a mapped staging buffer, the kernel, the output read into it
			// with an event, a flush, the wait.
			if err := e.q.EnqueueWriteMappedNoEvent(buf, 0, e.staged, 0, 4); err != nil {
				return err
			}
			if err := e.q.EnqueueNDRangeKernelNoEvent(k, nil, one, nil); err != nil {
				return err
			}
			ev, err := e.q.EnqueueReadMapped(buf, 0, e.staged, 0, 4, true)
			if err != nil {
				return err
			}
			if err := e.q.Flush(); err != nil {
				return errors.Join(err, ev.Wait(), ev.Close())
			}
			return errors.Join(ev.Wait(), ev.Close())
		}},
		{"cmdbuf-finish", 1, func(e *deviceEnv, _ *cl.Kernel, _ *cl.MemObject, cb *cl.CommandBuffer) error {
			if _, err := cb.Enqueue(false); err != nil {
				return err
			}
			return e.q.Finish()
		}},
		{"kernels100-finish", 100, func(e *deviceEnv, k *cl.Kernel, _ *cl.MemObject, _ *cl.CommandBuffer) error {
			for range 100 {
				if err := e.q.EnqueueNDRangeKernelNoEvent(k, nil, one, nil); err != nil {
					return err
				}
			}
			return e.q.Finish()
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := newDeviceEnv(b)
			k, buf := tinyKernel(b, e)
			stageBuffer(b, e)
			var cb *cl.CommandBuffer
			if c.name == "cmdbuf-finish" {
				if !e.dev.CommandBuffersSupported() {
					b.Skip("the device has no cl_khr_command_buffer")
				}
				var err error
				if cb, err = e.q.CreateCommandBuffer(); err != nil {
					b.Fatal(err)
				}
				defer cb.Close()
				if err := cb.NDRangeKernel(k, nil, one, nil); err != nil {
					b.Fatal(err)
				}
				if err := cb.Finalize(); err != nil {
					b.Fatal(err)
				}
			}
			med := medianOf(b, func() error { return c.run(e, k, buf, cb) })
			b.ReportMetric(float64(med.Nanoseconds())/1e3, "µs/roundtrip")
			b.ReportMetric(float64(med.Nanoseconds())/1e3/float64(c.n), "µs/command")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// sigmoidChain is n Sigmoid nodes in a row on x of shape 1x16 (no pass
// folds one into the next).
func sigmoidChain(n int) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 16))
	y := x.Out(0)
	for i := range n {
		y = graph.NewNode("Sigmoid", fmt.Sprintf("sigmoid%d", i), []graph.Output{y}, nil, 1).Out(0)
	}
	return graph.NewModel(fmt.Sprintf("sigmoid_x%d", n), []*graph.Node{x}, []*graph.Node{graph.NewResult("y", y)})
}

// benchInferOverhead times Infer on sigmoidChain(1) and sigmoidChain(16)
// in alternating blocks (see BenchmarkOverhead).
func benchInferOverhead(b *testing.B) {
	cases := []struct {
		cmdbuf, spin string
		cancellable  bool
	}{
		{"YES", "", false}, {"YES", "", true}, {"NO", "", false}, {"NO", "", true},
		{"YES", "0", false}, {"NO", "0", false},
	}
	for _, c := range cases {
		cmdbuf, cancellable := c.cmdbuf, c.cancellable
		{
			name := "cmdbuf=" + cmdbuf + "/ctx=plain"
			if cancellable {
				name = "cmdbuf=" + cmdbuf + "/ctx=cancellable"
			}
			if c.spin != "" {
				name += "/spin=" + c.spin
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				if cancellable {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				core := driver.NewCore()
				b.Cleanup(func() { _ = core.Close() }) // after the models' (compileBuilt)
				props := map[string]string{
					driver.KeyPerformanceHint:         driver.HintLatency.String(),
					fusion.KeyDisabledTransformations: fusion.PassFuseElementwiseChains,
					clbackend.KeyCommandBuffers:       cmdbuf,
				}
				if c.spin != "" {
					props[clbackend.KeyWaitSpin] = c.spin
				}
				const long = 16
				var reqs []driver.InferRequest
				for _, n := range []int{1, long} {
					_, req := compileBuilt(b, core, sigmoidChain(n), props)
					reqs = append(reqs, req)
				}
				launches := countLaunches(b, core, sigmoidChain(long), props)
				infer := func() {
					if err := reqs[0].Infer(ctx); err != nil {
						b.Fatal(err)
					}
				}
				allocs := testing.AllocsPerRun(100, infer)
				// With the output bound, the request makes no tensor for it.
				y, err := tensor.New(tensor.F32, tensor.Shape{1, 16})
				if err != nil {
					b.Fatal(err)
				}
				if err := reqs[0].SetTensor("y", y); err != nil {
					b.Fatal(err)
				}
				bound := testing.AllocsPerRun(100, infer)
				us := inferBlocks(b, ctx, reqs)
				b.ReportMetric(us[0], "µs/infer")
				b.ReportMetric((us[1]-us[0])/(long-1), "µs/kernel")
				b.ReportMetric(allocs, "allocs/infer")
				b.ReportMetric(bound, "bound-allocs/infer")
				b.ReportMetric(float64(launches), "launches")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// overheadBlock is how many inferences of one request inferBlocks runs
// in a row.
const overheadBlock = 50

// inferBlocks runs, per b.Loop iteration, overheadBlock synchronous
// inferences of each request in turn and returns each request's median
// µs/infer. Blocks, not single inferences, alternate: POCL's worker
// threads answer a request that follows another model's inference later
// than one that follows its own (1-node after 16-node: 23 µs against 14),
// which per-inference alternation would charge to the fixed cost.
func inferBlocks(b *testing.B, ctx context.Context, reqs []driver.InferRequest) []float64 {
	b.Helper()
	spent := make([][]float64, len(reqs))
	for b.Loop() {
		for i, r := range reqs {
			for range overheadBlock {
				t0 := time.Now()
				if err := r.Infer(ctx); err != nil {
					b.Fatal(err)
				}
				spent[i] = append(spent[i], float64(time.Since(t0).Nanoseconds())/1e3)
			}
		}
	}
	us := make([]float64, len(spent))
	for i, d := range spent {
		us[i] = Median(d)
	}
	return us
}

// compileBuilt compiles a built model on the GPU with props and returns a
// request with its input "x" bound to seeded values in [-1, 1), warmed up
// by one inference; both close with b.
func compileBuilt(b *testing.B, core *driver.Core, m *graph.Model, props map[string]string) (driver.CompiledModel, driver.InferRequest) {
	b.Helper()
	cm, err := core.CompileModel(context.Background(), m, "GPU", props)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cm.Close() })
	req, err := cm.CreateInferRequest()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = req.Close() })
	shape, _ := m.Parameters[0].Outputs[0].Shape.ToShape()
	x, err := tensor.FromF32(shape, seeded.Float32s(1, int(shape.NumElements()), -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	if err := req.SetTensor("x", x); err != nil {
		b.Fatal(err)
	}
	if err := req.Infer(context.Background()); err != nil {
		b.Fatal(err)
	}
	return cm, req
}

// countLaunches compiles m with profiling on and returns the kernels one
// inference launches.
func countLaunches(b *testing.B, core *driver.Core, m *graph.Model, props map[string]string) int {
	b.Helper()
	all := maps.Clone(props)
	all[driver.KeyEnableProfiling] = "YES"
	_, req := compileBuilt(b, core, m, all)
	n, _ := kernelLaunches(req.ProfilingInfo())
	return n
}

// smallModels are the models of 10-30 nodes BenchmarkOverhead times beside
// ONNX Runtime, with bench.js's input spelling (bench/modelbench's rows).
var smallModels = []struct {
	name, file     string
	inputs, values []string
	stateful       string
}{
	{name: "hello_deepa", file: "hello_deepa.onnx", inputs: []string{"onnx::Flatten_0=1x25x96"}},
	{name: "namaste_deepa", file: "namaste_deepa.onnx", inputs: []string{"onnx::Flatten_0=1x24x96"}},
	{name: "silero_v5_stateful", file: "silero_vad_v5.onnx", inputs: []string{"input=1x512", "state=2x1x128", "sr="},
		values: []string{"sr=16000:int64"}, stateful: "state:stateN"},
}

// overheadRounds and overheadRound are how the models' side-by-side runs
// interleave: rounds of this long on each side in turn.
const (
	overheadRounds = 6
	overheadRound  = 300 * time.Millisecond
)

// gpuVariants are the GPU configurations benchSmallModels times side by
// side: the defaults, the launches enqueued one by one, waits that block
// at once (GPU_WAIT_SPIN_US=0), and the wake-word heads' dense layers
// launched one by one (DISABLED_TRANSFORMATIONS=FuseDenseChain: the build
// before the chain fusion), and the ports written and read by transfer
// commands through pinned staging buffers (GPU_SHARED_HOST_IO=NO: the
// build before shared ports), all of them on POCL's worker threads
// (GPU_IN_THREAD=NO), and the defaults, whose plan runs in the calling
// thread where it pays (gpu-inthread: GPU_IN_THREAD=AUTO, POCL's basic
// device beside the pthread one).
var gpuVariants = []struct{ name, cmdbuf, spin, disable, shared, inThread string }{
	{"gpu", "YES", "", "", "", "NO"}, {"gpu-nocmdbuf", "NO", "", "", "", "NO"}, {"gpu-nospin", "YES", "0", "", "", "NO"},
	{"gpu-perlayer", "YES", "", fusion.PassFuseDenseChain, "", "NO"}, {"gpu-staged", "YES", "", "", "NO", "NO"},
	{"gpu-inthread", "YES", "", "", "", ""},
}

// benchSmallModels times each of smallModels on the GPU device (a
// cancellable ctx, as a server's or cmd/benchmark's; command buffers on
// and off) and under ONNX Runtime, in alternating rounds (see
// BenchmarkOverhead).
func benchSmallModels(b *testing.B) {
	root, err := conformance.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range smallModels {
		b.Run(m.name, func(b *testing.B) {
			path := filepath.Join(root, ".cache", "models", m.file)
			if _, err := os.Stat(path); err != nil {
				b.Skipf("%s is not fetched: make models", m.file)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			core := driver.NewCore()
			b.Cleanup(func() { _ = core.Close() })
			reqs := make([]driver.InferRequest, len(gpuVariants))
			for i, v := range gpuVariants {
				props := map[string]string{driver.KeyPerformanceHint: driver.HintLatency.String(), clbackend.KeyCommandBuffers: v.cmdbuf}
				if v.spin != "" {
					props[clbackend.KeyWaitSpin] = v.spin
				}
				if v.disable != "" {
					props[fusion.KeyDisabledTransformations] = v.disable
				}
				if v.shared != "" {
					props[clbackend.KeySharedHostIO] = v.shared
				}
				if v.inThread != "" {
					props[clbackend.KeyInThread] = v.inThread
				}
				if m.stateful != "" {
					props[driver.KeyMakeStateful] = m.stateful
				}
				cm, req, _, err := CompileWithInputs(ctx, core, path, m.inputs, m.values, "GPU", props)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _, _ = req.Close(), cm.Close() })
				if err := req.Infer(ctx); err != nil {
					b.Fatal(err)
				}
				reqs[i] = req
			}
			var ort *ORTPeer
			if _, serr := os.Stat(filepath.Join(root, ".cache", "node_modules", "onnxruntime-node")); serr == nil {
				if ort, err = StartORT(ctx, ORTSpec{Root: root, Model: path, Inputs: m.inputs, Values: m.values, Stateful: m.stateful, Threads: 2}); err != nil {
					b.Fatal(err)
				}
				defer ort.Close()
			}
			gpu := make([][]float64, len(reqs))
			var peer []float64
			for b.Loop() {
				// The rounds are timed here; b.Loop runs once per -benchtime iteration.
			}
			for range overheadRounds {
				for i, req := range reqs {
					for start := time.Now(); time.Since(start) < overheadRound; {
						t0 := time.Now()
						if err := req.Infer(ctx); err != nil {
							b.Fatal(err)
						}
						gpu[i] = append(gpu[i], float64(time.Since(t0).Nanoseconds())/1e3)
					}
				}
				if ort != nil {
					t, err := ort.RunFor(overheadRound)
					if err != nil {
						b.Fatal(err)
					}
					for _, ms := range t {
						peer = append(peer, ms*1e3)
					}
				}
			}
			for i, v := range gpuVariants {
				b.ReportMetric(Median(gpu[i]), v.name+"-µs/infer")
				if ort != nil {
					b.ReportMetric(Median(gpu[i])/Median(peer), v.name+"/ort")
				}
			}
			if ort != nil {
				b.ReportMetric(Median(peer), "ort-µs/infer")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
