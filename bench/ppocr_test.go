package bench

import (
	"context"
	"fmt"
	"testing"

	_ "github.com/clinfer/clinfer/clbackend"    // registers the "GPU" device
	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// ppocrModels are the PaddleOCR models `make models` fetches, at the input
// sizes the OCR pipeline feeds them. The sub-benchmark names
// ("cls_1x3x48x192") are the keys bench/sidebyside matches against ONNX
// Runtime's timings.
var ppocrModels = []struct {
	name  string
	model string
	shape tensor.Shape
}{
	{"cls_1x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", tensor.Shape{1, 3, 48, 192}},
	{"det_1x3x320x320", "ch_PP-OCRv4_det_infer.onnx", tensor.Shape{1, 3, 320, 320}},
	{"det_1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", tensor.Shape{1, 3, 640, 640}},
}

// benchDevices are the devices the model benchmarks run on: the CPU
// reference and the GPU device (POCL on a machine without a GPU).
var benchDevices = []string{"CPU", "GPU"}

// BenchmarkPPOCR measures one synchronous inference of each PaddleOCR model
// per device, compiled once outside the timed loop, and reports ms/infer
// and infer/s.
func BenchmarkPPOCR(b *testing.B) {
	for _, m := range ppocrModels {
		b.Run(m.name, func(b *testing.B) {
			for _, dev := range benchDevices {
				b.Run(dev, func(b *testing.B) { benchModel(b, m.model, m.shape, dev) })
			}
		})
	}
}

// benchModel compiles a cached model on a device, fills its only input with
// seeded values in [-1, 1) and times Infer.
func benchModel(b *testing.B, model string, shape tensor.Shape, device string) {
	benchModelWith(b, model, shape, device, nil)
}

// benchModelWith is benchModel with compile properties.
func benchModelWith(b *testing.B, model string, shape tensor.Shape, device string, props map[string]string) {
	m := readModel(b, model)
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	cm, err := core.CompileModel(ctx, m, device, props)
	if err != nil {
		b.Fatalf("compiling %s on %s: %v", model, device, err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		b.Fatal(err)
	}
	defer req.Close()
	ins := cm.Inputs()
	if len(ins) != 1 {
		b.Fatalf("%s: want 1 input, have %d", model, len(ins))
	}
	x, err := tensor.FromF32(shape, seeded.Float32s(1, int(shape.NumElements()), -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	if err := req.SetTensor(ins[0].Name, x); err != nil {
		b.Fatalf("%s: binding %v to %q: %v", model, shape, ins[0].Name, err)
	}
	// Warm up: first-run allocations are not what a serving loop sees.
	if err := req.Infer(ctx); err != nil {
		b.Fatalf("%s on %s: %v", model, device, err)
	}
	for b.Loop() {
		if err := req.Infer(ctx); err != nil {
			b.Fatalf("%s on %s: %v", model, device, err)
		}
	}
	perInfer := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perInfer*1e3, "ms/infer")
	b.ReportMetric(1/perInfer, "infer/s")
}

// TestBenchmarkNames checks that every benchmark name is unique and encodes
// its input shape: bench/sidebyside matches ONNX Runtime's timings by it.
func TestBenchmarkNames(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range ppocrModels {
		for _, dev := range benchDevices {
			name := fmt.Sprintf("PPOCR/%s/%s", m.name, dev)
			if seen[name] {
				t.Errorf("duplicate benchmark %s", name)
			}
			seen[name] = true
			want := fmt.Sprintf("%dx%dx%dx%d", m.shape[0], m.shape[1], m.shape[2], m.shape[3])
			if got := m.name[len(m.name)-len(want):]; got != want {
				t.Errorf("benchmark %s: name says %s but shape is %s", name, got, want)
			}
		}
	}
}
