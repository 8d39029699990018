package cl

import (
	"runtime"
	"sync"
	"unsafe"
)

// Shared virtual memory (OpenCL 2.0): buffers whose storage is host memory
// that the host reads and writes in place, without map or transfer
// commands, where the device shares it at a fine grain.

// svmFineGrainBuffer is CL_DEVICE_SVM_FINE_GRAIN_BUFFER, a bit of
// CL_DEVICE_SVM_CAPABILITIES.
const svmFineGrainBuffer = 1 << 1

// svmLoaded reports (once) whether the loaded OpenCL library has clSVMAlloc
// and clSVMFree.
var svmLoaded = sync.OnceValue(loadSVM)

// FineGrainBufferSVM reports whether d shares fine-grained buffer SVM with
// the host (CL_DEVICE_SVM_FINE_GRAIN_BUFFER in CL_DEVICE_SVM_CAPABILITIES)
// and the OpenCL library has the calls to allocate it: the condition for
// Context.CreateSharedBuffer. An OpenCL 1.2 device has none.
func (d *Device) FineGrainBufferSVM() bool {
	caps, err := d.uint(deviceSVMCapabilities, "CL_DEVICE_SVM_CAPABILITIES")
	return err == nil && caps&svmFineGrainBuffer != 0 && svmLoaded()
}

// CreateSharedBuffer creates a buffer of size bytes whose storage is
// fine-grained buffer SVM (clSVMAlloc with CL_MEM_SVM_FINE_GRAIN_BUFFER,
// then clCreateBuffer with CL_MEM_USE_HOST_PTR over it, which OpenCL 2.0
// defines as a buffer using that memory). Host and device see each
// other's writes at synchronisation points: what the host writes before
// enqueueing a command that uses the buffer, the command reads; what a
// command writes, the host reads once the command's event is complete.
// No map, unmap, read or write command is needed. MemObject.HostBytes is
// the memory. The context's devices must all have FineGrainBufferSVM. The
// memory is freed when OpenCL destroys the buffer.
func (c *Context) CreateSharedBuffer(flags MemFlag, size int) (*MemObject, error) {
	const op = "clSVMAlloc"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if size <= 0 {
		return nil, &Error{Op: op, Code: ErrInvalidBufferSize}
	}
	if !svmLoaded() {
		return nil, &Error{Op: op, Code: ErrInvalidOperation}
	}
	h, host, err := createSVMBuffer(ch, flags, size)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	m := newMemObject(h, size, flags|MemUseHostPtr, nil)
	m.host = host
	return m, nil
}

// HostBytes returns the memory of a buffer made by
// Context.CreateSharedBuffer, which the host may read and write between
// the commands that use the buffer (see there); nil for any other buffer.
// It must not be used after Close.
func (m *MemObject) HostBytes() []byte {
	if m == nil || m.host == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.host), m.size)
}
