package cl

import (
	"errors"
	"strconv"
	"strings"
)

// ErrNotBuilt is wrapped by every error of a build without OpenCL
// (CGO_ENABLED=0 or -tags noopencl).
var ErrNotBuilt = errors.New("cl: built without OpenCL (rebuild with CGO_ENABLED=1 and without -tags noopencl)")

// InstallHint tells a user without a usable OpenCL platform how to get one.
// Callers that report ErrPlatformNotFound or ErrDeviceNotFound to people
// (cmd/clinfo, the GPU plugin's constructor) append it.
const InstallHint = "install an OpenCL driver (an ICD registered under /etc/OpenCL/vendors) and the ICD loader: " +
	"for a CPU implementation run `apt-get install pocl-opencl-icd ocl-icd-libopencl1`; " +
	"for a GPU install the vendor's OpenCL driver (e.g. nvidia-opencl-icd, intel-opencl-icd, rocm-opencl-runtime)"

// ErrorCode is an OpenCL status code (cl_int). Negative values are errors;
// each one is also a sentinel for errors.Is, so
// errors.Is(err, ErrOutOfResources) reports whether an OpenCL call behind
// err returned CL_OUT_OF_RESOURCES.
type ErrorCode int32

// The OpenCL 1.2 status codes, the 2.x/3.0 additions, and the extension
// codes that matter to a portable runtime. Names follow the C names
// (CL_INVALID_VALUE is ErrInvalidValue); the _KHR suffix is dropped.
const (
	ErrDeviceNotFound                     ErrorCode = -1
	ErrDeviceNotAvailable                 ErrorCode = -2
	ErrCompilerNotAvailable               ErrorCode = -3
	ErrMemObjectAllocationFailure         ErrorCode = -4
	ErrOutOfResources                     ErrorCode = -5
	ErrOutOfHostMemory                    ErrorCode = -6
	ErrProfilingInfoNotAvailable          ErrorCode = -7
	ErrMemCopyOverlap                     ErrorCode = -8
	ErrImageFormatMismatch                ErrorCode = -9
	ErrImageFormatNotSupported            ErrorCode = -10
	ErrBuildProgramFailure                ErrorCode = -11
	ErrMapFailure                         ErrorCode = -12
	ErrMisalignedSubBufferOffset          ErrorCode = -13
	ErrExecStatusErrorForEventsInWaitList ErrorCode = -14
	ErrCompileProgramFailure              ErrorCode = -15
	ErrLinkerNotAvailable                 ErrorCode = -16
	ErrLinkProgramFailure                 ErrorCode = -17
	ErrDevicePartitionFailed              ErrorCode = -18
	ErrKernelArgInfoNotAvailable          ErrorCode = -19
	ErrInvalidValue                       ErrorCode = -30
	ErrInvalidDeviceType                  ErrorCode = -31
	ErrInvalidPlatform                    ErrorCode = -32
	ErrInvalidDevice                      ErrorCode = -33
	ErrInvalidContext                     ErrorCode = -34
	ErrInvalidQueueProperties             ErrorCode = -35
	ErrInvalidCommandQueue                ErrorCode = -36
	ErrInvalidHostPtr                     ErrorCode = -37
	ErrInvalidMemObject                   ErrorCode = -38
	ErrInvalidImageFormatDescriptor       ErrorCode = -39
	ErrInvalidImageSize                   ErrorCode = -40
	ErrInvalidSampler                     ErrorCode = -41
	ErrInvalidBinary                      ErrorCode = -42
	ErrInvalidBuildOptions                ErrorCode = -43
	ErrInvalidProgram                     ErrorCode = -44
	ErrInvalidProgramExecutable           ErrorCode = -45
	ErrInvalidKernelName                  ErrorCode = -46
	ErrInvalidKernelDefinition            ErrorCode = -47
	ErrInvalidKernel                      ErrorCode = -48
	ErrInvalidArgIndex                    ErrorCode = -49
	ErrInvalidArgValue                    ErrorCode = -50
	ErrInvalidArgSize                     ErrorCode = -51
	ErrInvalidKernelArgs                  ErrorCode = -52
	ErrInvalidWorkDimension               ErrorCode = -53
	ErrInvalidWorkGroupSize               ErrorCode = -54
	ErrInvalidWorkItemSize                ErrorCode = -55
	ErrInvalidGlobalOffset                ErrorCode = -56
	ErrInvalidEventWaitList               ErrorCode = -57
	ErrInvalidEvent                       ErrorCode = -58
	ErrInvalidOperation                   ErrorCode = -59
	ErrInvalidGLObject                    ErrorCode = -60
	ErrInvalidBufferSize                  ErrorCode = -61
	ErrInvalidMipLevel                    ErrorCode = -62
	ErrInvalidGlobalWorkSize              ErrorCode = -63
	ErrInvalidProperty                    ErrorCode = -64
	ErrInvalidImageDescriptor             ErrorCode = -65
	ErrInvalidCompilerOptions             ErrorCode = -66
	ErrInvalidLinkerOptions               ErrorCode = -67
	ErrInvalidDevicePartitionCount        ErrorCode = -68
	ErrInvalidPipeSize                    ErrorCode = -69 // OpenCL 2.0
	ErrInvalidDeviceQueue                 ErrorCode = -70 // OpenCL 2.0
	ErrInvalidSpecID                      ErrorCode = -71 // OpenCL 2.2
	ErrMaxSizeRestrictionExceeded         ErrorCode = -72 // OpenCL 2.2

	ErrInvalidGLSharegroupReference ErrorCode = -1000 // cl_khr_gl_sharing
	// ErrPlatformNotFound (CL_PLATFORM_NOT_FOUND_KHR, cl_khr_icd) is what the
	// ICD loader returns when no OpenCL driver is installed.
	ErrPlatformNotFound  ErrorCode = -1001
	ErrContextTerminated ErrorCode = -1121 // cl_khr_terminate_context
)

// codeNames maps every status code known to the Khronos headers (core 1.0 to
// 3.0 and the registered extensions) to its C name. Where two extensions
// share a value (the KHR and Intel DX9 media codes) the KHR name wins.
var codeNames = map[ErrorCode]string{
	0:   "CL_SUCCESS",
	-1:  "CL_DEVICE_NOT_FOUND",
	-2:  "CL_DEVICE_NOT_AVAILABLE",
	-3:  "CL_COMPILER_NOT_AVAILABLE",
	-4:  "CL_MEM_OBJECT_ALLOCATION_FAILURE",
	-5:  "CL_OUT_OF_RESOURCES",
	-6:  "CL_OUT_OF_HOST_MEMORY",
	-7:  "CL_PROFILING_INFO_NOT_AVAILABLE",
	-8:  "CL_MEM_COPY_OVERLAP",
	-9:  "CL_IMAGE_FORMAT_MISMATCH",
	-10: "CL_IMAGE_FORMAT_NOT_SUPPORTED",
	-11: "CL_BUILD_PROGRAM_FAILURE",
	-12: "CL_MAP_FAILURE",
	-13: "CL_MISALIGNED_SUB_BUFFER_OFFSET",
	-14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE",
	-16: "CL_LINKER_NOT_AVAILABLE",
	-17: "CL_LINK_PROGRAM_FAILURE",
	-18: "CL_DEVICE_PARTITION_FAILED",
	-19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE",
	-31: "CL_INVALID_DEVICE_TYPE",
	-32: "CL_INVALID_PLATFORM",
	-33: "CL_INVALID_DEVICE",
	-34: "CL_INVALID_CONTEXT",
	-35: "CL_INVALID_QUEUE_PROPERTIES",
	-36: "CL_INVALID_COMMAND_QUEUE",
	-37: "CL_INVALID_HOST_PTR",
	-38: "CL_INVALID_MEM_OBJECT",
	-39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
	-40: "CL_INVALID_IMAGE_SIZE",
	-41: "CL_INVALID_SAMPLER",
	-42: "CL_INVALID_BINARY",
	-43: "CL_INVALID_BUILD_OPTIONS",
	-44: "CL_INVALID_PROGRAM",
	-45: "CL_INVALID_PROGRAM_EXECUTABLE",
	-46: "CL_INVALID_KERNEL_NAME",
	-47: "CL_INVALID_KERNEL_DEFINITION",
	-48: "CL_INVALID_KERNEL",
	-49: "CL_INVALID_ARG_INDEX",
	-50: "CL_INVALID_ARG_VALUE",
	-51: "CL_INVALID_ARG_SIZE",
	-52: "CL_INVALID_KERNEL_ARGS",
	-53: "CL_INVALID_WORK_DIMENSION",
	-54: "CL_INVALID_WORK_GROUP_SIZE",
	-55: "CL_INVALID_WORK_ITEM_SIZE",
	-56: "CL_INVALID_GLOBAL_OFFSET",
	-57: "CL_INVALID_EVENT_WAIT_LIST",
	-58: "CL_INVALID_EVENT",
	-59: "CL_INVALID_OPERATION",
	-60: "CL_INVALID_GL_OBJECT",
	-61: "CL_INVALID_BUFFER_SIZE",
	-62: "CL_INVALID_MIP_LEVEL",
	-63: "CL_INVALID_GLOBAL_WORK_SIZE",
	-64: "CL_INVALID_PROPERTY",
	-65: "CL_INVALID_IMAGE_DESCRIPTOR",
	-66: "CL_INVALID_COMPILER_OPTIONS",
	-67: "CL_INVALID_LINKER_OPTIONS",
	-68: "CL_INVALID_DEVICE_PARTITION_COUNT",
	-69: "CL_INVALID_PIPE_SIZE",
	-70: "CL_INVALID_DEVICE_QUEUE",
	-71: "CL_INVALID_SPEC_ID",
	-72: "CL_MAX_SIZE_RESTRICTION_EXCEEDED",

	-1000:  "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR",
	-1001:  "CL_PLATFORM_NOT_FOUND_KHR",
	-1002:  "CL_INVALID_D3D10_DEVICE_KHR",
	-1003:  "CL_INVALID_D3D10_RESOURCE_KHR",
	-1004:  "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR",
	-1005:  "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR",
	-1006:  "CL_INVALID_D3D11_DEVICE_KHR",
	-1007:  "CL_INVALID_D3D11_RESOURCE_KHR",
	-1008:  "CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR",
	-1009:  "CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR",
	-1010:  "CL_INVALID_DX9_MEDIA_ADAPTER_KHR",
	-1011:  "CL_INVALID_DX9_MEDIA_SURFACE_KHR",
	-1012:  "CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR",
	-1013:  "CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR",
	-1057:  "CL_DEVICE_PARTITION_FAILED_EXT",
	-1058:  "CL_INVALID_PARTITION_COUNT_EXT",
	-1059:  "CL_INVALID_PARTITION_NAME_EXT",
	-1092:  "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR",
	-1093:  "CL_INVALID_EGL_OBJECT_KHR",
	-1094:  "CL_INVALID_ACCELERATOR_INTEL",
	-1095:  "CL_INVALID_ACCELERATOR_TYPE_INTEL",
	-1096:  "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL",
	-1097:  "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL",
	-1098:  "CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL",
	-1099:  "CL_INVALID_VA_API_MEDIA_SURFACE_INTEL",
	-1100:  "CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL",
	-1101:  "CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL",
	-1108:  "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM",
	-1121:  "CL_CONTEXT_TERMINATED_KHR",
	-1138:  "CL_INVALID_COMMAND_BUFFER_KHR",
	-1139:  "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR",
	-1140:  "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR",
	-1141:  "CL_INVALID_MUTABLE_COMMAND_KHR",
	-1142:  "CL_INVALID_SEMAPHORE_KHR",
	0x40D4: "CL_GRALLOC_RESOURCE_NOT_ACQUIRED_IMG",
	0x40D5: "CL_INVALID_GRALLOC_OBJECT_IMG",
}

// String returns the C name of c ("CL_OUT_OF_RESOURCES"), or
// "CL_UNKNOWN_ERROR(-9999)" for a code no header defines.
func (c ErrorCode) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return "CL_UNKNOWN_ERROR(" + strconv.Itoa(int(c)) + ")"
}

// Error returns the C name of c, so that an ErrorCode is itself an error and
// can be the target of errors.Is.
func (c ErrorCode) Error() string { return c.String() }

// Error is a failed OpenCL call: Op names the call (and, for info queries
// and kernel arguments, what it was asked), Code is the status it returned.
type Error struct {
	Op   string
	Code ErrorCode
}

// Error formats e as "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES".
func (e *Error) Error() string { return e.Op + ": " + e.Code.String() }

// Unwrap returns e.Code, so errors.As(err, &code) extracts the status.
func (e *Error) Unwrap() error { return e.Code }

// Is reports whether e matches target: an ErrorCode with the same code, or an
// *Error with the same code and, where target.Op is set, the same call.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case ErrorCode:
		return e.Code == t
	case *Error:
		return t != nil && e.Code == t.Code && (t.Op == "" || t.Op == e.Op)
	}
	return false
}

// newError returns nil for CL_SUCCESS and an *Error naming op otherwise.
func newError(op string, code int32) error {
	if code == 0 {
		return nil
	}
	return &Error{Op: op, Code: ErrorCode(code)}
}

// BuildLog is the build log one device wrote while building a program.
type BuildLog struct {
	Device     *Device
	DeviceName string
	Log        string
}

// BuildError is a failed Program.BuildProgram: the *Error of clBuildProgram
// (CL_BUILD_PROGRAM_FAILURE) and the build log of every device the program
// was built for. errors.Is(err, ErrBuildProgramFailure) holds for it.
type BuildError struct {
	Err  *Error
	Logs []BuildLog
}

// Error returns the failing call followed by each device's build log.
func (e *BuildError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	for _, l := range e.Logs {
		b.WriteString("\nbuild log for ")
		b.WriteString(l.DeviceName)
		b.WriteString(":\n")
		b.WriteString(strings.TrimRight(l.Log, "\n\x00 "))
	}
	return b.String()
}

// Unwrap returns the *Error of clBuildProgram.
func (e *BuildError) Unwrap() error { return e.Err }

// Log returns the build logs of all devices, concatenated.
func (e *BuildError) Log() string {
	var b strings.Builder
	for i, l := range e.Logs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.Log)
	}
	return b.String()
}
