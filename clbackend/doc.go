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
// changes that device's only (as driver.Core does for "GPU.1"), without it
// every device's; Property reads the default device, which a SetProperties
// holding DEVICE_ID alone switches. DeviceProperty reads any device.
//
// # Kernel variants and tuning
//
// The lowerings of the hot op families (kernels.Families: gemm, conv,
// dwconv, deconv, resize, eltwise, se, copy, reduce, fft, grid_sample,
// roi_align, nms, scan) emit a declared
// variant chosen per node by choose (variants.go): the one
// GPU_KERNEL_VARIANTS forces, the record of the device's tuning file
// (package tune; GPU_TUNING_FILE, or one per DEVICE_ARCHITECTURE and
// driver under CACHE_DIR), the fastest candidate the tuner (tuner.go)
// times on the device when GPU_TUNING_MODE is FAST or EXHAUSTIVE, or the
// heuristics. The runtime model names it (KERNEL_VARIANT) and
// CompiledModel.KernelChoices reports every choice with its times;
// cmd/tune drives a tuning compile.
//
// # Ownership
//
// Every OpenCL handle has one owner. The plugin owns one context per device
// and the program cache; a compiled model shares them by reference count
// (so it stays usable after Plugin.Close) and holds references to the
// context's weight buffers, which the models of a context share by
// content; a request owns its queue (unless the context has the user's
// OCL_QUEUE), buffers and kernels. Closing a compiled model waits for
// running inferences and closes its requests.
//
// # Remote contexts and tensors
//
// A context (context.go) is the device's own or one over the user's
// cl_context and optional in-order queue (CreateContext in
// remote_plugin.go, with references of clinfer's own: the user's handles
// are never released). Models compile into one (CompileModelIn) and share
// its programs and weights; remote
// tensors (remote.go) are buffers of it, allocated or wrapping the user's
// cl_mem; a request bound to them copies its inputs from and its outputs
// into them with clEnqueueCopyBuffer (request_remote.go), so a pipeline's
// values stay on the device, and counts the bytes it moved (Transfers).
// A compiled model tells the output shapes of an input-shape set before
// running it (OutputShapes, driver.OutputShaper, by shape inference over
// the model specialised to those shapes as its plans are), so that HETERO
// can size remote tensors for links of dynamic shape between GPU
// subgraphs.
// GPU_MEMORY_STATISTICS sums the contexts' weights, activations, mapped
// host tensors and remote tensors; CompiledModel.ReleaseMemory frees the
// idle requests' activations. The requests' own queues take
// GPU_QUEUE_PRIORITY and GPU_QUEUE_THROTTLE hints (queues.go) where the
// device has cl_khr_priority_hints and cl_khr_throttle_hints.
//
// # Fusion
//
// CompileModel first runs the fusion passes (fusion.ForDevice, folding
// constants with the CPU reference) on a clone of the model, unless
// DISABLE_TRANSFORMATIONS=YES; DISABLED_TRANSFORMATIONS turns single passes
// off. Conv + bias + residual Add + activations become one FusedConv and
// MatMul/Gemm + bias + activations one FullyConnected, each a single launch
// of the fused conv and GEMM kernels (post_ops.clh) whose post-op list is
// a runtime table (postops.go).
// QueryModel runs the same passes and answers in the user's node names
// through the fused names; GPU_DISABLED_OPS speaks of the user's op types,
// so a fused node that absorbed a disabled op is refused too. The runtime
// model lists the executed (fused) nodes with their ORIGINAL_NAMES.
//
// # Engine
//
// A compiled model turns the graph into a plan (plan.go): nodes whose
// inputs are known on the host (constants, Shape of static shapes, small
// inputs that only feed shape-like positions) are folded at plan time with
// the CPU reference kernels; every other node goes through the op ->
// lowering table (lower.go), which picks catalogue kernels, adds type
// defines and fixes work sizes and parameter tables at plan time, or makes
// a zero-copy alias (Reshape, Squeeze, Identity...). Activations share
// buffers by liveness (ACTIVATION_BYTES_PLANNED next to
// ACTIVATION_BYTES_NAIVE); weights are uploaded once per compiled model.
// Models with static inputs are planned at compile time; others are planned
// per input shape (and host-input values) on first use and cached.
// An op whose output size depends on the data (NonZero, Compress, Unique,
// NonMaxSuppression) ends its plan after a count computed on the device:
// an inference reads the sizes back in one wait and goes on with the
// plan's continuation for them (plan_sizes.go), which the request builds
// on first use and caches.
//
// Kernels compute in f32 (data movement, Where, Gather, Cast, the scatters
// and the integer arithmetic and compare forms take other types); f16 is a
// storage type converted on load and store (Cast, binary eltwise ops), as
// is bf16 for Cast; f64 runs on a device with cl_khr_fp64 (Cast, binary
// eltwise ops, reductions, CumSum, Pow, TopK) and is refused with
// driver.ErrUnsupported naming the extension on one without. Op forms
// without a kernel fail CompileModel with driver.ErrUnsupported naming the node;
// QueryModel answers exactly the nodes whose op has a lowering or folds.
// TestLoweringsMatchCPU runs every op of the lowering table against the CPU
// reference on seeded random shapes and fails for an op without a case.
// INFERENCE_PRECISION_HINT=f16 (accepted on devices with cl_khr_fp16, or
// anywhere with CLINFER_EMULATE_FP16=1) stores activations as half: the
// ops whose lowering says half (lower.go) run on f16 values with float
// math and float accumulation (kernels/half.clh), fusion.ConvertPrecision
// joins them to the ops still in f32 with Casts, and the model's inputs
// and outputs keep their types. TestHalfLoweringsMatchCPU checks every such op against
// the CPU; tests.TestRealModelsGPUHalf the real models against f32.
//
// Built without cgo or with -tags noopencl the package still registers
// "GPU"; New then fails with the cl package's "built without OpenCL" error.
package clbackend
