package driver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// TestHandles: FormatHandle and ParseHandle round-trip, decimal is
// accepted, and zero or garbage is an error naming the key.
func TestHandles(t *testing.T) {
	for _, h := range []uintptr{1, 0x7f3a8baf70, 1<<63 + 5} {
		got, err := driver.ParseHandle(driver.KeyOCLContext, driver.FormatHandle(h))
		require.NoError(t, err)
		assert.Equal(t, h, got)
	}
	got, err := driver.ParseHandle(driver.KeyMemHandle, " 4096 ")
	require.NoError(t, err)
	assert.Equal(t, uintptr(4096), got)
	for _, bad := range []string{"", "0", "0x0", "0xZZ", "-1", "handle"} {
		_, err := driver.ParseHandle(driver.KeyMemHandle, bad)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "%q", bad)
		assert.ErrorContains(t, err, driver.KeyMemHandle)
	}
}

// TestMemoryStatisticsText: the property's value round-trips, Total adds
// the kinds, and a malformed value names the bad field.
func TestMemoryStatisticsText(t *testing.T) {
	s := driver.MemoryStatistics{Weights: 1, Activations: 22, Staging: 333, RemoteTensors: 4444}
	got, err := driver.ParseMemoryStatistics(s.String())
	require.NoError(t, err)
	assert.Equal(t, s, got)
	assert.Equal(t, int64(4800), s.Total())
	_, err = driver.ParseMemoryStatistics("weights=1 heap=2")
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, `field "heap=2"`)
	tr := driver.Transfers{HostToDevice: 1, DeviceToHost: 2, DeviceToDevice: 3}
	assert.Equal(t, driver.Transfers{HostToDevice: 2, DeviceToHost: 4, DeviceToDevice: 6}, tr.Add(tr))
	assert.Equal(t, "host->device=1 device->host=2 device->device=3", tr.String())
}

// FuzzParseMemoryStatistics: no input panics, and what parses formats back
// to a value that parses to the same statistics.
func FuzzParseMemoryStatistics(f *testing.F) {
	f.Add("weights=1 activations=2 staging=3 remote_tensors=4")
	f.Add("weights=-1")
	f.Add("x")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := driver.ParseMemoryStatistics(v)
		if err != nil {
			return
		}
		again, err := driver.ParseMemoryStatistics(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, again)
	})
}

// FuzzParseHandle: no input panics, and a parsed handle round-trips.
func FuzzParseHandle(f *testing.F) {
	f.Add("0x10")
	f.Add("12")
	f.Add("0x")
	f.Fuzz(func(t *testing.T, v string) {
		h, err := driver.ParseHandle(driver.KeyOCLQueue, v)
		if err != nil {
			return
		}
		again, err := driver.ParseHandle(driver.KeyOCLQueue, driver.FormatHandle(h))
		require.NoError(t, err)
		assert.Equal(t, h, again)
	})
}
