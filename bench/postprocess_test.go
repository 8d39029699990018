package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// postprocessWorkload is one model of the detection-head and audio
// front-end benchmarks: its ONNX bytes and its float inputs, filled as
// scripts/ortref/bench.js fills them (input k: seeded 1+k, uniform in
// [-1, 1)), so that clinfer and ONNX Runtime see the same data.
type postprocessWorkload struct {
	name   string
	model  func() []byte
	inputs []benchInput
}

// benchInput is a workload's float input.
type benchInput struct {
	name  string
	shape tensor.Shape
}

func in(name string, dims ...int64) benchInput { return benchInput{name, tensor.Shape(dims)} }

// postprocessWorkloads: NonMaxSuppression over 10,000 boxes x 80 classes
// (at most 100 per class, IoU 0.5, score threshold 0.05: about half the
// boxes are candidates), and one second of 16 kHz audio through a DFT of
// the whole signal (16000 = 2^7 5^3, one-sided) and a Whisper-style STFT
// (400-sample Hann frames every 160 samples).
func postprocessWorkloads() []postprocessWorkload {
	f32 := func(v ...float32) *tensor.Tensor {
		t, _ := tensor.FromF32(tensor.Shape{}, v)
		return t
	}
	i64 := func(v int64) *tensor.Tensor {
		t, _ := tensor.FromI64(tensor.Shape{}, []int64{v})
		return t
	}
	return []postprocessWorkload{
		{name: "nms_10000x80", inputs: []benchInput{in("boxes", 1, 10000, 4), in("scores", 1, 80, 10000)}, model: func() []byte {
			return onnxbuild.New("nms", 11).
				Input("boxes", tensor.F32, onnxbuild.Dims(1, 10000, 4)).Input("scores", tensor.F32, onnxbuild.Dims(1, 80, 10000)).
				Initializer("max_out", i64(100)).Initializer("iou", f32(0.5)).Initializer("score", f32(0.05)).
				Node("NonMaxSuppression", "nms", []string{"boxes", "scores", "max_out", "iou", "score"}, []string{"selected"}, nil).
				Output("selected", tensor.I64, []onnxbuild.Dim{{Param: "k"}, {Size: 3}}).Bytes()
		}},
		{name: "dft_16000", inputs: []benchInput{in("signal", 1, 16000, 1)}, model: func() []byte {
			return onnxbuild.New("dft", 17).Input("signal", tensor.F32, onnxbuild.Dims(1, 16000, 1)).
				Node("DFT", "dft", []string{"signal"}, []string{"spectrum"}, map[string]any{"axis": int64(1), "onesided": int64(1)}).
				Output("spectrum", tensor.F32, onnxbuild.Dims(1, 8001, 2)).Bytes()
		}},
		{name: "stft_16000_400_160", inputs: []benchInput{in("signal", 1, 16000, 1)}, model: func() []byte {
			win := make([]float32, 400)
			for i := range win {
				win[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/400))
			}
			w, _ := tensor.FromF32(tensor.Shape{400}, win)
			return onnxbuild.New("stft", 17).Input("signal", tensor.F32, onnxbuild.Dims(1, 16000, 1)).
				Initializer("step", i64(160)).Initializer("window", w).Initializer("length", i64(400)).
				Node("STFT", "stft", []string{"signal", "step", "window", "length"}, []string{"spectrogram"}, nil).
				Output("spectrogram", tensor.F32, onnxbuild.Dims(1, 98, 201, 2)).Bytes()
		}},
	}
}

// BenchmarkPostprocessOps times each workload in one run on the CPU
// reference and the GPU device (ms/infer of Infer, and kernel-ms/infer:
// the device time of its kernels, profiled), and on ONNX Runtime (CPU,
// 2 threads, through scripts/ortref/bench.js when node and
// .cache/node_modules are there; ort-ms/infer, its median):
//
//	go test -run '^$' -bench BenchmarkPostprocessOps -benchtime 20x ./bench/
func BenchmarkPostprocessOps(b *testing.B) {
	for _, w := range postprocessWorkloads() {
		b.Run(w.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), w.name+".onnx")
			if err := os.WriteFile(path, w.model(), 0o644); err != nil {
				b.Fatal(err)
			}
			for _, dev := range []string{"CPU", "GPU"} {
				b.Run(dev, func(b *testing.B) { benchPostprocess(b, path, w, dev) })
			}
			b.Run("ORT", func(b *testing.B) { benchORT(b, path, w) })
		})
	}
}

// benchPostprocess times Infer of the workload on a device; on the GPU it
// also reports the kernels' device time of a profiled inference (median
// of 5).
func benchPostprocess(b *testing.B, path string, w postprocessWorkload, device string) {
	m, err := onnx.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	run := func(props map[string]string) (driver.InferRequest, func()) {
		cm, err := core.CompileModel(ctx, m, device, props)
		if err != nil {
			b.Fatalf("compiling %s on %s: %v", w.name, device, err)
		}
		req, err := cm.CreateInferRequest()
		if err != nil {
			b.Fatal(err)
		}
		for k, i := range w.inputs {
			x, err := tensor.FromF32(i.shape, seeded.Float32s(uint32(1+k), int(i.shape.NumElements()), -1, 1))
			if err != nil {
				b.Fatal(err)
			}
			if err := req.SetTensor(i.name, x); err != nil {
				b.Fatal(err)
			}
		}
		if err := req.Infer(ctx); err != nil { // warm-up
			b.Fatalf("%s on %s: %v", w.name, device, err)
		}
		return req, func() { req.Close(); cm.Close() }
	}
	req, done := run(nil)
	defer done()
	for b.Loop() {
		if err := req.Infer(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/infer")
	if device == "GPU" {
		req, done := run(map[string]string{driver.KeyEnableProfiling: "YES"})
		var kern []float64
		for range 5 {
			if err := req.Infer(ctx); err != nil {
				b.Fatal(err)
			}
			ms := 0.0
			for _, p := range req.ProfilingInfo() {
				if p.NodeType != "Stage" && p.Status == driver.Executed {
					ms += p.RealTime.Seconds() * 1e3
				}
			}
			kern = append(kern, ms)
		}
		done()
		slices.Sort(kern)
		b.ReportMetric(kern[len(kern)/2], "kernel-ms/infer")
	}
}

// benchORT runs scripts/ortref/bench.js on the workload's model once and
// reports ONNX Runtime's median.
func benchORT(b *testing.B, path string, w postprocessWorkload) {
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	mods := filepath.Join(root, ".cache", "node_modules")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(mods, "onnxruntime-node")); err != nil || serr != nil {
		b.Skip("ONNX Runtime for node is not installed: `make deps` (node) and `make models` (.cache/node_modules/onnxruntime-node)")
	}
	args := []string{filepath.Join(root, "scripts", "ortref", "bench.js"), "--model", path, "--iters", "20", "--warmup", "3"}
	for _, i := range w.inputs {
		dims := make([]string, len(i.shape))
		for d, v := range i.shape {
			dims[d] = fmt.Sprint(v)
		}
		args = append(args, "--shape", i.name+"="+strings.Join(dims, "x"))
	}
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("ONNX Runtime on %s: %v\n%s", w.name, err, errb.String())
	}
	var res struct {
		Median float64 `json:"median_ms"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		b.Fatalf("ONNX Runtime on %s: %v (%s)", w.name, err, out.String())
	}
	for b.Loop() {
		// The timing is node's; the loop only satisfies the benchmark.
	}
	b.ReportMetric(res.Median, "ort-ms/infer")
}
