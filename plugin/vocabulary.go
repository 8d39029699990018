package plugin

import "github.com/clinfer/clinfer/plugin/driver"

// Errors. Every error of the Core, of compiled models, of requests and of
// the devices wraps one of these; test for them with errors.Is. They are
// package driver's sentinels, so what a device returns matches them too.
var (
	// ErrNotFound: an unknown device, property, port, tensor or node.
	ErrNotFound = driver.ErrNotFound
	// ErrNotImplemented: the device does not implement the operation.
	ErrNotImplemented = driver.ErrNotImplemented
	// ErrInvalidArgument: a bad property value, tensor type or shape.
	ErrInvalidArgument = driver.ErrInvalidArgument
	// ErrDevice: the device or its driver failed.
	ErrDevice = driver.ErrDevice
	// ErrUnsupported: the model has an op the device cannot run.
	ErrUnsupported = driver.ErrUnsupported
	// ErrBusy: the request is running and cannot be changed now.
	ErrBusy = driver.ErrBusy
	// ErrClosed: the object (or the object it belongs to) was used after
	// Close.
	ErrClosed = driver.ErrClosed
	// ErrIncompatible: an exported model was written by another format
	// version, device or device architecture (also ErrInvalidArgument).
	ErrIncompatible = driver.ErrIncompatible
	// ErrCorrupt: an exported model is truncated or damaged (also
	// ErrInvalidArgument).
	ErrCorrupt = driver.ErrCorrupt
	// ErrCallback: an asynchronous request's callback panicked.
	ErrCallback = driver.ErrCallback
	// ErrResourceExhausted: an allocation would pass a memory budget
	// (MAX_HOST_MEMORY, the device's memory); the error names the node,
	// the shape and the bytes.
	ErrResourceExhausted = driver.ErrResourceExhausted
)

// Property keys: the OpenVINO string names that Core.Property,
// Core.SetProperties, CompiledModel.Property and property maps use, so CLI
// flags and config files can name them. Options (WithPerformanceHint, ...)
// and CompiledModel's typed getters are the Go forms of the common ones.
// Lists (AVAILABLE_DEVICES, SUPPORTED_PROPERTIES, EXECUTION_DEVICES) read
// space-separated; see package driver for each key's values.
const (
	KeyPerformanceHint              = driver.KeyPerformanceHint
	KeyNumStreams                   = driver.KeyNumStreams
	KeyNumRequests                  = driver.KeyNumRequests
	KeyEnableProfiling              = driver.KeyEnableProfiling
	KeyInferencePrecisionHint       = driver.KeyInferencePrecisionHint
	KeyExecutionModeHint            = driver.KeyExecutionModeHint
	KeyMaxHostMemory                = driver.KeyMaxHostMemory
	KeyRandomSeed                   = driver.KeyRandomSeed
	KeyCacheDir                     = driver.KeyCacheDir
	KeyCacheMode                    = driver.KeyCacheMode
	KeyModelPriority                = driver.KeyModelPriority
	KeyLogLevel                     = driver.KeyLogLevel
	KeyDisableTransformations       = driver.KeyDisableTransformations
	KeyExclusiveAsyncRequests       = driver.KeyExclusiveAsyncRequests
	KeyDeviceID                     = driver.KeyDeviceID
	KeyAvailableDevices             = driver.KeyAvailableDevices
	KeyFullDeviceName               = driver.KeyFullDeviceName
	KeySupportedProperties          = driver.KeySupportedProperties
	KeyOptimalNumberOfInferRequests = driver.KeyOptimalNumberOfInferRequests
	KeyRangeForAsyncInferRequests   = driver.KeyRangeForAsyncInferRequests
	KeyRangeForStreams              = driver.KeyRangeForStreams
	KeyExecutionDevices             = driver.KeyExecutionDevices
	KeyLoadedFromCache              = driver.KeyLoadedFromCache
	KeyDeviceArchitecture           = driver.KeyDeviceArchitecture
	KeyDeviceType                   = driver.KeyDeviceType
	KeyOptimizationCapabilities     = driver.KeyOptimizationCapabilities
	KeyDeviceTotalMemSize           = driver.KeyDeviceTotalMemSize
	KeyDeviceUUID                   = driver.KeyDeviceUUID
	KeyDevicePriorities             = driver.KeyDevicePriorities
	KeyAllowAutoBatching            = driver.KeyAllowAutoBatching
	KeyNetworkName                  = driver.KeyNetworkName
)

// Keys of the runtime model: CompiledModel.RuntimeModel returns the graph
// as executed, and each of its nodes carries these in RT.Extra.
const (
	// RuntimeLayerType is the executed op type ("FusedConv").
	RuntimeLayerType = driver.RuntimeLayerType
	// RuntimeExecutionOrder is the node's position in the execution order
	// ("0", "1", ...).
	RuntimeExecutionOrder = driver.RuntimeExecutionOrder
	// RuntimeImplType is the implementation that runs the node: a kernel
	// entry point on the GPU, a reference kernel on the CPU.
	RuntimeImplType = driver.RuntimeImplType
	// RuntimePerfCounter is the node's latest profiled time in
	// microseconds; present once a request compiled with ENABLE_PROFILING
	// has run the node.
	RuntimePerfCounter = driver.RuntimePerfCounter
	// RuntimeOriginalNames lists, comma-separated, the friendly names of
	// the model's nodes the executed node stands for after fusion.
	RuntimeOriginalNames = driver.RuntimeOriginalNames
	// RuntimePrecision is the element type the node computes in ("f32",
	// "f16"): an f16 model that runs in f32 says f32 on every node.
	RuntimePrecision = driver.RuntimePrecision
)

// PerformanceHint is the PERFORMANCE_HINT property; it implements
// encoding.TextMarshaler and TextUnmarshaler, so flag.TextVar works.
type PerformanceHint = driver.PerformanceHint

// Performance hints. The zero value is HintLatency, the default.
const (
	HintLatency              PerformanceHint = driver.HintLatency
	HintThroughput           PerformanceHint = driver.HintThroughput
	HintCumulativeThroughput PerformanceHint = driver.HintCumulativeThroughput
)

// ExecutionMode is the EXECUTION_MODE_HINT property.
type ExecutionMode = driver.ExecutionMode

// Execution modes. The zero value is ModePerformance, the default.
const (
	ModePerformance ExecutionMode = driver.ModePerformance
	ModeAccuracy    ExecutionMode = driver.ModeAccuracy
)

// Values of CACHE_MODE: what Export and CACHE_DIR keep of a compiled
// model's device code (see driver.KeyCacheMode).
const (
	CacheModeOptimizeSpeed = driver.CacheModeOptimizeSpeed
	CacheModeOptimizeSize  = driver.CacheModeOptimizeSize
)

// Priority is the MODEL_PRIORITY property.
type Priority = driver.Priority

// Model priorities, in increasing order. The default is PriorityMedium.
const (
	PriorityLow    Priority = driver.PriorityLow
	PriorityMedium Priority = driver.PriorityMedium
	PriorityHigh   Priority = driver.PriorityHigh
)

// LogLevel is the LOG_LEVEL property.
type LogLevel = driver.LogLevel

// Log levels, from quiet to verbose. The zero value is LogNone, the default.
const (
	LogNone    LogLevel = driver.LogNone
	LogError   LogLevel = driver.LogError
	LogWarning LogLevel = driver.LogWarning
	LogInfo    LogLevel = driver.LogInfo
	LogDebug   LogLevel = driver.LogDebug
	LogTrace   LogLevel = driver.LogTrace
)

// PortInfo describes one input or output of a model or compiled model: the
// name of its Parameter or Result, its element type and its shape, whose
// dynamic dimensions have Size -1.
type PortInfo = driver.PortInfo

// DeviceSwitch is one entry of CompiledModel.Timeline: from At (since
// CompileModel started) on, Devices served the model.
type DeviceSwitch = driver.DeviceSwitch

// BatchStats are the batching counters of a compiled model; see
// CompiledModel.BatchStats.
type BatchStats = driver.BatchStats

// ProfilingInfo is one entry of a request's profile: one executed op (or
// one the compiler optimised out) or one stage of the request, with its
// device and host time.
type ProfilingInfo = driver.ProfilingInfo

// Status says whether a profiled op ran.
type Status = driver.Status

// Profiling statuses, as in OpenVINO's ov::ProfilingInfo.
const (
	NotRun       Status = driver.NotRun
	OptimizedOut Status = driver.OptimizedOut
	Executed     Status = driver.Executed
)
