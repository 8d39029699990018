package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// BenchmarkFusion measures what the fusion passes buy on the GPU device:
// each PaddleOCR model compiled with the passes (fused) and with
// DISABLE_TRANSFORMATIONS=YES (unfused), side by side in one run. Each
// iteration runs one unprofiled synchronous inference of each, alternating,
// so that load from other processes affects both alike. It reports, per
// variant, kernel launches per inference (profiling entries with status
// Executed, from one profiled inference of a separately compiled model)
// and ms/infer, and the ratios unfused/fused:
//
//	go test -run '^$' -bench BenchmarkFusion -benchtime 20x ./bench/
func BenchmarkFusion(b *testing.B) {
	for _, m := range ppocrModels {
		b.Run(m.name, func(b *testing.B) { benchFusion(b, m.model, m.shape) })
	}
}

// compileGPU reads a cached model and compiles it on the GPU with props
// (plus extra), returning a request with its only input bound to seeded
// values in [-1, 1).
func compileGPU(b *testing.B, core *driver.Core, model string, shape tensor.Shape, props map[string]string, extra ...string) (driver.CompiledModel, driver.InferRequest) {
	b.Helper()
	m := readModel(b, model)
	all := map[string]string{}
	for k, v := range props {
		all[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		all[extra[i]] = extra[i+1]
	}
	cm, err := core.CompileModel(context.Background(), m, "GPU", all)
	if err != nil {
		b.Fatalf("compiling %s on GPU with %v: %v", model, all, err)
	}
	b.Cleanup(func() { _ = cm.Close() })
	req, err := cm.CreateInferRequest()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = req.Close() })
	x, err := tensor.FromF32(shape, seeded.Float32s(1, int(shape.NumElements()), -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	if err := req.SetTensor(cm.Inputs()[0].Name, x); err != nil {
		b.Fatal(err)
	}
	return cm, req
}

// readModel reads a cached model (see `make models`), or builds geluModel
// (geluChain over geluShape).
func readModel(b testing.TB, model string) *graph.Model {
	b.Helper()
	if model == geluModel {
		return geluChain(geluShape)
	}
	path, err := conformance.ModelPath(model)
	if err != nil {
		b.Fatal(err)
	}
	m, err := onnx.ReadFile(path)
	if err != nil {
		b.Fatalf("reading %s: %v", model, err)
	}
	return m
}

// compileVariants compiles model twice per entry of variants (compile
// properties): once profiled, to count the kernel launches of one
// inference, and once unprofiled, warmed up, for timing. It returns the
// profiled compiled models (each has run one inference, so a model with
// dynamic input dims is planned for shape), the launch counts and the
// timing requests, in the order of variants.
func compileVariants(b *testing.B, core *driver.Core, model string, shape tensor.Shape, variants []map[string]string) ([]driver.CompiledModel, []int, []driver.InferRequest) {
	b.Helper()
	ctx := context.Background()
	profiled := make([]driver.CompiledModel, len(variants))
	launches := make([]int, len(variants))
	reqs := make([]driver.InferRequest, len(variants))
	for i, props := range variants {
		cm, preq := compileGPU(b, core, model, shape, props, driver.KeyEnableProfiling, "YES")
		if err := preq.Infer(ctx); err != nil {
			b.Fatal(err)
		}
		profiled[i] = cm
		launches[i], _ = kernelLaunches(preq.ProfilingInfo())
		if launches[i] == 0 {
			b.Fatalf("%s with %v: a profiled inference reported no kernel launches", model, props)
		}
		_, reqs[i] = compileGPU(b, core, model, shape, props)
		if err := reqs[i].Infer(ctx); err != nil { // warm up
			b.Fatal(err)
		}
	}
	return profiled, launches, reqs
}

// inferAlternating runs, per b.Loop iteration and with ctx, one synchronous inference
// of each request in turn, so that load from other processes affects all
// alike, and returns each request's median ms/infer (a median, as the
// other processes' load spikes skew a mean).
func inferAlternating(b *testing.B, ctx context.Context, reqs []driver.InferRequest) []float64 {
	b.Helper()
	spent := make([][]time.Duration, len(reqs))
	for b.Loop() {
		for i, r := range reqs {
			t0 := time.Now()
			if err := r.Infer(ctx); err != nil {
				b.Fatal(err)
			}
			spent[i] = append(spent[i], time.Since(t0))
		}
	}
	ms := make([]float64, len(spent))
	for i, d := range spent {
		slices.Sort(d)
		ms[i] = d[len(d)/2].Seconds() * 1e3
	}
	return ms
}

// kernelLaunches counts the kernels one inference of a profiled request
// enqueued: the Executed entries that are not pipeline stages.
func kernelLaunches(prof []driver.ProfilingInfo) (launches int, device time.Duration) {
	for _, p := range prof {
		if p.Status == driver.Executed && p.NodeType != "Stage" {
			launches++
			device += p.RealTime
		}
	}
	return launches, device
}

// fusionVariants are the two compilations BenchmarkFusion compares.
var fusionVariants = []struct {
	name  string
	props map[string]string
}{
	{"fused", nil},
	{"unfused", map[string]string{driver.KeyDisableTransformations: "YES"}},
}

func benchFusion(b *testing.B, model string, shape tensor.Shape) {
	core := driver.NewCore()
	defer core.Close()
	props := make([]map[string]string, len(fusionVariants))
	for i, v := range fusionVariants {
		props[i] = v.props
	}
	_, launches, reqs := compileVariants(b, core, model, shape, props)
	ms := inferAlternating(b, context.Background(), reqs)
	for i, v := range fusionVariants {
		b.ReportMetric(float64(launches[i]), v.name+"-launches/infer")
		b.ReportMetric(ms[i], v.name+"-ms/infer")
	}
	b.ReportMetric(float64(launches[1])/float64(launches[0]), "launch-ratio")
	b.ReportMetric(ms[1]/ms[0], "speedup")
}
