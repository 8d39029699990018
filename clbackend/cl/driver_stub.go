//go:build !cgo || noopencl

// This file stands in for driver_cgo.go and driver_program_cgo.go in builds
// without OpenCL. Keep it in sync with them: the same unexported functions,
// each failing with an error that wraps ErrNotBuilt.

package cl

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// Enabled reports whether this build of the package calls OpenCL; it is
// false in builds with CGO_ENABLED=0 or -tags noopencl.
const Enabled = false

func notBuilt(op string) error { return fmt.Errorf("%s: %w", op, ErrNotBuilt) }

func getPlatformIDs() ([]handle, error) { return nil, notBuilt("clGetPlatformIDs") }

func probeDevices() bool { return false }

func getPlatformInfo(handle, uint32, string) ([]byte, error) {
	return nil, notBuilt("clGetPlatformInfo")
}

func getDeviceIDs(handle, DeviceType) ([]handle, error) { return nil, notBuilt("clGetDeviceIDs") }

func getDeviceInfo(handle, uint32, string) ([]byte, error) { return nil, notBuilt("clGetDeviceInfo") }

func createContext(handle, []handle) (handle, error) { return nil, notBuilt("clCreateContext") }

func releaseContext(handle) error { return notBuilt("clReleaseContext") }

func createCommandQueue(_, _ handle, _ CommandQueueProperty) (handle, error) {
	return nil, notBuilt("clCreateCommandQueue")
}

func releaseCommandQueue(handle) error { return notBuilt("clReleaseCommandQueue") }

func flush(handle) error { return notBuilt("clFlush") }

func finish(handle) error { return notBuilt("clFinish") }

func createBuffer(handle, MemFlag, int, unsafe.Pointer) (handle, error) {
	return nil, notBuilt("clCreateBuffer")
}

func createBufferCopyToC(handle, MemFlag, []byte) (handle, error) {
	return nil, notBuilt("clCreateBuffer")
}

func createSubBuffer(handle, MemFlag, int, int) (handle, error) {
	return nil, notBuilt("clCreateSubBuffer")
}

func releaseMemObject(handle) error { return notBuilt("clReleaseMemObject") }

func enqueueReadBuffer(_, _ handle, _ bool, _, _ int, _ unsafe.Pointer, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueReadBuffer")
}

func enqueueWriteBuffer(_, _ handle, _ bool, _, _ int, _ unsafe.Pointer, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueWriteBuffer")
}

func enqueueCopyBuffer(_, _, _ handle, _, _, _ int, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueCopyBuffer")
}

func enqueueCopyBufferRect(_, _, _ handle, _, _, _, _, _, _ int, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueCopyBufferRect")
}

func enqueueFillBuffer(_, _ handle, _ unsafe.Pointer, _, _, _ int, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueFillBuffer")
}

func enqueueMapBuffer(_, _ handle, _ bool, _ MapFlag, _, _ int, _ []handle) (unsafe.Pointer, handle, error) {
	return nil, nil, notBuilt("clEnqueueMapBuffer")
}

func enqueueUnmapMemObject(_, _ handle, _ unsafe.Pointer, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueUnmapMemObject")
}

func enqueueNDRangeKernelNoEvent(_, _ handle, _, _, _ []int) error {
	return notBuilt("clEnqueueNDRangeKernel")
}

func enqueueReadBufferNoEvent(_, _ handle, _, _ int, _ unsafe.Pointer) error {
	return notBuilt("clEnqueueReadBuffer")
}

func enqueueWriteBufferNoEvent(_, _ handle, _, _ int, _ unsafe.Pointer) error {
	return notBuilt("clEnqueueWriteBuffer")
}

func enqueueNDRangeKernel(_, _ handle, _, _, _ []int, _ []handle) (handle, error) {
	return nil, notBuilt("clEnqueueNDRangeKernel")
}

func enqueueMarkerWithWaitList(handle, []handle) (handle, error) {
	return nil, notBuilt("clEnqueueMarkerWithWaitList")
}

func enqueueBarrierWithWaitList(handle, []handle) (handle, error) {
	return nil, notBuilt("clEnqueueBarrierWithWaitList")
}

func createProgramWithSource(handle, []string) (handle, error) {
	return nil, notBuilt("clCreateProgramWithSource")
}

func createProgramWithBinary(handle, []handle, [][]byte) (handle, error) {
	return nil, notBuilt("clCreateProgramWithBinary")
}

func buildProgram(handle, []handle, string) error { return notBuilt("clBuildProgram") }

func getProgramInfo(handle, uint32, string) ([]byte, error) {
	return nil, notBuilt("clGetProgramInfo")
}

func getProgramDevices(handle) ([]handle, error) { return nil, notBuilt("clGetProgramInfo") }

func getProgramBinaries(handle, []int) ([][]byte, error) { return nil, notBuilt("clGetProgramInfo") }

func getProgramBuildInfo(_, _ handle, _ uint32, _ string) ([]byte, error) {
	return nil, notBuilt("clGetProgramBuildInfo")
}

func releaseProgram(handle) error { return notBuilt("clReleaseProgram") }

func createKernel(handle, string) (handle, error) { return nil, notBuilt("clCreateKernel") }

func setKernelArg(_ handle, _, _ int, _ unsafe.Pointer, op string) error { return notBuilt(op) }

func getKernelInfo(handle, uint32, string) ([]byte, error) { return nil, notBuilt("clGetKernelInfo") }

func getKernelWorkGroupInfo(_, _ handle, _ uint32, _ string) ([]byte, error) {
	return nil, notBuilt("clGetKernelWorkGroupInfo")
}

func releaseKernel(handle) error { return notBuilt("clReleaseKernel") }

func waitForEvents([]handle) error { return notBuilt("clWaitForEvents") }

func waitEvent(handle, time.Duration, *atomic.Int32) (int32, bool, error) {
	return 0, false, notBuilt("clWaitForEvents")
}

func getEventInfo(handle, uint32, string) ([]byte, error) { return nil, notBuilt("clGetEventInfo") }

func getEventProfilingInfo(handle, ProfilingInfo) (uint64, error) {
	return 0, notBuilt("clGetEventProfilingInfo")
}

func createUserEvent(handle) (handle, error) { return nil, notBuilt("clCreateUserEvent") }

func setUserEventStatus(handle, int32) error { return notBuilt("clSetUserEventStatus") }

func setEventCallback(handle, int32, func(int32)) error { return notBuilt("clSetEventCallback") }

func releaseEvent(handle) error { return notBuilt("clReleaseEvent") }

func handleOf(uintptr) handle { return nil }

func retain(kind, handle) error { return notBuilt("clRetain") }

func getContextInfo(handle, uint32, string) ([]byte, error) { return nil, notBuilt("clGetContextInfo") }

func getCommandQueueInfo(handle, uint32, string) ([]byte, error) {
	return nil, notBuilt("clGetCommandQueueInfo")
}

func getMemObjectInfo(handle, uint32, string) ([]byte, error) {
	return nil, notBuilt("clGetMemObjectInfo")
}

func queueWithPropertiesAvailable() bool { return false }

func createCommandQueueWithProperties(_, _ handle, _ []uint64) (handle, error) {
	return nil, notBuilt("clCreateCommandQueueWithProperties")
}

func loadCommandBufferFunctions(handle) handle { return nil }

func createCommandBuffer(_, _ handle, _ bool) (handle, error) {
	return nil, notBuilt("clCreateCommandBufferKHR")
}

func commandNDRangeKernel(_, _, _ handle, _, _, _ []int) error {
	return notBuilt("clCommandNDRangeKernelKHR")
}

func commandCopyBuffer(_, _ handle, _ bool, _, _ handle, _, _, _ int) error {
	return notBuilt("clCommandCopyBufferKHR")
}

func finalizeCommandBuffer(_, _ handle) error { return notBuilt("clFinalizeCommandBufferKHR") }

func releaseCommandBuffer(_, _ handle) error { return notBuilt("clReleaseCommandBufferKHR") }

func enqueueCommandBuffer(_, _, _ handle, _ bool) (handle, error) {
	return nil, notBuilt("clEnqueueCommandBufferKHR")
}

func loadSVM() bool { return false }

func createSVMBuffer(handle, MemFlag, int) (handle, unsafe.Pointer, error) {
	return nil, nil, notBuilt("clSVMAlloc")
}
