package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// TestMain lets a test run clinfo as a child process: with CLINFO_MAIN set,
// the test binary is clinfo, with the arguments in CLINFO_ARGS.
func TestMain(m *testing.M) {
	if os.Getenv("CLINFO_MAIN") == "1" {
		os.Exit(run(strings.Fields(os.Getenv("CLINFO_ARGS")), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const installHint = "no usable OpenCL platform: install one with `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` (or run `make test`, which installs it)"

func runClinfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// openclDeviceNames lists the device names OpenCL reports, failing the test
// when there is none.
func openclDeviceNames(t *testing.T) []string {
	t.Helper()
	platforms, err := cl.GetPlatforms()
	require.NoError(t, err, installHint)
	var names []string
	for _, p := range platforms {
		ds, err := p.GetDevices(cl.DeviceTypeAll)
		if errors.Is(err, cl.ErrDeviceNotFound) {
			continue
		}
		require.NoError(t, err)
		for _, d := range ds {
			n, err := d.Name()
			require.NoError(t, err)
			names = append(names, n)
		}
	}
	require.NotEmpty(t, names, installHint)
	return names
}

func TestJSON(t *testing.T) {
	code, stdout, stderr := runClinfo(t, "-json")
	if !cl.Enabled {
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "built without OpenCL")
		return
	}
	want := openclDeviceNames(t)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)

	var r struct {
		Platforms []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Devices []struct {
				Name              string         `json:"name"`
				Type              string         `json:"type"`
				MaxComputeUnits   int            `json:"maxComputeUnits"`
				GlobalMemSize     int64          `json:"globalMemSize"`
				MaxWorkGroupSize  int            `json:"maxWorkGroupSize"`
				MaxWorkItemSizes  []int          `json:"maxWorkItemSizes"`
				PreferredVectors  map[string]int `json:"preferredVectorWidths"`
				FP16              *bool          `json:"fp16"`
				FP64              *bool          `json:"fp64"`
				Extensions        []string       `json:"extensions"`
				Error             string         `json:"error"`
				ClinferPluginView any            `json:"clinfer"`
			} `json:"devices"`
		} `json:"platforms"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))

	var got []string
	for _, p := range r.Platforms {
		assert.NotEmpty(t, p.Name)
		assert.Contains(t, p.Version, "OpenCL")
		for _, d := range p.Devices {
			got = append(got, d.Name)
			assert.Empty(t, d.Error)
			assert.NotEmpty(t, d.Type)
			assert.Positive(t, d.MaxComputeUnits)
			assert.Positive(t, d.GlobalMemSize)
			assert.Positive(t, d.MaxWorkGroupSize)
			assert.NotEmpty(t, d.MaxWorkItemSizes)
			assert.Positive(t, d.PreferredVectors["float"])
			assert.NotNil(t, d.FP16)
			assert.NotNil(t, d.FP64)
			assert.NotEmpty(t, d.Extensions)
			assert.NotNil(t, d.ClinferPluginView, "the GPU plugin's view of %s (gpu.go)", d.Name)
		}
	}
	assert.Equal(t, want, got)
}

func TestText(t *testing.T) {
	code, stdout, stderr := runClinfo(t)
	if !cl.Enabled {
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "built without OpenCL")
		return
	}
	names := openclDeviceNames(t)
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "Platform #0: "), stdout)
	for _, n := range names {
		assert.Contains(t, stdout, ": "+n+"\n")
	}
	for _, label := range []string{"Compute units", "Max clock", "Global memory", "Local memory", "Max allocation",
		"Max work-group size", "Max work-item sizes", "Preferred vector widths", "Half precision (fp16)",
		"Double precision (fp64)", "Extensions"} {
		assert.Contains(t, stdout, "    "+label+" ")
	}
}

func TestPluginView(t *testing.T) {
	if !cl.Enabled {
		t.Skip("built without OpenCL: there are no devices to annotate (TestNoOpenCL covers this build); rebuild with cgo after `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` to run it")
	}
	names := openclDeviceNames(t)
	defer func(saved func(*cl.Device, int) (*pluginView, error)) { pluginViewOf = saved }(pluginViewOf)
	pluginViewOf = func(d *cl.Device, ordinal int) (*pluginView, error) {
		if ordinal > 0 {
			return nil, errors.New("clbackend: device not used")
		}
		n, err := d.Name()
		return &pluginView{Device: "GPU.0", Properties: map[string]string{"FULL_DEVICE_NAME": n + " (test)"}}, err
	}

	code, stdout, stderr := runClinfo(t, "-json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"clinfer": {`)
	assert.Contains(t, stdout, `"FULL_DEVICE_NAME": "`+names[0]+` (test)"`)

	code, stdout, stderr = runClinfo(t)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "    clinfer: GPU.0\n")
	assert.Contains(t, stdout, "FULL_DEVICE_NAME")
	if len(names) > 1 {
		assert.Contains(t, stdout, "clbackend: device not used")
	}
}

// TestNoOpenCL runs clinfo in a child process whose ICD loader finds no
// driver: it must explain what is missing on stderr and exit 1.
func TestNoOpenCL(t *testing.T) {
	for _, args := range []string{"", "-json"} {
		t.Run("args="+args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CLINFO_MAIN=1", "CLINFO_ARGS="+args,
				"OCL_ICD_VENDORS="+t.TempDir(), "OCL_ICD_FILENAMES=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "clinfo must fail; stdout:\n%s", stdout.String())
			assert.Equal(t, 1, exit.ExitCode())
			assert.Empty(t, stdout.String())
			if !cl.Enabled {
				assert.Contains(t, stderr.String(), "built without OpenCL")
				return
			}
			assert.Contains(t, stderr.String(), "clinfo: no OpenCL platform found (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR)")
			assert.Contains(t, stderr.String(), "apt-get install pocl-opencl-icd")
		})
	}
}

func TestUsage(t *testing.T) {
	code, stdout, stderr := runClinfo(t, "extra")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `unexpected argument "extra"`)
	assert.Contains(t, stderr, "usage: clinfo [-json]")

	code, _, stderr = runClinfo(t, "-bogus")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-bogus")

	code, _, stderr = runClinfo(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-json")
}

func TestSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{64 << 20, "64.0 MiB"},
		{5204763648, "4.8 GiB"},
		{3 << 40, "3.0 TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) { assert.Equal(t, tt.want, size(tt.n)) })
	}
}
