// Package clbackend is clinfer's GPU device: every OpenCL 1.2+ device of
// every installed platform (NVIDIA, AMD, Intel GPUs, and POCL on a plain
// CPU), registered as "GPU".
//
// In the data flow of DESIGN.md it sits between the plugin API and the cgo
// binding: New probes the ICD loader, platforms and devices (and explains
// what to install when there is none); CompileModel turns a graph into a
// launch plan of kernels from package kernels, builds their programs once
// per device through the program cache (in memory, and as binaries under
// CACHE_DIR), and uploads the weights once; each InferRequest owns an
// in-order command queue, its activation buffers and its kernel objects, and
// runs the plan with one wait per inference.
//
// # Devices
//
// Devices are numbered "GPU.0", "GPU.1", … across platforms, GPU-type
// devices first, then CPU, accelerator and custom ones, each group in
// platform order then device order. DEVICE_ID ("1" or "GPU.1") selects one.
// Every device has its own configuration: SetProperties with DEVICE_ID
// changes that device's only (as plugin.Core does for "GPU.1"), without it
// every device's; Property reads the default device, which a SetProperties
// holding DEVICE_ID alone switches. DeviceProperty reads any device.
//
// # Ownership
//
// Every OpenCL handle has one owner. The plugin owns one context per device
// and the program cache; a compiled model shares them by reference count
// (so it stays usable after Plugin.Close) and owns its weight buffers; a
// request owns its queue, buffers and kernels. Closing a compiled model
// waits for running inferences and closes its requests.
//
// # Scope
//
// The engine runs Parameter, Constant, Result, Identity, Relu, and Add and
// Mul of same-shape or scalar-broadcast f32 tensors, with static shapes.
// Other ops fail CompileModel with an error wrapping plugin.ErrUnsupported;
// QueryModel names exactly the nodes that compile. Math runs in f32 whatever
// INFERENCE_PRECISION_HINT says.
//
// Built without cgo or with -tags noopencl the package still registers
// "GPU"; New then fails with the cl package's "built without OpenCL" error.
package clbackend
