package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The benchmarks of `make bench-tune`: the PP-OCR models on the GPU device
// with its heuristics and with tuned kernels, SGEMM 1024 tuned next to the
// device's FP32 FMA peak, and the bandwidth of the data-movement kernels
// next to the copy bandwidth (BenchmarkCopy), all in one run;
// bench/sidebyside -tune prints them with ONNX Runtime's times and the
// ratios.

// EnvTuneCache names the environment variable with the CACHE_DIR the tuned
// benchmarks read their tuning file from (`make bench-tune` tunes into it
// first with cmd/tune); without it they tune into a temporary one.
const EnvTuneCache = "CLINFER_TUNE_CACHE"

// tuneCache returns the CACHE_DIR of the tuned benchmarks.
func tuneCache(b *testing.B) string {
	if dir := os.Getenv(EnvTuneCache); dir != "" {
		return dir
	}
	return b.TempDir()
}

// tuningVariants are the GPU configurations the tuned benchmarks compare:
// the heuristics (an empty tuning file) and the tuning cache (tuning what
// it lacks, FAST, before the timing).
func tuningVariants(b *testing.B) []struct {
	name  string
	props map[string]string
} {
	return []struct {
		name  string
		props map[string]string
	}{
		{"GPU-none", map[string]string{clbackend.KeyTuningMode: "NONE", clbackend.KeyTuningFile: filepath.Join(b.TempDir(), "none.json")}},
		{"GPU-tuned", map[string]string{clbackend.KeyTuningMode: "FAST", driver.KeyCacheDir: tuneCache(b)}},
	}
}

// printDevice prints the benchmark device once per process, for
// bench/sidebyside to name the POCL target next to the figures.
var printedDevice bool

func printDevice(b *testing.B) {
	if printedDevice {
		return
	}
	core := driver.NewCore()
	defer core.Close()
	name, err := core.Property("GPU", driver.KeyFullDeviceName)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("device: %s\n", name)
	printedDevice = true
}

// BenchmarkPPOCRTuned measures one synchronous inference of each PaddleOCR
// model on the GPU device with the heuristics (GPU-none) and with the
// tuned kernels of the tuning cache (GPU-tuned), reporting ms/infer.
func BenchmarkPPOCRTuned(b *testing.B) {
	printDevice(b)
	for _, m := range ppocrModels {
		b.Run(m.name, func(b *testing.B) {
			for _, v := range tuningVariants(b) {
				b.Run(v.name, func(b *testing.B) { benchModelWith(b, m.model, m.shape, "GPU", v.props) })
			}
		})
	}
}

// BenchmarkPeakFMA measures the FP32 FMA peak of the benchmark device: a
// kernel of eight independent chains of fma on vectors of the device's
// preferred width, enough work items for every compute unit, GFLOPS of the
// median run.
func BenchmarkPeakFMA(b *testing.B) {
	printDevice(b)
	e := newDeviceEnv(b)
	vw := 4
	if w, err := e.dev.PreferredVectorWidths(); err == nil {
		vw = max(1, w.Float)
	}
	cus, err := e.dev.MaxComputeUnits()
	if err != nil {
		b.Fatal(err)
	}
	prog, err := e.ctx.CreateProgramWithSource([]string{peakSource})
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close()
	if err := prog.BuildProgram(nil, fmt.Sprintf("-cl-std=CL1.2 -DVW=%d", vw)); err != nil {
		b.Fatal(err)
	}
	kern, err := prog.CreateKernel("peak_fma")
	if err != nil {
		b.Fatal(err)
	}
	defer kern.Close()
	// A GPU gets many groups of the driver's size; a CPU device one item
	// per group (POCL then spreads the groups over its threads, each item
	// in registers), a few per compute unit.
	items := cus * 4096
	var local []int
	if t, err := e.dev.Type(); err == nil && t&cl.DeviceTypeCPU != 0 {
		items, local = cus*16, []int{1}
	}
	const iters = 1 << 16
	out, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, 4*items)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if err := kern.SetArgs(out, int32(iters), float32(0.999), float32(0.001)); err != nil {
		b.Fatal(err)
	}
	med := medianOf(b, func() error {
		ev, err := e.q.EnqueueNDRangeKernel(kern, nil, []int{items}, local, nil)
		if err != nil {
			return err
		}
		return errors.Join(ev.Wait(), ev.Close())
	})
	flops := 2 * 8 * float64(vw) * iters * float64(items)
	b.ReportMetric(flops/med.Seconds()/1e9, "gflops")
}

// peakSource is the FMA peak kernel: eight independent fma chains per item
// (enough to cover the FMA latency of a CPU's two pipes), VW lanes each.
const peakSource = `
#if VW == 1
#define floatv float
#else
#define CAT(a, b) a##b
#define VEC(n) CAT(float, n)
#define floatv VEC(VW)
#endif
__kernel void peak_fma(__global float* out, const int iters, const float a, const float b)
{
    const float s = (float)get_global_id(0);
    floatv x0 = (floatv)(s), x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
    floatv x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
    for (int i = 0; i < iters; ++i) {
        x0 = fma(x0, (floatv)a, (floatv)b); x1 = fma(x1, (floatv)a, (floatv)b);
        x2 = fma(x2, (floatv)a, (floatv)b); x3 = fma(x3, (floatv)a, (floatv)b);
        x4 = fma(x4, (floatv)a, (floatv)b); x5 = fma(x5, (floatv)a, (floatv)b);
        x6 = fma(x6, (floatv)a, (floatv)b); x7 = fma(x7, (floatv)a, (floatv)b);
    }
    floatv t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
#if VW == 1
    out[get_global_id(0)] = t;
#else
    float r = 0.0f;
    float lanes[VW];
    VEC(VW) tt = t;
    for (int l = 0; l < VW; ++l) r += ((float*)&tt)[l];
    out[get_global_id(0)] = r;
#endif
}
`

// BenchmarkSGEMMTuned measures a 1024 x 1024 x 1024 MatMul (weights
// constant, as a FullyConnected layer's) on the GPU device with the kernel
// the tuning cache picks (tuned FAST first when it has no record), in
// GFLOPS of the median inference.
func BenchmarkSGEMMTuned(b *testing.B) {
	printDevice(b)
	const n = 1024
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(n, n))
	wt, err := tensor.FromF32(tensor.Shape{n, n}, seeded.Float32s(2, n*n, -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	w := graph.NewConstant("w", wt)
	mm := graph.NewNode("MatMul", "matmul", []graph.Output{x.Out(0), w.Out(0)}, nil, 1)
	m := graph.NewModel("sgemm", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", mm.Out(0))})
	for _, v := range tuningVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			core := driver.NewCore()
			defer core.Close()
			cm, err := core.CompileModel(context.Background(), m, "GPU", v.props)
			if err != nil {
				b.Fatal(err)
			}
			defer cm.Close()
			req, err := cm.CreateInferRequest()
			if err != nil {
				b.Fatal(err)
			}
			defer req.Close()
			xt, err := tensor.FromF32(tensor.Shape{n, n}, seeded.Float32s(1, n*n, -1, 1))
			if err != nil {
				b.Fatal(err)
			}
			if err := req.SetTensor("x", xt); err != nil {
				b.Fatal(err)
			}
			med := medianOf(b, func() error { return req.Infer(context.Background()) })
			b.ReportMetric(2*n*n*n/med.Seconds()/1e9, "gflops")
		})
	}
}

// movementKernels are the data-movement kernel entries BenchmarkDataMovement
// reports, by the name of their metric.
var movementKernels = map[string]string{
	"resize_upsample": "resize", "resize_nearest": "resize", "resize": "resize",
	"strided_copy": "copy", "copy_words": "copy", "copy_bytes": "copy",
	"se_residual": "se", "eltwise_binary": "eltwise",
}

// BenchmarkDataMovement runs PP-OCR det 1x3x640x640 with the tuned kernels
// and profiling, and reports the bandwidth of its data-movement kernels
// (bytes moved over device time, from the profile) per kind
// (resize-GB/s, copy-GB/s, se-GB/s, eltwise-GB/s) and in all (GB/s), the
// median over the iterations; BenchmarkCopy's d2d figure in the same run
// is the device's copy bandwidth they are compared with.
func BenchmarkDataMovement(b *testing.B) {
	printDevice(b)
	const model = "ch_PP-OCRv4_det_infer.onnx"
	shape := tensor.Shape{1, 3, 640, 640}
	m := readModel(b, model)
	core := driver.NewCore()
	defer core.Close()
	props := tuningVariants(b)[1].props
	props[driver.KeyEnableProfiling] = "YES"
	cm, err := core.CompileModel(context.Background(), m, "GPU", props)
	if err != nil {
		b.Fatal(err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		b.Fatal(err)
	}
	defer req.Close()
	x, err := tensor.FromF32(shape, seeded.Float32s(1, int(shape.NumElements()), -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	if err := req.SetTensor(cm.Inputs()[0].Name, x); err != nil {
		b.Fatal(err)
	}
	if err := req.Infer(context.Background()); err != nil {
		b.Fatal(err)
	}
	rates := map[string][]float64{}
	for b.Loop() {
		if err := req.Infer(context.Background()); err != nil {
			b.Fatal(err)
		}
		bytes, times := map[string]int64{}, map[string]time.Duration{}
		for _, p := range req.ProfilingInfo() {
			kind, ok := movementKernels[p.ExecType]
			if !ok || p.NodeType == "Stage" || p.Bytes == 0 {
				continue
			}
			for _, k := range []string{kind, "all"} {
				bytes[k] += p.Bytes
				times[k] += p.RealTime
			}
		}
		for k, n := range bytes {
			if times[k] > 0 {
				rates[k] = append(rates[k], float64(n)/times[k].Seconds()/1e9)
			}
		}
	}
	kinds := make([]string, 0, len(rates))
	for k := range rates {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		v := slices.Clone(rates[k])
		slices.Sort(v)
		unit := k + "-GB/s"
		if k == "all" {
			unit = "GB/s"
		}
		b.ReportMetric(v[len(v)/2], strings.ReplaceAll(unit, " ", ""))
	}
}
