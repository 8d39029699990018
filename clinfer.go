package clinfer

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"

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

// VariableState is one state of a request of a stateful model
// (KeyMakeStateful); see InferRequest.QueryState.
type VariableState = plugin.VariableState

// KeyMakeStateful is the compile option that makes a model stateful:
// "input:output,..." pairs of state inputs and the outputs that carry
// their next values; see plugin.KeyMakeStateful.
const KeyMakeStateful = plugin.KeyMakeStateful

// MakeStateful is the KeyMakeStateful option for input:output pairs.
func MakeStateful(pairs ...string) Option { return plugin.MakeStateful(pairs...) }

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

// PartialShape is a shape whose dimensions may be dynamic, as the ports
// and Model.Reshape take it; see graph.PartialShape.
type PartialShape = graph.PartialShape

// ShapeOf builds a PartialShape from sizes, -1 for a dynamic dimension:
// m.Reshape(map[string]clinfer.PartialShape{"x": clinfer.ShapeOf(1, 3, -1, -1)}).
func ShapeOf(sizes ...int64) PartialShape { return graph.ShapeOf(sizes...) }

// ParsePartialShape parses "[1,3,?,?]" (or "1,3,-1,-1").
func ParsePartialShape(s string) (PartialShape, error) { return graph.ParsePartialShape(s) }

// InputShapeError is the error of input shapes a model cannot take, from
// Model.Reshape or an inference on any device: which input, which
// dimension and the nearest size that fits. It wraps ErrInputShape and
// matches ErrInvalidArgument.
type InputShapeError = graph.InputShapeError

// DeviceSwitch is one entry of CompiledModel.Timeline: from At on,
// Devices served the model (AUTO's CPU while the GPU compiles, then the
// GPU).
type DeviceSwitch = plugin.DeviceSwitch

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
	// ErrInputShape: an input shape the model cannot take
	// (*InputShapeError); such errors also match ErrInvalidArgument.
	ErrInputShape = graph.ErrInputShape
)
