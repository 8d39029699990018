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
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// armed is set while a plan is armed; the binding's fast path reads only
// this.
var armed atomic.Bool

var (
	mu    sync.Mutex
	calls int64  // calls counted since Arm (matching calls with a prefix)
	nth   int64  // the call to fail (1-based); 0: count only
	code  int32  // the status the failed call returns
	hit   string // the op that was failed (the last one, in random mode)
	// prefix, when set, counts only the calls whose op starts with it.
	prefix string
	// prob > 0 is random mode: each call fails with this probability.
	prob  float64
	rng   *rand.Rand
	fails int64 // calls failed in random mode
	// trace, when tracing, holds the op of every counted call.
	trace   []string
	tracing bool
)

// Arm starts counting the binding's OpenCL calls from zero and makes call
// number n (1-based) fail with status (a CL error code such as -5,
// CL_OUT_OF_RESOURCES). n = 0 only counts. Arm replaces an earlier plan.
func Arm(n int64, status int32) { ArmMatching("", n, status) }

// ArmMatching is Arm counting only the calls whose op starts with prefix
// ("clEnqueueNDRangeKernel": fail the nth kernel launch).
func ArmMatching(match string, n int64, status int32) {
	mu.Lock()
	defer mu.Unlock()
	calls, nth, code, hit, prob, fails = 0, n, status, "", 0, 0
	trace, tracing = nil, false
	prefix = match
	armed.Store(true)
}

// Trace counts the binding's calls from zero, as Arm(0, 0), and records
// each one's op for Ops: a walk picks the calls to fail from it.
func Trace() {
	Arm(0, 0)
	mu.Lock()
	defer mu.Unlock()
	tracing = true
}

// Ops returns the ops of the calls counted since Trace, in call order
// (call n is Ops()[n-1]).
func Ops() []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), trace...)
}

// ArmRandom fails each call with probability p, drawn from a generator
// seeded with seed (the same seed and call sequence fail the same calls).
func ArmRandom(seed uint64, p float64, status int32) {
	mu.Lock()
	defer mu.Unlock()
	calls, nth, code, hit, prob, fails = 0, 0, status, "", p, 0
	trace, tracing = nil, false
	prefix = ""
	rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	armed.Store(true)
}

// Failures returns how many calls random mode has failed since ArmRandom.
func Failures() int64 {
	mu.Lock()
	defer mu.Unlock()
	return fails
}

// Disarm stops counting and injecting, and returns how many calls were
// counted since Arm and the op of the failed call ("" when none failed).
func Disarm() (counted int64, failed string) {
	mu.Lock()
	defer mu.Unlock()
	armed.Store(false)
	prob = 0
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
	if prefix != "" && !strings.HasPrefix(op, prefix) {
		return 0, false
	}
	calls++
	if tracing {
		trace = append(trace, op)
	}
	if prob > 0 {
		if rng.Float64() >= prob {
			return 0, false
		}
		fails++
		hit = op
		return code, true
	}
	if calls != nth {
		return 0, false
	}
	hit = op
	return code, true
}
