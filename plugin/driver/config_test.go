package driver_test

import (
	"encoding"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

type textEnum interface {
	encoding.TextMarshaler
	encoding.TextUnmarshaler
	String() string
}

func TestEnumsText(t *testing.T) {
	cases := []struct {
		name  string
		fresh func() textEnum
		all   []string
	}{
		{"PerformanceHint", func() textEnum { return new(driver.PerformanceHint) }, []string{"LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"}},
		{"ExecutionMode", func() textEnum { return new(driver.ExecutionMode) }, []string{"PERFORMANCE", "ACCURACY"}},
		{"Priority", func() textEnum { return new(driver.Priority) }, []string{"LOW", "MEDIUM", "HIGH"}},
		{"LogLevel", func() textEnum { return new(driver.LogLevel) }, []string{"LOG_NONE", "LOG_ERROR", "LOG_WARNING", "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.all {
				v := tc.fresh()
				require.NoError(t, v.UnmarshalText([]byte(s)))
				b, err := v.MarshalText()
				require.NoError(t, err)
				assert.Equal(t, s, string(b))
				assert.Equal(t, s, v.String())
				require.NoError(t, v.UnmarshalText([]byte(" "+lower(s)+" ")), "any case")
				assert.Equal(t, s, v.String())
			}
			v := tc.fresh()
			err := v.UnmarshalText([]byte("bogus"))
			require.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), `"bogus"`)
			assert.Contains(t, err.Error(), tc.all[len(tc.all)-1])
		})
	}
	_, err := driver.PerformanceHint(9).MarshalText()
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Equal(t, "PerformanceHint(9)", driver.PerformanceHint(9).String())
	assert.Equal(t, "LogLevel(-1)", driver.LogLevel(-1).String())
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestFlagTextVar(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var hint driver.PerformanceHint
	var prio driver.Priority
	fs.TextVar(&hint, "hint", driver.HintLatency, "performance hint")
	fs.TextVar(&prio, "prio", driver.PriorityMedium, "model priority")
	require.NoError(t, fs.Parse([]string{"-hint", "throughput"}))
	assert.Equal(t, driver.HintThroughput, hint)
	assert.Equal(t, driver.PriorityMedium, prio, "default")
	assert.Error(t, fs.Parse([]string{"-prio", "urgent"}))
}

func TestConfigRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		cfg  driver.Config
	}{
		{"default", driver.DefaultConfig()},
		{"everything", driver.Config{
			PerformanceHint: driver.HintCumulativeThroughput, NumStreams: 3, NumRequests: 8,
			EnableProfiling: true, InferencePrecision: tensor.BF16, ExecutionMode: driver.ModeAccuracy,
			CacheDir: "/var/cache/clinfer", ModelPriority: driver.PriorityHigh, LogLevel: driver.LogTrace,
			DisableTransformations: true, ExclusiveAsyncRequests: true, MaxHostMemory: 3 << 30,
		}},
		{"auto streams", driver.Config{PerformanceHint: driver.HintThroughput, InferencePrecision: tensor.F16, ModelPriority: driver.PriorityLow, MaxHostMemory: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newCommon()
			require.NoError(t, p.Set(tc.cfg.Props()))
			got, err := driver.ParseConfig(p)
			require.NoError(t, err)
			assert.Equal(t, tc.cfg, got)
		})
	}
}

func TestParseConfigPartial(t *testing.T) {
	// A device with only some common keys: the others keep their defaults.
	p := driver.NewProperties(driver.BoolSpec(driver.KeyEnableProfiling, true), driver.StreamsSpec("4", 0))
	cfg, err := driver.ParseConfig(p)
	require.NoError(t, err)
	want := driver.DefaultConfig()
	want.EnableProfiling = true
	want.NumStreams = 4
	assert.Equal(t, want, cfg)

	// A looser spec that lets a bad value in is reported by ParseConfig.
	loose := driver.NewProperties(driver.PropertySpec{Key: driver.KeyNumRequests, Mutable: true, Default: "many"})
	_, err = driver.ParseConfig(loose)
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), driver.KeyNumRequests)
}

func TestParseBoolAndStreams(t *testing.T) {
	for _, s := range []string{"YES", "true", "1", "On"} {
		b, err := driver.ParseBool(s)
		require.NoError(t, err, s)
		assert.True(t, b, s)
	}
	for _, s := range []string{"NO", "false", "0", "off"} {
		b, err := driver.ParseBool(s)
		require.NoError(t, err, s)
		assert.False(t, b, s)
	}
	_, err := driver.ParseBool("maybe")
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)

	streams := []struct {
		in   string
		want int
		bad  bool
	}{{"AUTO", 0, false}, {"-1", 0, false}, {"1", 1, false}, {"16", 16, false}, {"0", 0, true}, {"-10", 0, true}, {"x", 0, true}}
	for _, tc := range streams {
		n, err := driver.ParseNumStreams(tc.in)
		if tc.bad {
			assert.ErrorIs(t, err, driver.ErrInvalidArgument, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, n, tc.in)
		assert.Equal(t, tc.want, must(driver.ParseNumStreams(driver.FormatNumStreams(n))), "round trip %s", tc.in)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
