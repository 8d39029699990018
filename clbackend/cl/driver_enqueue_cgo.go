//go:build cgo && !noopencl

// The transfer and launch calls of the package, with or without an event
// (split from driver_cgo.go). Keep in sync with driver_stub.go.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

// clinfer_nd is an NDRange's offset, global and local sizes, passed by
// value: arrays in Go memory whose addresses went to C would escape to
// the heap, three allocations per launch.
typedef struct { size_t o[3], g[3], l[3]; } clinfer_nd;

static cl_int clinfer_ndrange(cl_command_queue q, cl_kernel k, cl_uint dim, clinfer_nd nd, int has_offset, int has_local,
	cl_uint n, const cl_event *ws, cl_event *ev) {
	return clEnqueueNDRangeKernel(q, k, dim, has_offset ? nd.o : NULL, nd.g, has_local ? nd.l : NULL, n, ws, ev);
}
*/
import "C"

import (
	"time"
	"unsafe"
)

func enqueueReadBuffer(q, buf handle, blocking bool, offset, size int, ptr unsafe.Pointer, wait []handle) (handle, error) {
	var ev C.cl_event
	err := enqueueRead(q, buf, blocking, offset, size, ptr, wait, &ev)
	return handle(ev), err
}

// enqueueRead is clEnqueueReadBuffer with the event into *ev (nil: no
// event).
func enqueueRead(q, buf handle, blocking bool, offset, size int, ptr unsafe.Pointer, wait []handle, ev *C.cl_event) error {
	if err := injected("clEnqueueReadBuffer"); err != nil {
		return err
	}
	defer logSlow("clEnqueueReadBuffer", time.Now(), nil)
	n, ws := eventList(wait)
	st := C.clEnqueueReadBuffer(C.cl_command_queue(q), C.cl_mem(buf), clBool(blocking), C.size_t(offset), C.size_t(size), ptr, n, ws, ev)
	return status("clEnqueueReadBuffer", st)
}

func enqueueWriteBuffer(q, buf handle, blocking bool, offset, size int, ptr unsafe.Pointer, wait []handle) (handle, error) {
	var ev C.cl_event
	err := enqueueWrite(q, buf, blocking, offset, size, ptr, wait, &ev)
	return handle(ev), err
}

// enqueueWrite is clEnqueueWriteBuffer with the event into *ev (nil: no
// event).
func enqueueWrite(q, buf handle, blocking bool, offset, size int, ptr unsafe.Pointer, wait []handle, ev *C.cl_event) error {
	if err := injected("clEnqueueWriteBuffer"); err != nil {
		return err
	}
	defer logSlow("clEnqueueWriteBuffer", time.Now(), nil)
	n, ws := eventList(wait)
	st := C.clEnqueueWriteBuffer(C.cl_command_queue(q), C.cl_mem(buf), clBool(blocking), C.size_t(offset), C.size_t(size), ptr, n, ws, ev)
	return status("clEnqueueWriteBuffer", st)
}

func enqueueReadBufferNoEvent(q, buf handle, offset, size int, ptr unsafe.Pointer) error {
	return enqueueRead(q, buf, false, offset, size, ptr, nil, nil)
}

func enqueueWriteBufferNoEvent(q, buf handle, offset, size int, ptr unsafe.Pointer) error {
	return enqueueWrite(q, buf, false, offset, size, ptr, nil, nil)
}

func enqueueNDRangeKernel(q, k handle, offset, global, local []int, wait []handle) (handle, error) {
	var ev C.cl_event
	err := enqueueNDRange(q, k, offset, global, local, wait, &ev)
	return handle(ev), err
}

func enqueueNDRangeKernelNoEvent(q, k handle, offset, global, local []int) error {
	return enqueueNDRange(q, k, offset, global, local, nil, nil)
}

// enqueueNDRange is clEnqueueNDRangeKernel with the event into *ev (nil:
// no event).
func enqueueNDRange(q, k handle, offset, global, local []int, wait []handle, ev *C.cl_event) error {
	if err := injected("clEnqueueNDRangeKernel"); err != nil {
		return err
	}
	defer logSlow("clEnqueueNDRangeKernel", time.Now(), nil)
	n, ws := eventList(wait)
	var nd C.clinfer_nd
	for i, v := range offset {
		nd.o[i] = C.size_t(v)
	}
	for i, v := range global {
		nd.g[i] = C.size_t(v)
	}
	for i, v := range local {
		nd.l[i] = C.size_t(v)
	}
	st := C.clinfer_ndrange(C.cl_command_queue(q), C.cl_kernel(k), C.cl_uint(len(global)), nd, cFlag(offset != nil), cFlag(local != nil), n, ws, ev)
	return status("clEnqueueNDRangeKernel", st)
}

// cFlag is b as a C int.
func cFlag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// sizes3 is an NDRange's offset, global or local size in C form.
type sizes3 [3]C.size_t

// ptr is the array's address, or nil when the Go sizes s were nil.
func (a *sizes3) ptr(s []int) *C.size_t {
	if s == nil {
		return nil
	}
	return &a[0]
}

// ndArrays converts an NDRange's sizes (offset and local may be nil).
func ndArrays(offset, global, local []int) (o, g, l sizes3) {
	for i, v := range offset {
		o[i] = C.size_t(v)
	}
	for i, v := range global {
		g[i] = C.size_t(v)
	}
	for i, v := range local {
		l[i] = C.size_t(v)
	}
	return o, g, l
}
