package clinfer

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"

	// Every device registers itself when its package is imported.
	_ "github.com/clinfer/clinfer/auto"
	_ "github.com/clinfer/clinfer/batch"
	_ "github.com/clinfer/clinfer/clbackend"
	_ "github.com/clinfer/clinfer/cpu_fallback"
	_ "github.com/clinfer/clinfer/hetero"
)

// Core reads models, compiles them for devices by name ("CPU", "GPU",
// "GPU.1", "HETERO:GPU,CPU", "AUTO", "BATCH:GPU(4)") and answers device
// properties; see plugin.Core. Its zero value is ready to use.
type Core = plugin.Core

// NewCore returns a Core over every device clinfer has. It constructs
// none: a device is probed on first use.
func NewCore() *Core { return plugin.NewCore() }

// Devices returns the sorted names of the registered devices, whether or
// not they work here; Core.AvailableDevices lists the ones that do.
func Devices() []string { return plugin.Devices() }

// Model is a model as read (Core.ReadModel) and compiled
// (Core.CompileModel): the graph IR, whose Inputs and Outputs describe its
// ports with their dynamic dimensions.
type Model = graph.Model

// CompiledModel is a model compiled for one device; its Infer runs it in
// one call, safe from many goroutines. See plugin.CompiledModel.
type CompiledModel = plugin.CompiledModel

// InferRequest runs a compiled model on tensors it keeps between runs; see
// plugin.InferRequest.
type InferRequest = plugin.InferRequest

// AsyncInferRequest is a request that also runs in the background, with
// Wait, a callback and Cancel; see plugin.AsyncInferRequest.
type AsyncInferRequest = plugin.AsyncInferRequest

// RemoteContext is a device context (the GPU's own, or one over your
// OpenCL context) that models compile into and remote tensors live in;
// see plugin.RemoteContext and Core.DefaultContext, Core.CreateContext,
// Core.CompileModelIn.
type RemoteContext = plugin.RemoteContext

// RemoteTensor is a tensor in device memory, bound to requests with
// SetRemoteTensor so that pipelines stay on the device; see
// plugin.RemoteTensor.
type RemoteTensor = plugin.RemoteTensor

// HostTensor is a host tensor in memory the device maps; see
// plugin.HostTensor.
type HostTensor = plugin.HostTensor

// Transfers counts the bytes an inference moved between host and device;
// see InferRequest.Transfers.
type Transfers = plugin.Transfers

// MemoryStatistics is the GPU_MEMORY_STATISTICS property, parsed.
type MemoryStatistics = plugin.MemoryStatistics

// BatchStats are the batching counters of a compiled model on BATCH; see
// CompiledModel.BatchStats.
type BatchStats = plugin.BatchStats

// ParseMemoryStatistics reads a GPU_MEMORY_STATISTICS value, as
// Core.Property("GPU", "GPU_MEMORY_STATISTICS") returns it.
func ParseMemoryStatistics(v string) (MemoryStatistics, error) {
	return plugin.ParseMemoryStatistics(v)
}

// PortInfo describes one input or output: name, element type and shape.
type PortInfo = plugin.PortInfo

// ProfilingInfo is one entry of a request's profile.
type ProfilingInfo = plugin.ProfilingInfo

// Errors to test for with errors.Is; the same values as plugin's.
var (
	// ErrNotFound: an unknown device, property, port, tensor or node.
	ErrNotFound = plugin.ErrNotFound
	// ErrNotImplemented: the device does not implement the operation.
	ErrNotImplemented = plugin.ErrNotImplemented
	// ErrInvalidArgument: a bad property value, tensor type or shape.
	ErrInvalidArgument = plugin.ErrInvalidArgument
	// ErrDevice: the device or its driver failed.
	ErrDevice = plugin.ErrDevice
	// ErrUnsupported: the model has an op the device cannot run.
	ErrUnsupported = plugin.ErrUnsupported
	// ErrBusy: the request is running and cannot be changed now.
	ErrBusy = plugin.ErrBusy
	// ErrClosed: the object was used after Close.
	ErrClosed = plugin.ErrClosed
	// ErrIncompatible: an exported model is for another format version,
	// device or device architecture.
	ErrIncompatible = plugin.ErrIncompatible
	// ErrCorrupt: an exported model is truncated or damaged.
	ErrCorrupt = plugin.ErrCorrupt
	// ErrCallback: an asynchronous request's callback panicked.
	ErrCallback = plugin.ErrCallback
	// ErrResourceExhausted: an allocation would pass a memory budget.
	ErrResourceExhausted = plugin.ErrResourceExhausted
)

// Option sets one property in a property map; Props collects options into
// the map Core.CompileModel takes. See plugin.Option.
type Option = plugin.Option

// Props returns a new property map with opts applied in order.
func Props(opts ...Option) map[string]string { return plugin.Props(opts...) }

// PerformanceHint is the PERFORMANCE_HINT property.
type PerformanceHint = plugin.PerformanceHint

// Performance hints. The zero value is HintLatency, the default.
const (
	HintLatency              PerformanceHint = plugin.HintLatency
	HintThroughput           PerformanceHint = plugin.HintThroughput
	HintCumulativeThroughput PerformanceHint = plugin.HintCumulativeThroughput
)

// WithPerformanceHint sets PERFORMANCE_HINT.
func WithPerformanceHint(h PerformanceHint) Option { return plugin.WithPerformanceHint(h) }

// WithNumStreams sets NUM_STREAMS; n <= 0 is AUTO.
func WithNumStreams(n int) Option { return plugin.WithNumStreams(n) }

// WithProfiling sets ENABLE_PROFILING.
func WithProfiling(on bool) Option { return plugin.WithProfiling(on) }

// WithInferencePrecision sets INFERENCE_PRECISION_HINT.
func WithInferencePrecision(t tensor.ElementType) Option { return plugin.WithInferencePrecision(t) }

// WithCacheDir sets CACHE_DIR.
func WithCacheDir(dir string) Option { return plugin.WithCacheDir(dir) }

// WithProperty sets key (see the plugin.Key constants) to value verbatim.
func WithProperty(key, value string) Option { return plugin.WithProperty(key, value) }
