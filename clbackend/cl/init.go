package cl

import (
	"sync"
	"sync/atomic"
)

// OpenCL's first use is serialised for the whole process. A driver
// initialises its devices on its first clGetDeviceIDs (or clCreateContext),
// and POCL (3.x, lib/CL/devices/devices.c: pocl_init_devices) lets a second
// thread that calls in meanwhile return at once, before the lock it takes
// for the first: that thread then reads a device count of zero
// (CL_DEVICE_NOT_FOUND) or, with device IDs in hand, queries a device that
// is still being set up and crashes in clGetDeviceInfo. Two Cores used for
// the first time from two goroutines, or HETERO and AUTO (which hold Cores
// of their own) compiling beside the GPU, did exactly that. So:
//
//   - the first call that may initialise a driver (GetPlatforms,
//     Platform.GetDevices, CreateContext, RetainContext) first runs
//     firstUse, which enumerates every platform's devices once, under
//     enumMu, and every other caller waits for it;
//   - firstUse lists POCL's basic driver for the set-up when
//     POCL_DEVICES is unset (pocl.go);
//   - every clGetPlatformIDs and clGetDeviceIDs runs under enumMu, so that
//     a driver never sees two enumerations at once (cheap: they are rare).
var (
	enumMu  sync.Mutex
	enumed  atomic.Bool // firstUse completed
	enumTry sync.Mutex  // serialises firstUse's attempts
)

// firstUse initialises every OpenCL driver once per process before the
// first call that could initialise one, and makes concurrent callers wait
// until it is done. Without a platform it does nothing and the next call
// tries again (the caller's own call reports the error).
func firstUse() {
	if enumed.Load() {
		return
	}
	enumTry.Lock()
	defer enumTry.Unlock()
	if enumed.Load() {
		return
	}
	enumMu.Lock()
	restore := poclEnv() // POCL reads POCL_DEVICES here (pocl.go)
	ok := probeDevices()
	restore()
	enumMu.Unlock()
	if ok {
		enumed.Store(true)
	}
}
