//go:build cgo && !noopencl

// The wait on one event (Event.Wait). Keep in sync with driver_stub.go.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

// clinfer_wait_event blocks in clWaitForEvents until ev's command is done
// and returns that call's status and the command's final status (negative:
// it terminated abnormally; CL_COMPLETE if it cannot be read), by value so
// that no Go memory is passed.
typedef struct { cl_int st, exec; } clinfer_wait_result;
static clinfer_wait_result clinfer_wait_event(cl_event ev) {
	clinfer_wait_result r = {clWaitForEvents(1, &ev), CL_COMPLETE};
	cl_int s;
	if (r.st == CL_SUCCESS && clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS) {
		r.exec = s;
	}
	return r;
}
*/
import "C"

import "time"

// waitEvent waits for event e in one cgo call and without allocating (an
// inference waits on one event), and returns its command's final
// execution status.
func waitEvent(e handle) (int32, error) {
	if err := injected("clWaitForEvents"); err != nil {
		return 0, err
	}
	defer logSlow("clWaitForEvents", time.Now(), nil)
	r := C.clinfer_wait_event(C.cl_event(e))
	return int32(r.exec), status("clWaitForEvents", r.st)
}
