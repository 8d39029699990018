package driver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// TestFakeDeviceConformance runs the shared device suite on the fake device
// through a Core, as applications reach devices.
func TestFakeDeviceConformance(t *testing.T) {
	register(t, "TESTFAKE", drivertest.Factory("TESTFAKE", drivertest.Faults{}))
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		// A fresh Core per test gives a fresh plugin; the suite closes it.
		core := driver.NewCore()
		p, err := core.Plugin("TESTFAKE")
		require.NoError(t, err)
		return p
	})
}
