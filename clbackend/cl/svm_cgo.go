//go:build cgo && !noopencl

// The calls of shared virtual memory (svm.go). Keep in sync with
// driver_stub.go.

package cl

/*
#cgo linux LDFLAGS: -ldl
// RTLD_DEFAULT is a GNU extension of dlfcn.h: glibc before 2.34 (the device
// bundle's Debian 11 sysroot) declares it only under _GNU_SOURCE.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <stdlib.h>
#if defined(__linux__) || defined(__FreeBSD__)
#include <dlfcn.h>
#endif

// clSVMAlloc and clSVMFree are OpenCL 2.0 calls: looked up in the loaded
// OpenCL library at run time, so that the package still links against a
// 1.2 library (and macOS's, which has none).
typedef void *(CL_API_CALL *clinfer_svm_alloc_fn)(cl_context, cl_bitfield, size_t, cl_uint);
typedef void (CL_API_CALL *clinfer_svm_free_fn)(cl_context, void *);
static clinfer_svm_alloc_fn clinfer_svm_alloc;
static clinfer_svm_free_fn clinfer_svm_free;

static int clinfer_svm_load(void) {
#if defined(__linux__) || defined(__FreeBSD__)
	clinfer_svm_alloc = (clinfer_svm_alloc_fn)dlsym(RTLD_DEFAULT, "clSVMAlloc");
	clinfer_svm_free = (clinfer_svm_free_fn)dlsym(RTLD_DEFAULT, "clSVMFree");
	return clinfer_svm_alloc != NULL && clinfer_svm_free != NULL;
#else
	return 0;
#endif
}

typedef struct {
	cl_context ctx;
	void *p;
} clinfer_svm_block;

// The buffer's destructor: its SVM block goes when OpenCL destroys the
// buffer (no command uses it any more), with the context it was allocated
// in, which the block keeps alive until then.
static void CL_CALLBACK clinfer_svm_release(cl_mem m, void *user) {
	clinfer_svm_block *b = user;
	clinfer_svm_free(b->ctx, b->p);
	clReleaseContext(b->ctx);
	free(b);
}

// clinfer_create_svm_buffer allocates size bytes of fine-grained buffer SVM
// (CL_MEM_SVM_FINE_GRAIN_BUFFER) and creates a CL_MEM_USE_HOST_PTR buffer
// over it, whose storage is that memory (OpenCL 2.0, clCreateBuffer); *host
// is its address. On failure *call names the call that failed (0 clSVMAlloc,
// 1 clCreateBuffer, 2 clSetMemObjectDestructorCallback).
static cl_mem clinfer_create_svm_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void **host, cl_int *err, int *call) {
	*call = 0;
	clinfer_svm_block *b = malloc(sizeof *b);
	if (b == NULL) {
		*err = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	void *p = clinfer_svm_alloc(ctx, CL_MEM_READ_WRITE | (1 << 10), size, 0);
	if (p == NULL) {
		free(b);
		*err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
		return NULL;
	}
	*call = 1;
	cl_mem m = clCreateBuffer(ctx, flags | CL_MEM_USE_HOST_PTR, size, p, err);
	if (*err != CL_SUCCESS) {
		clinfer_svm_free(ctx, p);
		free(b);
		return NULL;
	}
	b->ctx = ctx;
	b->p = p;
	clRetainContext(ctx);
	*call = 2;
	*err = clSetMemObjectDestructorCallback(m, clinfer_svm_release, b);
	if (*err != CL_SUCCESS) {
		// There is no telling when OpenCL is done with p: leak it.
		clReleaseMemObject(m);
		clReleaseContext(ctx);
		free(b);
		return NULL;
	}
	*host = p;
	return m;
}
*/
import "C"

import (
	"time"
	"unsafe"
)

func loadSVM() bool { return C.clinfer_svm_load() != 0 }

func createSVMBuffer(ctx handle, flags MemFlag, size int) (handle, unsafe.Pointer, error) {
	if err := injected("clSVMAlloc"); err != nil {
		return nil, nil, err
	}
	defer logSlow("clSVMAlloc+clCreateBuffer", time.Now(), nil)
	var st C.cl_int
	var host unsafe.Pointer
	var call C.int
	m := C.clinfer_create_svm_buffer(C.cl_context(ctx), C.cl_mem_flags(flags), C.size_t(size), &host, &st, &call)
	if err := status([...]string{"clSVMAlloc", "clCreateBuffer", "clSetMemObjectDestructorCallback"}[call], st); err != nil {
		return nil, nil, err
	}
	return handle(m), host, nil
}
