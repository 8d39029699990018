package clbackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Remote contexts and tensors of the GPU device (driver.RemotePlugin):
// the device's own context, contexts over the user's OpenCL handles, the
// device buffers and mapped host memory that live in them.

// Interface checks.
var (
	_ driver.RemotePlugin   = (*Plugin)(nil)
	_ driver.RemoteContext  = (*RemoteContext)(nil)
	_ driver.RemoteTensor   = (*RemoteTensor)(nil)
	_ driver.HostTensor     = (*HostTensor)(nil)
	_ driver.ContextModel   = (*CompiledModel)(nil)
	_ driver.MemoryReleaser = (*CompiledModel)(nil)
)

// RemoteContext is a reference to an OpenCL context of the GPU device:
// the device's own (Plugin.DefaultContext) or one over the user's handles
// (Plugin.CreateContext). Models compiled in it (CompileModelIn) share its
// programs and weights and take its remote tensors. It is safe for
// concurrent use; Close drops the reference, and the context itself goes
// with its last holder (compiled models and tensors hold one each).
type RemoteContext struct {
	cc *clContext

	mu     sync.Mutex
	closed bool
}

// DeviceName is the device the context runs on ("GPU.0").
func (rc *RemoteContext) DeviceName() string { return rc.cc.dev.name() }

// Params reports CONTEXT_TYPE=OCL, OCL_CONTEXT, OCL_CONTEXT_DEVICE_ID and,
// for a context over a user queue, OCL_QUEUE; nil once closed.
func (rc *RemoteContext) Params() map[string]string {
	if rc.check("params") != nil {
		return nil
	}
	return rc.cc.params()
}

// CL returns the OpenCL context, for the caller's own kernels and
// buffers; it is valid while rc is open. Do not close it.
func (rc *RemoteContext) CL() *cl.Context { return rc.cc.cl }

// Device returns the OpenCL device the context's models run on.
func (rc *RemoteContext) Device() *cl.Device { return rc.cc.dev.cl }

// check fails with ErrClosed once rc is closed.
func (rc *RemoteContext) check(what string) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed {
		return fmt.Errorf("gpu: remote context of %s: %s after Close: %w", rc.DeviceName(), what, driver.ErrClosed)
	}
	return nil
}

// ref takes a reference to rc's context for an operation (what, named in
// the error) so that a Close racing with it cannot release the context
// under it; ErrClosed once rc is closed. The caller releases it.
func (rc *RemoteContext) ref(what string) (*clContext, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed {
		return nil, fmt.Errorf("gpu: remote context of %s: %s after Close: %w", rc.DeviceName(), what, driver.ErrClosed)
	}
	return rc.cc.acquire(), nil // rc's own reference is held: refs > 0
}

// MemoryStatistics reports the device memory the context holds: its
// weights, its requests' activations, mapped host tensors and remote
// tensors (zero once closed).
func (rc *RemoteContext) MemoryStatistics() driver.MemoryStatistics {
	if rc.check("memory statistics") != nil {
		return driver.MemoryStatistics{}
	}
	return rc.cc.stats()
}

// Close drops this reference to the context. It is idempotent.
func (rc *RemoteContext) Close() error {
	rc.mu.Lock()
	if rc.closed {
		rc.mu.Unlock()
		return nil
	}
	rc.closed = true
	rc.mu.Unlock()
	if err := rc.cc.release(); err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close remote context of %s: %w", rc.DeviceName(), err)
	}
	return nil
}

// CreateTensor makes a remote tensor of typ and shape called name (for
// errors). Without props (or with SHARED_MEM_TYPE=OCL_BUFFER and no
// MEM_HANDLE) it allocates a device buffer that the tensor owns; with
// SHARED_MEM_TYPE=OCL_BUFFER and MEM_HANDLE it wraps the caller's cl_mem
// of this context, which must hold at least the tensor's bytes, taking a
// reference of its own: the caller's reference stays the caller's. A
// buffer of another context, a short buffer or a bad key is an error
// wrapping ErrInvalidArgument; a tensor larger than the device allows one
// wrapping ErrResourceExhausted.
func (rc *RemoteContext) CreateTensor(name string, typ tensor.ElementType, shape tensor.Shape, props map[string]string) (driver.RemoteTensor, error) {
	t, err := rc.NewTensor(name, typ, shape, props)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return t, nil
}

// NewTensor is CreateTensor returning the concrete type, whose Buffer the
// caller's own kernels can use.
func (rc *RemoteContext) NewTensor(name string, typ tensor.ElementType, shape tensor.Shape, props map[string]string) (_ *RemoteTensor, err error) {
	cc, fail, bytes, err := rc.begin("remote tensor", name, typ, shape)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cc.release()) }()
	for k := range props {
		if k != driver.KeySharedMemType && k != driver.KeyMemHandle {
			return nil, fail(driver.ErrInvalidArgument, "unknown key %s (accepted: %s, %s)", k, driver.KeySharedMemType, driver.KeyMemHandle)
		}
	}
	if mt, ok := props[driver.KeySharedMemType]; ok && mt != driver.SharedMemOCLBuffer {
		if mt == driver.SharedMemUSMHostBuf {
			return nil, fail(driver.ErrInvalidArgument, "%s=%s: OpenCL 1.2 has no USM; use CreateHostTensor for host memory the device maps", driver.KeySharedMemType, mt)
		}
		return nil, fail(driver.ErrInvalidArgument, "bad %s %q (accepted: %s)", driver.KeySharedMemType, mt, driver.SharedMemOCLBuffer)
	}
	t := &RemoteTensor{name: name, typ: typ, shape: shape.Clone(), cc: cc, bytes: bytes}
	if hv, ok := props[driver.KeyMemHandle]; ok {
		h, err := driver.ParseHandle(driver.KeyMemHandle, hv)
		if err != nil {
			return nil, fail(driver.ErrInvalidArgument, "%v", err)
		}
		buf, err := cl.RetainMemObject(h)
		if err != nil {
			return nil, fail(driver.ErrInvalidArgument, "%s %s is not a live OpenCL buffer: %v", driver.KeyMemHandle, hv, err)
		}
		owner, err := buf.ContextHandle()
		switch {
		case err != nil:
			err = fail(driver.ErrInvalidArgument, "reading the context of %s %s: %v", driver.KeyMemHandle, hv, err)
		case owner != cc.handle():
			err = fail(driver.ErrInvalidArgument, "%s %s belongs to OpenCL context %s, not to this one; wrap it in a context made over its own (Core.CreateContext with %s)", driver.KeyMemHandle, hv, driver.FormatHandle(owner), driver.KeyOCLContext)
		case int64(buf.Size()) < max(bytes, 1):
			err = fail(driver.ErrInvalidArgument, "%s %s holds %d bytes, and %s%s needs %d", driver.KeyMemHandle, hv, buf.Size(), typ, shape, bytes)
		}
		if err != nil {
			return nil, errors.Join(err, buf.Close())
		}
		t.buf, t.user = buf, true
	} else {
		if err := cc.checkAlloc(bytes, fail); err != nil {
			return nil, err
		}
		buf, err := cc.cl.CreateEmptyBuffer(cl.MemReadWrite, int(max(bytes, 1)))
		if err != nil {
			return nil, fail(driver.ErrDevice, "allocating %s: %v", tensor.FormatBytes(bytes), err)
		}
		t.buf = buf
		cc.remoteBytes.Add(int64(buf.Size()))
	}
	cc.acquire()
	return t, nil
}

// CreateHostTensor makes a host tensor of typ and shape in an OpenCL
// buffer allocated with CL_MEM_ALLOC_HOST_PTR and mapped for reading and
// writing: drivers pin such memory, so an input there uploads by DMA
// without a staging copy. Its bytes count as staging in
// GPU_MEMORY_STATISTICS until Close.
func (rc *RemoteContext) CreateHostTensor(name string, typ tensor.ElementType, shape tensor.Shape) (_ driver.HostTensor, err error) {
	cc, fail, bytes, err := rc.begin("host tensor", name, typ, shape)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cc.release()) }()
	if err := cc.checkAlloc(bytes, fail); err != nil {
		return nil, err
	}
	q, err := cc.transferQueue()
	if err != nil {
		return nil, fail(driver.ErrDevice, "command queue: %v", err)
	}
	buf, err := cc.cl.CreateEmptyBuffer(cl.MemReadWrite|cl.MemAllocHostPtr, int(max(bytes, 1)))
	if err != nil {
		return nil, fail(driver.ErrDevice, "allocating %s of host-mapped memory: %v", tensor.FormatBytes(bytes), err)
	}
	mapped, ev, err := q.EnqueueMapBuffer(buf, true, cl.MapFlagRead|cl.MapFlagWrite, 0, buf.Size(), nil)
	if err == nil {
		err = ev.Close()
	}
	if err != nil {
		return nil, errors.Join(fail(driver.ErrDevice, "mapping: %v", err), buf.Close())
	}
	t, err := tensor.WrapBytes(typ, shape, mapped.Bytes()[:bytes])
	if err != nil { // tensorBytes accepted the shape: not reached
		return nil, errors.Join(fail(driver.ErrInvalidArgument, "%v", err), buf.Close())
	}
	cc.stagingBytes.Add(int64(buf.Size()))
	return &HostTensor{name: name, t: t, cc: cc.acquire(), buf: buf, mapped: mapped}, nil
}

// failFunc makes the errors of one tensor's creation.
type failFunc func(sentinel error, format string, args ...any) error

// begin starts the creation of a tensor of kind ("remote tensor") called
// name: rc must be open and typ and shape valid. It returns a reference
// to the context for the creation (the caller releases it), the error
// maker naming the tensor and the tensor's byte size.
func (rc *RemoteContext) begin(kind, name string, typ tensor.ElementType, shape tensor.Shape) (*clContext, failFunc, int64, error) {
	cc, err := rc.ref("create " + kind + " " + strconv.Quote(name))
	if err != nil {
		return nil, nil, 0, err
	}
	fail := func(sentinel error, format string, args ...any) error {
		return driver.Errorf(sentinel, "gpu: %s %q in %s: %s", kind, name, cc.describe(), fmt.Sprintf(format, args...))
	}
	bytes, err := tensorBytes(typ, shape)
	if err != nil {
		return nil, nil, 0, errors.Join(fail(driver.ErrInvalidArgument, "%v", err), cc.release())
	}
	return cc, fail, bytes, nil
}

// checkAlloc fails with ErrResourceExhausted (through fail) when one
// buffer of bytes is more than the device allows.
func (cc *clContext) checkAlloc(bytes int64, fail failFunc) error {
	if limit := cc.dev.maxAlloc; limit > 0 && bytes > limit {
		return fail(driver.ErrResourceExhausted, "it needs %s, more than one buffer of %s may hold (%s, CL_DEVICE_MAX_MEM_ALLOC_SIZE)", tensor.FormatBytes(bytes), cc.dev.name(), tensor.FormatBytes(limit))
	}
	return nil
}

// tensorBytes is the byte size of a contiguous tensor of typ and shape.
func tensorBytes(typ tensor.ElementType, shape tensor.Shape) (int64, error) {
	if !typ.Valid() {
		return 0, fmt.Errorf("element type %v is not one clinfer has", typ)
	}
	if err := shape.Validate(); err != nil {
		return 0, fmt.Errorf("shape %v: %v", shape, err)
	}
	n, ok := shape.Bytes(typ)
	if !ok {
		return 0, fmt.Errorf("%s%s: more bytes than int64 counts", typ, shape)
	}
	return n, nil
}

// RemoteTensor is a tensor in an OpenCL buffer of a GPU context: one the
// tensor allocated (and releases on Close) or the caller's, wrapped with
// a reference of clinfer's own. It is safe for concurrent use.
type RemoteTensor struct {
	name  string
	typ   tensor.ElementType
	shape tensor.Shape
	bytes int64
	cc    *clContext // one reference, until Close
	user  bool       // buf wraps the caller's cl_mem

	mu  sync.RWMutex
	buf *cl.MemObject // nil once closed
}

// Name is the name the tensor was created with.
func (t *RemoteTensor) Name() string { return t.name }

// Type is the element type.
func (t *RemoteTensor) Type() tensor.ElementType { return t.typ }

// Shape is the shape (contiguous, row-major).
func (t *RemoteTensor) Shape() tensor.Shape { return t.shape.Clone() }

// DeviceName is the device of the tensor's context ("GPU.0").
func (t *RemoteTensor) DeviceName() string { return t.cc.dev.name() }

// Params reports SHARED_MEM_TYPE=OCL_BUFFER, MEM_HANDLE and OCL_CONTEXT;
// nil once closed.
func (t *RemoteTensor) Params() map[string]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.buf == nil {
		return nil
	}
	return map[string]string{
		driver.KeySharedMemType: driver.SharedMemOCLBuffer,
		driver.KeyMemHandle:     driver.FormatHandle(t.buf.Handle()),
		driver.KeyOCLContext:    driver.FormatHandle(t.cc.handle()),
	}
}

// Buffer returns the tensor's OpenCL buffer for the caller's own kernels
// (in the tensor's context); it is valid until Close. Do not close it.
func (t *RemoteTensor) Buffer() (*cl.MemObject, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.buf == nil {
		return nil, t.closedErr("buffer")
	}
	return t.buf, nil
}

// closedErr is the error of using t after Close.
func (t *RemoteTensor) closedErr(what string) error {
	return fmt.Errorf("gpu: remote tensor %q: %s after Close (its buffer is released): %w", t.name, what, driver.ErrClosed)
}

// CopyFrom writes host tensor src (of the tensor's type and shape) into
// the tensor on the context's queue and returns when it is there.
func (t *RemoteTensor) CopyFrom(ctx context.Context, src *tensor.Tensor) error {
	return t.copyHost(ctx, src, true)
}

// CopyTo reads the tensor into host tensor dst (of its type and shape) on
// the context's queue and returns when it is there.
func (t *RemoteTensor) CopyTo(ctx context.Context, dst *tensor.Tensor) error {
	return t.copyHost(ctx, dst, false)
}

// copyHost is CopyFrom (write) or CopyTo: a transfer on the context's
// queue, which orders it after the inferences enqueued there (an OCL_QUEUE
// context; otherwise inferences have returned before the caller copies).
func (t *RemoteTensor) copyHost(ctx context.Context, h *tensor.Tensor, write bool) error {
	what := "copy to host"
	if write {
		what = "copy from host"
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gpu: remote tensor %q: %s: %w", t.name, what, err)
	}
	if h == nil || h.Type() != t.typ || !h.Shape().Equal(t.shape) {
		got := "nil"
		if h != nil {
			got = h.Type().String() + h.Shape().String()
		}
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: remote tensor %q: %s: host tensor is %s, want %s%s", t.name, what, got, t.typ, t.shape)
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.buf == nil {
		return t.closedErr(what)
	}
	if t.bytes == 0 {
		return nil
	}
	q, err := t.cc.transferQueue()
	if err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: remote tensor %q: %s: command queue: %w", t.name, what, err)
	}
	var ev *cl.Event
	if write {
		ev, err = cl.EnqueueWriteSlice(q, t.buf, false, 0, h.Contiguous().Bytes(), nil)
	} else if h.IsContiguous() {
		ev, err = cl.EnqueueReadSlice(q, t.buf, false, 0, h.Bytes(), nil)
	} else {
		tmp, err := tensor.New(t.typ, t.shape)
		if err != nil {
			return driver.Errorf(driver.ErrResourceExhausted, "gpu: remote tensor %q: %s: a contiguous host copy: %w", t.name, what, err)
		}
		if err := t.copyHost(ctx, tmp, false); err != nil {
			return err
		}
		return h.CopyFrom(tmp)
	}
	if err == nil {
		err = ev.WaitContext(ctx)
		if ctx.Err() != nil {
			// The transfer uses h's memory: let it end before returning.
			_ = ev.Wait()
		}
		err = errors.Join(err, ev.Close())
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("gpu: remote tensor %q: %s: %w", t.name, what, ctx.Err())
		}
		return driver.Errorf(driver.ErrDevice, "gpu: remote tensor %q: %s: %w", t.name, what, err)
	}
	return nil
}

// Close releases the tensor's reference to its buffer (the buffer goes
// when the commands already enqueued on it are done; a wrapped buffer
// stays the caller's) and to its context. It is idempotent.
func (t *RemoteTensor) Close() error {
	t.mu.Lock()
	buf := t.buf
	t.buf = nil
	t.mu.Unlock()
	if buf == nil {
		return nil
	}
	if !t.user {
		t.cc.remoteBytes.Add(-int64(buf.Size()))
	}
	if err := errors.Join(buf.Close(), t.cc.release()); err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close remote tensor %q: %w", t.name, err)
	}
	return nil
}

// HostTensor is a host tensor in OpenCL-mapped memory
// (RemoteContext.CreateHostTensor).
type HostTensor struct {
	name   string
	t      *tensor.Tensor
	cc     *clContext
	mu     sync.Mutex
	buf    *cl.MemObject // nil once closed
	mapped *cl.MappedMemObject
}

// Tensor is the host tensor over the mapped memory, valid until Close.
func (h *HostTensor) Tensor() *tensor.Tensor { return h.t }

// Close unmaps and releases the memory; the tensor must no longer be used
// (nor be bound to a request). It is idempotent.
func (h *HostTensor) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.buf == nil {
		return nil
	}
	buf := h.buf
	h.buf = nil
	h.cc.stagingBytes.Add(-int64(buf.Size()))
	var errs []error
	q, err := h.cc.transferQueue()
	if err == nil {
		var ev *cl.Event
		ev, err = q.EnqueueUnmapMemObject(buf, h.mapped, nil)
		if err == nil {
			err = errors.Join(ev.Wait(), ev.Close())
		}
	}
	errs = append(errs, err, buf.Close(), h.cc.release())
	if err := errors.Join(errs...); err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close host tensor %q: %w", h.name, err)
	}
	return nil
}
