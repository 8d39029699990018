package cl

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"
)

// Interoperation with OpenCL objects other code created: their handles as
// integers (the form OpenVINO-style property maps carry them in), wrapping
// a handle with a reference of its own (clRetain*, released by Close, so
// the creator's reference is never touched), and the queries that tell
// which context a buffer or queue belongs to.

// Handle returns the cl_context as an integer, for other OpenCL code and
// for property maps (OCL_CONTEXT); 0 once the context is closed. The
// handle stays valid while the context is open.
func (c *Context) Handle() uintptr { return uintptr(c.h()) }

// Handle returns the cl_command_queue as an integer; 0 once closed.
func (q *CommandQueue) Handle() uintptr { return uintptr(q.h()) }

// Handle returns the cl_mem as an integer (MEM_HANDLE); 0 once closed.
func (m *MemObject) Handle() uintptr { return uintptr(m.h()) }

// Handle returns the cl_device_id as an integer.
func (d *Device) Handle() uintptr {
	if d == nil {
		return 0
	}
	return uintptr(d.id)
}

// RetainContext wraps the cl_context h that other code created: it takes
// a reference of its own (clRetainContext), which Close releases, and
// reads the context's devices. The creator keeps its reference and
// releases it as before. h = 0 is an error matching ErrInvalidContext.
func RetainContext(h uintptr) (*Context, error) {
	const op = "clRetainContext"
	ch := handleOf(h)
	if ch == nil {
		return nil, &Error{Op: op, Code: ErrInvalidContext}
	}
	firstUse()
	ids, err := handleList(getContextInfo(ch, contextDevices, "CL_CONTEXT_DEVICES"))
	if err != nil {
		return nil, err
	}
	devs := make([]*Device, len(ids))
	for i, id := range ids {
		b, err := getDeviceInfo(id, devicePlatform, "CL_DEVICE_PLATFORM")
		if err != nil {
			return nil, err
		}
		var p *Platform
		if ph := handleAt(b); ph != nil {
			p = &Platform{id: ph}
		}
		devs[i] = &Device{id: id, platform: p}
	}
	if err := retain(kindContext, ch); err != nil {
		return nil, err
	}
	c := &Context{devices: devs}
	track(c, &c.r, kindContext, ch)
	return c, nil
}

// RetainCommandQueue wraps the cl_command_queue h that other code created
// in context ctx: it checks that the queue belongs to ctx and takes a
// reference of its own (clRetainCommandQueue), which Close releases. A
// queue of another context is an error matching ErrInvalidContext.
func RetainCommandQueue(ctx *Context, h uintptr) (*CommandQueue, error) {
	const op = "clRetainCommandQueue"
	qh := handleOf(h)
	if qh == nil {
		return nil, &Error{Op: op, Code: ErrInvalidCommandQueue}
	}
	ch := ctx.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	b, err := getCommandQueueInfo(qh, queueContext, "CL_QUEUE_CONTEXT")
	if err != nil {
		return nil, err
	}
	if handleAt(b) != ch {
		return nil, &Error{Op: op, Code: ErrInvalidContext}
	}
	b, err = getCommandQueueInfo(qh, queueDevice, "CL_QUEUE_DEVICE")
	if err != nil {
		return nil, err
	}
	dh := handleAt(b)
	var dev *Device
	for _, d := range ctx.devices {
		if d.id == dh {
			dev = d
		}
	}
	if dev == nil {
		return nil, &Error{Op: op, Code: ErrInvalidDevice}
	}
	props, err := uintInfo(getCommandQueueInfo(qh, queueProperties, "CL_QUEUE_PROPERTIES"))
	if err != nil {
		return nil, err
	}
	if err := retain(kindCommandQueue, qh); err != nil {
		return nil, err
	}
	runtime.KeepAlive(ctx)
	q := &CommandQueue{ctx: ctx, device: dev, properties: CommandQueueProperty(props), serial: serialDevice(dev)}
	track(q, &q.r, kindCommandQueue, qh)
	return q, nil
}

// RetainMemObject wraps the buffer (cl_mem) h that other code created: it
// reads the buffer's size and flags and takes a reference of its own
// (clRetainMemObject), which Close releases; the creator's reference is
// untouched. An image or pipe is an error matching ErrInvalidMemObject.
func RetainMemObject(h uintptr) (*MemObject, error) {
	const op = "clRetainMemObject"
	mh := handleOf(h)
	if mh == nil {
		return nil, &Error{Op: op, Code: ErrInvalidMemObject}
	}
	typ, err := uintInfo(getMemObjectInfo(mh, memType, "CL_MEM_TYPE"))
	if err != nil {
		return nil, err
	}
	if typ != memObjectBuffer {
		return nil, &Error{Op: op, Code: ErrInvalidMemObject}
	}
	size, err := uintInfo(getMemObjectInfo(mh, memSize, "CL_MEM_SIZE"))
	if err != nil {
		return nil, err
	}
	flags, err := uintInfo(getMemObjectInfo(mh, memFlags, "CL_MEM_FLAGS"))
	if err != nil {
		return nil, err
	}
	if err := retain(kindMemObject, mh); err != nil {
		return nil, err
	}
	return newMemObject(mh, int(size), MemFlag(flags), nil), nil
}

// ContextHandle returns the handle of the context the buffer was created
// in (CL_MEM_CONTEXT), to compare with Context.Handle.
func (m *MemObject) ContextHandle() (uintptr, error) {
	mh := m.h()
	if mh == nil {
		return 0, closedError("clGetMemObjectInfo(CL_MEM_CONTEXT)", ErrInvalidMemObject)
	}
	b, err := getMemObjectInfo(mh, memContext, "CL_MEM_CONTEXT")
	runtime.KeepAlive(m)
	if err != nil {
		return 0, err
	}
	return uintptr(handleAt(b)), nil
}

// ReferenceCount returns the buffer's OpenCL reference count
// (CL_MEM_REFERENCE_COUNT), every owner's references together. The
// specification calls it stale the moment it is read; tests use it to see
// that a wrapped buffer's references come and go in pairs.
func (m *MemObject) ReferenceCount() (int, error) {
	mh := m.h()
	if mh == nil {
		return 0, closedError("clGetMemObjectInfo(CL_MEM_REFERENCE_COUNT)", ErrInvalidMemObject)
	}
	n, err := uintInfo(getMemObjectInfo(mh, memReferenceCount, "CL_MEM_REFERENCE_COUNT"))
	runtime.KeepAlive(m)
	return int(n), err
}

// ReferenceCount returns the context's OpenCL reference count
// (CL_CONTEXT_REFERENCE_COUNT); see MemObject.ReferenceCount.
func (c *Context) ReferenceCount() (int, error) {
	ch := c.h()
	if ch == nil {
		return 0, closedError("clGetContextInfo(CL_CONTEXT_REFERENCE_COUNT)", ErrInvalidContext)
	}
	n, err := uintInfo(getContextInfo(ch, contextReferenceCount, "CL_CONTEXT_REFERENCE_COUNT"))
	runtime.KeepAlive(c)
	return int(n), err
}

// ReferenceCount returns the queue's OpenCL reference count
// (CL_QUEUE_REFERENCE_COUNT); see MemObject.ReferenceCount.
func (q *CommandQueue) ReferenceCount() (int, error) {
	qh := q.h()
	if qh == nil {
		return 0, closedError("clGetCommandQueueInfo(CL_QUEUE_REFERENCE_COUNT)", ErrInvalidCommandQueue)
	}
	n, err := uintInfo(getCommandQueueInfo(qh, queueReferenceCount, "CL_QUEUE_REFERENCE_COUNT"))
	runtime.KeepAlive(q)
	return int(n), err
}

// QueuePriority is a cl_queue_priority_khr value (cl_khr_priority_hints).
type QueuePriority uint32

// Queue priorities; QueuePriorityDefault passes no hint.
const (
	QueuePriorityDefault QueuePriority = 0
	QueuePriorityHigh    QueuePriority = 1 << 0
	QueuePriorityMedium  QueuePriority = 1 << 1
	QueuePriorityLow     QueuePriority = 1 << 2
)

// QueueThrottle is a cl_queue_throttle_khr value (cl_khr_throttle_hints).
type QueueThrottle uint32

// Queue throttles; QueueThrottleDefault passes no hint.
const (
	QueueThrottleDefault QueueThrottle = 0
	QueueThrottleHigh    QueueThrottle = 1 << 0
	QueueThrottleMedium  QueueThrottle = 1 << 1
	QueueThrottleLow     QueueThrottle = 1 << 2
)

// QueueHints are the optional hints of a queue made by
// CreateCommandQueueWithHints; the zero value asks for none.
type QueueHints struct {
	// Priority needs cl_khr_priority_hints on the device.
	Priority QueuePriority
	// Throttle needs cl_khr_throttle_hints on the device.
	Throttle QueueThrottle
}

// CreateCommandQueueWithHints creates a command queue on device with
// properties and hints, through clCreateCommandQueueWithProperties
// (OpenCL 2.0). A hint the device's extensions lack is an error naming the
// extension, before any OpenCL call that would reject it; an ICD loader
// without the 2.0 entry point is an error matching ErrInvalidOperation.
// Without hints it is CreateCommandQueue.
func (c *Context) CreateCommandQueueWithHints(device *Device, properties CommandQueueProperty, hints QueueHints) (*CommandQueue, error) {
	const op = "clCreateCommandQueueWithProperties"
	if hints == (QueueHints{}) {
		return c.CreateCommandQueue(device, properties)
	}
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if device == nil {
		return nil, &Error{Op: op, Code: ErrInvalidDevice}
	}
	props := []uint64{queueProperties, uint64(properties)}
	for _, h := range []struct {
		on  bool
		ext string
		key uint64
		val uint64
	}{
		{hints.Priority != 0, "cl_khr_priority_hints", queuePriorityKHR, uint64(hints.Priority)},
		{hints.Throttle != 0, "cl_khr_throttle_hints", queueThrottleKHR, uint64(hints.Throttle)},
	} {
		if !h.on {
			continue
		}
		ok, err := device.HasExtension(h.ext)
		if err != nil {
			return nil, err
		}
		if !ok {
			name, _ := device.Name()
			return nil, fmt.Errorf("cl: device %q lacks the %s extension: %w", name, h.ext, &Error{Op: op, Code: ErrInvalidQueueProperties})
		}
		props = append(props, h.key, h.val)
	}
	if !queueWithPropertiesAvailable() {
		return nil, fmt.Errorf("cl: the OpenCL library (ICD loader) predates OpenCL 2.0: %w", &Error{Op: op, Code: ErrInvalidOperation})
	}
	h, err := createCommandQueueWithProperties(ch, device.id, props)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	q := &CommandQueue{ctx: c, device: device, properties: properties, serial: serialDevice(device)}
	track(q, &q.r, kindCommandQueue, h)
	return q, nil
}

// handleList decodes a clGet*Info answer that is an array of handles.
func handleList(b []byte, err error) ([]handle, error) {
	if err != nil {
		return nil, err
	}
	n := int(unsafe.Sizeof(uintptr(0)))
	out := make([]handle, 0, len(b)/n)
	for i := 0; i+n <= len(b); i += n {
		out = append(out, handleAt(b[i:i+n]))
	}
	return out, nil
}

// handleAt decodes one handle from a clGet*Info answer.
func handleAt(b []byte) handle {
	var u uint64
	switch len(b) {
	case 4:
		u = uint64(binary.NativeEndian.Uint32(b))
	case 8:
		u = binary.NativeEndian.Uint64(b)
	default:
		return nil
	}
	return handleOf(uintptr(u))
}
