package devicetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// streamsHonouredOrRefused checks NUM_STREAMS against OpenVINO's values:
// -1 is AUTO (and reads back as AUTO); a number of streams in
// RANGE_FOR_STREAMS is honoured (the compiled model runs at least that
// many, never silently fewer) or refused with an error that names the key;
// one past the range, and 1000, are refused (by SetProperties, or by the
// compilation on a device that passes the value on) or honoured, never
// clamped.
func streamsHonouredOrRefused(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyNumStreams: "-1"}))
	got, err := p.Property(driver.KeyNumStreams)
	require.NoError(t, err)
	assert.Equal(t, "AUTO", got, "%s=-1 is AUTO", driver.KeyNumStreams)

	// A virtual device (AUTO, BATCH) that passes NUM_STREAMS on has no
	// range of its own: its devices check the value when they compile.
	rng, err := p.Property(driver.KeyRangeForStreams)
	hi, counts := 1, []int{1, 1000}
	if !errors.Is(err, driver.ErrNotFound) {
		require.NoError(t, err)
		f := strings.Fields(rng)
		require.Len(t, f, 2, "%s %q is \"MIN MAX\"", driver.KeyRangeForStreams, rng)
		hi, err = strconv.Atoi(f[1])
		require.NoError(t, err, "%s %q", driver.KeyRangeForStreams, rng)
		require.Positive(t, hi)
		counts = []int{1, hi, hi + 1, 1000}
	}
	for _, n := range counts {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			p := open(t, newPlugin)
			props := map[string]string{driver.KeyNumStreams: strconv.Itoa(n)}
			if err := p.SetProperties(props); err != nil {
				require.Greater(t, n, hi, "SetProperties refused %d streams, in %s %q: %v", n, driver.KeyRangeForStreams, rng, err)
				assert.ErrorIs(t, err, driver.ErrInvalidArgument)
				assert.Contains(t, err.Error(), driver.KeyNumStreams)
				assert.Contains(t, err.Error(), driver.KeyRangeForStreams, "the refusal says what the device runs")
				return
			}
			cm, err := p.CompileModel(t.Context(), ReluModel(), nil)
			if err != nil {
				require.Greater(t, n, hi, "compiling with %d streams, in %s %q: %v", n, driver.KeyRangeForStreams, rng, err)
				assert.ErrorIs(t, err, driver.ErrInvalidArgument)
				assert.Contains(t, err.Error(), driver.KeyNumStreams)
				return
			}
			t.Cleanup(func() { assert.NoError(t, cm.Close()) })
			v, err := cm.Property(driver.KeyNumStreams)
			require.NoError(t, err)
			ran, err := strconv.Atoi(v)
			require.NoError(t, err, "compiled %s %q", driver.KeyNumStreams, v)
			assert.GreaterOrEqual(t, ran, n, "%s=%d was clamped to %d instead of honoured or refused", driver.KeyNumStreams, n, ran)
		})
	}
}
