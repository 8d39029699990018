package cl

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Kernel is a __kernel function of a built program together with its
// argument values. Setting arguments and enqueueing the kernel from several
// goroutines at once is a race, as in OpenCL; give each goroutine its own
// Kernel.
type Kernel struct {
	r       ref
	program *Program
	name    string

	mu      sync.Mutex
	buffers map[int]*MemObject // buffer arguments, kept reachable while set
}

func (k *Kernel) h() handle {
	if k == nil {
		return nil
	}
	return k.r.handle()
}

// Name returns the kernel's function name.
func (k *Kernel) Name() string { return k.name }

// Program returns the program the kernel was created from.
func (k *Kernel) Program() *Program { return k.program }

// Close releases the kernel. It is idempotent and returns the status of
// clReleaseKernel.
func (k *Kernel) Close() error {
	if k == nil {
		return nil
	}
	err := k.r.close()
	k.mu.Lock()
	k.buffers = nil
	k.mu.Unlock()
	return err
}

// LocalBuffer as a SetArg value reserves that many bytes of __local memory
// for a kernel argument.
type LocalBuffer int

// SetArgs sets the kernel's arguments in order; see SetArg.
func (k *Kernel) SetArgs(args ...any) error {
	for i, a := range args {
		if err := k.SetArg(i, a); err != nil {
			return err
		}
	}
	return nil
}

// SetArg sets argument index to arg, which may be:
//
//   - *MemObject: a __global or __constant buffer (nil for a NULL buffer);
//   - LocalBuffer: the size in bytes of a __local buffer;
//   - int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32,
//     float64: the OpenCL char, uchar, short, ushort, int, uint, long,
//     ulong, float, double;
//   - int, uint: passed as long and ulong (64 bits), so a kernel taking an
//     OpenCL int must be given an int32;
//   - complex64, complex128: float2 and double2.
//
// Any other type fails with an error matching ErrInvalidArgValue; use
// SetArgUnsafe for structs and vectors.
func (k *Kernel) SetArg(index int, arg any) error {
	switch v := arg.(type) {
	case *MemObject:
		return k.SetArgBuffer(index, v)
	case LocalBuffer:
		return k.SetArgLocal(index, int(v))
	case int8:
		return setScalar(k, index, v)
	case uint8:
		return setScalar(k, index, v)
	case int16:
		return setScalar(k, index, v)
	case uint16:
		return setScalar(k, index, v)
	case int32:
		return setScalar(k, index, v)
	case uint32:
		return setScalar(k, index, v)
	case int64:
		return setScalar(k, index, v)
	case uint64:
		return setScalar(k, index, v)
	case int:
		return setScalar(k, index, int64(v))
	case uint:
		return setScalar(k, index, uint64(v))
	case float32:
		return setScalar(k, index, v)
	case float64:
		return setScalar(k, index, v)
	case complex64:
		return setScalar(k, index, [2]float32{real(v), imag(v)})
	case complex128:
		return setScalar(k, index, [2]float64{real(v), imag(v)})
	}
	return fmt.Errorf("cl: kernel %s argument %d: unsupported Go type %T: %w", k.name, index, arg, ErrInvalidArgValue)
}

// setScalar passes a pointer to a copy of v, which holds no Go pointers.
func setScalar[T any](k *Kernel, index int, v T) error {
	err := k.SetArgUnsafe(index, int(unsafe.Sizeof(v)), unsafe.Pointer(&v))
	if err == nil {
		k.forgetBuffer(index)
	}
	return err
}

// SetArgBuffer sets argument index to buffer (nil for a NULL buffer). The
// kernel keeps buffer reachable until the argument is replaced or the kernel
// is closed, but does not own it: the caller still closes it.
func (k *Kernel) SetArgBuffer(index int, buffer *MemObject) error {
	if k.h() == nil {
		return closedError(k.argOp(index), ErrInvalidKernel)
	}
	var mh handle
	if buffer != nil {
		mh = buffer.h()
		if mh == nil {
			return closedError(k.argOp(index), ErrInvalidMemObject)
		}
	}
	err := k.SetArgUnsafe(index, int(unsafe.Sizeof(mh)), unsafe.Pointer(&mh))
	runtime.KeepAlive(buffer)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if buffer == nil {
		delete(k.buffers, index)
		return nil
	}
	if k.buffers == nil {
		k.buffers = make(map[int]*MemObject)
	}
	k.buffers[index] = buffer
	return nil
}

// SetArgLocal sets argument index to a __local buffer of size bytes.
func (k *Kernel) SetArgLocal(index int, size int) error {
	err := k.SetArgUnsafe(index, size, nil)
	if err == nil {
		k.forgetBuffer(index)
	}
	return err
}

// SetArgUnsafe passes argSize bytes at arg to clSetKernelArg, which copies
// them during the call. arg must not point to memory holding Go pointers.
func (k *Kernel) SetArgUnsafe(index, argSize int, arg unsafe.Pointer) error {
	op := k.argOp(index)
	h := k.h()
	if h == nil {
		return closedError(op, ErrInvalidKernel)
	}
	if index < 0 {
		return &Error{Op: op, Code: ErrInvalidArgIndex}
	}
	err := setKernelArg(h, index, argSize, arg, op)
	runtime.KeepAlive(k)
	return err
}

func (k *Kernel) argOp(index int) string {
	name := "<nil>"
	if k != nil {
		name = k.name
	}
	return "clSetKernelArg(" + name + ", " + strconv.Itoa(index) + ")"
}

func (k *Kernel) forgetBuffer(index int) {
	k.mu.Lock()
	delete(k.buffers, index)
	k.mu.Unlock()
}

// NumArgs returns CL_KERNEL_NUM_ARGS.
func (k *Kernel) NumArgs() (int, error) {
	const op = "clGetKernelInfo(CL_KERNEL_NUM_ARGS)"
	h := k.h()
	if h == nil {
		return 0, closedError(op, ErrInvalidKernel)
	}
	v, err := uintInfo(getKernelInfo(h, kernelNumArgs, "CL_KERNEL_NUM_ARGS"))
	runtime.KeepAlive(k)
	return int(v), err
}

func (k *Kernel) workGroupInfo(device *Device, param uint32, name string) ([]byte, error) {
	h := k.h()
	if h == nil {
		return nil, closedError("clGetKernelWorkGroupInfo("+name+")", ErrInvalidKernel)
	}
	var dh handle
	if device != nil {
		dh = device.id
	}
	b, err := getKernelWorkGroupInfo(h, dh, param, name)
	runtime.KeepAlive(k)
	return b, err
}

// WorkGroupSize returns CL_KERNEL_WORK_GROUP_SIZE, the largest work-group
// the kernel can be launched with on device (nil when the program has a
// single device).
func (k *Kernel) WorkGroupSize(device *Device) (int, error) {
	v, err := uintInfo(k.workGroupInfo(device, kernelWorkGroupSize, "CL_KERNEL_WORK_GROUP_SIZE"))
	return int(v), err
}

// PreferredWorkGroupSizeMultiple returns
// CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE (the SIMD width: warp or
// wavefront size on GPUs).
func (k *Kernel) PreferredWorkGroupSizeMultiple(device *Device) (int, error) {
	v, err := uintInfo(k.workGroupInfo(device, kernelPreferredWorkGroupSizeMultiple,
		"CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE"))
	return int(v), err
}

// LocalMemSize returns CL_KERNEL_LOCAL_MEM_SIZE, the __local memory in bytes
// the kernel uses with its current arguments.
func (k *Kernel) LocalMemSize(device *Device) (int64, error) {
	v, err := uintInfo(k.workGroupInfo(device, kernelLocalMemSize, "CL_KERNEL_LOCAL_MEM_SIZE"))
	return int64(v), err
}

// PrivateMemSize returns CL_KERNEL_PRIVATE_MEM_SIZE, the private memory in
// bytes each work item uses.
func (k *Kernel) PrivateMemSize(device *Device) (int64, error) {
	v, err := uintInfo(k.workGroupInfo(device, kernelPrivateMemSize, "CL_KERNEL_PRIVATE_MEM_SIZE"))
	return int64(v), err
}

// CompileWorkGroupSize returns CL_KERNEL_COMPILE_WORK_GROUP_SIZE, the size
// fixed by __attribute__((reqd_work_group_size(x, y, z))), or zeros.
func (k *Kernel) CompileWorkGroupSize(device *Device) ([3]int, error) {
	var out [3]int
	s, err := sizesInfo(k.workGroupInfo(device, kernelCompileWorkGroupSize, "CL_KERNEL_COMPILE_WORK_GROUP_SIZE"))
	copy(out[:], s)
	return out, err
}
