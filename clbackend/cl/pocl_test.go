//go:build cgo && !noopencl

package cl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPOCLKind reads the driver and target out of CL_DEVICE_VERSION.
func TestPOCLKind(t *testing.T) {
	for _, c := range []struct{ version, driver, target string }{
		{"OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512", "pthread", "x86_64-pc-linux-gnu-skylake-avx512"},
		{"OpenCL 3.0 PoCL HSTR: basic-x86_64-pc-linux-gnu-haswell", "basic", "x86_64-pc-linux-gnu-haswell"},
		{"OpenCL 1.2 CUDA", "", ""},
		{"OpenCL 3.0 PoCL HSTR: ", "", ""},
	} {
		d, tg := poclKind(c.version)
		assert.Equal(t, c.driver, d, c.version)
		assert.Equal(t, c.target, tg, c.version)
	}
}

// TestInThreadCompanion: POCL's pthread device has the basic device of
// its target as companion, which GetDevices hides when clinfer listed it
// (POCL_DEVICES unset), and POCL_DEVICES is as the process had it.
func TestInThreadCompanion(t *testing.T) {
	_, userSet := os.LookupEnv(EnvPOCLDevices)
	ps, err := GetPlatforms()
	require.NoError(t, err, "no OpenCL platform: `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` (make deps)")
	_, nowSet := os.LookupEnv(EnvPOCLDevices)
	assert.Equal(t, userSet, nowSet, "POCL_DEVICES is left as it was")
	found := false
	for _, p := range ps {
		ds, err := p.GetDevices(DeviceTypeAll)
		if err != nil {
			continue
		}
		for _, d := range ds {
			v, err := d.Version()
			require.NoError(t, err)
			drv, target := poclKind(v)
			if !userSet {
				assert.NotEqual(t, "basic", drv, "the companion is not listed")
			}
			c := d.InThreadCompanion()
			if drv != "pthread" {
				assert.Nil(t, c, v)
				continue
			}
			if c == nil {
				continue
			}
			found = true
			cv, err := c.Version()
			require.NoError(t, err)
			cd, ct := poclKind(cv)
			assert.Equal(t, "basic", cd)
			assert.Equal(t, target, ct, "the same target")
			assert.Same(t, d.Platform(), c.Platform())
			ctx, err := CreateContext([]*Device{d, c})
			require.NoError(t, err, "one context holds both")
			require.NoError(t, ctx.Close())
		}
	}
	if !found {
		if userSet && !strings.Contains(os.Getenv(EnvPOCLDevices), "basic") {
			t.Skipf("POCL_DEVICES=%q lists no basic device: unset it to let clinfer add the companion", os.Getenv(EnvPOCLDevices))
		}
		t.Skip("no POCL pthread device with a basic device beside it: `make deps` installs pocl-opencl-icd")
	}
}

// TestOnlyCPUDrivers: clinfer lists POCL's drivers itself only where the
// installed ones are exactly pthread and basic, so that a POCL with CUDA,
// Level Zero or remote drivers keeps them all.
func TestOnlyCPUDrivers(t *testing.T) {
	assert.True(t, onlyCPUDrivers([]string{"basic", "pthread"}))
	assert.True(t, onlyCPUDrivers([]string{"pthread", "basic"}))
	assert.False(t, onlyCPUDrivers([]string{"pthread", "basic", "cuda"}))
	assert.False(t, onlyCPUDrivers([]string{"pthread"}))
	assert.False(t, onlyCPUDrivers([]string{"basic"}))
	assert.False(t, onlyCPUDrivers(nil))
}

// TestPOCLInstalledDrivers finds the drivers of a POCL named by a vendor
// file in a folder of the test's own (OCL_ICD_VENDORS), by path.
func TestPOCLInstalledDrivers(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "lib")
	require.NoError(t, os.MkdirAll(filepath.Join(lib, "pocl"), 0o755))
	for _, n := range []string{"libpocl.so.2", "pocl/libpocl-devices-pthread.so", "pocl/libpocl-devices-basic.so", "pocl/libpocl-devices-cuda.so"} {
		require.NoError(t, os.WriteFile(filepath.Join(lib, n), nil, 0o644))
	}
	vendors := filepath.Join(root, "vendors")
	require.NoError(t, os.MkdirAll(vendors, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vendors, "pocl.icd"), []byte(filepath.Join(lib, "libpocl.so.2")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vendors, "other.icd"), []byte("libnvidia-opencl.so.1\n"), 0o644))
	t.Setenv("OCL_ICD_VENDORS", vendors)
	got := poclInstalledDrivers()
	assert.ElementsMatch(t, []string{"pthread", "basic", "cuda"}, got)
	assert.False(t, onlyCPUDrivers(got), "a POCL with a CUDA driver keeps POCL_DEVICES unset")
	require.NoError(t, os.Remove(filepath.Join(lib, "pocl/libpocl-devices-cuda.so")))
	assert.True(t, onlyCPUDrivers(poclInstalledDrivers()))
}
