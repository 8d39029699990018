package cl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

var codeName = regexp.MustCompile(`^CL_[A-Z0-9_]+$`)

func TestErrorCodeTableIsComplete(t *testing.T) {
	// OpenCL 1.2 defines 0..-19 and -30..-68; 2.0 adds -69, -70; 2.2 adds -71, -72.
	for code := cl.ErrorCode(0); code >= -72; code-- {
		if code < -19 && code > -30 {
			continue // reserved
		}
		assert.True(t, codeName.MatchString(code.String()), "status %d is named %q", code, code.String())
	}
	// No two codes share a name.
	seen := map[string]cl.ErrorCode{}
	for code := cl.ErrorCode(-1200); code <= 0x40D5; code++ {
		name := code.String()
		if strings.HasPrefix(name, "CL_UNKNOWN_ERROR") {
			continue
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%s names both %d and %d", name, prev, code)
		}
		seen[name] = code
	}
	assert.Greater(t, len(seen), 90, "named codes")
}

// TestErrorCodeTableMatchesHeaders checks every status code the installed
// Khronos headers define (core and extensions) against the table.
func TestErrorCodeTableMatchesHeaders(t *testing.T) {
	headers, _ := filepath.Glob("/usr/include/CL/cl*.h")
	if len(headers) == 0 {
		if cl.Enabled {
			t.Fatal("no /usr/include/CL/cl*.h although this build links OpenCL: apt-get install opencl-headers")
		}
		t.Skip("no OpenCL headers installed, and this build does not use them: `apt-get install opencl-headers` (make deps installs it) to check the code table against them")
	}
	def := regexp.MustCompile(`(?m)^#define\s+(CL_\w+)\s+\(?(-\d+)\)?\s*$`)
	alias := map[string]bool{ // Intel DX9 names sharing the KHR values
		"CL_INVALID_DX9_DEVICE_INTEL": true, "CL_INVALID_DX9_RESOURCE_INTEL": true,
		"CL_DX9_RESOURCE_ALREADY_ACQUIRED_INTEL": true, "CL_DX9_RESOURCE_NOT_ACQUIRED_INTEL": true,
	}
	n := 0
	for _, h := range headers {
		src, err := os.ReadFile(h)
		require.NoError(t, err)
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			name := m[1]
			// Skip negative values that are not status codes: the limits of
			// cl_platform.h and cl_half.h, build statuses, list terminators.
			if strings.Contains(name, "_MIN") || strings.HasSuffix(name, "_EXP") ||
				strings.HasPrefix(name, "CL_BUILD_") || strings.HasSuffix(name, "_LIST_END_INTEL") || alias[name] {
				continue
			}
			v, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			n++
			assert.Equal(t, name, cl.ErrorCode(v).String(), "status %d in %s", v, filepath.Base(h))
		}
	}
	assert.Greater(t, n, 60, "status codes found in the headers")
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"core", &cl.Error{Op: "clEnqueueNDRangeKernel", Code: cl.ErrOutOfResources}, "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES"},
		{"extension", &cl.Error{Op: "clGetPlatformIDs", Code: cl.ErrPlatformNotFound}, "clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR"},
		{"2.2", &cl.Error{Op: "clSetProgramSpecializationConstant", Code: cl.ErrInvalidSpecID}, "clSetProgramSpecializationConstant: CL_INVALID_SPEC_ID"},
		{"unknown", &cl.Error{Op: "clFinish", Code: -9999}, "clFinish: CL_UNKNOWN_ERROR(-9999)"},
		{"code", cl.ErrInvalidKernelArgs, "CL_INVALID_KERNEL_ARGS"},
		{"exec status", cl.CommandExecStatus(-5).Err(), "CL_OUT_OF_RESOURCES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, tt.err, tt.want)
		})
	}
	assert.NoError(t, cl.CommandExecStatusComplete.Err())
	assert.Equal(t, "CL_RUNNING", cl.CommandExecStatusRunning.String())
	assert.Equal(t, "CL_SUCCESS", cl.ErrorCode(0).String())
}

func TestErrorsIs(t *testing.T) {
	err := fmt.Errorf("clbackend: run plan: %w", &cl.Error{Op: "clEnqueueNDRangeKernel", Code: cl.ErrOutOfResources})
	assert.ErrorIs(t, err, cl.ErrOutOfResources)
	assert.NotErrorIs(t, err, cl.ErrOutOfHostMemory)
	assert.ErrorIs(t, err, &cl.Error{Code: cl.ErrOutOfResources})
	assert.ErrorIs(t, err, &cl.Error{Op: "clEnqueueNDRangeKernel", Code: cl.ErrOutOfResources})
	assert.NotErrorIs(t, err, &cl.Error{Op: "clFinish", Code: cl.ErrOutOfResources})

	var code cl.ErrorCode
	require.ErrorAs(t, err, &code)
	assert.Equal(t, cl.ErrOutOfResources, code)
	var ce *cl.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "clEnqueueNDRangeKernel", ce.Op)
}

func TestBuildErrorFormat(t *testing.T) {
	be := &cl.BuildError{
		Err: &cl.Error{Op: "clBuildProgram", Code: cl.ErrBuildProgramFailure},
		Logs: []cl.BuildLog{
			{DeviceName: "gpu0", Log: "<source>:1:3: error: use of undeclared identifier 'x'\n"},
			{DeviceName: "gpu1", Log: "ok"},
		},
	}
	var err error = be
	assert.ErrorIs(t, err, cl.ErrBuildProgramFailure)
	var target *cl.BuildError
	require.ErrorAs(t, fmt.Errorf("compile: %w", err), &target)
	assert.EqualError(t, be, "clBuildProgram: CL_BUILD_PROGRAM_FAILURE\n"+
		"build log for gpu0:\n<source>:1:3: error: use of undeclared identifier 'x'\n"+
		"build log for gpu1:\nok")
	assert.Contains(t, be.Log(), "undeclared identifier")
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		v    fmt.Stringer
		want string
	}{
		{cl.DeviceTypeGPU, "GPU"},
		{cl.DeviceTypeCPU | cl.DeviceTypeDefault, "DEFAULT|CPU"},
		{cl.DeviceTypeAll, "ALL"},
		{cl.CommandQueueOutOfOrderExecModeEnable | cl.CommandQueueProfilingEnable, "OUT_OF_ORDER_EXEC_MODE_ENABLE|PROFILING_ENABLE"},
		{cl.CommandQueueProperty(0), "NONE"},
		{cl.FPConfigInfNaN | 1<<8, "INF_NAN|0x100"},
		{cl.CommandNDRangeKernel, "NDRANGE_KERNEL"},
		{cl.CommandFillImage, "FILL_IMAGE"},
		{cl.CommandType(0x1209), "COMMAND_0x1209"},
		{cl.BuildStatusError, "CL_BUILD_ERROR"},
		{cl.LocalMemTypeGlobal, "GLOBAL"},
		{cl.CommandExecStatus(-14), "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
		{cl.UUID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
			"00112233-4455-6677-8899-aabbccddeeff"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) { assert.Equal(t, tt.want, tt.v.String()) })
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    cl.Version
		wantErr bool
	}{
		{"OpenCL 3.0 PoCL 3.1+debian  Linux", cl.Version{Major: 3, Minor: 0}, false},
		{"OpenCL 1.2 CUDA", cl.Version{Major: 1, Minor: 2}, false},
		{"OpenCL C 1.2 PoCL", cl.Version{Major: 1, Minor: 2}, false},
		{"OpenCL 2.1 ", cl.Version{Major: 2, Minor: 1}, false},
		{"CUDA 12", cl.Version{}, true},
		{"OpenCL x.y", cl.Version{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := cl.ParseVersion(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, v)
		})
	}
	assert.True(t, cl.Version{Major: 1, Minor: 2}.AtLeast(1, 2))
	assert.True(t, cl.Version{Major: 2}.AtLeast(1, 2))
	assert.False(t, cl.Version{Major: 1, Minor: 1}.AtLeast(1, 2))
	assert.Equal(t, "3.0", cl.Version{Major: 3}.String())
}

func TestNilObjects(t *testing.T) {
	// Methods of nil objects fail with the code OpenCL gives invalid handles
	// instead of crashing; Close of nil is a no-op.
	var (
		c *cl.Context
		q *cl.CommandQueue
		m *cl.MemObject
		p *cl.Program
		k *cl.Kernel
		e *cl.Event
	)
	for _, o := range []interface{ Close() error }{c, q, m, p, k, e} {
		require.NoError(t, o.Close())
	}
	_, err := c.CreateCommandQueue(nil, 0)
	assert.ErrorIs(t, err, cl.ErrInvalidContext)
	assert.ErrorIs(t, q.Finish(), cl.ErrInvalidCommandQueue)
	_, err = q.EnqueueMarkerWithWaitList(nil)
	assert.ErrorIs(t, err, cl.ErrInvalidCommandQueue)
	_, err = m.CreateSubBuffer(0, 0, 1)
	assert.ErrorIs(t, err, cl.ErrInvalidMemObject)
	assert.ErrorIs(t, p.BuildProgram(nil, ""), cl.ErrInvalidProgram)
	assert.ErrorIs(t, k.SetArg(0, int32(1)), cl.ErrInvalidKernel)
	assert.ErrorIs(t, e.Wait(), cl.ErrInvalidEvent)
	require.NoError(t, cl.WaitForEvents([]*cl.Event{nil}))
	_, err = cl.CreateContext(nil)
	assert.ErrorIs(t, err, cl.ErrInvalidValue)
	var d *cl.Device
	_, err = d.Name()
	assert.EqualError(t, err, "clGetDeviceInfo(CL_DEVICE_NAME): CL_INVALID_DEVICE")
	assert.Nil(t, d.Platform())
	var pl *cl.Platform
	_, err = pl.GetDevices(cl.DeviceTypeAll)
	assert.ErrorIs(t, err, cl.ErrInvalidPlatform)
	_, err = pl.Info()
	assert.ErrorIs(t, err, cl.ErrInvalidPlatform)
}
