package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
)

// TestGPUPluginSection checks that every device the GPU plugin uses shows
// its "GPU.n" name and the plugin's properties, in text and JSON.
func TestGPUPluginSection(t *testing.T) {
	if !cl.Enabled {
		t.Skip("built without OpenCL: there are no devices to annotate (TestNoOpenCL covers this build)")
	}
	p, err := clbackend.New()
	require.NoError(t, err, installHint)
	defer p.Close()

	code, stdout, stderr := runClinfo(t, "-json")
	require.Equal(t, 0, code, stderr)
	var r struct {
		Platforms []struct {
			Devices []struct {
				Name    string      `json:"name"`
				Clinfer *pluginView `json:"clinfer"`
			} `json:"devices"`
		} `json:"platforms"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	seen := map[string]bool{}
	for _, pl := range r.Platforms {
		for _, d := range pl.Devices {
			require.NotNil(t, d.Clinfer, d.Name)
			if d.Clinfer.Device == "" {
				assert.Contains(t, d.Clinfer.Error, "not used", d.Name)
				continue
			}
			seen[d.Clinfer.Device] = true
			id := strings.TrimPrefix(d.Clinfer.Device, "GPU.")
			for _, k := range []string{driver.KeyFullDeviceName, driver.KeyDeviceType, driver.KeyOptimizationCapabilities, driver.KeyDeviceArchitecture} {
				want, err := p.DeviceProperty(id, k)
				require.NoError(t, err)
				assert.Equal(t, want, d.Clinfer.Properties[k], "%s of %s", k, d.Clinfer.Device)
			}
			assert.Equal(t, strings.TrimSpace(d.Name), d.Clinfer.Properties[driver.KeyFullDeviceName])
		}
	}
	for i := range p.Devices() {
		assert.True(t, seen[fmt.Sprintf("GPU.%d", i)], "GPU.%d is listed", i)
	}

	code, stdout, stderr = runClinfo(t)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "    clinfer: GPU.0\n")
	for _, k := range []string{driver.KeyFullDeviceName, driver.KeyDeviceType, driver.KeyOptimizationCapabilities, driver.KeyDeviceArchitecture} {
		assert.Contains(t, stdout, k)
	}
}
