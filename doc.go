// Package clinfer is the one import a Go program needs to run ONNX models
// with clinfer: it registers every device (CPU, the OpenCL GPU, and the
// virtual HETERO, AUTO and BATCH) and re-exports the user API of package
// plugin and the model type of package graph, so that
//
//	core := clinfer.NewCore()
//	defer core.Close()
//	model, err := core.ReadModel("det.onnx")
//	cm, err := core.CompileModel(ctx, model, "GPU", nil)
//	defer cm.Close()
//	x, err := tensor.From(tensor.Shape{1, 3, 640, 640}, pixels)
//	out, err := cm.Infer(ctx, map[string]*tensor.Tensor{"x": x})
//	probs, err := tensor.Data[float32](out["sigmoid_0.tmp_0"])
//
// reads a model, compiles it for the GPU and runs it (tensors come from
// package tensor). In the data flow of DESIGN.md it is the top: it adds
// nothing of its own; every name here is the same type, value or function
// as in plugin (clinfer.Core is plugin.Core), so the two mix freely.
//
// A program that wants fewer devices imports plugin and the device
// packages it wants (github.com/clinfer/clinfer/cpu_fallback,
// .../clbackend, .../hetero) instead.
package clinfer
