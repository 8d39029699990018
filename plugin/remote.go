package plugin

import (
	"context"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Remote contexts and tensors: device memory a program shares with a
// device, so that a pipeline's tensors stay on the device between models
// and the program's own OpenCL kernels (OpenVINO's RemoteContext and
// RemoteTensor). Only devices with device memory ("GPU") have them.

// RemoteContext is a device context models compile into (Core.
// CompileModelIn) and remote tensors live in; see driver.RemoteContext.
// Core.DefaultContext returns the device's own, Core.CreateContext one over
// the caller's OpenCL context. Close it when done: the context lives on
// while a compiled model or a tensor of it does.
type RemoteContext = driver.RemoteContext

// RemoteTensor is a tensor in a remote context's device memory; bind it
// to a request's input or output with InferRequest.SetRemoteTensor, and
// move it to and from host memory with CopyFrom and CopyTo.
type RemoteTensor = driver.RemoteTensor

// HostTensor is a host tensor in memory the device maps
// (RemoteContext.CreateHostTensor), which uploads faster.
type HostTensor = driver.HostTensor

// Transfers counts the bytes one inference moved between host and device
// memory and from device buffer to device buffer
// (InferRequest.Transfers).
type Transfers = driver.Transfers

// MemoryStatistics is GPU_MEMORY_STATISTICS: the device memory in use by
// weights, activations, staging (mapped host tensors) and remote tensors.
type MemoryStatistics = driver.MemoryStatistics

// ParseMemoryStatistics reads a GPU_MEMORY_STATISTICS value.
func ParseMemoryStatistics(v string) (MemoryStatistics, error) {
	return driver.ParseMemoryStatistics(v)
}

// Keys of remote contexts and tensors and of the GPU's memory and queue
// properties, with OpenVINO's names; see package driver for each.
const (
	KeyContextType        = driver.KeyContextType
	KeyOCLContext         = driver.KeyOCLContext
	KeyOCLQueue           = driver.KeyOCLQueue
	KeyOCLContextDeviceID = driver.KeyOCLContextDeviceID
	KeySharedMemType      = driver.KeySharedMemType
	KeyMemHandle          = driver.KeyMemHandle
	KeyMemoryStatistics   = driver.KeyMemoryStatistics
	KeyQueuePriority      = driver.KeyQueuePriority
	KeyQueueThrottle      = driver.KeyQueueThrottle
	KeyHostTaskPriority   = driver.KeyHostTaskPriority
)

// Values of KeyContextType and KeySharedMemType.
const (
	ContextTypeOCL     = driver.ContextTypeOCL
	SharedMemOCLBuffer = driver.SharedMemOCLBuffer
)

// DefaultContext returns a reference to the context device ("GPU",
// "GPU.1") compiles models in; models compiled with CompileModel run in
// it, so its remote tensors bind to their requests. A device without
// device memory ("CPU") or a virtual one is an error wrapping
// ErrNotImplemented.
func (c *Core) DefaultContext(device string) (RemoteContext, error) {
	return c.d.DefaultContext(device)
}

// CreateContext wraps the caller's OpenCL context for device ("GPU"),
// given by props: OCL_CONTEXT (the cl_context handle, 0x-hexadecimal or
// decimal), optionally OCL_CONTEXT_DEVICE_ID (the device's index in the
// context, 0 by default) and OCL_QUEUE (an in-order cl_command_queue the
// models compiled in the context then run on, ordered with the caller's
// own commands). clbackend.ContextParams makes props from the cl
// package's types. clinfer takes references of its own and never
// releases the caller's.
func (c *Core) CreateContext(device string, props map[string]string) (RemoteContext, error) {
	return c.d.CreateContext(device, props)
}

// CompileModelIn compiles m in remote context rc, on rc's device, with
// that device's configuration overridden by props: the model shares the
// context's programs and weights with the other models compiled in it,
// and its requests take the context's remote tensors. The model is not
// cached in CACHE_DIR (program binaries are).
func (c *Core) CompileModelIn(ctx context.Context, m *graph.Model, rc RemoteContext, props map[string]string) (*CompiledModel, error) {
	cm, err := c.d.CompileModelIn(ctx, m, rc, props)
	if err != nil {
		return nil, err
	}
	return newCompiledModel(cm, rc.DeviceName()), nil
}

// Context returns a new reference to the remote context the model runs in
// (close it when done): remote tensors created in it bind to the model's
// requests. A model of a device without remote contexts is an error
// wrapping ErrNotImplemented.
func (c *CompiledModel) Context() (RemoteContext, error) {
	if err := c.check("context"); err != nil {
		return nil, err
	}
	cm, ok := c.cm.(driver.ContextModel)
	if !ok {
		return nil, driver.Errorf(ErrNotImplemented, "plugin: compiled model on %s has no remote context (its device has no device memory of its own)", c.device)
	}
	return cm.Context()
}

// ReleaseMemory frees the activation memory of the model's idle requests
// (OpenVINO's CompiledModel::release_memory); the next inference of each
// makes it again. GPU_MEMORY_STATISTICS shows the difference. A request
// in the middle of an inference keeps its memory and makes the error wrap
// ErrBusy; a device without the call ErrNotImplemented.
func (c *CompiledModel) ReleaseMemory() error {
	if err := c.check("release memory"); err != nil {
		return err
	}
	mr, ok := c.cm.(driver.MemoryReleaser)
	if !ok {
		return driver.Errorf(ErrNotImplemented, "plugin: compiled model on %s cannot release its memory between inferences", c.device)
	}
	return mr.ReleaseMemory()
}

// SetRemoteTensor binds remote tensor t to the input or output called
// name: the inference reads the input from, or writes the output into, t
// on the device, with no host copy. t must be of the model's context
// (CompiledModel.Context) and of the port's type and shape. A request of
// a device that takes host tensors only ("CPU") is an error wrapping
// ErrNotImplemented that names t; one from another context, a closed one
// or a wrong type or shape ErrInvalidArgument (ErrClosed) naming t and
// why. SetTensor on the port binds a host tensor again.
func (r *request) SetRemoteTensor(name string, t RemoteTensor) error {
	if err := r.check("set remote tensor"); err != nil {
		return err
	}
	if t == nil {
		return driver.Errorf(ErrInvalidArgument, "plugin: set remote tensor %q: nil tensor", name)
	}
	rb, ok := r.r.(driver.RemoteBinder)
	if !ok {
		return driver.Errorf(ErrNotImplemented, "plugin: set remote tensor %q of %s for port %q: the request's device takes host tensors only; copy it into a host tensor (RemoteTensor.CopyTo) and bind that with SetTensor", t.Name(), t.DeviceName(), name)
	}
	return rb.SetRemoteTensor(name, t)
}

// RemoteTensor returns the remote tensor bound to a port; a port with a
// host tensor is an error wrapping ErrNotFound.
func (r *request) RemoteTensor(name string) (RemoteTensor, error) {
	if err := r.check("remote tensor"); err != nil {
		return nil, err
	}
	rb, ok := r.r.(driver.RemoteBinder)
	if !ok {
		return nil, driver.Errorf(ErrNotFound, "plugin: port %q has no remote tensor: the request's device takes host tensors only", name)
	}
	return rb.RemoteTensor(name)
}

// Transfers returns the bytes the last inference moved: HostToDevice
// (host inputs), DeviceToHost (host outputs) and DeviceToDevice (remote
// tensors in and out). A pipeline whose stages pass remote tensors moves
// no host bytes between them. It is zero for devices that compute in
// host memory.
func (r *request) Transfers() (Transfers, error) {
	if err := r.check("transfers"); err != nil {
		return Transfers{}, err
	}
	if tc, ok := r.r.(driver.TransferCounter); ok {
		return tc.Transfers(), nil
	}
	return Transfers{}, nil
}
