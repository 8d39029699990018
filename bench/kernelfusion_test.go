package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels/gen"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
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

// chainModels are the real models BenchmarkElementwiseChains runs on.
var chainModels = []struct {
	name  string
	model string
	shape tensor.Shape
}{
	{"cls_1x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", tensor.Shape{1, 3, 48, 192}},
	{"rec_1x3x48x320", "ch_PP-OCRv4_rec_infer.onnx", tensor.Shape{1, 3, 48, 320}},
	{"det_1x3x320x320", "ch_PP-OCRv4_det_infer.onnx", tensor.Shape{1, 3, 320, 320}},
	{"gelu_1x64x112x112", geluModel, geluShape},
}

// geluModel names geluChain over geluShape among the models readModel
// returns.
const geluModel = "built:gelu_chain"

// geluShape is the input shape of geluModel.
var geluShape = tensor.Shape{1, 64, 112, 112}

// geluChain builds y = x * 0.5 * (1 + Erf(x / sqrt 2)) over x of shape:
// a GELU written out as five element-wise ops (as exporters emit it for
// transformer MLPs), the long tail a generated chain folds into one pass.
func geluChain(shape tensor.Shape) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(shape...))
	c := func(v float32) graph.Output { return graph.NewConstant(fmt.Sprint(v), tensor.Scalar(v)).Out(0) }
	op := func(typ, name string, in ...graph.Output) graph.Output {
		return graph.NewNode(typ, name, in, nil, 1).Out(0)
	}
	erf := op("Erf", "erf", op("Div", "div", x.Out(0), c(1.4142135)))
	y := op("Mul", "half", op("Mul", "mul", x.Out(0), op("Add", "add", erf, c(1))), c(0.5))
	return graph.NewModel("gelu_chain", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", y)})
}

// BenchmarkElementwiseChains measures the generated chain kernels
// (fusion.FuseElementwiseChains, kernels/gen) on the GPU device as
// BenchmarkKernelFusions measures a declared fusion: each model with the
// pass (fused) and with DISABLED_TRANSFORMATIONS=FuseElementwiseChains
// (unfused), alternating unprofiled synchronous inferences, reporting the
// chains, launches per inference and median ms/infer of each:
//
//	go test -run '^$' -bench BenchmarkElementwiseChains -benchtime 20x ./bench/
func BenchmarkElementwiseChains(b *testing.B) {
	for _, m := range chainModels {
		b.Run(m.name, func(b *testing.B) {
			variants := []map[string]string{nil, {fusion.KeyDisabledTransformations: fusion.PassFuseElementwiseChains}}
			benchVariants(b, m.model, m.shape, gen.Entry, variants)
		})
	}
}

// BenchmarkBodyFusions measures the fusions that keep a body to fall
// back on, fusion.FuseSEBlock (PP-OCR cls, rec, det 320 and 640) and
// fusion.FuseDeconvActivation (det), as BenchmarkKernelFusions measures a
// declared fusion: each model with the pass (fused) and with
// DISABLED_TRANSFORMATIONS=<pass> (unfused), alternating unprofiled
// synchronous inferences, reporting the fused nodes, launches per
// inference and median ms/infer of each:
//
//	go test -run '^$' -bench BenchmarkBodyFusions -benchtime 40x ./bench/
func BenchmarkBodyFusions(b *testing.B) {
	det640 := struct {
		name  string
		model string
		shape tensor.Shape
	}{"det_1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", tensor.Shape{1, 3, 640, 640}}
	for _, f := range []struct {
		pass, kernel string
		models       int // of chainModels' first three (cls, rec, det 320)
	}{{fusion.PassFuseSEBlock, fusion.SEBlockKernel, 0}, {fusion.PassFuseDeconvActivation, fusion.DeconvKernel, 2}} {
		for _, m := range append(chainModels[f.models:3:3], det640) {
			b.Run(f.pass+"/"+m.name, func(b *testing.B) {
				variants := []map[string]string{nil, {fusion.KeyDisabledTransformations: f.pass}}
				benchVariants(b, m.model, m.shape, f.kernel, variants)
			})
		}
	}
}

// staticInput returns the static shape of a cached model's only input.
func staticInput(b *testing.B, model string) tensor.Shape {
	b.Helper()
	m := readModel(b, model)
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
	core := driver.NewCore()
	defer core.Close()
	profiled, launches, reqs := compileVariants(b, core, model, shape, variants)
	fused := fusedNodes(b, profiled[0], kernel)
	if fused == 0 {
		b.Skipf("%s: kernel fusion %s fuses nothing in this model", model, kernel)
	}
	ms := inferAlternating(b, context.Background(), reqs)
	for i, name := range []string{"fused", "unfused"} {
		b.ReportMetric(float64(launches[i]), name+"-launches/infer")
		b.ReportMetric(ms[i], name+"-ms/infer")
	}
	b.ReportMetric(float64(fused), "fused-nodes")
	b.ReportMetric(ms[1]/ms[0], "speedup")
}

// fusedNodes counts the runtime model's KernelFusion nodes that launch
// kernel.
func fusedNodes(b *testing.B, cm driver.CompiledModel, kernel string) int {
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
