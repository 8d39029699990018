//go:build cgo && !noopencl

package cl

import (
	"os"
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
