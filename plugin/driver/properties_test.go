package driver_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func newCommon(extra ...driver.PropertySpec) *driver.Properties {
	return driver.NewProperties(append(driver.CommonSpecs(), extra...)...)
}

func TestCommonDefaults(t *testing.T) {
	p := newCommon()
	want := map[string]string{
		driver.KeyPerformanceHint:        "LATENCY",
		driver.KeyNumRequests:            "0",
		driver.KeyNumStreams:             "AUTO",
		driver.KeyEnableProfiling:        "NO",
		driver.KeyInferencePrecisionHint: "f32",
		driver.KeyExecutionModeHint:      "PERFORMANCE",
		driver.KeyCacheDir:               "",
		driver.KeyModelPriority:          "MEDIUM",
		driver.KeyLogLevel:               "LOG_NONE",
		driver.KeyDisableTransformations: "NO",
		driver.KeyExclusiveAsyncRequests: "NO",
		driver.KeyMaxHostMemory:          strconv.FormatInt(tensor.DefaultAllocLimit(), 10),
		driver.KeyRandomSeed:             "0",
	}
	for k, v := range want {
		got, err := p.Get(k)
		require.NoError(t, err, k)
		assert.Equal(t, v, got, k)
	}
	assert.Equal(t, want, p.Values(), "Values holds exactly the common keys")
	cfg, err := driver.ParseConfig(p)
	require.NoError(t, err)
	assert.Equal(t, driver.DefaultConfig(), cfg)
}

func TestSetNormalises(t *testing.T) {
	cases := []struct{ key, in, want string }{
		{driver.KeyPerformanceHint, "throughput", "THROUGHPUT"},
		{driver.KeyPerformanceHint, " Cumulative_Throughput ", "CUMULATIVE_THROUGHPUT"},
		{driver.KeyNumStreams, "auto", "AUTO"},
		{driver.KeyNumStreams, "-1", "AUTO"},
		{driver.KeyNumStreams, "+007", "7"},
		{driver.KeyNumRequests, "0", "0"},
		{driver.KeyNumRequests, "12", "12"},
		{driver.KeyEnableProfiling, "true", "YES"},
		{driver.KeyEnableProfiling, "False", "NO"},
		{driver.KeyEnableProfiling, "yes", "YES"},
		{driver.KeyInferencePrecisionHint, "FP16", "f16"},
		{driver.KeyInferencePrecisionHint, "bfloat16", "bf16"},
		{driver.KeyExecutionModeHint, "accuracy", "ACCURACY"},
		{driver.KeyCacheDir, "/tmp/cache dir", "/tmp/cache dir"},
		{driver.KeyModelPriority, "high", "HIGH"},
		{driver.KeyLogLevel, "log_debug", "LOG_DEBUG"},
		{driver.KeyDisableTransformations, "1", "YES"},
		{driver.KeyExclusiveAsyncRequests, "on", "YES"},
		{"PERF_COUNT", "YES", "YES"}, // OpenVINO's name for ENABLE_PROFILING
		{"PERFORMANCE_HINT_NUM_REQUESTS", "3", "3"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.in, func(t *testing.T) {
			p := newCommon()
			require.NoError(t, p.Set(map[string]string{tc.key: tc.in}))
			got, err := p.Get(tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			got, err = p.Get(driver.CanonicalKey(tc.key))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "read through the canonical key")
		})
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		name     string
		props    map[string]string
		sentinel error
		mention  []string
	}{
		{"unknown key", map[string]string{"NO_SUCH": "1"}, driver.ErrNotFound, []string{"NO_SUCH", "PERFORMANCE_HINT", "NUM_STREAMS"}},
		{"negative streams", map[string]string{driver.KeyNumStreams: "-10"}, driver.ErrInvalidArgument, []string{"NUM_STREAMS", `"-10"`, "AUTO (or -1) or an integer >= 1"}},
		{"zero streams", map[string]string{driver.KeyNumStreams: "0"}, driver.ErrInvalidArgument, []string{"NUM_STREAMS"}},
		{"hint -1", map[string]string{driver.KeyPerformanceHint: "-1"}, driver.ErrInvalidArgument, []string{"PERFORMANCE_HINT", `"-1"`, "LATENCY, THROUGHPUT, CUMULATIVE_THROUGHPUT"}},
		{"empty hint", map[string]string{driver.KeyPerformanceHint: ""}, driver.ErrInvalidArgument, []string{"PERFORMANCE_HINT"}},
		{"maybe", map[string]string{driver.KeyEnableProfiling: "maybe"}, driver.ErrInvalidArgument, []string{"ENABLE_PROFILING", `"maybe"`, "YES, NO"}},
		{"maybe via alias", map[string]string{"PERF_COUNT": "maybe"}, driver.ErrInvalidArgument, []string{"PERF_COUNT", `"maybe"`}},
		{"precision", map[string]string{driver.KeyInferencePrecisionHint: "i8"}, driver.ErrInvalidArgument, []string{"INFERENCE_PRECISION_HINT", "f32, f16, bf16"}},
		{"negative requests", map[string]string{driver.KeyNumRequests: "-1"}, driver.ErrInvalidArgument, []string{"NUM_REQUESTS", ">= 0"}},
		{"log level", map[string]string{driver.KeyLogLevel: "LOUD"}, driver.ErrInvalidArgument, []string{"LOG_LEVEL", "LOG_TRACE"}},
		{"nul in cache dir", map[string]string{driver.KeyCacheDir: "a\x00b"}, driver.ErrInvalidArgument, []string{"CACHE_DIR"}},
		{"read-only", map[string]string{driver.KeySupportedProperties: "x"}, driver.ErrInvalidArgument, []string{"SUPPORTED_PROPERTIES", "read-only"}},
		{"alias conflict", map[string]string{"PERF_COUNT": "YES", driver.KeyEnableProfiling: "NO"}, driver.ErrInvalidArgument, []string{"ENABLE_PROFILING", "twice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newCommon()
			before := p.Values()
			// A valid entry next to the bad one must not be applied either.
			props := map[string]string{driver.KeyModelPriority: "HIGH"}
			for k, v := range tc.props {
				props[k] = v
			}
			err := p.Set(props)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.mention {
				assert.Contains(t, err.Error(), s)
			}
			assert.Equal(t, before, p.Values(), "failed Set changed values")
		})
	}
}

func TestGetUnknown(t *testing.T) {
	_, err := newCommon().Get("NOPE")
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrNotFound)
	assert.Contains(t, err.Error(), "NOPE")
	assert.Contains(t, err.Error(), "CACHE_DIR")
}

func TestSupportedProperties(t *testing.T) {
	p := newCommon(driver.ReadOnlySpec(driver.KeyFullDeviceName, "Fake"))
	s, err := p.Get(driver.KeySupportedProperties)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s, "PERFORMANCE_HINT:RW NUM_REQUESTS:RW NUM_STREAMS:RW "), s)
	assert.True(t, strings.HasSuffix(s, " FULL_DEVICE_NAME:RO SUPPORTED_PROPERTIES:RO"), s)
	keys, rw, err := driver.ParseSupportedProperties(s)
	require.NoError(t, err)
	assert.Equal(t, p.Keys(), keys)
	assert.Len(t, keys, 15)
	assert.True(t, rw[driver.KeyCacheDir])
	assert.False(t, rw[driver.KeyFullDeviceName])

	for _, bad := range []string{"A", "A:RX", ":RW", "A:RW B"} {
		_, _, err := driver.ParseSupportedProperties(bad)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, bad)
	}
}

func TestSpecOverride(t *testing.T) {
	p := newCommon(driver.PrecisionSpec(tensor.F32, tensor.F32))
	err := p.Set(map[string]string{driver.KeyInferencePrecisionHint: "f16"})
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "(accepted: f32)")
	require.NoError(t, p.Set(map[string]string{driver.KeyInferencePrecisionHint: "FP32"}))
	assert.Len(t, p.Keys(), 14, "a replaced spec keeps one key")
	assert.Equal(t, driver.KeyInferencePrecisionHint, p.Keys()[4], "a replaced spec keeps its place")
}

func TestNewPropertiesPanics(t *testing.T) {
	assert.Panics(t, func() { driver.NewProperties(driver.PropertySpec{}) }, "empty key")
	assert.Panics(t, func() { driver.NewProperties(driver.IntSpec("X", -1, 0)) }, "default below the bound")
	assert.Panics(t, func() { driver.NewProperties(driver.BoolSpec("PERF_COUNT", false)) }, "alias as key")
}

func TestComputedAndClone(t *testing.T) {
	var mu sync.Mutex
	free := 100
	p := newCommon(driver.ComputedSpec("FREE", func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return strings.Repeat("x", free%7), nil
	}), driver.ComputedSpec("BROKEN", func() (string, error) { return "", errors.New("boom") }))
	v, err := p.Get("FREE")
	require.NoError(t, err)
	assert.Equal(t, "xx", v)
	mu.Lock()
	free = 101
	mu.Unlock()
	v, err = p.Get("FREE")
	require.NoError(t, err)
	assert.Equal(t, "xxx", v, "computed on each read")
	_, err = p.Get("BROKEN")
	assert.EqualError(t, err, "boom")
	assert.NotContains(t, p.Values(), "FREE")

	c := p.Clone()
	require.NoError(t, c.Set(map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}))
	got, err := p.Get(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "LATENCY", got, "setting a clone changed the original")

	e := c.Extend(driver.ReadOnlySpec(driver.KeyNetworkName, "net"))
	got, err = e.Get(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "THROUGHPUT", got, "Extend keeps values")
	got, err = e.Get(driver.KeyNetworkName)
	require.NoError(t, err)
	assert.Equal(t, "net", got)
	assert.False(t, c.Has(driver.KeyNetworkName), "Extend changed its receiver")
	s, err := e.Get(driver.KeySupportedProperties)
	require.NoError(t, err)
	assert.Contains(t, s, "NETWORK_NAME:RO")
	s, err = c.Get(driver.KeySupportedProperties)
	require.NoError(t, err)
	assert.NotContains(t, s, "NETWORK_NAME")
}

func TestPropertiesConcurrent(t *testing.T) {
	p := newCommon()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 25 {
				v := "LATENCY"
				if (i+j)%2 == 0 {
					v = "THROUGHPUT"
				}
				if err := p.Set(map[string]string{driver.KeyPerformanceHint: v}); err != nil {
					errs <- err
				}
				if _, err := p.Get(driver.KeySupportedProperties); err != nil {
					errs <- err
				}
				_ = p.Clone()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	v, err := p.Get(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Contains(t, []string{"LATENCY", "THROUGHPUT"}, v)
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "8589934592": 8 << 30, "8GiB": 8 << 30, "8 gb": 8 << 30, "512M": 512 << 20, "3KiB": 3 << 10, "2T": 2 << 40, "100B": 100} {
		got, err := driver.ParseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "0", "-5", "1.5G", "lots", "9999999999T"} {
		_, err := driver.ParseBytes(bad)
		assert.Error(t, err, bad)
	}
	p := newCommon()
	require.NoError(t, p.Set(map[string]string{driver.KeyMaxHostMemory: "2GiB"}))
	v, err := p.Get(driver.KeyMaxHostMemory)
	require.NoError(t, err)
	assert.Equal(t, "2147483648", v)
	err = p.Set(map[string]string{driver.KeyMaxHostMemory: "0"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, driver.KeyMaxHostMemory)
}

// TestRuntimeOnlyKeys: a device with runtime-only keys has
// CACHING_PROPERTIES, the read-write keys that are not runtime-only nor
// CACHE_DIR, and copies of its properties describe themselves; one
// without has no such key; CachingConfig drops the runtime-only keys.
func TestRuntimeOnlyKeys(t *testing.T) {
	assert.False(t, newCommon().Has(driver.KeyCachingProperties), "no runtime-only key: every read-write key counts")

	spin := driver.IntSpec("SPIN", 0, 0)
	spin.RuntimeOnly = true
	p := newCommon(spin, driver.ReadOnlySpec("FACT", "x"))
	v, err := p.Get(driver.KeyCachingProperties)
	require.NoError(t, err)
	keys := strings.Fields(v)
	assert.Equal(t, p.CachingKeys(), keys)
	assert.Contains(t, keys, driver.KeyPerformanceHint)
	assert.Contains(t, keys, driver.KeyInferencePrecisionHint)
	for _, k := range []string{"SPIN", "FACT", driver.KeyCacheDir, driver.KeyCachingProperties, driver.KeySupportedProperties} {
		assert.NotContains(t, keys, k)
	}
	sp, err := p.Get(driver.KeySupportedProperties)
	require.NoError(t, err)
	assert.Contains(t, sp, driver.KeyCachingProperties+":RO")

	late := driver.BoolSpec("LATE", false)
	late.RuntimeOnly = true
	e := p.Extend(driver.BoolSpec("EXTRA", false), late)
	v, err = e.Get(driver.KeyCachingProperties)
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(v), "EXTRA", "a copy describes itself")
	assert.NotContains(t, strings.Fields(v), "LATE")
	v, err = p.Clone().Get(driver.KeyCachingProperties)
	require.NoError(t, err)
	assert.NotContains(t, strings.Fields(v), "EXTRA")

	cfg := map[string]string{"SPIN": "5", driver.KeyPerformanceHint: "LATENCY", "UNKNOWN": "1"}
	assert.Equal(t, map[string]string{driver.KeyPerformanceHint: "LATENCY", "UNKNOWN": "1"}, driver.CachingConfig(p, cfg))
}
