package clinfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"strings"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// The examples read the PaddleOCR text detector that `make models` puts in
// .cache/models (input "x": f32[?,3,?,?], output "sigmoid_0.tmp_0": a
// text probability per pixel) and the small CNN in internal/defaultmodel
// (input "image": f32[?,3,64,64], output "probs": f32[?,10]).
const (
	detModel   = ".cache/models/ch_PP-OCRv4_det_infer.onnx"
	smallModel = "internal/defaultmodel/smallcnn.onnx"
)

// image returns a deterministic f32[n,3,h,w] image with values in [0, 1).
func image(n, h, w int64) *tensor.Tensor {
	pixels := make([]float32, n*3*h*w)
	for i := range pixels {
		pixels[i] = float32((i*7919)%256) / 256
	}
	x, err := tensor.From(tensor.Shape{n, 3, h, w}, pixels)
	if err != nil {
		log.Fatal(err)
	}
	return x
}

// A model's inputs may have dynamic dimensions; each inference chooses
// them, and the outputs follow.
func Example_dynamicShapes() {
	ctx := context.Background()
	var core clinfer.Core // the zero value is ready to use
	defer core.Close()
	model, err := core.ReadModel(detModel)
	if err != nil {
		log.Fatal(err)
	}
	in := model.Inputs()[0]
	fmt.Println("input:", in.Name, in.Type, in.Shape)
	cm, err := core.CompileModel(ctx, model, "CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	for _, hw := range [][2]int64{{64, 64}, {96, 160}} {
		out, err := cm.Infer(ctx, map[string]*tensor.Tensor{"x": image(1, hw[0], hw[1])})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("output:", out["sigmoid_0.tmp_0"].Shape())
	}
	// Output:
	// input: x f32 [p2o.DynamicDimension.0,3,p2o.DynamicDimension.1,p2o.DynamicDimension.2]
	// output: [1,1,64,64]
	// output: [1,1,96,160]
}

// An asynchronous request runs in the background: StartAsync returns at
// once, the callback sees the result, Wait waits for it, and Cancel stops
// a run.
func ExampleAsyncInferRequest() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	if err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	r, err := cm.CreateAsyncInferRequest()
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if err := r.SetTensor("image", image(2, 64, 64)); err != nil {
		log.Fatal(err)
	}
	done := make(chan string, 1)
	r.SetCallback(func(err error) {
		if err != nil {
			done <- err.Error()
			return
		}
		probs, err := r.Tensor("probs") // the request is idle in its callback
		if err != nil {
			done <- err.Error()
			return
		}
		done <- fmt.Sprint("callback: probs ", probs.Shape())
	})
	if err := r.StartAsync(ctx); err != nil {
		log.Fatal(err)
	}
	// ... other work here ...
	if err := r.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-done)

	// Cancel stops the run StartAsync started; Wait then reports
	// context.Canceled (nil if the run had already finished).
	r.SetCallback(nil)
	if err := r.StartAsync(ctx); err != nil {
		log.Fatal(err)
	}
	r.Cancel()
	if err := r.Wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	// A cancelled context stops CompiledModel.Infer the same way.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = cm.Infer(cctx, map[string]*tensor.Tensor{"image": image(1, 64, 64)})
	fmt.Println("cancelled:", errors.Is(err, context.Canceled))
	// Output:
	// callback: probs [2,10]
	// cancelled: true
}

// Properties are set by name (plugin's Key constants, the OpenVINO names)
// or with typed options, and read back as strings or typed; with profiling
// on, requests time every op and the runtime model says what ran where.
func Example_properties() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	if err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "CPU", clinfer.Props(
		clinfer.WithPerformanceHint(clinfer.HintThroughput),
		clinfer.WithProfiling(true)))
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	hint, _ := cm.Property(plugin.KeyPerformanceHint)
	profiling, _ := cm.Profiling()
	streams, _ := cm.NumStreams()
	fmt.Println(plugin.KeyPerformanceHint, hint, "profiling", profiling, "streams resolved:", streams > 0)

	_, err = cm.Property("PERFORMANCE_HNT")
	_, hintText, _ := strings.Cut(err.Error(), "; ")
	fmt.Println(errors.Is(err, clinfer.ErrNotFound), strings.SplitN(hintText, " (", 2)[0])

	r, err := cm.CreateInferRequest()
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if err := r.SetTensor("image", image(1, 64, 64)); err != nil {
		log.Fatal(err)
	}
	if err := r.Infer(ctx); err != nil {
		log.Fatal(err)
	}
	prof, err := r.ProfilingInfo()
	if err != nil {
		log.Fatal(err)
	}
	ops := 0
	for _, p := range prof {
		if p.NodeType != "Stage" && p.Status == plugin.Executed {
			ops++
		}
	}
	fmt.Println("profiled ops:", ops > 0)

	rm, err := cm.RuntimeModel()
	if err != nil {
		log.Fatal(err)
	}
	nodes, err := rm.Nodes()
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range nodes {
		if n.RT.Extra[plugin.RuntimeLayerType] == "FusedConv" {
			x := n.RT.Extra
			fmt.Println(x[plugin.RuntimeLayerType], x[plugin.RuntimeImplType], "stands for", x[plugin.RuntimeOriginalNames], "timed:", x[plugin.RuntimePerfCounter] != "")
			break
		}
	}
	// Output:
	// PERFORMANCE_HINT THROUGHPUT profiling true streams resolved: true
	// true did you mean PERFORMANCE_HINT?
	// profiled ops: true
	// FusedConv ref_fusedconv stands for conv1,bn1,relu1 timed: true
}

// A compiled model exports to any io.Writer; ImportModel on the same
// device rebuilds it without compiling.
func ExampleCompiledModel_Export() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	if err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	var blob bytes.Buffer
	if err := cm.Export(&blob); err != nil {
		log.Fatal(err)
	}
	imported, err := core.ImportModel(ctx, &blob, "CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer imported.Close()
	cached, _ := imported.Property(plugin.KeyLoadedFromCache)
	in := map[string]*tensor.Tensor{"image": image(1, 64, 64)}
	a, err := cm.Infer(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	b, err := imported.Infer(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(plugin.KeyLoadedFromCache, cached, "same outputs:", maxDiff(a["probs"], b["probs"]) == 0)
	// Output: LOADED_FROM_CACHE YES same outputs: true
}

// maxDiff is the largest absolute difference between two f32 tensors.
func maxDiff(a, b *tensor.Tensor) float64 {
	x, err := tensor.Data[float32](a.Contiguous())
	if err != nil {
		log.Fatal(err)
	}
	y, err := tensor.Data[float32](b.Contiguous())
	if err != nil {
		log.Fatal(err)
	}
	d := 0.0
	for i := range x {
		d = max(d, math.Abs(float64(x[i]-y[i])))
	}
	return d
}

// Model.Reshape fixes an input's shape before compiling, as OpenVINO's
// model.reshape: all dimensions or some (-1 keeps one dynamic), with the
// shapes inferred through the graph. A shape the model cannot take is an
// error that names the input, the dimension and what fits there.
func ExampleModel_Reshape() {
	var core clinfer.Core
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("read:    ", model.Inputs()[0].Shape, "->", model.Outputs()[0].Shape)
	if err := model.Reshape(map[string]clinfer.PartialShape{"image": clinfer.ShapeOf(8, 3, 64, 64)}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("reshaped:", model.Inputs()[0].Shape, "->", model.Outputs()[0].Shape)

	err = model.Reshape(map[string]clinfer.PartialShape{"image": clinfer.ShapeOf(8, 3, 1, 1)})
	fmt.Println(errors.Is(err, clinfer.ErrInvalidArgument), errors.Is(err, clinfer.ErrInputShape))
	fmt.Println(err)
	err = model.Reshape(map[string]clinfer.PartialShape{"images": clinfer.ShapeOf(1, 3, 64, 64)})
	fmt.Println(errors.Is(err, clinfer.ErrNotFound), err)
	// Output:
	// read:     [batch,3,64,64] -> [batch,10]
	// reshaped: [8,3,64,64] -> [8,10]
	// true true
	// graph: reshape model "smallcnn": input "image" of shape [8,3,1,1] does not fit the model (declared as [8,3,64,64]): dimension 2 is 1: too small, the smallest size that fits there is 2; dimension 3 is 1: too small, the smallest size that fits there is 2 ([8,3,2,2] fits)
	// true graph: reshape model "smallcnn": no input "images"; did you mean image? (inputs: image)
}
