//go:build cgo && !noopencl

// This file holds the Go functions OpenCL calls back. A file with //export
// may only declare C functions in its preamble; their definitions live in
// driver_cgo.go.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <stdint.h>
*/
import "C"

import "runtime/cgo"

// clinferEventCallback runs on an OpenCL implementation thread when an event
// reaches the status a callback was registered for. OpenCL calls each
// registered callback exactly once, so the handle is deleted here.
//
//export clinferEventCallback
func clinferEventCallback(_ C.cl_event, execStatus C.cl_int, h C.uintptr_t) {
	hd := cgo.Handle(h)
	fn, _ := hd.Value().(func(int32))
	hd.Delete()
	if fn != nil {
		fn(int32(execStatus))
	}
}
