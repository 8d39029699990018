package driver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Remote contexts and tensors: the device memory a program shares with a
// device, so that the tensors of a pipeline stay on the device between
// models and the program's own kernels (OpenVINO's RemoteContext and
// RemoteTensor). A device offers them by implementing the optional
// interfaces below; package plugin finds them by type assertion, as
// database/sql finds a driver's optional interfaces.

// Keys of remote contexts and remote tensors: the properties that create
// them (Core.CreateContext, RemoteContext.CreateTensor) and that their
// Params report, with OpenVINO's names. Handles are unsigned integers in
// decimal or 0x-hexadecimal.
const (
	// KeyContextType is the kind of a remote context: "OCL".
	KeyContextType = "CONTEXT_TYPE"
	// KeyOCLContext is an OpenCL context handle (cl_context).
	KeyOCLContext = "OCL_CONTEXT"
	// KeyOCLQueue is an OpenCL in-order command queue handle
	// (cl_command_queue) of the context; the requests of models compiled
	// in the context then run on it.
	KeyOCLQueue = "OCL_QUEUE"
	// KeyOCLContextDeviceID is the index, in the OpenCL context's device
	// list, of the device to run on (0 by default).
	KeyOCLContextDeviceID = "OCL_CONTEXT_DEVICE_ID"
	// KeySharedMemType is the kind of a remote tensor's memory: OCL_BUFFER
	// (a device buffer) or USM_HOST_BUFFER (host memory the device maps).
	KeySharedMemType = "SHARED_MEM_TYPE"
	// KeyMemHandle is an OpenCL buffer handle (cl_mem).
	KeyMemHandle = "MEM_HANDLE"

	// KeyMemoryStatistics is the device memory in use, by kind (see
	// MemoryStatistics) (RO).
	KeyMemoryStatistics = "GPU_MEMORY_STATISTICS"
	// KeyQueuePriority is the priority of the command queues the device
	// makes: LOW, MEDIUM or HIGH (RW).
	KeyQueuePriority = "GPU_QUEUE_PRIORITY"
	// KeyQueueThrottle is the throttle (power) hint of the command queues
	// the device makes: LOW, MEDIUM or HIGH (RW).
	KeyQueueThrottle = "GPU_QUEUE_THROTTLE"
	// KeyHostTaskPriority is OpenVINO's priority of the host threads a
	// device runs; clinfer accepts only MEDIUM (RW; see the GPU device).
	KeyHostTaskPriority = "GPU_HOST_TASK_PRIORITY"
)

// Values of KeyContextType and KeySharedMemType.
const (
	ContextTypeOCL      = "OCL"
	SharedMemOCLBuffer  = "OCL_BUFFER"
	SharedMemUSMHostBuf = "USM_HOST_BUFFER"
)

// FormatHandle renders an OpenCL handle for a property map.
func FormatHandle(h uintptr) string { return "0x" + strconv.FormatUint(uint64(h), 16) }

// ParseHandle reads a handle written by FormatHandle (or in decimal). A
// malformed or zero value is an error wrapping ErrInvalidArgument naming
// key.
func ParseHandle(key, v string) (uintptr, error) {
	s := strings.TrimSpace(v)
	var n uint64
	var err error
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err = strconv.ParseUint(h, 16, 64)
	} else {
		n, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil || n == 0 {
		return 0, errorf(ErrInvalidArgument, "plugin: bad value %q for %s: want a non-zero handle (0x... or decimal)", v, key)
	}
	return uintptr(n), nil
}

// RemoteContext is a device memory context of one device: models compile
// into it (RemotePlugin.CompileModelIn) and share its programs and
// weights, and remote tensors live in it. Each RemoteContext value holds a
// reference to the context; Close drops it, and the context goes when its
// last holder (a RemoteContext, a compiled model, a remote tensor) does.
type RemoteContext interface {
	// DeviceName is the device the context runs on ("GPU.0").
	DeviceName() string
	// Params describes the context: CONTEXT_TYPE, OCL_CONTEXT,
	// OCL_CONTEXT_DEVICE_ID and, when it has one, OCL_QUEUE.
	Params() map[string]string
	// CreateTensor makes a remote tensor of typ and shape: a new device
	// buffer, or with SHARED_MEM_TYPE=OCL_BUFFER and MEM_HANDLE in props a
	// wrapper over the caller's buffer (which it never releases). name
	// names the tensor in errors.
	CreateTensor(name string, typ tensor.ElementType, shape tensor.Shape, props map[string]string) (RemoteTensor, error)
	// CreateHostTensor makes a host tensor in memory the device maps
	// (CL_MEM_ALLOC_HOST_PTR): an input there uploads without a staging
	// copy on devices that pin such memory.
	CreateHostTensor(name string, typ tensor.ElementType, shape tensor.Shape) (HostTensor, error)
	// MemoryStatistics reports the device memory the context holds.
	MemoryStatistics() MemoryStatistics
	// Close drops this reference to the context. It is idempotent.
	Close() error
}

// RemoteTensor is a tensor in a remote context's device memory.
type RemoteTensor interface {
	// Name is the name the tensor was created with, for errors.
	Name() string
	// Type is the element type.
	Type() tensor.ElementType
	// Shape is the shape (contiguous, row-major).
	Shape() tensor.Shape
	// DeviceName is the device of its context ("GPU.0").
	DeviceName() string
	// Params describes the tensor: SHARED_MEM_TYPE, MEM_HANDLE,
	// OCL_CONTEXT.
	Params() map[string]string
	// CopyFrom writes a host tensor of the same type and shape into the
	// tensor and returns when it is there.
	CopyFrom(ctx context.Context, src *tensor.Tensor) error
	// CopyTo reads the tensor into a host tensor of the same type and
	// shape and returns when it is there.
	CopyTo(ctx context.Context, dst *tensor.Tensor) error
	// Close releases the tensor's reference to its buffer (an inference
	// that already enqueued work on it finishes). It is idempotent.
	Close() error
}

// HostTensor is a host tensor in memory a device maps; Tensor is valid
// until Close.
type HostTensor interface {
	// Tensor is the host tensor over the mapped memory.
	Tensor() *tensor.Tensor
	// Close unmaps and releases the memory. It is idempotent.
	Close() error
}

// RemotePlugin is implemented by devices with remote contexts.
type RemotePlugin interface {
	// DefaultContext returns the context the device compiles models in
	// when none is given, for the device with that DEVICE_ID ("" for the
	// default device).
	DefaultContext(deviceID string) (RemoteContext, error)
	// CreateContext wraps the caller's device context given by props
	// (OCL_CONTEXT, OCL_QUEUE, OCL_CONTEXT_DEVICE_ID for the GPU); the
	// caller's handles stay the caller's.
	CreateContext(props map[string]string) (RemoteContext, error)
	// CompileModelIn compiles m as CompileModel does, in context rc (one
	// of this device's).
	CompileModelIn(ctx context.Context, m *graph.Model, rc RemoteContext, props map[string]string) (CompiledModel, error)
}

// ContextModel is implemented by compiled models that run in a remote
// context.
type ContextModel interface {
	// Context returns a new reference to the model's context.
	Context() (RemoteContext, error)
}

// MemoryReleaser is implemented by compiled models that can give back
// memory between inferences.
type MemoryReleaser interface {
	// ReleaseMemory frees the activation memory of the model's requests,
	// which the next inference of each makes again.
	ReleaseMemory() error
}

// RemoteBinder is implemented by infer requests that take remote tensors
// as inputs and outputs.
type RemoteBinder interface {
	// SetRemoteTensor binds t to the input or output called name; the
	// inference then reads or writes it on the device. A later SetTensor
	// of the same port replaces it; a nil t unbinds the port (an output
	// then gets the device's own tensor again, an input needs a new one).
	SetRemoteTensor(name string, t RemoteTensor) error
	// RemoteTensor returns the remote tensor bound to a port.
	RemoteTensor(name string) (RemoteTensor, error)
}

// OutputShaper is implemented by compiled models that can tell the shapes
// of an inference's outputs before it runs, from its input shapes and the
// values of the few inputs the model reads on the host. HETERO sizes the
// device tensors of links of dynamic shape with it, so that they need not
// go through host memory.
type OutputShaper interface {
	// HostInputs reports, per input in Inputs order, whether the model
	// reads that input's values on the host (a shape, an axis, an index:
	// they decide the plan as input shapes do). Such an input takes host
	// tensors only.
	HostInputs() []bool
	// OutputShapes returns the shapes of the outputs, in Outputs order, of
	// an inference of inputs of the given shapes; values[i] is input i's
	// tensor where the caller has it on the host (nil otherwise). An
	// output whose shape depends on values it was not given (a host input
	// left nil, or an op whose output size is data-dependent) is nil:
	// its size is known only once the model has run.
	OutputShapes(shapes []tensor.Shape, values []*tensor.Tensor) ([]tensor.Shape, error)
}

// Transfers counts the bytes one inference moved: between host memory
// and the device, and from device buffer to device buffer.
type Transfers struct {
	// HostToDevice is bytes written from host memory (inputs).
	HostToDevice int64
	// DeviceToHost is bytes read into host memory (outputs).
	DeviceToHost int64
	// DeviceToDevice is bytes copied between device buffers (remote
	// tensors in and out).
	DeviceToDevice int64
}

// Add returns the sum of t and o.
func (t Transfers) Add(o Transfers) Transfers {
	return Transfers{t.HostToDevice + o.HostToDevice, t.DeviceToHost + o.DeviceToHost, t.DeviceToDevice + o.DeviceToDevice}
}

// String renders the counts: "host->device=N device->host=N
// device->device=N" (bytes).
func (t Transfers) String() string {
	return fmt.Sprintf("host->device=%d device->host=%d device->device=%d", t.HostToDevice, t.DeviceToHost, t.DeviceToDevice)
}

// TransferCounter is implemented by infer requests that count their
// transfers.
type TransferCounter interface {
	// Transfers returns the last inference's transfers.
	Transfers() Transfers
}

// MemoryStatistics is the device memory a context holds, by kind, in
// bytes (GPU_MEMORY_STATISTICS).
type MemoryStatistics struct {
	// Weights is the model constants on the device (weights, parameter
	// tables, folded values), each shared one counted once.
	Weights int64
	// Activations is the requests' activation buffers.
	Activations int64
	// Staging is host memory the device maps (host tensors).
	Staging int64
	// RemoteTensors is the device buffers of remote tensors the device
	// allocated (not those wrapping the caller's buffers).
	RemoteTensors int64
}

// Total is the sum of every kind.
func (s MemoryStatistics) Total() int64 {
	return s.Weights + s.Activations + s.Staging + s.RemoteTensors
}

// String renders the statistics as the property's value:
// "weights=N activations=N staging=N remote_tensors=N".
func (s MemoryStatistics) String() string {
	return fmt.Sprintf("weights=%d activations=%d staging=%d remote_tensors=%d", s.Weights, s.Activations, s.Staging, s.RemoteTensors)
}

// ParseMemoryStatistics reads what MemoryStatistics.String writes. A
// malformed value is an error wrapping ErrInvalidArgument.
func ParseMemoryStatistics(v string) (MemoryStatistics, error) {
	var s MemoryStatistics
	fields := map[string]*int64{"weights": &s.Weights, "activations": &s.Activations, "staging": &s.Staging, "remote_tensors": &s.RemoteTensors}
	for _, f := range strings.Fields(v) {
		k, val, ok := strings.Cut(f, "=")
		p, known := fields[k]
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || !known || err != nil {
			return MemoryStatistics{}, errorf(ErrInvalidArgument, "plugin: bad %s value %q: field %q (want weights=N activations=N staging=N remote_tensors=N)", KeyMemoryStatistics, v, f)
		}
		*p = n
	}
	return s, nil
}
