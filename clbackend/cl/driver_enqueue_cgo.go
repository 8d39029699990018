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
	o, g, l := ndArrays(offset, global, local)
	st := C.clEnqueueNDRangeKernel(C.cl_command_queue(q), C.cl_kernel(k), C.cl_uint(len(global)), o.ptr(offset), &g[0], l.ptr(local), n, ws, ev)
	return status("clEnqueueNDRangeKernel", st)
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
