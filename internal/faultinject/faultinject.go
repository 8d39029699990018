// Package faultinject is the test hook that makes the OpenCL binding
// (clbackend/cl) fail its Nth call, as SQLite's tests fail the Nth
// allocation: a test arms it, runs a compile or an inference, and checks
// that the injected failure becomes an error naming the call, that nothing
// leaks and that the device stays usable. It is internal: programs outside
// the module cannot reach it, and unarmed it costs the binding one atomic
// load per call.
//
// Where it sits in the data flow: beneath everything, inside the cl
// binding's calls into OpenCL.
package faultinject

import (
	"sync"
	"sync/atomic"
)

// armed is set while a plan is armed; the binding's fast path reads only
// this.
var armed atomic.Bool

var (
	mu    sync.Mutex
	calls int64  // calls counted since Arm
	nth   int64  // the call to fail (1-based); 0: count only
	code  int32  // the status the failed call returns
	hit   string // the op that was failed
)

// Arm starts counting the binding's OpenCL calls from zero and makes call
// number n (1-based) fail with status (a CL error code such as -5,
// CL_OUT_OF_RESOURCES). n = 0 only counts. Arm replaces an earlier plan.
func Arm(n int64, status int32) {
	mu.Lock()
	defer mu.Unlock()
	calls, nth, code, hit = 0, n, status, ""
	armed.Store(true)
}

// Disarm stops counting and injecting, and returns how many calls were
// counted since Arm and the op of the failed call ("" when none failed).
func Disarm() (counted int64, failed string) {
	mu.Lock()
	defer mu.Unlock()
	armed.Store(false)
	return calls, hit
}

// Check is called by the binding before each OpenCL call op
// ("clCreateBuffer"): it returns the status to fail it with and true when
// this is the armed call.
func Check(op string) (int32, bool) {
	if !armed.Load() {
		return 0, false
	}
	mu.Lock()
	defer mu.Unlock()
	calls++
	if calls != nth {
		return 0, false
	}
	hit = op
	return code, true
}
