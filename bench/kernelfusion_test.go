package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// kernelFusionModels are the real models BenchmarkKernelFusions runs each
// declared kernel fusion on; a nil shape takes the model's static input
// shape.
var kernelFusionModels = []struct {
	name  string
	model string
	shape tensor.Shape
}{
	{"det_1x3x320x320", "ch_PP-OCRv4_det_infer.onnx", tensor.Shape{1, 3, 320, 320}},
	{"hello_deepa", "hello_deepa.onnx", nil},
}

// BenchmarkKernelFusions measures what each kernel fusion of
// fusion.KernelFusions buys on the GPU device, on the real models where its
// pass fuses something: the model compiled with the standard pipeline
// (fused) and with DISABLED_TRANSFORMATIONS=<pass> (unfused), alternating
// unprofiled synchronous inferences as BenchmarkFusion does. It reports the
// number of fused nodes, kernel launches per inference of each variant,
// ms/infer of each and the speedup unfused/fused:
//
//	go test -run '^$' -bench BenchmarkKernelFusions -benchtime 20x ./bench/
func BenchmarkKernelFusions(b *testing.B) {
	for _, m := range kernelFusionModels {
		for _, k := range fusion.KernelFusions() {
			b.Run(m.name+"/"+k.Name, func(b *testing.B) {
				shape := m.shape
				if shape == nil {
					shape = staticInput(b, m.model)
				}
				variants := []map[string]string{nil, {fusion.KeyDisabledTransformations: k.Name}}
				benchVariants(b, m.model, shape, k.Kernel, variants)
			})
		}
	}
}

// staticInput returns the static shape of a cached model's only input.
func staticInput(b *testing.B, model string) tensor.Shape {
	b.Helper()
	path, err := conformance.ModelPath(model)
	if err != nil {
		b.Fatal(err)
	}
	m, err := onnx.ReadFile(path)
	if err != nil {
		b.Fatalf("reading %s: %v", model, err)
	}
	s, ok := m.Parameters[0].Outputs[0].Shape.ToShape()
	if !ok {
		b.Fatalf("%s: input %s has dynamic shape %v; give the benchmark a shape", model, m.Parameters[0].Name, m.Parameters[0].Outputs[0].Shape)
	}
	return s
}

// benchVariants times the model compiled under each of variants (fused
// first, unfused second), after counting the KernelFusion nodes of kernel
// in the fused runtime model; it skips, saying so, a model the fusion
// does not fire on.
func benchVariants(b *testing.B, model string, shape tensor.Shape, kernel string, variants []map[string]string) {
	core := plugin.NewCore()
	defer core.Close()
	ctx := context.Background()
	names := []string{"fused", "unfused"}
	launches := make([]int, len(variants))
	reqs := make([]plugin.InferRequest, len(variants))
	fused := 0
	for i, props := range variants {
		cm, preq := compileGPU(b, core, model, shape, props, plugin.KeyEnableProfiling, "YES")
		if err := preq.Infer(ctx); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			// After an inference: a model with dynamic input dims is
			// planned (IMPL_TYPE known) for the shapes it ran with.
			n := fusedNodes(b, cm, kernel)
			if n == 0 {
				b.Skipf("%s: kernel fusion %s fuses nothing in this model", model, kernel)
			}
			fused = n
		}
		launches[i], _ = kernelLaunches(preq.ProfilingInfo())
		_, reqs[i] = compileGPU(b, core, model, shape, props)
		if err := reqs[i].Infer(ctx); err != nil { // warm up
			b.Fatal(err)
		}
	}
	spent := make([]time.Duration, len(variants))
	for b.Loop() {
		for i, r := range reqs {
			t0 := time.Now()
			if err := r.Infer(ctx); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(t0)
		}
	}
	ms := make([]float64, len(spent))
	for i := range variants {
		ms[i] = spent[i].Seconds() / float64(b.N) * 1e3
		b.ReportMetric(float64(launches[i]), names[i]+"-launches/infer")
		b.ReportMetric(ms[i], names[i]+"-ms/infer")
	}
	b.ReportMetric(float64(fused), "fused-nodes")
	b.ReportMetric(ms[1]/ms[0], "speedup")
}

// fusedNodes counts the runtime model's KernelFusion nodes that launch
// kernel.
func fusedNodes(b *testing.B, cm plugin.CompiledModel, kernel string) int {
	b.Helper()
	rm, err := cm.RuntimeModel()
	if err != nil {
		b.Fatal(err)
	}
	nodes, err := rm.Nodes()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, x := range nodes {
		if x.OpType == graph.OpKernelFusion && strings.HasPrefix(x.RT.Extra["IMPL_TYPE"], kernel+":") {
			n++
		}
	}
	return n
}
