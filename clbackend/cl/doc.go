// Package cl is clinfer's thin cgo binding to OpenCL 1.2, and the only
// package in the module that imports "C" for OpenCL.
//
// In the data flow of DESIGN.md it sits under the GPU device: package
// clbackend probes OpenCL through GetPlatforms and Platform.GetDevices in its
// constructor, builds the kernels of package kernels with
// Context.CreateProgramWithSource and Program.BuildProgram when a model is
// compiled, and runs a launch plan with CommandQueue.EnqueueNDRangeKernel,
// EnqueueWriteBuffer and EnqueueReadBuffer, chaining commands with event
// wait lists and timing them with Event.GetEventProfilingInfo for the perf
// counters. cmd/clinfo uses it to show what OpenCL offers on a machine.
//
// The surface follows the cl package of github.com/jgillich/go-opencl
// (GetPlatforms, Platform.GetDevices, CreateContext,
// Context.CreateCommandQueue, CreateProgramWithSource, Program.BuildProgram,
// CreateKernel, Kernel.SetArgs, EnqueueNDRangeKernel, Enqueue{Read,Write}Buffer,
// Event.Wait, GetEventProfilingInfo) so that swapping it in later is a small
// change. Where the two differ, this package follows the house style: info
// getters return an error instead of panicking, every handle has an
// idempotent Close that reports the release status, and every OpenCL status
// becomes an *Error that names the call and the code.
//
// # Errors
//
// A failed call returns an *Error such as
// "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES". Its code is an ErrorCode,
// and the ErrorCode constants are the sentinels to test with errors.Is:
//
//	if errors.Is(err, cl.ErrPlatformNotFound) { /* no OpenCL driver installed */ }
//
// A failed build returns a *BuildError that carries the build log of every
// device and wraps the *Error (CL_BUILD_PROGRAM_FAILURE).
//
// # Ownership
//
// Context, CommandQueue, MemObject, Program, Kernel and Event each own one
// OpenCL reference that Close releases. Close is idempotent; calling it
// concurrently with other methods of the same object is a bug. A cleanup
// releases objects that become unreachable unclosed, but only as a safety
// net: LiveObjects counts the objects not yet released, so tests can prove
// that a compile/infer/close cycle leaks nothing. Platforms and devices are
// not reference counted and need no Close.
//
// # Memory passed to OpenCL
//
// Go memory may be handed to OpenCL only for the duration of a call. The
// slice helpers (EnqueueReadSlice, EnqueueWriteSlice, the Float32 methods)
// pin the slice for non-blocking transfers until the command completes;
// Context.CreateBuffer copies data meant for MemUseHostPtr into C memory that
// lives as long as the buffer. The unsafe.Pointer variants leave that duty to
// the caller.
//
// # Builds without OpenCL
//
// Built with CGO_ENABLED=0 or with -tags noopencl, the package keeps its API
// but every call that would reach OpenCL returns an error wrapping
// ErrNotBuilt, and Enabled is false. The OpenCL calls live in
// driver_cgo.go and driver_program_cgo.go (the header constants are
// checked in constants_cgo.go) and their stand-ins in driver_stub.go;
// everything else is plain Go shared by both builds.
package cl
