//go:build !cgo || noopencl || !linux

package cl

// PinKernelBinaries pins nothing where the build has no OpenCL or the
// system is not Linux (see pin_cgo.go); it returns 0.
func PinKernelBinaries() int { return 0 }
