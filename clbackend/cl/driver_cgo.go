//go:build cgo && !noopencl

// This file holds the OpenCL calls of the package but those on programs
// and kernels (driver_program_cgo.go). Keep both in sync with
// driver_stub.go, which provides the same unexported functions for builds
// without OpenCL.

package cl

/*
#cgo linux LDFLAGS: -lOpenCL
#cgo freebsd LDFLAGS: -lOpenCL
#cgo windows LDFLAGS: -lOpenCL
#cgo darwin LDFLAGS: -framework OpenCL
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#include <CL/cl_ext.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Defined with //export in callback_cgo.go.
extern void clinferEventCallback(cl_event, cl_int, uintptr_t);

static void CL_CALLBACK clinfer_event_trampoline(cl_event ev, cl_int status, void *user) {
	clinferEventCallback(ev, status, (uintptr_t)user);
}

// The cgo.Handle travels through OpenCL as user_data; converting it here
// keeps integer-to-pointer conversions out of Go.
static cl_int clinfer_set_event_callback(cl_event ev, cl_int type, uintptr_t h) {
	return clSetEventCallback(ev, type, clinfer_event_trampoline, (void *)h);
}

#ifdef _WIN32
#include <malloc.h>
static void *clinfer_aligned_alloc(size_t size) { return _aligned_malloc(size, 4096); }
static void clinfer_aligned_free(void *p) { _aligned_free(p); }
#else
static void *clinfer_aligned_alloc(size_t size) {
	void *p = NULL;
	return posix_memalign(&p, 4096, size) == 0 ? p : NULL;
}
static void clinfer_aligned_free(void *p) { free(p); }
#endif

static void CL_CALLBACK clinfer_free_host(cl_mem mem, void *p) { clinfer_aligned_free(p); }

// clinfer_create_buffer_c_copy creates a CL_MEM_USE_HOST_PTR buffer over a
// page-aligned C copy of data, freed by OpenCL's destructor callback when
// the buffer is really destroyed (not merely released).
static cl_mem clinfer_create_buffer_c_copy(cl_context ctx, cl_mem_flags flags, size_t size, const void *data, cl_int *err) {
	// Zero-copy paths want whole cache lines.
	void *p = clinfer_aligned_alloc((size + 63) & ~(size_t)63);
	if (p == NULL) {
		*err = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	memcpy(p, data, size);
	cl_mem m = clCreateBuffer(ctx, flags, size, p, err);
	if (*err != CL_SUCCESS) {
		clinfer_aligned_free(p);
		return NULL;
	}
	*err = clSetMemObjectDestructorCallback(m, clinfer_free_host, p);
	if (*err != CL_SUCCESS) {
		// There is no telling when OpenCL is done with p: leak it.
		clReleaseMemObject(m);
		return NULL;
	}
	return m;
}

// Handles users pass in as integers (OCL_CONTEXT, MEM_HANDLE) become
// pointers here, in C, where OpenCL handles belong.
static void *clinfer_handle(uintptr_t h) { return (void *)h; }

static cl_int clinfer_retain(int kind, void *h) {
	switch (kind) {
	case 0: return clRetainContext((cl_context)h);
	case 1: return clRetainCommandQueue((cl_command_queue)h);
	case 2: return clRetainMemObject((cl_mem)h);
	}
	return CL_INVALID_VALUE;
}

// clCreateCommandQueueWithProperties is OpenCL 2.0; the headers declare it
// only for that target, and an ICD loader of OpenCL 1.2 lacks it. A weak
// reference keeps such loaders working: it is NULL there, and only queue
// hints (which need it) fail.
typedef cl_command_queue (CL_API_CALL *clinfer_cqwp_fn)(cl_context, cl_device_id, const cl_ulong *, cl_int *);
#if defined(__ELF__)
extern CL_API_ENTRY cl_command_queue CL_API_CALL clCreateCommandQueueWithProperties(cl_context, cl_device_id, const cl_ulong *, cl_int *) __attribute__((weak));
static clinfer_cqwp_fn clinfer_cqwp(void) { return clCreateCommandQueueWithProperties; }
#else
static clinfer_cqwp_fn clinfer_cqwp(void) { return NULL; }
#endif

static cl_command_queue clinfer_create_queue_with_properties(cl_context ctx, cl_device_id dev, const cl_ulong *props, cl_int *err) {
	clinfer_cqwp_fn f = clinfer_cqwp();
	if (f == NULL) {
		*err = CL_INVALID_OPERATION;
		return NULL;
	}
	return f(ctx, dev, props, err);
}
*/
import "C"

import (
	"runtime/cgo"
	"time"
	"unsafe"
)

// Enabled reports whether this build of the package calls OpenCL; it is
// false in builds with CGO_ENABLED=0 or -tags noopencl.
const Enabled = true

func status(op string, st C.cl_int) error { return newError(op, int32(st)) }

func clBool(b bool) C.cl_bool {
	if b {
		return C.CL_TRUE
	}
	return C.CL_FALSE
}

// eventList passes a wait list. ws lives in Go memory but holds only
// OpenCL handles, which the cgo rules allow.
func eventList(ws []handle) (C.cl_uint, *C.cl_event) {
	if len(ws) == 0 {
		return 0, nil
	}
	return C.cl_uint(len(ws)), (*C.cl_event)(unsafe.Pointer(&ws[0]))
}

func deviceList(ds []handle) (C.cl_uint, *C.cl_device_id) {
	if len(ds) == 0 {
		return 0, nil
	}
	return C.cl_uint(len(ds)), (*C.cl_device_id)(unsafe.Pointer(&ds[0]))
}

func sizeList(s []int) *C.size_t {
	if s == nil {
		return nil
	}
	out := make([]C.size_t, len(s))
	for i, v := range s {
		out[i] = C.size_t(v)
	}
	return &out[0]
}

// getInfo runs the two-step clGet*Info protocol: ask for the size, then for
// the value, into Go memory.
func getInfo(op string, query func(size C.size_t, value unsafe.Pointer, ret *C.size_t) C.cl_int) ([]byte, error) {
	if err := injected(op); err != nil {
		return nil, err
	}
	var n C.size_t
	if err := status(op, query(0, nil, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if err := status(op, query(n, unsafe.Pointer(&b[0]), nil)); err != nil {
		return nil, err
	}
	return b, nil
}

func getPlatformIDs() ([]handle, error) {
	if err := injected("clGetPlatformIDs"); err != nil {
		return nil, err
	}
	defer logSlow("clGetPlatformIDs", time.Now(), nil)
	const op = "clGetPlatformIDs"
	var n C.cl_uint
	if err := status(op, C.clGetPlatformIDs(0, nil, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ids := make([]handle, n)
	if err := status(op, C.clGetPlatformIDs(n, (*C.cl_platform_id)(unsafe.Pointer(&ids[0])), &n)); err != nil {
		return nil, err
	}
	return ids[:n], nil
}

// probeDevices asks every platform for its devices without the fault
// injection and the slow-call log of the other calls: it is firstUse's
// initialisation of the drivers, not a call a test counts.
func probeDevices() bool {
	var n C.cl_uint
	if C.clGetPlatformIDs(0, nil, &n) != C.CL_SUCCESS || n == 0 {
		return false
	}
	ids := make([]C.cl_platform_id, n)
	if C.clGetPlatformIDs(n, &ids[0], &n) != C.CL_SUCCESS {
		return false
	}
	for _, p := range ids[:n] {
		var nd C.cl_uint
		C.clGetDeviceIDs(p, C.CL_DEVICE_TYPE_ALL, 0, nil, &nd)
	}
	return true
}

func getPlatformInfo(p handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetPlatformInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetPlatformInfo(C.cl_platform_id(p), C.cl_platform_info(param), size, v, ret)
	})
}

func getDeviceIDs(p handle, t DeviceType) ([]handle, error) {
	if err := injected("clGetDeviceIDs"); err != nil {
		return nil, err
	}
	defer logSlow("clGetDeviceIDs", time.Now(), nil)
	const op = "clGetDeviceIDs"
	var n C.cl_uint
	if err := status(op, C.clGetDeviceIDs(C.cl_platform_id(p), C.cl_device_type(t), 0, nil, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ids := make([]handle, n)
	st := C.clGetDeviceIDs(C.cl_platform_id(p), C.cl_device_type(t), n, (*C.cl_device_id)(unsafe.Pointer(&ids[0])), &n)
	if err := status(op, st); err != nil {
		return nil, err
	}
	return ids[:n], nil
}

func getDeviceInfo(d handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetDeviceInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetDeviceInfo(C.cl_device_id(d), C.cl_device_info(param), size, v, ret)
	})
}

func createContext(platform handle, devices []handle) (handle, error) {
	if err := injected("clCreateContext"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateContext", time.Now(), nil)
	var props *C.cl_context_properties
	if platform != nil {
		p := []C.cl_context_properties{C.CL_CONTEXT_PLATFORM, C.cl_context_properties(uintptr(platform)), 0}
		props = &p[0]
	}
	n, ds := deviceList(devices)
	var st C.cl_int
	c := C.clCreateContext(props, n, ds, nil, nil, &st)
	return handle(c), status("clCreateContext", st)
}

func releaseContext(h handle) error {
	defer logSlow("clReleaseContext", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseContext", C.clReleaseContext(C.cl_context(h)))
	if ierr := injected("clReleaseContext"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}

func createCommandQueue(ctx, device handle, props CommandQueueProperty) (handle, error) {
	if err := injected("clCreateCommandQueue"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateCommandQueue", time.Now(), nil)
	var st C.cl_int
	q := C.clCreateCommandQueue(C.cl_context(ctx), C.cl_device_id(device), C.cl_command_queue_properties(props), &st)
	return handle(q), status("clCreateCommandQueue", st)
}

func releaseCommandQueue(h handle) error {
	defer logSlow("clReleaseCommandQueue", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseCommandQueue", C.clReleaseCommandQueue(C.cl_command_queue(h)))
	if ierr := injected("clReleaseCommandQueue"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}

func flush(q handle) error {
	if err := injected("clFlush"); err != nil {
		return err
	}
	defer logSlow("clFlush", time.Now(), nil)
	return status("clFlush", C.clFlush(C.cl_command_queue(q)))
}

func finish(q handle) error {
	if err := injected("clFinish"); err != nil {
		return err
	}
	defer logSlow("clFinish", time.Now(), nil)
	return status("clFinish", C.clFinish(C.cl_command_queue(q)))
}

func createBuffer(ctx handle, flags MemFlag, size int, host unsafe.Pointer) (handle, error) {
	if err := injected("clCreateBuffer"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateBuffer", time.Now(), nil)
	var st C.cl_int
	m := C.clCreateBuffer(C.cl_context(ctx), C.cl_mem_flags(flags), C.size_t(size), host, &st)
	return handle(m), status("clCreateBuffer", st)
}

func createBufferCopyToC(ctx handle, flags MemFlag, data []byte) (handle, error) {
	if err := injected("clCreateBuffer"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateBuffer(copy)", time.Now(), nil)
	var st C.cl_int
	m := C.clinfer_create_buffer_c_copy(C.cl_context(ctx), C.cl_mem_flags(flags), C.size_t(len(data)), unsafe.Pointer(&data[0]), &st)
	return handle(m), status("clCreateBuffer", st)
}

func createSubBuffer(buf handle, flags MemFlag, origin, size int) (handle, error) {
	if err := injected("clCreateSubBuffer"); err != nil {
		return nil, err
	}
	region := C.cl_buffer_region{origin: C.size_t(origin), size: C.size_t(size)}
	var st C.cl_int
	m := C.clCreateSubBuffer(C.cl_mem(buf), C.cl_mem_flags(flags), C.CL_BUFFER_CREATE_TYPE_REGION, unsafe.Pointer(&region), &st)
	return handle(m), status("clCreateSubBuffer", st)
}

func releaseMemObject(h handle) error {
	defer logSlow("clReleaseMemObject", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseMemObject", C.clReleaseMemObject(C.cl_mem(h)))
	if ierr := injected("clReleaseMemObject"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}

func enqueueCopyBuffer(q, src, dst handle, srcOffset, dstOffset, size int, wait []handle) (handle, error) {
	if err := injected("clEnqueueCopyBuffer"); err != nil {
		return nil, err
	}
	defer logSlow("clEnqueueCopyBuffer", time.Now(), nil)
	n, ws := eventList(wait)
	var ev C.cl_event
	st := C.clEnqueueCopyBuffer(C.cl_command_queue(q), C.cl_mem(src), C.cl_mem(dst), C.size_t(srcOffset), C.size_t(dstOffset), C.size_t(size), n, ws, &ev)
	return handle(ev), status("clEnqueueCopyBuffer", st)
}

func enqueueCopyBufferRect(q, src, dst handle, srcOffset, dstOffset, rowBytes, rows, srcPitch, dstPitch int, wait []handle) (handle, error) {
	if err := injected("clEnqueueCopyBufferRect"); err != nil {
		return nil, err
	}
	defer logSlow("clEnqueueCopyBufferRect", time.Now(), nil)
	n, ws := eventList(wait)
	var ev C.cl_event
	srcOrigin := [3]C.size_t{C.size_t(srcOffset), 0, 0}
	dstOrigin := [3]C.size_t{C.size_t(dstOffset), 0, 0}
	region := [3]C.size_t{C.size_t(rowBytes), C.size_t(rows), 1}
	st := C.clEnqueueCopyBufferRect(C.cl_command_queue(q), C.cl_mem(src), C.cl_mem(dst), &srcOrigin[0], &dstOrigin[0], &region[0],
		C.size_t(srcPitch), 0, C.size_t(dstPitch), 0, n, ws, &ev)
	return handle(ev), status("clEnqueueCopyBufferRect", st)
}

func enqueueFillBuffer(q, buf handle, pattern unsafe.Pointer, patternSize, offset, size int, wait []handle) (handle, error) {
	if err := injected("clEnqueueFillBuffer"); err != nil {
		return nil, err
	}
	defer logSlow("clEnqueueFillBuffer", time.Now(), nil)
	n, ws := eventList(wait)
	var ev C.cl_event
	st := C.clEnqueueFillBuffer(C.cl_command_queue(q), C.cl_mem(buf), pattern, C.size_t(patternSize), C.size_t(offset), C.size_t(size), n, ws, &ev)
	return handle(ev), status("clEnqueueFillBuffer", st)
}

func enqueueMapBuffer(q, buf handle, blocking bool, flags MapFlag, offset, size int, wait []handle) (unsafe.Pointer, handle, error) {
	if err := injected("clEnqueueMapBuffer"); err != nil {
		return nil, nil, err
	}
	defer logSlow("clEnqueueMapBuffer", time.Now(), nil)
	n, ws := eventList(wait)
	var ev C.cl_event
	var st C.cl_int
	p := C.clEnqueueMapBuffer(C.cl_command_queue(q), C.cl_mem(buf), clBool(blocking), C.cl_map_flags(flags), C.size_t(offset), C.size_t(size), n, ws, &ev, &st)
	return p, handle(ev), status("clEnqueueMapBuffer", st)
}

func enqueueUnmapMemObject(q, buf handle, ptr unsafe.Pointer, wait []handle) (handle, error) {
	if err := injected("clEnqueueUnmapMemObject"); err != nil {
		return nil, err
	}
	defer logSlow("clEnqueueUnmapMemObject", time.Now(), nil)
	n, ws := eventList(wait)
	var ev C.cl_event
	st := C.clEnqueueUnmapMemObject(C.cl_command_queue(q), C.cl_mem(buf), ptr, n, ws, &ev)
	return handle(ev), status("clEnqueueUnmapMemObject", st)
}

func enqueueMarkerWithWaitList(q handle, wait []handle) (handle, error) {
	if err := injected("clEnqueueMarkerWithWaitList"); err != nil {
		return nil, err
	}
	n, ws := eventList(wait)
	var ev C.cl_event
	st := C.clEnqueueMarkerWithWaitList(C.cl_command_queue(q), n, ws, &ev)
	return handle(ev), status("clEnqueueMarkerWithWaitList", st)
}

func enqueueBarrierWithWaitList(q handle, wait []handle) (handle, error) {
	if err := injected("clEnqueueBarrierWithWaitList"); err != nil {
		return nil, err
	}
	n, ws := eventList(wait)
	var ev C.cl_event
	st := C.clEnqueueBarrierWithWaitList(C.cl_command_queue(q), n, ws, &ev)
	return handle(ev), status("clEnqueueBarrierWithWaitList", st)
}

func waitForEvents(events []handle) error {
	if err := injected("clWaitForEvents"); err != nil {
		return err
	}
	defer logSlow("clWaitForEvents", time.Now(), nil)
	n, ws := eventList(events)
	return status("clWaitForEvents", C.clWaitForEvents(n, ws))
}

func getEventInfo(e handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetEventInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetEventInfo(C.cl_event(e), C.cl_event_info(param), size, v, ret)
	})
}

func getEventProfilingInfo(e handle, param ProfilingInfo) (uint64, error) {
	if err := injected("clGetEventProfilingInfo"); err != nil {
		return 0, err
	}
	var v C.cl_ulong
	st := C.clGetEventProfilingInfo(C.cl_event(e), C.cl_profiling_info(param), C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil)
	return uint64(v), status("clGetEventProfilingInfo", st)
}

func createUserEvent(ctx handle) (handle, error) {
	if err := injected("clCreateUserEvent"); err != nil {
		return nil, err
	}
	var st C.cl_int
	e := C.clCreateUserEvent(C.cl_context(ctx), &st)
	return handle(e), status("clCreateUserEvent", st)
}

func setUserEventStatus(e handle, st int32) error {
	if err := injected("clSetUserEventStatus"); err != nil {
		return err
	}
	return status("clSetUserEventStatus", C.clSetUserEventStatus(C.cl_event(e), C.cl_int(st)))
}

// setEventCallback registers fn through a cgo.Handle that
// clinferEventCallback deletes after the one call OpenCL makes.
func setEventCallback(e handle, execStatus int32, fn func(int32)) error {
	if err := injected("clSetEventCallback"); err != nil {
		return err
	}
	h := cgo.NewHandle(fn)
	st := C.clinfer_set_event_callback(C.cl_event(e), C.cl_int(execStatus), C.uintptr_t(h))
	if st != C.CL_SUCCESS {
		h.Delete()
	}
	return status("clSetEventCallback", st)
}

func releaseEvent(h handle) error {
	defer logSlow("clReleaseEvent", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseEvent", C.clReleaseEvent(C.cl_event(h)))
	if ierr := injected("clReleaseEvent"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}

// handleOf turns a handle users hold as an integer into a handle.
func handleOf(h uintptr) handle { return handle(C.clinfer_handle(C.uintptr_t(h))) }

// retain adds an OpenCL reference to an object of kind k (context, queue
// or buffer) that another owner created.
func retain(k kind, h handle) error {
	var op string
	var code C.int
	switch k {
	case kindContext:
		op, code = "clRetainContext", 0
	case kindCommandQueue:
		op, code = "clRetainCommandQueue", 1
	case kindMemObject:
		op, code = "clRetainMemObject", 2
	default:
		return &Error{Op: "clRetain", Code: ErrInvalidValue}
	}
	if err := injected(op); err != nil {
		return err
	}
	return status(op, C.clinfer_retain(code, h))
}

func getContextInfo(c handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetContextInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetContextInfo(C.cl_context(c), C.cl_context_info(param), size, v, ret)
	})
}

func getCommandQueueInfo(q handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetCommandQueueInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetCommandQueueInfo(C.cl_command_queue(q), C.cl_command_queue_info(param), size, v, ret)
	})
}

func getMemObjectInfo(m handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetMemObjectInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetMemObjectInfo(C.cl_mem(m), C.cl_mem_info(param), size, v, ret)
	})
}

// queueWithPropertiesAvailable reports whether the ICD loader has
// clCreateCommandQueueWithProperties (OpenCL 2.0).
func queueWithPropertiesAvailable() bool { return C.clinfer_cqwp() != nil }

func createCommandQueueWithProperties(ctx, device handle, props []uint64) (handle, error) {
	const op = "clCreateCommandQueueWithProperties"
	if err := injected(op); err != nil {
		return nil, err
	}
	defer logSlow(op, time.Now(), nil)
	list := make([]C.cl_ulong, 0, len(props)+1)
	for _, p := range props {
		list = append(list, C.cl_ulong(p))
	}
	list = append(list, 0)
	var st C.cl_int
	q := C.clinfer_create_queue_with_properties(C.cl_context(ctx), C.cl_device_id(device), &list[0], &st)
	return handle(q), status(op, st)
}
