package driver

// Property keys: the OpenVINO string names, so CLI flags and config files
// can name them. Where OpenVINO's wire name differs from the name this
// project's DESIGN.md uses (ENABLE_PROFILING is OpenVINO's "PERF_COUNT",
// NUM_REQUESTS is "PERFORMANCE_HINT_NUM_REQUESTS", DEVICE_PRIORITIES is
// "MULTI_DEVICE_PRIORITIES" and, for BATCH, "AUTO_BATCH_DEVICE_CONFIG")
// the constant is the DESIGN.md name and Properties accepts the OpenVINO
// name as an alias (see CanonicalKey). Lists (AVAILABLE_DEVICES,
// SUPPORTED_PROPERTIES, EXECUTION_DEVICES) are rendered space-separated;
// DEVICE_PRIORITIES is comma-separated as in device names; ranges are
// "MIN MAX" or "MIN MAX STEP".
const (
	// KeyPerformanceHint is LATENCY, THROUGHPUT or CUMULATIVE_THROUGHPUT (RW).
	KeyPerformanceHint = "PERFORMANCE_HINT"
	// KeyNumStreams is AUTO or the number of execution streams (RW).
	KeyNumStreams = "NUM_STREAMS"
	// KeyNumRequests bounds the number of requests the hint plans for; 0 is
	// no bound (RW).
	KeyNumRequests = "NUM_REQUESTS"
	// KeyEnableProfiling is YES or NO: collect per-op timings (RW).
	KeyEnableProfiling = "ENABLE_PROFILING"
	// KeyRandomSeed is the seed (an unsigned 64-bit integer, default 0) of
	// the random ops that have no seed attribute (RandomUniform,
	// RandomNormal, their *Like forms, Bernoulli, Multinomial, Dropout in
	// training mode); a request overrides it with WithRandomSeed (RW).
	KeyRandomSeed = "RANDOM_SEED"
	// KeyInferencePrecisionHint is the element type floating-point math runs
	// in: f32, f16 or bf16 (RW).
	KeyInferencePrecisionHint = "INFERENCE_PRECISION_HINT"
	// KeyExecutionModeHint is PERFORMANCE or ACCURACY (RW).
	KeyExecutionModeHint = "EXECUTION_MODE_HINT"
	// KeyMaxHostMemory is the host memory, in bytes, one inference of a
	// compiled model may hold: the bytes of its live tensors at their peak
	// (constants, inputs and the values alive at once), not the process's
	// memory (the Go runtime, compiled programs and device memory are not
	// counted). Exceeding it is an error wrapping ErrResourceExhausted
	// that names the node, the shape and the bytes, at compile time when
	// the shapes are static and, when they come from the inputs, before
	// the inference runs anything (the plan's peak for those shapes). The
	// default is half the machine's physical memory
	// (tensor.DefaultAllocLimit).
	KeyMaxHostMemory = "MAX_HOST_MEMORY"
	// KeyCacheDir is the directory compiled models are cached in; "" turns
	// caching off (RW).
	KeyCacheDir = "CACHE_DIR"
	// KeyCacheMode is what an exported or cached compiled model keeps
	// (RW, devices that export device code): OPTIMIZE_SPEED keeps the
	// driver's program binaries, so an import builds no kernel;
	// OPTIMIZE_SIZE keeps the graph and the build options only, so the
	// blob is small and the same for the same model, and an import builds
	// the programs again (through the driver's own kernel cache). OpenVINO's
	// ov::cache_mode; unlike OpenVINO's OPTIMIZE_SIZE, the weights stay in
	// the blob.
	KeyCacheMode = "CACHE_MODE"
	// KeyModelPriority is LOW, MEDIUM or HIGH (RW).
	KeyModelPriority = "MODEL_PRIORITY"
	// KeyLogLevel is LOG_NONE, LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG
	// or LOG_TRACE (RW).
	KeyLogLevel = "LOG_LEVEL"
	// KeyDisableTransformations is YES or NO: skip the fusion passes (RW).
	KeyDisableTransformations = "DISABLE_TRANSFORMATIONS"
	// KeyExclusiveAsyncRequests is YES or NO: run async requests of all
	// compiled models on one executor (RW).
	KeyExclusiveAsyncRequests = "EXCLUSIVE_ASYNC_REQUESTS"
	// KeyDeviceID selects one device of a plugin ("0", "1").
	KeyDeviceID = "DEVICE_ID"
	// KeyAvailableDevices lists the plugin's device ids (RO).
	KeyAvailableDevices = "AVAILABLE_DEVICES"
	// KeyFullDeviceName is the human-readable device name (RO).
	KeyFullDeviceName = "FULL_DEVICE_NAME"
	// KeySupportedProperties lists "KEY:RW" / "KEY:RO" for every key (RO).
	KeySupportedProperties = "SUPPORTED_PROPERTIES"
	// KeyCachingProperties lists, space-separated, the read-write keys
	// whose values decide what compiling a model makes, as OpenVINO's
	// caching_properties do: the model cache keys a blob by those alone.
	// Devices with runtime-only keys (PropertySpec.RuntimeOnly) have it
	// (RO); without it every read-write key counts.
	KeyCachingProperties = "CACHING_PROPERTIES"
	// KeyOptimalNumberOfInferRequests is how many requests keep the device
	// busy (RO, compiled model).
	KeyOptimalNumberOfInferRequests = "OPTIMAL_NUMBER_OF_INFER_REQUESTS"
	// KeyRangeForAsyncInferRequests is "MIN MAX STEP" (RO).
	KeyRangeForAsyncInferRequests = "RANGE_FOR_ASYNC_INFER_REQUESTS"
	// KeyRangeForStreams is "MIN MAX" (RO).
	KeyRangeForStreams = "RANGE_FOR_STREAMS"
	// KeyExecutionDevices lists the devices a compiled model runs on (RO).
	KeyExecutionDevices = "EXECUTION_DEVICES"
	// KeyLoadedFromCache is YES when the compiled model came from CACHE_DIR
	// (RO).
	KeyLoadedFromCache = "LOADED_FROM_CACHE"
	// KeyDeviceArchitecture identifies the device's architecture, which an
	// exported model must match (RO).
	KeyDeviceArchitecture = "DEVICE_ARCHITECTURE"
	// KeyDeviceType is "integrated" or "discrete" (RO).
	KeyDeviceType = "DEVICE_TYPE"
	// KeyOptimizationCapabilities lists what the device accepts: FP32,
	// FP16 and BF16 (INFERENCE_PRECISION_HINT values it takes),
	// EXPORT_IMPORT (its compiled models export and it imports them); the
	// device behaviour suite checks each claim (RO).
	KeyOptimizationCapabilities = "OPTIMIZATION_CAPABILITIES"
	// KeyDeviceTotalMemSize is the device memory in bytes (RO).
	KeyDeviceTotalMemSize = "GPU_DEVICE_TOTAL_MEM_SIZE"
	// KeyDeviceUUID is the device's UUID as hex (RO).
	KeyDeviceUUID = "DEVICE_UUID"
	// KeyDevicePriorities is the comma-separated device list of HETERO.
	KeyDevicePriorities = "DEVICE_PRIORITIES"
	// KeyNetworkName is the compiled model's name (RO, compiled model).
	KeyNetworkName = "NETWORK_NAME"
	// KeyAllowAutoBatching is YES or NO: with the THROUGHPUT hint,
	// Core.CompileModel runs the model through the BATCH device on devices
	// that list this key (RW).
	KeyAllowAutoBatching = "ALLOW_AUTO_BATCHING"
)

// Values of KeyCacheMode.
const (
	// CacheModeOptimizeSpeed keeps program binaries in blobs.
	CacheModeOptimizeSpeed = "OPTIMIZE_SPEED"
	// CacheModeOptimizeSize keeps the graph and build options only.
	CacheModeOptimizeSize = "OPTIMIZE_SIZE"
)

// aliases maps OpenVINO's wire names to the keys above where they differ.
var aliases = map[string]string{
	"PERF_COUNT":                    KeyEnableProfiling,
	"PERFORMANCE_HINT_NUM_REQUESTS": KeyNumRequests,
	"MULTI_DEVICE_PRIORITIES":       KeyDevicePriorities,
	"AUTO_BATCH_DEVICE_CONFIG":      KeyDevicePriorities,
}

// CanonicalKey returns the key Properties stores key under: the key itself,
// or this project's name for an OpenVINO alias ("PERF_COUNT" ->
// "ENABLE_PROFILING"). Properties.Get and Properties.Set accept either.
func CanonicalKey(key string) string {
	if k, ok := aliases[key]; ok {
		return k
	}
	return key
}

// Keys of the runtime model (CompiledModel.RuntimeModel): ModelCore.Annotate
// records them in every executed node's RT.Extra.
const (
	// RuntimeLayerType is the executed op type ("FusedConv").
	RuntimeLayerType = "LAYER_TYPE"
	// RuntimeExecutionOrder is the node's position in the execution order.
	RuntimeExecutionOrder = "EXECUTION_ORDER"
	// RuntimeImplType is the implementation that runs the node (a kernel
	// entry point, a reference kernel).
	RuntimeImplType = "IMPL_TYPE"
	// RuntimePerfCounter is the node's latest profiled time in
	// microseconds, once a profiled request has run it.
	RuntimePerfCounter = "PERF_COUNTER"
	// RuntimeOriginalNames lists, comma-separated, the friendly names of
	// the original nodes the executed node stands for.
	RuntimeOriginalNames = "ORIGINAL_NAMES"
	// RuntimePrecision is the element type the node computes its outputs
	// in ("f32", "f16", "i64"), OpenVINO's runtimePrecision: an f16 model
	// run in f32 (fusion's ConvertF16ToF32) says f32, the f16 path of
	// INFERENCE_PRECISION_HINT=f16 says f16, and the integer ops "u8" or
	// "i8" (their 8-bit data, whatever the hint: graph.IntegerPrecision).
	RuntimePrecision = "RUNTIME_PRECISION"
)
