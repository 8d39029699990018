//go:build cgo && !noopencl

// This file holds the OpenCL calls on programs and kernels; driver_cgo.go
// holds the others. Keep both in sync with driver_stub.go, which provides
// the same unexported functions for builds without OpenCL.

package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <stdlib.h>
*/
import "C"
import (
	"time"
	"unsafe"
)

func createProgramWithSource(ctx handle, sources []string) (handle, error) {
	if err := injected("clCreateProgramWithSource"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateProgramWithSource", time.Now(), nil)
	strs := make([]*C.char, len(sources))
	lens := make([]C.size_t, len(sources))
	for i, s := range sources {
		strs[i] = C.CString(s)
		lens[i] = C.size_t(len(s))
	}
	defer func() {
		for _, s := range strs {
			C.free(unsafe.Pointer(s))
		}
	}()
	var st C.cl_int
	p := C.clCreateProgramWithSource(C.cl_context(ctx), C.cl_uint(len(sources)), &strs[0], &lens[0], &st)
	return handle(p), status("clCreateProgramWithSource", st)
}

func createProgramWithBinary(ctx handle, devices []handle, binaries [][]byte) (handle, error) {
	if err := injected("clCreateProgramWithBinary"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateProgramWithBinary", time.Now(), nil)
	// The array of binaries must not point into Go memory: copy to C.
	bins := make([]*C.uchar, len(binaries))
	lens := make([]C.size_t, len(binaries))
	for i, b := range binaries {
		bins[i] = (*C.uchar)(C.CBytes(b))
		lens[i] = C.size_t(len(b))
	}
	defer func() {
		for _, b := range bins {
			C.free(unsafe.Pointer(b))
		}
	}()
	binStatus := make([]C.cl_int, len(binaries))
	n, ds := deviceList(devices)
	var st C.cl_int
	p := C.clCreateProgramWithBinary(C.cl_context(ctx), n, ds, &lens[0], &bins[0], &binStatus[0], &st)
	return handle(p), status("clCreateProgramWithBinary", st)
}

func buildProgram(p handle, devices []handle, options string) error {
	if err := injected("clBuildProgram"); err != nil {
		return err
	}
	defer logSlow("clBuildProgram", time.Now(), func() string { return options })
	opts := C.CString(options)
	defer C.free(unsafe.Pointer(opts))
	n, ds := deviceList(devices)
	return status("clBuildProgram", C.clBuildProgram(C.cl_program(p), n, ds, opts, nil, nil))
}

func getProgramInfo(p handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetProgramInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetProgramInfo(C.cl_program(p), C.cl_program_info(param), size, v, ret)
	})
}

func getProgramDevices(p handle) ([]handle, error) {
	if err := injected("clGetProgramInfo(CL_PROGRAM_DEVICES)"); err != nil {
		return nil, err
	}
	const op = "clGetProgramInfo(CL_PROGRAM_DEVICES)"
	var size C.size_t
	if err := status(op, C.clGetProgramInfo(C.cl_program(p), C.CL_PROGRAM_DEVICES, 0, nil, &size)); err != nil {
		return nil, err
	}
	ids := make([]handle, int(size)/int(unsafe.Sizeof(handle(nil))))
	if len(ids) == 0 {
		return nil, nil
	}
	if err := status(op, C.clGetProgramInfo(C.cl_program(p), C.CL_PROGRAM_DEVICES, size, unsafe.Pointer(&ids[0]), nil)); err != nil {
		return nil, err
	}
	return ids, nil
}

func getProgramBinaries(p handle, sizes []int) ([][]byte, error) {
	if err := injected("clGetProgramInfo(CL_PROGRAM_BINARIES)"); err != nil {
		return nil, err
	}
	defer logSlow("clGetProgramInfo(CL_PROGRAM_BINARIES)", time.Now(), nil)
	if len(sizes) == 0 {
		return nil, nil
	}
	// OpenCL writes each binary into a buffer the caller allocates; the
	// array of buffer pointers lives in Go memory and holds C pointers only.
	bufs := make([]unsafe.Pointer, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			bufs[i] = C.malloc(C.size_t(n))
		}
	}
	defer func() {
		for _, b := range bufs {
			C.free(b)
		}
	}()
	st := C.clGetProgramInfo(C.cl_program(p), C.CL_PROGRAM_BINARIES, C.size_t(len(bufs))*C.size_t(unsafe.Sizeof(bufs[0])), unsafe.Pointer(&bufs[0]), nil)
	if err := status("clGetProgramInfo(CL_PROGRAM_BINARIES)", st); err != nil {
		return nil, err
	}
	out := make([][]byte, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			out[i] = C.GoBytes(bufs[i], C.int(n))
		}
	}
	return out, nil
}

func getProgramBuildInfo(p, d handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetProgramBuildInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetProgramBuildInfo(C.cl_program(p), C.cl_device_id(d), C.cl_program_build_info(param), size, v, ret)
	})
}

func releaseProgram(h handle) error {
	defer logSlow("clReleaseProgram", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseProgram", C.clReleaseProgram(C.cl_program(h)))
	if ierr := injected("clReleaseProgram"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}

func createKernel(p handle, name string) (handle, error) {
	if err := injected("clCreateKernel(" + name + ")"); err != nil {
		return nil, err
	}
	defer logSlow("clCreateKernel", time.Now(), nil)
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var st C.cl_int
	k := C.clCreateKernel(C.cl_program(p), cname, &st)
	return handle(k), status("clCreateKernel("+name+")", st)
}

func setKernelArg(k handle, index, size int, value unsafe.Pointer, op string) error {
	if err := injected(op); err != nil {
		return err
	}
	return status(op, C.clSetKernelArg(C.cl_kernel(k), C.cl_uint(index), C.size_t(size), value))
}

func getKernelInfo(k handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetKernelInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetKernelInfo(C.cl_kernel(k), C.cl_kernel_info(param), size, v, ret)
	})
}

func getKernelWorkGroupInfo(k, d handle, param uint32, name string) ([]byte, error) {
	return getInfo("clGetKernelWorkGroupInfo("+name+")", func(size C.size_t, v unsafe.Pointer, ret *C.size_t) C.cl_int {
		return C.clGetKernelWorkGroupInfo(C.cl_kernel(k), C.cl_device_id(d), C.cl_kernel_work_group_info(param), size, v, ret)
	})
}

func releaseKernel(h handle) error {
	defer logSlow("clReleaseKernel", time.Now(), nil)
	// An injected failure still releases: the error path is what is
	// tested, not a leak.
	err := status("clReleaseKernel", C.clReleaseKernel(C.cl_kernel(h)))
	if ierr := injected("clReleaseKernel"); ierr != nil && err == nil {
		err = ierr
	}
	return err
}
