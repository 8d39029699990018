package driver

import (
	"context"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/tensor"
)

// Sentinel errors. Errors returned by plugins and the Core wrap one of these
// so callers can use errors.Is. They are internal/sentinel's values, which
// graph's errors (Model.Reshape's) match as well.
var (
	// ErrNotFound: an unknown device, property, tensor name or node.
	ErrNotFound = sentinel.ErrNotFound
	// ErrNotImplemented: the device does not implement the operation.
	ErrNotImplemented = sentinel.ErrNotImplemented
	// ErrInvalidArgument: a bad property value, tensor type or shape.
	ErrInvalidArgument = sentinel.ErrInvalidArgument
	// ErrDevice: the device or its driver failed.
	ErrDevice = sentinel.ErrDevice
	// ErrUnsupported: the model has an op the device cannot run.
	ErrUnsupported = sentinel.ErrUnsupported
	// ErrBusy: the request is running and cannot be changed now.
	ErrBusy = sentinel.ErrBusy
	// ErrClosed: the object was used after Close.
	ErrClosed = sentinel.ErrClosed
	// ErrResourceExhausted: a tensor or buffer would exceed a memory
	// budget (the host's MAX_HOST_MEMORY, a device's global memory or
	// largest allocation). The error names the node, the shape and the
	// bytes asked for; nothing was allocated.
	ErrResourceExhausted = sentinel.ErrResourceExhausted
)

// Plugin is one device (or a family of devices, "GPU.0", "GPU.1") as the
// Core sees it. Constructors (the registered Factory) initialise the backend
// and fail with an explanation when they cannot.
type Plugin interface {
	// Name is the device name the plugin is registered under ("CPU").
	Name() string
	// Property returns the value of a property as a string. An unknown key
	// is an error wrapping ErrNotFound that lists the supported keys.
	Property(key string) (string, error)
	// SetProperties sets read-write properties. An unknown key, a read-only
	// key or a bad value is an error naming the key and the accepted values;
	// on error no property is changed.
	SetProperties(props map[string]string) error
	// CompileModel compiles a clone of m with the plugin's configuration
	// overridden by props (later wins); the plugin's own configuration is
	// unchanged.
	CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (CompiledModel, error)
	// Close releases the device. Compiled models must be closed first.
	Close() error
}

// Querier is implemented by plugins that can say which nodes of a model
// they support (for HETERO).
type Querier interface {
	// QueryModel returns, for every node of m the device supports, the
	// node's friendly name mapped to the device name.
	QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error)
}

// PortInfo describes one input or output of a compiled model: the name of
// its Parameter or Result, its element type and its shape. It is the
// graph.Port that graph.Model.Inputs and Outputs describe the model's
// ports with before compiling.
type PortInfo = graph.Port

// CompiledModel is a model compiled for one device; it owns the device
// resources its requests share.
type CompiledModel interface {
	// Inputs describes the model inputs, in order.
	Inputs() []PortInfo
	// Outputs describes the model outputs, in order.
	Outputs() []PortInfo
	// Property returns a property of the compiled model (its effective
	// configuration and read-only facts).
	Property(key string) (string, error)
	// CreateInferRequest returns a new request with its own tensors.
	CreateInferRequest() (InferRequest, error)
	// RuntimeModel returns the graph as executed, with per-node runtime
	// info (layer type, execution order, implementation, original names).
	RuntimeModel() (*graph.Model, error)
	// Close releases the compiled model's resources.
	Close() error
}

// InferRequest runs a compiled model on one set of tensors.
type InferRequest interface {
	// SetTensor binds a tensor to the input or output of that name. An
	// unknown name, a wrong element type or a shape that does not fit the
	// port's static dimensions is an error.
	SetTensor(name string, t *tensor.Tensor) error
	// Tensor returns the tensor bound to an input or output; outputs are
	// valid after Infer returns.
	Tensor(name string) (*tensor.Tensor, error)
	// Infer runs one inference synchronously. Inputs are never modified.
	Infer(ctx context.Context) error
	// ProfilingInfo returns per-op and per-stage timings of the last
	// inference when ENABLE_PROFILING is on (empty otherwise).
	ProfilingInfo() []ProfilingInfo
	// Close releases the request's resources.
	Close() error
}

// Status says whether a profiled op ran.
type Status int

// Profiling statuses, as in OpenVINO's ov::ProfilingInfo.
const (
	NotRun Status = iota
	OptimizedOut
	Executed
)

// String names the status.
func (s Status) String() string {
	switch s {
	case OptimizedOut:
		return "OPTIMIZED_OUT"
	case Executed:
		return "EXECUTED"
	}
	return "NOT_RUN"
}

// ProfilingInfo is one entry of a request's profile: one executed op or one
// stage of the request.
type ProfilingInfo struct {
	// NodeName is the node's friendly name, or the stage name for stages.
	NodeName string
	// NodeType is the op type, or "Stage" for request stages.
	NodeType string
	// ExecType is the implementation that ran (kernel or function name).
	ExecType string
	// Status says whether it ran.
	Status Status
	// RealTime is the wall (device) time.
	RealTime time.Duration
	// CPUTime is host time spent on it.
	CPUTime time.Duration
	// Bytes is the memory the op's kernel reads and writes (the sizes of
	// its buffer arguments; 0 when the device does not count them), so
	// that Bytes / RealTime is its bandwidth.
	Bytes int64
}

// DeviceSwitch is one change of the devices serving a compiled model.
type DeviceSwitch struct {
	// At is the time since CompileModel started.
	At time.Duration
	// Devices are the devices serving from then on (EXECUTION_DEVICES).
	Devices string
}

// Timeliner is implemented by compiled models whose serving devices change
// while they run (AUTO: the CPU serves while the selected device compiles,
// then that device).
type Timeliner interface {
	// Timeline returns when each set of devices started serving, in order.
	Timeline() []DeviceSwitch
}
