// Package cpufallback is the CPU device: it runs models on the reference
// ("template") implementation of every op in clinfer's op set, the kernels
// of package cpu_fallback/ref (pure Go, gonum for GEMM-shaped work).
//
// In the data flow of DESIGN.md it sits behind the Core like any other
// device. Importing the package registers it as "CPU" (database/sql-driver
// style):
//
//	import _ "github.com/clinfer/clinfer/cpu_fallback"
//
//	core := driver.NewCore()
//	cm, err := core.CompileModel(ctx, model, "CPU", nil)
//
// CompileModel clones the model, runs shape inference, checks that every
// node has a kernel (an op without one is an error wrapping
// driver.ErrUnsupported that names the node and op) and builds a plan: the
// nodes in topological order, each bound to its kernel, with per-value
// liveness so intermediate tensors are released after their last reader.
// Inference requests run the plan on host tensors; kernels compute output
// shapes from the actual inputs, so dynamic dimensions are bound when Infer
// runs. The device also answers QueryModel for HETERO and serves as the
// numeric reference the GPU device is tested against. The kernels
// themselves are in package ref, so that the GPU device's planner and the
// fusion passes evaluate on the host without registering this device.
package cpufallback
