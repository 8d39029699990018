package driver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// FuzzProperties checks the parse/format round trip of every common key:
// a value Set accepts reads back in a normal form that Set accepts again
// and that reads back unchanged, and the typed Config survives formatting.
func FuzzProperties(f *testing.F) {
	keys := newCommon().Keys()
	seeds := []string{"LATENCY", "throughput", "AUTO", "-1", "-10", "+007", "0", "YES", "true", "maybe",
		"FP16", "bf16", "i8", "ACCURACY", "/tmp/x", "high", "log_trace", "", " 3 ", "a\x00b", "99999999999999999999"}
	for i := range keys {
		for _, s := range seeds {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, value string) {
		key := keys[int(k)%len(keys)]
		p := newCommon()
		before := p.Values()
		if err := p.Set(map[string]string{key: value}); err != nil {
			assert.Equal(t, before, p.Values(), "failed Set changed values")
			return
		}
		got, err := p.Get(key)
		require.NoError(t, err)
		require.NoError(t, p.Set(map[string]string{key: got}), "normal form %q of %q rejected", got, value)
		again, err := p.Get(key)
		require.NoError(t, err)
		assert.Equal(t, got, again, "normal form of %q is not stable", value)

		cfg, err := driver.ParseConfig(p)
		require.NoError(t, err)
		q := newCommon()
		require.NoError(t, q.Set(cfg.Props()))
		assert.Equal(t, p.Values(), q.Values(), "Config round trip of %s=%q", key, value)
	})
}
