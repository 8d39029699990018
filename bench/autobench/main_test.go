package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScenarios: every measurement names its device and model, and the
// comparisons the tables make have both sides.
func TestScenarios(t *testing.T) {
	rows := scenarios("det.onnx", "cls.onnx", 5)
	want := map[string][]string{
		secFirst: {"GPU", autoGPU},
		secTput:  {"GPU", "CPU", autoGPU + " (CUMULATIVE_THROUGHPUT)"},
		secBatch: {"GPU", batchGPU8},
	}
	for sec, devs := range want {
		got := pick(rows, sec)
		require.Len(t, got, len(devs), "section %s", sec)
		for i, s := range got {
			assert.Equal(t, devs[i], s.device)
			args := strings.Join(s.args, " ")
			assert.Contains(t, args, "-d "+strings.TrimSuffix(devs[i], " (CUMULATIVE_THROUGHPUT)"))
			assert.Contains(t, args, "-reshape")
		}
	}
	assert.Contains(t, strings.Join(pick(rows, secTput)[2].args, " "), "-hint cumulative_throughput")
}

// TestWriteTables prints medians and ratios from fake reports.
func TestWriteTables(t *testing.T) {
	rows := scenarios("det.onnx", "cls.onnx", 5)
	for _, s := range rows {
		for k := range 3 {
			r := report{Count: 10, NIReq: 4, ThroughputFPS: 10 + float64(k), FirstInferenceMS: 100, CompileMS: 1000, FirstResultMS: 1100, DeviceInferences: map[string]int{"CPU": 2}}
			if s.device == autoGPU {
				r.FirstResultMS = 110 * float64(k+1) // median 220: 0.20x of the GPU's
			}
			r.LatencyMS.Median, r.LatencyMS.P90 = 50, 60
			s.runs = append(s.runs, r)
		}
	}
	var out bytes.Buffer
	require.NoError(t, writeTables(&out, rows))
	s := out.String()
	for _, want := range []string{"time to first result", "throughput", "8 requests in flight", "0.20x", "2.00x", "CPU 6"} {
		assert.Contains(t, s, want)
	}
}
