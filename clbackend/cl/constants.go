package cl

import (
	"strconv"
	"strings"
)

// The numeric values below are those of the Khronos headers; driver_cgo.go
// checks them against the installed CL/cl.h at compile time.

// DeviceType is a cl_device_type bit field.
type DeviceType uint64

// Device types, as in go-opencl.
const (
	DeviceTypeDefault     DeviceType = 1 << 0
	DeviceTypeCPU         DeviceType = 1 << 1
	DeviceTypeGPU         DeviceType = 1 << 2
	DeviceTypeAccelerator DeviceType = 1 << 3
	DeviceTypeCustom      DeviceType = 1 << 4
	DeviceTypeAll         DeviceType = 0xFFFFFFFF
)

// String names the types set in t, joined by "|" ("GPU", "CPU|DEFAULT").
func (t DeviceType) String() string {
	if t == DeviceTypeAll {
		return "ALL"
	}
	return bitNames(uint64(t), []string{"DEFAULT", "CPU", "GPU", "ACCELERATOR", "CUSTOM"})
}

// MarshalText encodes t as its String, so JSON output reads "GPU".
func (t DeviceType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// CommandQueueProperty is a cl_command_queue_properties bit field.
type CommandQueueProperty uint64

// Command queue properties.
const (
	CommandQueueOutOfOrderExecModeEnable CommandQueueProperty = 1 << 0
	CommandQueueProfilingEnable          CommandQueueProperty = 1 << 1
)

// String names the properties set in p.
func (p CommandQueueProperty) String() string {
	return bitNames(uint64(p), []string{"OUT_OF_ORDER_EXEC_MODE_ENABLE", "PROFILING_ENABLE"})
}

// MarshalText encodes p as its String.
func (p CommandQueueProperty) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// MemFlag is a cl_mem_flags bit field.
type MemFlag uint64

// Memory object flags.
const (
	MemReadWrite     MemFlag = 1 << 0
	MemWriteOnly     MemFlag = 1 << 1
	MemReadOnly      MemFlag = 1 << 2
	MemUseHostPtr    MemFlag = 1 << 3
	MemAllocHostPtr  MemFlag = 1 << 4
	MemCopyHostPtr   MemFlag = 1 << 5
	MemHostWriteOnly MemFlag = 1 << 7
	MemHostReadOnly  MemFlag = 1 << 8
	MemHostNoAccess  MemFlag = 1 << 9
)

// String names the flags set in f ("READ_WRITE|COPY_HOST_PTR").
func (f MemFlag) String() string {
	return bitNames(uint64(f), []string{"READ_WRITE", "WRITE_ONLY", "READ_ONLY", "USE_HOST_PTR",
		"ALLOC_HOST_PTR", "COPY_HOST_PTR", "", "HOST_WRITE_ONLY", "HOST_READ_ONLY", "HOST_NO_ACCESS"})
}

// MapFlag is a cl_map_flags bit field.
type MapFlag uint64

// Map flags.
const (
	MapFlagRead                  MapFlag = 1 << 0
	MapFlagWrite                 MapFlag = 1 << 1
	MapFlagWriteInvalidateRegion MapFlag = 1 << 2
)

// String names the flags set in f ("READ|WRITE").
func (f MapFlag) String() string {
	return bitNames(uint64(f), []string{"READ", "WRITE", "WRITE_INVALIDATE_REGION"})
}

// ProfilingInfo selects a timestamp of Event.GetEventProfilingInfo.
type ProfilingInfo uint32

// Profiling timestamps, in device nanoseconds.
const (
	ProfilingInfoCommandQueued ProfilingInfo = 0x1280
	ProfilingInfoCommandSubmit ProfilingInfo = 0x1281
	ProfilingInfoCommandStart  ProfilingInfo = 0x1282
	ProfilingInfoCommandEnd    ProfilingInfo = 0x1283
)

// CommandExecStatus is the execution status of the command behind an event.
// A negative value is the ErrorCode of a command that terminated abnormally.
type CommandExecStatus int32

// Command execution statuses.
const (
	CommandExecStatusComplete  CommandExecStatus = 0
	CommandExecStatusRunning   CommandExecStatus = 1
	CommandExecStatusSubmitted CommandExecStatus = 2
	CommandExecStatusQueued    CommandExecStatus = 3
)

// String returns "CL_COMPLETE", "CL_RUNNING", "CL_SUBMITTED", "CL_QUEUED", or
// the error name of a negative status.
func (s CommandExecStatus) String() string {
	switch s {
	case CommandExecStatusComplete:
		return "CL_COMPLETE"
	case CommandExecStatusRunning:
		return "CL_RUNNING"
	case CommandExecStatusSubmitted:
		return "CL_SUBMITTED"
	case CommandExecStatusQueued:
		return "CL_QUEUED"
	}
	return ErrorCode(s).String()
}

// Err returns nil for a non-negative status and the ErrorCode of an
// abnormally terminated command otherwise.
func (s CommandExecStatus) Err() error {
	if s >= 0 {
		return nil
	}
	return ErrorCode(s)
}

// CommandType is the kind of command an event belongs to.
type CommandType uint32

// Command types of OpenCL 1.2.
const (
	CommandNDRangeKernel     CommandType = 0x11F0
	CommandTask              CommandType = 0x11F1
	CommandNativeKernel      CommandType = 0x11F2
	CommandReadBuffer        CommandType = 0x11F3
	CommandWriteBuffer       CommandType = 0x11F4
	CommandCopyBuffer        CommandType = 0x11F5
	CommandReadImage         CommandType = 0x11F6
	CommandWriteImage        CommandType = 0x11F7
	CommandCopyImage         CommandType = 0x11F8
	CommandCopyImageToBuffer CommandType = 0x11F9
	CommandCopyBufferToImage CommandType = 0x11FA
	CommandMapBuffer         CommandType = 0x11FB
	CommandMapImage          CommandType = 0x11FC
	CommandUnmapMemObject    CommandType = 0x11FD
	CommandMarker            CommandType = 0x11FE
	CommandAcquireGLObjects  CommandType = 0x11FF
	CommandReleaseGLObjects  CommandType = 0x1200
	CommandReadBufferRect    CommandType = 0x1201
	CommandWriteBufferRect   CommandType = 0x1202
	CommandCopyBufferRect    CommandType = 0x1203
	CommandUser              CommandType = 0x1204
	CommandBarrier           CommandType = 0x1205
	CommandMigrateMemObjects CommandType = 0x1206
	CommandFillBuffer        CommandType = 0x1207
	CommandFillImage         CommandType = 0x1208
)

// commandTypeNames lists the names of CommandNDRangeKernel..CommandFillImage.
var commandTypeNames = [...]string{
	"NDRANGE_KERNEL", "TASK", "NATIVE_KERNEL", "READ_BUFFER", "WRITE_BUFFER", "COPY_BUFFER",
	"READ_IMAGE", "WRITE_IMAGE", "COPY_IMAGE", "COPY_IMAGE_TO_BUFFER", "COPY_BUFFER_TO_IMAGE",
	"MAP_BUFFER", "MAP_IMAGE", "UNMAP_MEM_OBJECT", "MARKER", "ACQUIRE_GL_OBJECTS",
	"RELEASE_GL_OBJECTS", "READ_BUFFER_RECT", "WRITE_BUFFER_RECT", "COPY_BUFFER_RECT", "USER",
	"BARRIER", "MIGRATE_MEM_OBJECTS", "FILL_BUFFER", "FILL_IMAGE",
}

// String returns the C name without its prefix ("NDRANGE_KERNEL").
func (c CommandType) String() string {
	if i := int(c) - int(CommandNDRangeKernel); i >= 0 && i < len(commandTypeNames) {
		return commandTypeNames[i]
	}
	return "COMMAND_0x" + strconv.FormatUint(uint64(c), 16)
}

// FPConfig is a cl_device_fp_config bit field.
type FPConfig uint64

// Floating-point capabilities.
const (
	FPConfigDenorm                     FPConfig = 1 << 0
	FPConfigInfNaN                     FPConfig = 1 << 1
	FPConfigRoundToNearest             FPConfig = 1 << 2
	FPConfigRoundToZero                FPConfig = 1 << 3
	FPConfigRoundToInf                 FPConfig = 1 << 4
	FPConfigFMA                        FPConfig = 1 << 5
	FPConfigSoftFloat                  FPConfig = 1 << 6
	FPConfigCorrectlyRoundedDivideSqrt FPConfig = 1 << 7
)

// String names the capabilities set in c.
func (c FPConfig) String() string {
	return bitNames(uint64(c), []string{"DENORM", "INF_NAN", "ROUND_TO_NEAREST", "ROUND_TO_ZERO",
		"ROUND_TO_INF", "FMA", "SOFT_FLOAT", "CORRECTLY_ROUNDED_DIVIDE_SQRT"})
}

// MarshalText encodes c as its String.
func (c FPConfig) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// LocalMemType says whether a device's local memory is dedicated.
type LocalMemType uint32

// Local memory types.
const (
	LocalMemTypeNone   LocalMemType = 0
	LocalMemTypeLocal  LocalMemType = 1
	LocalMemTypeGlobal LocalMemType = 2
)

// String returns "NONE", "LOCAL" or "GLOBAL".
func (t LocalMemType) String() string {
	switch t {
	case LocalMemTypeNone:
		return "NONE"
	case LocalMemTypeLocal:
		return "LOCAL"
	case LocalMemTypeGlobal:
		return "GLOBAL"
	}
	return "LOCAL_MEM_TYPE_" + strconv.Itoa(int(t))
}

// MarshalText encodes t as its String.
func (t LocalMemType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// BuildStatus is the state of a program's build for one device.
type BuildStatus int32

// Build statuses.
const (
	BuildStatusSuccess    BuildStatus = 0
	BuildStatusNone       BuildStatus = -1
	BuildStatusError      BuildStatus = -2
	BuildStatusInProgress BuildStatus = -3
)

// String returns the C name of s.
func (s BuildStatus) String() string {
	switch s {
	case BuildStatusSuccess:
		return "CL_BUILD_SUCCESS"
	case BuildStatusNone:
		return "CL_BUILD_NONE"
	case BuildStatusError:
		return "CL_BUILD_ERROR"
	case BuildStatusInProgress:
		return "CL_BUILD_IN_PROGRESS"
	}
	return "CL_BUILD_STATUS(" + strconv.Itoa(int(s)) + ")"
}

func bitNames(v uint64, names []string) string {
	if v == 0 {
		return "NONE"
	}
	var parts []string
	for i, n := range names {
		if n != "" && v&(1<<i) != 0 {
			parts = append(parts, n)
			v &^= 1 << i
		}
	}
	if v != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(v, 16))
	}
	return strings.Join(parts, "|")
}

// Info parameter names passed to the clGet*Info calls.
const (
	platformProfile    = 0x0900
	platformVersion    = 0x0901
	platformName       = 0x0902
	platformVendor     = 0x0903
	platformExtensions = 0x0904
	platformICDSuffix  = 0x0920 // cl_khr_icd

	deviceType                     = 0x1000
	deviceVendorID                 = 0x1001
	deviceMaxComputeUnits          = 0x1002
	deviceMaxWorkItemDimensions    = 0x1003
	deviceMaxWorkGroupSize         = 0x1004
	deviceMaxWorkItemSizes         = 0x1005
	devicePreferredVectorWidthChar = 0x1006 // ..0x100B: short, int, long, float, double
	deviceMaxClockFrequency        = 0x100C
	deviceAddressBits              = 0x100D
	deviceMaxMemAllocSize          = 0x1010
	deviceImageSupport             = 0x1016
	deviceMaxParameterSize         = 0x1017
	deviceMemBaseAddrAlign         = 0x1019
	deviceSingleFPConfig           = 0x101B
	deviceGlobalMemCachelineSize   = 0x101D
	deviceGlobalMemCacheSize       = 0x101E
	deviceGlobalMemSize            = 0x101F
	deviceMaxConstantBufferSize    = 0x1020
	deviceMaxConstantArgs          = 0x1021
	deviceLocalMemType             = 0x1022
	deviceLocalMemSize             = 0x1023
	deviceErrorCorrectionSupport   = 0x1024
	deviceProfilingTimerResolution = 0x1025
	deviceEndianLittle             = 0x1026
	deviceAvailable                = 0x1027
	deviceCompilerAvailable        = 0x1028
	deviceQueueProperties          = 0x102A
	deviceName                     = 0x102B
	deviceVendor                   = 0x102C
	driverVersion                  = 0x102D
	deviceProfile                  = 0x102E
	deviceVersion                  = 0x102F
	deviceExtensions               = 0x1030
	deviceDoubleFPConfig           = 0x1032
	deviceHalfFPConfig             = 0x1033 // cl_khr_fp16
	devicePreferredVectorWidthHalf = 0x1034
	deviceHostUnifiedMemory        = 0x1035
	deviceNativeVectorWidthChar    = 0x1036 // ..0x103B: short, int, long, float, double
	deviceNativeVectorWidthHalf    = 0x103C
	deviceOpenCLCVersion           = 0x103D
	deviceLinkerAvailable          = 0x103E
	devicePrintfBufferSize         = 0x1049
	deviceSVMCapabilities          = 0x1053 // OpenCL 2.0
	deviceMaxNumSubGroups          = 0x105C // OpenCL 2.1
	devicePreferredWGSizeMultiple  = 0x1067 // OpenCL 3.0
	deviceUUID                     = 0x106A // cl_khr_device_uuid
	driverUUID                     = 0x106B // cl_khr_device_uuid

	devicePlatform = 0x1031

	contextReferenceCount = 0x1080
	contextDevices        = 0x1081

	queueContext        = 0x1090
	queueDevice         = 0x1091
	queueReferenceCount = 0x1092
	queueProperties     = 0x1093
	queuePriorityKHR    = 0x1096 // cl_khr_priority_hints
	queueThrottleKHR    = 0x1097 // cl_khr_throttle_hints

	memType           = 0x1100
	memFlags          = 0x1101
	memSize           = 0x1102
	memReferenceCount = 0x1105
	memContext        = 0x1106
	memObjectBuffer   = 0x10F0

	programBinarySizes = 0x1165
	programNumKernels  = 0x1167
	programKernelNames = 0x1168
	programBuildStatus = 0x1181
	programBuildLog    = 0x1183

	kernelFunctionName                   = 0x1190
	kernelNumArgs                        = 0x1191
	kernelWorkGroupSize                  = 0x11B0
	kernelCompileWorkGroupSize           = 0x11B1
	kernelLocalMemSize                   = 0x11B2
	kernelPreferredWorkGroupSizeMultiple = 0x11B3
	kernelPrivateMemSize                 = 0x11B4

	eventCommandType            = 0x11D1
	eventCommandExecutionStatus = 0x11D3
)
