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
// terminated abnormally; CL_COMPLETE if it cannot be read), and whether
// it ended in the blocking clWaitForEvents.
typedef struct { cl_int st, exec, blocked; } clinfer_wait_result;

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
// When busy is not NULL the poll also stops, and the wait blocks, as soon
// as *busy (a count of the waits in flight that the caller keeps,
// itself included) is above 1: polling threads beside other work take the
// cores that work wants.
static clinfer_wait_result clinfer_wait_event(cl_event ev, long long spin_ns, const int *busy) {
	clinfer_wait_result r = {CL_SUCCESS, CL_COMPLETE, 0};
	cl_int s;
	if (spin_ns > 0) {
		long long end = clinfer_now_ns() + spin_ns;
		for (;;) {
			if (busy != NULL && __atomic_load_n(busy, __ATOMIC_RELAXED) > 1) {
				break;
			}
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
	r.blocked = 1;
	r.st = clWaitForEvents(1, &ev);
	if (r.st == CL_SUCCESS && clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS) {
		r.exec = s;
	}
	return r;
}
*/
import "C"

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// waitEvent waits for event e in one cgo call and without allocating (an
// inference waits on one event), polling its status for up to spin first,
// while busy (when not nil) is at most 1, and returns its command's final
// execution status and whether the wait blocked.
func waitEvent(e handle, spin time.Duration, busy *atomic.Int32) (int32, bool, error) {
	if err := injected("clWaitForEvents"); err != nil {
		return 0, false, err
	}
	defer logSlow("clWaitForEvents", time.Now(), nil)
	var b *C.int
	if busy != nil {
		// The counter's memory holds no Go pointer, and C reads it only
		// during the call (atomically, as sync/atomic writes it).
		b = (*C.int)(unsafe.Pointer(busy))
	}
	r := C.clinfer_wait_event(C.cl_event(e), C.longlong(max(spin, 0)), b)
	return int32(r.exec), r.blocked != 0, status("clWaitForEvents", r.st)
}
