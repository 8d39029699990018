//go:build cgo && !noopencl && clblast

// This file binds CLBlast's SGEMM, the peer the GEMM benchmarks in bench/
// measure clinfer's sgemm kernel against. It is built only with -tags
// clblast (and needs libclblast-dev: `apt-get install libclblast-dev`), so
// the module never links CLBlast by default. It lives here because only this
// package may import "C" for OpenCL and see the raw handles.

package cl

/*
#cgo LDFLAGS: -lclblast
#define CL_TARGET_OPENCL_VERSION 120
#include <clblast_c.h>
*/
import "C"

import (
	"fmt"
	"runtime"
)

// CLBlastError is a CLBlast status code other than CLBlastSuccess. Codes
// from -1 to -70 are OpenCL status codes (see ErrorCode); CLBlast's own
// codes are below -1000.
type CLBlastError struct {
	Op   string
	Code int32
}

// Error names the call and the status: an OpenCL name for OpenCL codes,
// CLBlast's number otherwise.
func (e *CLBlastError) Error() string {
	if e.Code > -1000 {
		return fmt.Sprintf("%s: %s", e.Op, ErrorCode(e.Code))
	}
	return fmt.Sprintf("%s: CLBlast status %d", e.Op, e.Code)
}

// Is reports whether target is the OpenCL ErrorCode this status equals.
func (e *CLBlastError) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && int32(c) == e.Code
}

// CLBlastSgemm enqueues CLBlast's row-major SGEMM on q:
// C = alpha * op(A) . op(B) + beta * C, with op(A) [m, k], op(B) [k, n], C
// [m, n] and leading dimensions lda, ldb, ldc (row-major, in elements), the
// offsets in elements. It returns the event of the GEMM, which the caller
// owns and must Close. CLBlast compiles its kernels for the device on the
// first call with a shape class, so time later calls.
func CLBlastSgemm(q *CommandQueue, transA, transB bool, m, n, k int, alpha float32,
	a *MemObject, aOff, lda int, b *MemObject, bOff, ldb int,
	beta float32, c *MemObject, cOff, ldc int) (*Event, error) {
	const op = "CLBlastSgemm"
	qh := q.h()
	if qh == nil {
		return nil, closedError(op, ErrInvalidCommandQueue)
	}
	ah, err := memHandle(op, a)
	if err != nil {
		return nil, err
	}
	bh, err := memHandle(op, b)
	if err != nil {
		return nil, err
	}
	ch, err := memHandle(op, c)
	if err != nil {
		return nil, err
	}
	trans := func(t bool) C.CLBlastTranspose {
		if t {
			return C.CLBlastTransposeYes
		}
		return C.CLBlastTransposeNo
	}
	cq := C.cl_command_queue(qh)
	var ev C.cl_event
	unlock := q.serialize()
	st := C.CLBlastSgemm(C.CLBlastLayoutRowMajor, trans(transA), trans(transB),
		C.size_t(m), C.size_t(n), C.size_t(k), C.float(alpha),
		C.cl_mem(ah), C.size_t(aOff), C.size_t(lda),
		C.cl_mem(bh), C.size_t(bOff), C.size_t(ldb),
		C.float(beta), C.cl_mem(ch), C.size_t(cOff), C.size_t(ldc),
		&cq, &ev)
	unlock()
	runtime.KeepAlive(q)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	if st != C.CLBlastSuccess {
		return nil, &CLBlastError{Op: op, Code: int32(st)}
	}
	return finishEnqueue(handle(ev), nil)
}
