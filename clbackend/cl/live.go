package cl

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// handle is an OpenCL object (cl_platform_id, cl_device_id, cl_context, …).
// It always points into memory owned by the OpenCL implementation, never
// into Go memory, so it may be stored in Go structs and passed back to C.
type handle = unsafe.Pointer

// kind enumerates the reference-counted OpenCL object types.
type kind int

const (
	kindContext kind = iota
	kindCommandQueue
	kindMemObject
	kindProgram
	kindKernel
	kindEvent
	kindCommandBuffer
	numKinds
)

var kindNames = [numKinds]string{"Context", "CommandQueue", "MemObject", "Program", "Kernel", "Event", "CommandBuffer"}

// live counts, per kind, the objects created and not yet released.
var live [numKinds]atomic.Int64

// LiveObjects returns, for each handle type ("Context", "CommandQueue",
// "MemObject", "Program", "Kernel", "Event", "CommandBuffer"), how many objects of it this
// process created and has not yet released, by Close or by the cleanup of an
// unreachable object. Tests take it before and after a
// compile/infer/close cycle to prove that no handle leaks.
func LiveObjects() map[string]int {
	m := make(map[string]int, numKinds)
	for k := range numKinds {
		m[kindNames[k]] = int(live[k].Load())
	}
	return m
}

// ref owns one OpenCL reference to an object.
type ref struct {
	h       handle // set once by track, cleared by close; accessed atomically
	kind    kind
	aux     handle // leaked.aux
	cleanup runtime.Cleanup
}

// leaked is what the cleanup of an unclosed object needs to release it.
type leaked struct {
	kind kind
	h    handle
	// user marks a user event: one nobody can reach will never be
	// completed, so its cleanup fails it first.
	user bool
	// aux is what releasing the object needs besides its handle: a
	// command buffer's entry points (C memory).
	aux handle
}

// track makes r own h, counts it live, and arranges for h to be released if
// owner becomes unreachable without Close.
func track[T any](owner *T, r *ref, k kind, h handle) {
	trackLeaked(owner, r, leaked{kind: k, h: h})
}

// trackLeaked is track with the cleanup's record given.
func trackLeaked[T any](owner *T, r *ref, l leaked) {
	r.h = l.h
	r.kind = l.kind
	r.aux = l.aux
	live[l.kind].Add(1)
	r.cleanup = runtime.AddCleanup(owner, releaseLeaked, l)
}

// abandonedStatus is the status the cleanup gives an unreachable user
// event that was never set, so that the commands and the driver waiting on
// it can finish.
const abandonedStatus = int32(ErrInvalidEvent)

// releaseLeaked is the cleanup of an object that became unreachable
// without Close. It runs on the runtime's single cleanup goroutine, which
// must never block: NVIDIA's clReleaseMemObject, for one, blocks while a
// user event of the context is pending. So an unreachable user event is
// failed here (a non-blocking call) and the release itself runs on a
// goroutine of its own, which ends when the driver returns.
func releaseLeaked(l leaked) {
	if l.user {
		_ = setUserEventStatus(l.h, abandonedStatus)
	}
	go func() {
		_ = releaseWith(l.kind, l.h, l.aux)
		live[l.kind].Add(-1)
	}()
}

// handle returns the object's OpenCL handle, or nil once it is closed.
func (r *ref) handle() handle { return atomic.LoadPointer(&r.h) }

// close releases the reference once; later calls return nil.
func (r *ref) close() error {
	h := atomic.SwapPointer(&r.h, nil)
	if h == nil {
		return nil
	}
	r.cleanup.Stop()
	live[r.kind].Add(-1)
	return releaseWith(r.kind, h, r.aux)
}

// releaseWith releases h of kind k; aux is the ref's aux.
func releaseWith(k kind, h, aux handle) error {
	if k == kindCommandBuffer {
		return releaseCommandBuffer(aux, h)
	}
	return release(k, h)
}

func release(k kind, h handle) error {
	switch k {
	case kindContext:
		return releaseContext(h)
	case kindCommandQueue:
		return releaseCommandQueue(h)
	case kindMemObject:
		return releaseMemObject(h)
	case kindProgram:
		return releaseProgram(h)
	case kindKernel:
		return releaseKernel(h)
	case kindEvent:
		return releaseEvent(h)
	}
	return nil
}

// closedError is returned by methods of an object that is nil or closed; the
// code is the one OpenCL would return for an invalid handle.
func closedError(op string, code ErrorCode) error {
	return &Error{Op: op, Code: code}
}
