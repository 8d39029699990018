//go:build cgo && !noopencl

// The wait on one event (Event.Wait, Event.WaitSpin). Keep in sync with
// driver_stub.go.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <sched.h>
#include <time.h>

// clinfer_wait_result is a wait's outcome: the status of the call that
// ended it and the command's final execution status (negative: it
// terminated abnormally; CL_COMPLETE if it cannot be read).
typedef struct { cl_int st, exec; } clinfer_wait_result;

static long long clinfer_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// clinfer_wait_event waits until ev's command is done, by value so that no
// Go memory is passed. For up to spin_ns it polls the command's execution
// status, yielding the core between polls (sched_yield: a driver thread
// made runnable on this core runs first); then, or at once when spin_ns
// is 0, it blocks in clWaitForEvents. Polling spares the host thread the
// sleep and wake-up of a blocking wait (a condition variable on POCL),
// which on an idle machine costs more than a small model's kernels.
static clinfer_wait_result clinfer_wait_event(cl_event ev, long long spin_ns) {
	clinfer_wait_result r = {CL_SUCCESS, CL_COMPLETE};
	cl_int s;
	if (spin_ns > 0) {
		long long end = clinfer_now_ns() + spin_ns;
		for (;;) {
			if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) != CL_SUCCESS) {
				break; // let clWaitForEvents report it
			}
			if (s <= CL_COMPLETE) {
				r.exec = s;
				return r;
			}
			if (clinfer_now_ns() >= end) {
				break;
			}
			sched_yield();
		}
	}
	r.st = clWaitForEvents(1, &ev);
	if (r.st == CL_SUCCESS && clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS) {
		r.exec = s;
	}
	return r;
}
*/
import "C"

import "time"

// waitEvent waits for event e in one cgo call and without allocating (an
// inference waits on one event), polling its status for up to spin first,
// and returns its command's final execution status.
func waitEvent(e handle, spin time.Duration) (int32, error) {
	if err := injected("clWaitForEvents"); err != nil {
		return 0, err
	}
	defer logSlow("clWaitForEvents", time.Now(), nil)
	r := C.clinfer_wait_event(C.cl_event(e), C.longlong(max(spin, 0)))
	return int32(r.exec), status("clWaitForEvents", r.st)
}
