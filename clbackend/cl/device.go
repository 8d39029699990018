package cl

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Device is an OpenCL device of a platform. Root devices are not reference
// counted and need no Close. Two *Device values for the same device compare
// equal with Equal, not with ==.
type Device struct {
	id       handle
	platform *Platform
}

// Platform returns the platform the device belongs to.
func (d *Device) Platform() *Platform {
	if d == nil {
		return nil
	}
	return d.platform
}

// Equal reports whether d and o are the same OpenCL device.
func (d *Device) Equal(o *Device) bool { return d != nil && o != nil && d.id == o.id }

func (d *Device) info(param uint32, name string) ([]byte, error) {
	if d == nil {
		return nil, &Error{Op: "clGetDeviceInfo(" + name + ")", Code: ErrInvalidDevice}
	}
	return getDeviceInfo(d.id, param, name)
}

func (d *Device) str(param uint32, name string) (string, error) {
	b, err := d.info(param, name)
	return cString(b), err
}

func (d *Device) uint(param uint32, name string) (uint64, error) {
	return uintInfo(d.info(param, name))
}

func (d *Device) int(param uint32, name string) (int, error) {
	v, err := d.uint(param, name)
	return int(v), err
}

func (d *Device) int64(param uint32, name string) (int64, error) {
	v, err := d.uint(param, name)
	return int64(v), err
}

func (d *Device) bool(param uint32, name string) (bool, error) {
	v, err := d.uint(param, name)
	return v != 0, err
}

// Name returns CL_DEVICE_NAME.
func (d *Device) Name() (string, error) { return d.str(deviceName, "CL_DEVICE_NAME") }

// Vendor returns CL_DEVICE_VENDOR.
func (d *Device) Vendor() (string, error) { return d.str(deviceVendor, "CL_DEVICE_VENDOR") }

// VendorID returns CL_DEVICE_VENDOR_ID (the PCI vendor ID on most GPUs).
func (d *Device) VendorID() (uint32, error) {
	v, err := d.uint(deviceVendorID, "CL_DEVICE_VENDOR_ID")
	return uint32(v), err
}

// Version returns CL_DEVICE_VERSION ("OpenCL 1.2 <vendor-specific>").
func (d *Device) Version() (string, error) { return d.str(deviceVersion, "CL_DEVICE_VERSION") }

// OpenCLVersion returns the version number in CL_DEVICE_VERSION.
func (d *Device) OpenCLVersion() (Version, error) {
	s, err := d.Version()
	if err != nil {
		return Version{}, err
	}
	return ParseVersion(s)
}

// DriverVersion returns CL_DRIVER_VERSION.
func (d *Device) DriverVersion() (string, error) { return d.str(driverVersion, "CL_DRIVER_VERSION") }

// OpenCLCVersion returns CL_DEVICE_OPENCL_C_VERSION ("OpenCL C 1.2 …").
func (d *Device) OpenCLCVersion() (string, error) {
	return d.str(deviceOpenCLCVersion, "CL_DEVICE_OPENCL_C_VERSION")
}

// Profile returns CL_DEVICE_PROFILE: FULL_PROFILE or EMBEDDED_PROFILE.
func (d *Device) Profile() (string, error) { return d.str(deviceProfile, "CL_DEVICE_PROFILE") }

// Type returns CL_DEVICE_TYPE.
func (d *Device) Type() (DeviceType, error) {
	v, err := d.uint(deviceType, "CL_DEVICE_TYPE")
	return DeviceType(v), err
}

// Available returns CL_DEVICE_AVAILABLE.
func (d *Device) Available() (bool, error) { return d.bool(deviceAvailable, "CL_DEVICE_AVAILABLE") }

// CompilerAvailable returns CL_DEVICE_COMPILER_AVAILABLE: whether programs
// can be built from source.
func (d *Device) CompilerAvailable() (bool, error) {
	return d.bool(deviceCompilerAvailable, "CL_DEVICE_COMPILER_AVAILABLE")
}

// LinkerAvailable returns CL_DEVICE_LINKER_AVAILABLE.
func (d *Device) LinkerAvailable() (bool, error) {
	return d.bool(deviceLinkerAvailable, "CL_DEVICE_LINKER_AVAILABLE")
}

// MaxComputeUnits returns CL_DEVICE_MAX_COMPUTE_UNITS.
func (d *Device) MaxComputeUnits() (int, error) {
	return d.int(deviceMaxComputeUnits, "CL_DEVICE_MAX_COMPUTE_UNITS")
}

// MaxClockFrequency returns CL_DEVICE_MAX_CLOCK_FREQUENCY in MHz.
func (d *Device) MaxClockFrequency() (int, error) {
	return d.int(deviceMaxClockFrequency, "CL_DEVICE_MAX_CLOCK_FREQUENCY")
}

// GlobalMemSize returns CL_DEVICE_GLOBAL_MEM_SIZE in bytes.
func (d *Device) GlobalMemSize() (int64, error) {
	return d.int64(deviceGlobalMemSize, "CL_DEVICE_GLOBAL_MEM_SIZE")
}

// GlobalMemCacheSize returns CL_DEVICE_GLOBAL_MEM_CACHE_SIZE in bytes.
func (d *Device) GlobalMemCacheSize() (int64, error) {
	return d.int64(deviceGlobalMemCacheSize, "CL_DEVICE_GLOBAL_MEM_CACHE_SIZE")
}

// GlobalMemCachelineSize returns CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE in bytes.
func (d *Device) GlobalMemCachelineSize() (int, error) {
	return d.int(deviceGlobalMemCachelineSize, "CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE")
}

// LocalMemSize returns CL_DEVICE_LOCAL_MEM_SIZE in bytes.
func (d *Device) LocalMemSize() (int64, error) {
	return d.int64(deviceLocalMemSize, "CL_DEVICE_LOCAL_MEM_SIZE")
}

// LocalMemType returns CL_DEVICE_LOCAL_MEM_TYPE.
func (d *Device) LocalMemType() (LocalMemType, error) {
	v, err := d.uint(deviceLocalMemType, "CL_DEVICE_LOCAL_MEM_TYPE")
	return LocalMemType(v), err
}

// MaxMemAllocSize returns CL_DEVICE_MAX_MEM_ALLOC_SIZE, the largest buffer in
// bytes.
func (d *Device) MaxMemAllocSize() (int64, error) {
	return d.int64(deviceMaxMemAllocSize, "CL_DEVICE_MAX_MEM_ALLOC_SIZE")
}

// MaxConstantBufferSize returns CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE in bytes.
func (d *Device) MaxConstantBufferSize() (int64, error) {
	return d.int64(deviceMaxConstantBufferSize, "CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE")
}

// MaxConstantArgs returns CL_DEVICE_MAX_CONSTANT_ARGS.
func (d *Device) MaxConstantArgs() (int, error) {
	return d.int(deviceMaxConstantArgs, "CL_DEVICE_MAX_CONSTANT_ARGS")
}

// MaxParameterSize returns CL_DEVICE_MAX_PARAMETER_SIZE, the most bytes of
// kernel arguments.
func (d *Device) MaxParameterSize() (int, error) {
	return d.int(deviceMaxParameterSize, "CL_DEVICE_MAX_PARAMETER_SIZE")
}

// MemBaseAddrAlign returns CL_DEVICE_MEM_BASE_ADDR_ALIGN in bits; sub-buffer
// origins must be multiples of it.
func (d *Device) MemBaseAddrAlign() (int, error) {
	return d.int(deviceMemBaseAddrAlign, "CL_DEVICE_MEM_BASE_ADDR_ALIGN")
}

// MaxWorkGroupSize returns CL_DEVICE_MAX_WORK_GROUP_SIZE.
func (d *Device) MaxWorkGroupSize() (int, error) {
	return d.int(deviceMaxWorkGroupSize, "CL_DEVICE_MAX_WORK_GROUP_SIZE")
}

// PreferredWorkGroupSizeMultiple returns the device's
// CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE (OpenCL 3.0: the SIMD width
// work groups should be a multiple of: a warp, a wavefront); older devices
// fail the query, and a kernel's own
// (Kernel.PreferredWorkGroupSizeMultiple) answers for them.
func (d *Device) PreferredWorkGroupSizeMultiple() (int, error) {
	return d.int(devicePreferredWGSizeMultiple, "CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE")
}

// MaxWorkItemDimensions returns CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS.
func (d *Device) MaxWorkItemDimensions() (int, error) {
	return d.int(deviceMaxWorkItemDimensions, "CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS")
}

// MaxWorkItemSizes returns CL_DEVICE_MAX_WORK_ITEM_SIZES, one entry per
// dimension.
func (d *Device) MaxWorkItemSizes() ([]int, error) {
	return sizesInfo(d.info(deviceMaxWorkItemSizes, "CL_DEVICE_MAX_WORK_ITEM_SIZES"))
}

// AddressBits returns CL_DEVICE_ADDRESS_BITS (32 or 64).
func (d *Device) AddressBits() (int, error) {
	return d.int(deviceAddressBits, "CL_DEVICE_ADDRESS_BITS")
}

// ImageSupport returns CL_DEVICE_IMAGE_SUPPORT.
func (d *Device) ImageSupport() (bool, error) {
	return d.bool(deviceImageSupport, "CL_DEVICE_IMAGE_SUPPORT")
}

// EndianLittle returns CL_DEVICE_ENDIAN_LITTLE.
func (d *Device) EndianLittle() (bool, error) {
	return d.bool(deviceEndianLittle, "CL_DEVICE_ENDIAN_LITTLE")
}

// ErrorCorrectionSupport returns CL_DEVICE_ERROR_CORRECTION_SUPPORT.
func (d *Device) ErrorCorrectionSupport() (bool, error) {
	return d.bool(deviceErrorCorrectionSupport, "CL_DEVICE_ERROR_CORRECTION_SUPPORT")
}

// HostUnifiedMemory returns CL_DEVICE_HOST_UNIFIED_MEMORY: whether the device
// shares memory with the host (integrated GPUs, CPU devices), which makes
// mapping buffers cheaper than copying them.
func (d *Device) HostUnifiedMemory() (bool, error) {
	return d.bool(deviceHostUnifiedMemory, "CL_DEVICE_HOST_UNIFIED_MEMORY")
}

// ProfilingTimerResolution returns CL_DEVICE_PROFILING_TIMER_RESOLUTION.
func (d *Device) ProfilingTimerResolution() (time.Duration, error) {
	v, err := d.uint(deviceProfilingTimerResolution, "CL_DEVICE_PROFILING_TIMER_RESOLUTION")
	return time.Duration(v), err
}

// QueueProperties returns CL_DEVICE_QUEUE_PROPERTIES, the command queue
// properties the device supports.
func (d *Device) QueueProperties() (CommandQueueProperty, error) {
	v, err := d.uint(deviceQueueProperties, "CL_DEVICE_QUEUE_PROPERTIES")
	return CommandQueueProperty(v), err
}

// SingleFPConfig returns CL_DEVICE_SINGLE_FP_CONFIG.
func (d *Device) SingleFPConfig() (FPConfig, error) {
	v, err := d.uint(deviceSingleFPConfig, "CL_DEVICE_SINGLE_FP_CONFIG")
	return FPConfig(v), err
}

// DoubleFPConfig returns CL_DEVICE_DOUBLE_FP_CONFIG; 0 when the device has no
// double precision.
func (d *Device) DoubleFPConfig() (FPConfig, error) {
	v, err := d.uint(deviceDoubleFPConfig, "CL_DEVICE_DOUBLE_FP_CONFIG")
	return FPConfig(v), err
}

// HalfFPConfig returns CL_DEVICE_HALF_FP_CONFIG; 0 when the device does not
// report cl_khr_fp16 (many drivers reject the query then).
func (d *Device) HalfFPConfig() (FPConfig, error) {
	ok, err := d.HasExtension("cl_khr_fp16")
	if err != nil || !ok {
		return 0, err
	}
	v, err := d.uint(deviceHalfFPConfig, "CL_DEVICE_HALF_FP_CONFIG")
	return FPConfig(v), err
}

// Extensions returns the names in CL_DEVICE_EXTENSIONS.
func (d *Device) Extensions() ([]string, error) {
	s, err := d.str(deviceExtensions, "CL_DEVICE_EXTENSIONS")
	return strings.Fields(s), err
}

// HasExtension reports whether CL_DEVICE_EXTENSIONS lists name.
func (d *Device) HasExtension(name string) (bool, error) {
	exts, err := d.Extensions()
	return slices.Contains(exts, name), err
}

// Device info of cl_khr_integer_dot_product.
const (
	deviceIntegerDotProductCapabilities          = 0x1073 // CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR
	deviceIntegerDotProductAcceleration4x8Packed = 0x1075 // CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR
	integerDotProductInput4x8BitPacked           = 1 << 0 // CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_PACKED_KHR
)

// IntegerDot4x8Packed reports cl_khr_integer_dot_product's packed 4x8-bit
// dot products (dot_4x8packed_*): has is the extension with the packed
// input in its capabilities; accelerated is has with the packed form's
// acceleration properties saying its signed, unsigned and mixed-signedness
// products are all accelerated (faster than the device's own emulation of
// them). A device without the extension reports false, false, nil.
func (d *Device) IntegerDot4x8Packed() (has, accelerated bool, err error) {
	ok, err := d.HasExtension("cl_khr_integer_dot_product")
	if err != nil || !ok {
		return false, false, err
	}
	caps, err := d.uint(deviceIntegerDotProductCapabilities, "CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR")
	if err != nil || caps&integerDotProductInput4x8BitPacked == 0 {
		return false, false, err
	}
	// cl_device_integer_dot_product_acceleration_properties_khr: six
	// cl_bools, the signed, unsigned and mixed-signedness products first.
	b, err := d.info(deviceIntegerDotProductAcceleration4x8Packed, "CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR")
	if err != nil || len(b) < 12 {
		return true, false, err
	}
	acc := binary.NativeEndian.Uint32(b[0:]) != 0 && binary.NativeEndian.Uint32(b[4:]) != 0 && binary.NativeEndian.Uint32(b[8:]) != 0
	return true, acc, nil
}

// HasFP16 reports whether kernels can compute in half precision
// (cl_khr_fp16).
func (d *Device) HasFP16() (bool, error) { return d.HasExtension("cl_khr_fp16") }

// HasFP64 reports whether kernels can compute in double precision
// (cl_khr_fp64, or AMD's older cl_amd_fp64).
func (d *Device) HasFP64() (bool, error) {
	exts, err := d.Extensions()
	return slices.Contains(exts, "cl_khr_fp64") || slices.Contains(exts, "cl_amd_fp64"), err
}

// VectorWidths holds a device's preferred or native vector width for each
// scalar type; 0 means the type is not supported.
type VectorWidths struct {
	Char   int `json:"char"`
	Short  int `json:"short"`
	Int    int `json:"int"`
	Long   int `json:"long"`
	Float  int `json:"float"`
	Double int `json:"double"`
	Half   int `json:"half"`
}

func (d *Device) vectorWidths(first, half uint32, prefix string) (VectorWidths, error) {
	var q querier
	get := func(param uint32, name string) int {
		v, err := d.int(param, prefix+name)
		q.keep(err)
		return v
	}
	w := VectorWidths{
		Char:   get(first, "CHAR"),
		Short:  get(first+1, "SHORT"),
		Int:    get(first+2, "INT"),
		Long:   get(first+3, "LONG"),
		Float:  get(first+4, "FLOAT"),
		Double: get(first+5, "DOUBLE"),
		Half:   get(half, "HALF"),
	}
	return w, q.err
}

// PreferredVectorWidths returns CL_DEVICE_PREFERRED_VECTOR_WIDTH_<type> for
// every type: the width kernels should be vectorised to.
func (d *Device) PreferredVectorWidths() (VectorWidths, error) {
	return d.vectorWidths(devicePreferredVectorWidthChar, devicePreferredVectorWidthHalf,
		"CL_DEVICE_PREFERRED_VECTOR_WIDTH_")
}

// NativeVectorWidths returns CL_DEVICE_NATIVE_VECTOR_WIDTH_<type> for every
// type: the width of the hardware's vector registers.
func (d *Device) NativeVectorWidths() (VectorWidths, error) {
	return d.vectorWidths(deviceNativeVectorWidthChar, deviceNativeVectorWidthHalf,
		"CL_DEVICE_NATIVE_VECTOR_WIDTH_")
}

// MaxNumSubGroups returns CL_DEVICE_MAX_NUM_SUB_GROUPS on OpenCL 2.1 and
// later devices, and 0 on older ones, where the query does not exist.
func (d *Device) MaxNumSubGroups() (int, error) {
	v, err := d.OpenCLVersion()
	if err != nil || !v.AtLeast(2, 1) {
		return 0, err
	}
	return d.int(deviceMaxNumSubGroups, "CL_DEVICE_MAX_NUM_SUB_GROUPS")
}

// UUID is a device or driver UUID (cl_khr_device_uuid).
type UUID [16]byte

// String formats u as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// MarshalText encodes u as its String.
func (u UUID) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

func (d *Device) uuid(param uint32, name string) (UUID, error) {
	var u UUID
	ok, err := d.HasExtension("cl_khr_device_uuid")
	if err != nil {
		return u, err
	}
	if !ok {
		return u, fmt.Errorf("cl: device does not report cl_khr_device_uuid: %w", errors.ErrUnsupported)
	}
	b, err := d.info(param, name)
	if err != nil {
		return u, err
	}
	if len(b) != len(u) {
		return u, fmt.Errorf("cl: %s returned %d bytes, want %d", name, len(b), len(u))
	}
	copy(u[:], b)
	return u, nil
}

// UUID returns CL_DEVICE_UUID_KHR, which identifies the device across
// processes and APIs. Without cl_khr_device_uuid it fails with an error
// matching errors.ErrUnsupported.
func (d *Device) UUID() (UUID, error) { return d.uuid(deviceUUID, "CL_DEVICE_UUID_KHR") }

// DriverUUID returns CL_DRIVER_UUID_KHR; see UUID.
func (d *Device) DriverUUID() (UUID, error) { return d.uuid(driverUUID, "CL_DRIVER_UUID_KHR") }

// DeviceInfo is a snapshot of the device facts that matter for inference.
type DeviceInfo struct {
	Name                     string               `json:"name"`
	Vendor                   string               `json:"vendor"`
	VendorID                 uint32               `json:"vendorId"`
	Type                     DeviceType           `json:"type"`
	Version                  string               `json:"version"`
	DriverVersion            string               `json:"driverVersion"`
	OpenCLCVersion           string               `json:"openclCVersion"`
	Profile                  string               `json:"profile"`
	Available                bool                 `json:"available"`
	CompilerAvailable        bool                 `json:"compilerAvailable"`
	LinkerAvailable          bool                 `json:"linkerAvailable"`
	MaxComputeUnits          int                  `json:"maxComputeUnits"`
	MaxClockFrequencyMHz     int                  `json:"maxClockFrequencyMHz"`
	GlobalMemSize            int64                `json:"globalMemSize"`
	GlobalMemCacheSize       int64                `json:"globalMemCacheSize"`
	GlobalMemCachelineSize   int                  `json:"globalMemCachelineSize"`
	LocalMemSize             int64                `json:"localMemSize"`
	LocalMemType             LocalMemType         `json:"localMemType"`
	MaxMemAllocSize          int64                `json:"maxMemAllocSize"`
	MaxConstantBufferSize    int64                `json:"maxConstantBufferSize"`
	MaxParameterSize         int                  `json:"maxParameterSize"`
	MemBaseAddrAlignBits     int                  `json:"memBaseAddrAlignBits"`
	MaxWorkGroupSize         int                  `json:"maxWorkGroupSize"`
	MaxWorkItemSizes         []int                `json:"maxWorkItemSizes"`
	MaxNumSubGroups          int                  `json:"maxNumSubGroups,omitempty"`
	PreferredVectorWidths    VectorWidths         `json:"preferredVectorWidths"`
	NativeVectorWidths       VectorWidths         `json:"nativeVectorWidths"`
	FP16                     bool                 `json:"fp16"`
	FP64                     bool                 `json:"fp64"`
	SingleFPConfig           FPConfig             `json:"singleFPConfig"`
	DoubleFPConfig           FPConfig             `json:"doubleFPConfig"`
	HalfFPConfig             FPConfig             `json:"halfFPConfig"`
	AddressBits              int                  `json:"addressBits"`
	EndianLittle             bool                 `json:"endianLittle"`
	ImageSupport             bool                 `json:"imageSupport"`
	ErrorCorrectionSupport   bool                 `json:"errorCorrectionSupport"`
	HostUnifiedMemory        bool                 `json:"hostUnifiedMemory"`
	QueueProperties          CommandQueueProperty `json:"queueProperties"`
	ProfilingTimerResolution time.Duration        `json:"profilingTimerResolutionNs"`
	UUID                     *UUID                `json:"uuid,omitempty"`
	DriverUUID               *UUID                `json:"driverUuid,omitempty"`
	Extensions               []string             `json:"extensions"`
}

// Info queries everything DeviceInfo holds. It returns what it could read
// together with the first error of a query every OpenCL 1.2 device must
// answer; queries that depend on an extension or a later version are left
// zero when the device does not offer them.
func (d *Device) Info() (DeviceInfo, error) {
	var in DeviceInfo
	var q querier
	in.Name = q.str(d.Name)
	in.Vendor = q.str(d.Vendor)
	id, err := d.VendorID()
	q.keep(err)
	in.VendorID = id
	t, err := d.Type()
	q.keep(err)
	in.Type = t
	in.Version = q.str(d.Version)
	in.DriverVersion = q.str(d.DriverVersion)
	in.OpenCLCVersion = q.str(d.OpenCLCVersion)
	in.Profile = q.str(d.Profile)
	in.Available = q.bool(d.Available)
	in.CompilerAvailable = q.bool(d.CompilerAvailable)
	in.LinkerAvailable = q.bool(d.LinkerAvailable)
	in.MaxComputeUnits = q.int(d.MaxComputeUnits)
	in.MaxClockFrequencyMHz = q.int(d.MaxClockFrequency)
	in.GlobalMemSize = q.int64(d.GlobalMemSize)
	in.GlobalMemCacheSize = q.int64(d.GlobalMemCacheSize)
	in.GlobalMemCachelineSize = q.int(d.GlobalMemCachelineSize)
	in.LocalMemSize = q.int64(d.LocalMemSize)
	lt, err := d.LocalMemType()
	q.keep(err)
	in.LocalMemType = lt
	in.MaxMemAllocSize = q.int64(d.MaxMemAllocSize)
	in.MaxConstantBufferSize = q.int64(d.MaxConstantBufferSize)
	in.MaxParameterSize = q.int(d.MaxParameterSize)
	in.MemBaseAddrAlignBits = q.int(d.MemBaseAddrAlign)
	in.MaxWorkGroupSize = q.int(d.MaxWorkGroupSize)
	in.MaxWorkItemSizes, err = d.MaxWorkItemSizes()
	q.keep(err)
	in.MaxNumSubGroups, _ = d.MaxNumSubGroups()
	in.PreferredVectorWidths, err = d.PreferredVectorWidths()
	q.keep(err)
	in.NativeVectorWidths, err = d.NativeVectorWidths()
	q.keep(err)
	in.FP16 = q.bool(d.HasFP16)
	in.FP64 = q.bool(d.HasFP64)
	in.SingleFPConfig, err = d.SingleFPConfig()
	q.keep(err)
	in.DoubleFPConfig, _ = d.DoubleFPConfig()
	in.HalfFPConfig, _ = d.HalfFPConfig()
	in.AddressBits = q.int(d.AddressBits)
	in.EndianLittle = q.bool(d.EndianLittle)
	in.ImageSupport = q.bool(d.ImageSupport)
	in.ErrorCorrectionSupport = q.bool(d.ErrorCorrectionSupport)
	in.HostUnifiedMemory, _ = d.HostUnifiedMemory() // deprecated by OpenCL 2.0
	in.QueueProperties, err = d.QueueProperties()
	q.keep(err)
	in.ProfilingTimerResolution, err = d.ProfilingTimerResolution()
	q.keep(err)
	if u, err := d.UUID(); err == nil {
		in.UUID = &u
	}
	if u, err := d.DriverUUID(); err == nil {
		in.DriverUUID = &u
	}
	in.Extensions = q.strs(d.Extensions)
	return in, q.err
}
