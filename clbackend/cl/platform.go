package cl

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// Platform is an OpenCL platform: one installed driver (ICD). Platforms are
// not reference counted and need no Close.
type Platform struct {
	id handle
}

// GetPlatforms returns the OpenCL platforms the ICD loader finds. With no
// driver installed it fails with an error matching ErrPlatformNotFound,
// whether the loader reports CL_PLATFORM_NOT_FOUND_KHR or zero platforms;
// in a build without OpenCL the error wraps ErrNotBuilt.
func GetPlatforms() ([]*Platform, error) {
	firstUse()
	enumMu.Lock()
	ids, err := getPlatformIDs()
	enumMu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, &Error{Op: "clGetPlatformIDs", Code: ErrPlatformNotFound}
	}
	ps := make([]*Platform, len(ids))
	for i, id := range ids {
		ps[i] = &Platform{id: id}
	}
	return ps, nil
}

// GetDevices returns the platform's devices of the given type (DeviceTypeAll
// for every device), less a POCL basic device clinfer asked for as an
// in-thread companion (Device.InThreadCompanion). When there is none it
// fails with an error matching ErrDeviceNotFound.
func (p *Platform) GetDevices(deviceType DeviceType) ([]*Device, error) {
	if p == nil {
		return nil, &Error{Op: "clGetDeviceIDs", Code: ErrInvalidPlatform}
	}
	firstUse()
	enumMu.Lock()
	ids, err := getDeviceIDs(p.id, deviceType)
	enumMu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, &Error{Op: "clGetDeviceIDs", Code: ErrDeviceNotFound}
	}
	ds := make([]*Device, 0, len(ids))
	for _, id := range ids {
		if d := (&Device{id: id, platform: p}); !hidden(d) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil, &Error{Op: "clGetDeviceIDs", Code: ErrDeviceNotFound}
	}
	poclOrder(ds)
	return ds, nil
}

func (p *Platform) infoString(param uint32, name string) (string, error) {
	if p == nil {
		return "", &Error{Op: "clGetPlatformInfo(" + name + ")", Code: ErrInvalidPlatform}
	}
	b, err := getPlatformInfo(p.id, param, name)
	return cString(b), err
}

// Name returns CL_PLATFORM_NAME.
func (p *Platform) Name() (string, error) { return p.infoString(platformName, "CL_PLATFORM_NAME") }

// Vendor returns CL_PLATFORM_VENDOR.
func (p *Platform) Vendor() (string, error) {
	return p.infoString(platformVendor, "CL_PLATFORM_VENDOR")
}

// Version returns CL_PLATFORM_VERSION ("OpenCL 3.0 <vendor-specific>").
func (p *Platform) Version() (string, error) {
	return p.infoString(platformVersion, "CL_PLATFORM_VERSION")
}

// Profile returns CL_PLATFORM_PROFILE: FULL_PROFILE or EMBEDDED_PROFILE.
func (p *Platform) Profile() (string, error) {
	return p.infoString(platformProfile, "CL_PLATFORM_PROFILE")
}

// Extensions returns the names in CL_PLATFORM_EXTENSIONS.
func (p *Platform) Extensions() ([]string, error) {
	s, err := p.infoString(platformExtensions, "CL_PLATFORM_EXTENSIONS")
	return strings.Fields(s), err
}

// ICDSuffix returns CL_PLATFORM_ICD_SUFFIX_KHR, the suffix the driver gives
// its extension functions (cl_khr_icd).
func (p *Platform) ICDSuffix() (string, error) {
	return p.infoString(platformICDSuffix, "CL_PLATFORM_ICD_SUFFIX_KHR")
}

// PlatformInfo is a snapshot of a platform's info strings.
type PlatformInfo struct {
	Name       string   `json:"name"`
	Vendor     string   `json:"vendor"`
	Version    string   `json:"version"`
	Profile    string   `json:"profile"`
	ICDSuffix  string   `json:"icdSuffix,omitempty"`
	Extensions []string `json:"extensions"`
}

// Info queries all of the platform's info strings. It returns what it could
// read together with the first error; ICDSuffix stays empty where the driver
// does not report it.
func (p *Platform) Info() (PlatformInfo, error) {
	var in PlatformInfo
	var q querier
	in.Name = q.str(p.Name)
	in.Vendor = q.str(p.Vendor)
	in.Version = q.str(p.Version)
	in.Profile = q.str(p.Profile)
	in.Extensions = q.strs(p.Extensions)
	in.ICDSuffix, _ = p.ICDSuffix()
	return in, q.err
}

// Version is an OpenCL version number.
type Version struct {
	Major, Minor int
}

// String formats v as "1.2".
func (v Version) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// ParseVersion reads the version out of a CL_PLATFORM_VERSION,
// CL_DEVICE_VERSION or CL_DEVICE_OPENCL_C_VERSION string
// ("OpenCL 3.0 PoCL …", "OpenCL C 1.2 …").
func ParseVersion(s string) (Version, error) {
	rest, ok := strings.CutPrefix(s, "OpenCL ")
	if ok {
		rest = strings.TrimPrefix(rest, "C ")
		num, _, _ := strings.Cut(rest, " ")
		maj, min, found := strings.Cut(num, ".")
		if found {
			a, err1 := strconv.Atoi(maj)
			b, err2 := strconv.Atoi(min)
			if err1 == nil && err2 == nil {
				return Version{a, b}, nil
			}
		}
	}
	return Version{}, fmt.Errorf("cl: cannot parse OpenCL version from %q", s)
}

// querier collects the first error of a series of info queries.
type querier struct{ err error }

func (q *querier) keep(err error) {
	if q.err == nil {
		q.err = err
	}
}

func (q *querier) str(f func() (string, error)) string {
	v, err := f()
	q.keep(err)
	return v
}

func (q *querier) strs(f func() ([]string, error)) []string {
	v, err := f()
	q.keep(err)
	return v
}

func (q *querier) int(f func() (int, error)) int {
	v, err := f()
	q.keep(err)
	return v
}

func (q *querier) int64(f func() (int64, error)) int64 {
	v, err := f()
	q.keep(err)
	return v
}

func (q *querier) bool(f func() (bool, error)) bool {
	v, err := f()
	q.keep(err)
	return v
}

// Decoding of clGet*Info results, which are in host byte order.

// cString converts a NUL-terminated info string.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// uintInfo decodes a cl_uint, cl_ulong, cl_bitfield, cl_bool or size_t by its
// length.
func uintInfo(b []byte, err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	switch len(b) {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.NativeEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case 8:
		return binary.NativeEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("cl: unexpected %d-byte info value", len(b))
}

// sizesInfo decodes a size_t[].
func sizesInfo(b []byte, err error) ([]int, error) {
	if err != nil {
		return nil, err
	}
	const n = int(unsafe.Sizeof(uintptr(0)))
	out := make([]int, len(b)/n)
	for i := range out {
		v, _ := uintInfo(b[i*n:(i+1)*n], nil)
		out[i] = int(v)
	}
	return out, nil
}
