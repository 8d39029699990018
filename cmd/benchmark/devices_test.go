package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// TestVirtualDevices: the AUTO and BATCH device names run, -hint
// cumulative_throughput (or ctput) sets that hint, AUTO reports which
// devices served and BATCH how it batched.
func TestVirtualDevices(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		hint     string
		mention  []string
		timeline string // AUTO: the devices of the first timeline entry
	}{
		{"Auto", []string{"-d", "AUTO:CPU", "-hint", "latency"}, "latency", []string{"devices    CPU (since compile start); inferences: CPU 6"}, "CPU"},
		{"AutoCumulative", []string{"-d", "AUTO:CPU", "-hint", "cumulative_throughput"}, "cumulative_throughput", []string{"devices    CPU"}, "CPU"},
		{"AutoCtput", []string{"-d", "AUTO:CPU", "-hint", "ctput"}, "cumulative_throughput", []string{"devices    CPU"}, "CPU"},
		{"Batch", []string{"-d", "BATCH:CPU(2)", "-nireq", "2", "-p", "AUTO_BATCH_TIMEOUT=60000"}, "throughput", []string{"batching   batch size 2: 3 batched inferences"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.json")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), append(tc.args, "-niter", "6", "-json", path), &out, false))
			for _, s := range tc.mention {
				assert.Contains(t, out.String(), s)
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var rep Report
			require.NoError(t, json.Unmarshal(b, &rep))
			assert.Equal(t, tc.hint, rep.Hint)
			assert.Equal(t, 6, rep.Count)
			if tc.timeline == "" {
				assert.Empty(t, rep.DeviceTimeline)
				return
			}
			require.NotEmpty(t, rep.DeviceTimeline)
			assert.Equal(t, tc.timeline, rep.DeviceTimeline[0].Devices)
			assert.Equal(t, 6, rep.DeviceInferences["CPU"])
		})
	}
}

// TestCumulativeHintReachesDevice: the parsed flag becomes
// PERFORMANCE_HINT=CUMULATIVE_THROUGHPUT on the compiled model.
func TestCumulativeHintReachesDevice(t *testing.T) {
	o, err := parseFlags([]string{"-hint", "ctput"})
	require.NoError(t, err)
	assert.Equal(t, "cumulative_throughput", o.hint)
	var h driver.PerformanceHint
	require.NoError(t, h.UnmarshalText([]byte(o.hint)))
	assert.Equal(t, driver.HintCumulativeThroughput, h)
}

func TestDescribeTimeline(t *testing.T) {
	cases := []struct {
		tl   []TimelineEntry
		want string
	}{
		{nil, ""},
		{[]TimelineEntry{{0, "GPU.0 GPU.1 CPU"}}, "GPU.0 GPU.1 CPU"},
		{[]TimelineEntry{{3, "CPU"}, {1234, "GPU.0"}}, "CPU until 1.23 s, then GPU.0"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, describeTimeline(tc.tl))
	}
}
