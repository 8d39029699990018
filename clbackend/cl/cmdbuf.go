package cl

import (
	"encoding/binary"
	"runtime"
	"strings"
	"sync"
)

// Command buffers (cl_khr_command_buffer): a sequence of kernel launches
// recorded once, with their arguments as set when recorded, and enqueued
// in one call each time. The extension's entry points come from the
// platform (clGetExtensionFunctionAddressForPlatform), so a build needs no
// header or library that has them; CommandBuffersSupported tells whether a
// device's version of the extension is one this binding calls (the
// provisional 0.9 revisions and 1.0 share the calls it uses).

// deviceExtensionsWithVersion is CL_DEVICE_EXTENSIONS_WITH_VERSION
// (OpenCL 3.0).
const deviceExtensionsWithVersion = 0x1060

// ExtensionVersion returns the version of extension name from
// CL_DEVICE_EXTENSIONS_WITH_VERSION (OpenCL 3.0; an older device fails the
// query) and whether the device lists it.
func (d *Device) ExtensionVersion(name string) (Version, bool, error) {
	v, ok, err := d.extensionVersion(name)
	if err != nil || !ok {
		return Version{}, ok, err
	}
	return Version{Major: int(v >> 22), Minor: int(v >> 12 & 0x3ff)}, true, nil
}

// extensionVersion is ExtensionVersion as the device encodes it
// (cl_version: major, minor and patch).
func (d *Device) extensionVersion(name string) (uint32, bool, error) {
	b, err := d.info(deviceExtensionsWithVersion, "CL_DEVICE_EXTENSIONS_WITH_VERSION")
	if err != nil {
		return 0, false, err
	}
	const entry = 4 + 64 // cl_name_version: cl_version, char[CL_NAME_VERSION_MAX_NAME_SIZE]
	for len(b) >= entry {
		v := binary.LittleEndian.Uint32(b[:4])
		n := string(b[4:entry])
		if i := strings.IndexByte(n, 0); i >= 0 {
			n = n[:i]
		}
		if n == name {
			return v, true, nil
		}
		b = b[entry:]
	}
	return 0, false, nil
}

// copySignature is how d's revision of cl_khr_command_buffer declares
// clCommandCopyBufferKHR: 0 without a properties argument (0.9.0 to
// 0.9.4), 1 with one (1.x), -1 for the revisions between, which the
// binding does not call.
func (d *Device) copySignature() int {
	v, ok, err := d.extensionVersion("cl_khr_command_buffer")
	major, minor, patch := v>>22, v>>12&0x3ff, v&0xfff
	switch {
	case err != nil || !ok:
		return -1
	case major == 0 && minor == 9 && patch < 5:
		return 0
	case major == 1:
		return 1
	}
	return -1
}

// CommandBuffersSupported reports whether d has cl_khr_command_buffer in a
// version this binding calls (0.9.x or 1.x, read from
// CL_DEVICE_EXTENSIONS_WITH_VERSION: a device that cannot say is not
// trusted with it) and needs no queue properties for it.
func (d *Device) CommandBuffersSupported() bool {
	v, ok, err := d.ExtensionVersion("cl_khr_command_buffer")
	if err != nil || !ok || !(v.Major == 0 && v.Minor == 9 || v.Major == 1) {
		return false
	}
	props, err := d.uint(deviceCommandBufferRequiredQueueProperties, "CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR")
	return err == nil && props == 0 && cmdbufFunctions(d.Platform()) != nil
}

// deviceCommandBufferRequiredQueueProperties is
// CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR,
// deviceCommandBufferCapabilities CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR
// and cmdbufSimultaneous its CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR.
const (
	deviceCommandBufferRequiredQueueProperties = 0x12AA
	deviceCommandBufferCapabilities            = 0x12A9
	cmdbufSimultaneous                         = 1 << 2
)

// simultaneousCommandBuffers reports whether d's command buffers may be
// enqueued again while an earlier enqueue of them is pending.
func (d *Device) simultaneousCommandBuffers() bool {
	caps, err := d.uint(deviceCommandBufferCapabilities, "CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR")
	return err == nil && caps&cmdbufSimultaneous != 0
}

// cmdbufFns holds a platform's command-buffer entry points (C memory),
// looked up once per platform; nil when the platform lacks one.
var cmdbufFns struct {
	sync.Mutex
	m map[handle]handle
}

func cmdbufFunctions(p *Platform) handle {
	if p == nil {
		return nil
	}
	cmdbufFns.Lock()
	defer cmdbufFns.Unlock()
	if f, ok := cmdbufFns.m[p.id]; ok {
		return f
	}
	if cmdbufFns.m == nil {
		cmdbufFns.m = map[handle]handle{}
	}
	f := loadCommandBufferFunctions(p.id)
	cmdbufFns.m[p.id] = f
	return f
}

// CommandBuffer is a recorded sequence of commands (cl_khr_command_buffer)
// for one in-order queue. Record with NDRangeKernel, then Finalize, then
// Enqueue as often as needed; Close releases it.
type CommandBuffer struct {
	r   ref
	fns handle
	q   *CommandQueue
	// copySig is q's device's copySignature.
	copySig int
}

// CreateCommandBuffer creates an empty command buffer for q's device
// (CommandBuffersSupported must hold), for simultaneous use where the
// device allows it (else an Enqueue while an earlier one is pending fails
// with ErrInvalidOperation).
func (q *CommandQueue) CreateCommandBuffer() (*CommandBuffer, error) {
	const op = "clCreateCommandBufferKHR"
	h := q.h()
	if h == nil {
		return nil, closedError(op, ErrInvalidCommandQueue)
	}
	fns := cmdbufFunctions(q.device.Platform())
	if fns == nil {
		return nil, &Error{Op: op, Code: ErrInvalidOperation}
	}
	cb, err := createCommandBuffer(fns, h, q.device.simultaneousCommandBuffers())
	runtime.KeepAlive(q)
	if err != nil {
		return nil, err
	}
	b := &CommandBuffer{fns: fns, q: q, copySig: q.device.copySignature()}
	trackLeaked(b, &b.r, leaked{kind: kindCommandBuffer, h: cb, aux: fns})
	return b, nil
}

// NDRangeKernel records a launch of kernel with its arguments as they are
// set now (offset and local may be nil).
func (b *CommandBuffer) NDRangeKernel(kernel *Kernel, offset, global, local []int) error {
	const op = "clCommandNDRangeKernelKHR"
	h := b.r.handle()
	if h == nil {
		return closedError(op, ErrInvalidValue)
	}
	kh := kernel.h()
	if kh == nil {
		return closedError(op, ErrInvalidKernel)
	}
	if len(global) < 1 || len(global) > 3 || (offset != nil && len(offset) != len(global)) || (local != nil && len(local) != len(global)) {
		return &Error{Op: op, Code: ErrInvalidWorkDimension}
	}
	err := commandNDRangeKernel(b.fns, h, kh, offset, global, local)
	runtime.KeepAlive(kernel)
	return err
}

// CopyBuffer records a copy of size bytes from src at srcOffset to dst at
// dstOffset. It fails with ErrInvalidOperation where the platform lacks
// clCommandCopyBufferKHR or the device's revision of the extension is one
// whose signature the binding does not call (0.9.5 to 0.9.x): the caller
// then enqueues the copy itself.
func (b *CommandBuffer) CopyBuffer(src, dst *MemObject, srcOffset, dstOffset, size int) error {
	const op = "clCommandCopyBufferKHR"
	h := b.r.handle()
	if h == nil {
		return closedError(op, ErrInvalidValue)
	}
	sh, dh := src.h(), dst.h()
	if sh == nil || dh == nil {
		return closedError(op, ErrInvalidMemObject)
	}
	if b.copySig < 0 {
		return &Error{Op: op, Code: ErrInvalidOperation}
	}
	err := commandCopyBuffer(b.fns, h, b.copySig == 1, sh, dh, srcOffset, dstOffset, size)
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
	return err
}

// Finalize ends the recording.
func (b *CommandBuffer) Finalize() error {
	h := b.r.handle()
	if h == nil {
		return closedError("clFinalizeCommandBufferKHR", ErrInvalidValue)
	}
	return finalizeCommandBuffer(b.fns, h)
}

// Enqueue enqueues the recorded commands on the queue the buffer was made
// for, after the commands before them; with wantEvent it returns the
// event of their completion.
func (b *CommandBuffer) Enqueue(wantEvent bool) (*Event, error) {
	const op = "clEnqueueCommandBufferKHR"
	h, qh := b.r.handle(), b.q.h()
	if h == nil || qh == nil {
		return nil, closedError(op, ErrInvalidValue)
	}
	unlock := b.q.serialize()
	ev, err := enqueueCommandBuffer(b.fns, h, qh, wantEvent)
	unlock()
	runtime.KeepAlive(b)
	if err != nil || !wantEvent {
		return nil, err
	}
	return newEvent(ev), nil
}

// Close releases the command buffer. It is idempotent.
func (b *CommandBuffer) Close() error {
	if b == nil {
		return nil
	}
	return b.r.close()
}
