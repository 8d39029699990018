//go:build cgo && !noopencl

// The calls of cl_khr_command_buffer (cmdbuf.go). Keep in sync with
// driver_stub.go.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <stdlib.h>

// The extension's types and calls, declared here so that OpenCL headers
// without them build too (they match revisions 0.9.x and 1.0).
typedef void* clinfer_cmdbuf;
typedef cl_uint clinfer_sync_point;
typedef clinfer_cmdbuf (CL_API_CALL *clinfer_create_fn)(cl_uint, const cl_command_queue*, const cl_ulong*, cl_int*);
typedef cl_int (CL_API_CALL *clinfer_cmdbuf_fn)(clinfer_cmdbuf);
typedef cl_int (CL_API_CALL *clinfer_enqueue_fn)(cl_uint, cl_command_queue*, clinfer_cmdbuf, cl_uint, const cl_event*, cl_event*);
typedef cl_int (CL_API_CALL *clinfer_ndrange_fn)(clinfer_cmdbuf, cl_command_queue, const cl_ulong*, cl_kernel, cl_uint,
	const size_t*, const size_t*, const size_t*, cl_uint, const clinfer_sync_point*, clinfer_sync_point*, void*);

// clCommandCopyBufferKHR before revision 0.9.5 (copy0) and from it on,
// with a properties argument (copy1).
typedef cl_int (CL_API_CALL *clinfer_copy0_fn)(clinfer_cmdbuf, cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t,
	cl_uint, const clinfer_sync_point*, clinfer_sync_point*, void*);
typedef cl_int (CL_API_CALL *clinfer_copy1_fn)(clinfer_cmdbuf, cl_command_queue, const cl_ulong*, cl_mem, cl_mem, size_t, size_t, size_t,
	cl_uint, const clinfer_sync_point*, clinfer_sync_point*, void*);

typedef struct {
	clinfer_create_fn create;
	clinfer_cmdbuf_fn finalize, release;
	clinfer_enqueue_fn enqueue;
	clinfer_ndrange_fn ndrange;
	void *copy; // optional: NULL when the platform lacks it
} clinfer_cmdbuf_fns;

static void *clinfer_cmdbuf_load(cl_platform_id p) {
	clinfer_cmdbuf_fns *f = calloc(1, sizeof *f);
	if (f == NULL) return NULL;
	f->create = (clinfer_create_fn)clGetExtensionFunctionAddressForPlatform(p, "clCreateCommandBufferKHR");
	f->finalize = (clinfer_cmdbuf_fn)clGetExtensionFunctionAddressForPlatform(p, "clFinalizeCommandBufferKHR");
	f->release = (clinfer_cmdbuf_fn)clGetExtensionFunctionAddressForPlatform(p, "clReleaseCommandBufferKHR");
	f->enqueue = (clinfer_enqueue_fn)clGetExtensionFunctionAddressForPlatform(p, "clEnqueueCommandBufferKHR");
	f->ndrange = (clinfer_ndrange_fn)clGetExtensionFunctionAddressForPlatform(p, "clCommandNDRangeKernelKHR");
	f->copy = clGetExtensionFunctionAddressForPlatform(p, "clCommandCopyBufferKHR");
	if (!f->create || !f->finalize || !f->release || !f->enqueue || !f->ndrange) {
		free(f);
		return NULL;
	}
	return f;
}

static void *clinfer_cmdbuf_create(void *fns, cl_command_queue q, int simultaneous, cl_int *err) {
	// CL_COMMAND_BUFFER_FLAGS_KHR = CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR
	cl_ulong props[3] = {0x1293, 1, 0};
	return ((clinfer_cmdbuf_fns *)fns)->create(1, &q, simultaneous ? props : NULL, err);
}

static cl_int clinfer_cmdbuf_ndrange(void *fns, void *cb, cl_kernel k, cl_uint dims, const size_t *off, const size_t *g, const size_t *l) {
	return ((clinfer_cmdbuf_fns *)fns)->ndrange(cb, NULL, NULL, k, dims, off, g, l, 0, NULL, NULL, NULL);
}

static cl_int clinfer_cmdbuf_copy(void *fns, void *cb, int props, cl_mem src, cl_mem dst, size_t so, size_t dof, size_t n) {
	void *copy = ((clinfer_cmdbuf_fns *)fns)->copy;
	if (copy == NULL) return CL_INVALID_OPERATION;
	if (props) return ((clinfer_copy1_fn)copy)(cb, NULL, NULL, src, dst, so, dof, n, 0, NULL, NULL, NULL);
	return ((clinfer_copy0_fn)copy)(cb, NULL, src, dst, so, dof, n, 0, NULL, NULL, NULL);
}

static cl_int clinfer_cmdbuf_finalize(void *fns, void *cb) { return ((clinfer_cmdbuf_fns *)fns)->finalize(cb); }

static cl_int clinfer_cmdbuf_release(void *fns, void *cb) { return ((clinfer_cmdbuf_fns *)fns)->release(cb); }

static cl_int clinfer_cmdbuf_enqueue(void *fns, void *cb, cl_command_queue q, cl_event *ev) {
	return ((clinfer_cmdbuf_fns *)fns)->enqueue(1, &q, cb, 0, NULL, ev);
}
*/
import "C"

func loadCommandBufferFunctions(p handle) handle {
	return handle(C.clinfer_cmdbuf_load(C.cl_platform_id(p)))
}

func createCommandBuffer(fns, q handle, simultaneous bool) (handle, error) {
	if err := injected("clCreateCommandBufferKHR"); err != nil {
		return nil, err
	}
	var st C.cl_int
	sim := C.int(0)
	if simultaneous {
		sim = 1
	}
	cb := C.clinfer_cmdbuf_create(fns, C.cl_command_queue(q), sim, &st)
	return handle(cb), status("clCreateCommandBufferKHR", st)
}

func commandNDRangeKernel(fns, cb, k handle, offset, global, local []int) error {
	if err := injected("clCommandNDRangeKernelKHR"); err != nil {
		return err
	}
	o, g, l := ndArrays(offset, global, local)
	return status("clCommandNDRangeKernelKHR", C.clinfer_cmdbuf_ndrange(fns, cb, C.cl_kernel(k), C.cl_uint(len(global)), o.ptr(offset), &g[0], l.ptr(local)))
}

func commandCopyBuffer(fns, cb handle, props bool, src, dst handle, srcOffset, dstOffset, size int) error {
	if err := injected("clCommandCopyBufferKHR"); err != nil {
		return err
	}
	p := C.int(0)
	if props {
		p = 1
	}
	return status("clCommandCopyBufferKHR", C.clinfer_cmdbuf_copy(fns, cb, p, C.cl_mem(src), C.cl_mem(dst), C.size_t(srcOffset), C.size_t(dstOffset), C.size_t(size)))
}

func finalizeCommandBuffer(fns, cb handle) error {
	if err := injected("clFinalizeCommandBufferKHR"); err != nil {
		return err
	}
	return status("clFinalizeCommandBufferKHR", C.clinfer_cmdbuf_finalize(fns, cb))
}

func releaseCommandBuffer(fns, cb handle) error {
	return status("clReleaseCommandBufferKHR", C.clinfer_cmdbuf_release(fns, cb))
}

func enqueueCommandBuffer(fns, cb, q handle, wantEvent bool) (handle, error) {
	if err := injected("clEnqueueCommandBufferKHR"); err != nil {
		return nil, err
	}
	if !wantEvent { // no event variable: its address would escape to the heap
		return nil, status("clEnqueueCommandBufferKHR", C.clinfer_cmdbuf_enqueue(fns, cb, C.cl_command_queue(q), nil))
	}
	var ev C.cl_event
	st := C.clinfer_cmdbuf_enqueue(fns, cb, C.cl_command_queue(q), &ev)
	return handle(ev), status("clEnqueueCommandBufferKHR", st)
}
