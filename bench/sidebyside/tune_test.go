package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tuneOut = `goos: linux
BenchmarkCopy/d2d/64MiB-2                 	       5	   2528823 ns/op	        50.00 GB/s
device: pthread-skylake-avx512-AMD EPYC
BenchmarkPeakFMA-2                        	       5	   2447118 ns/op	       200.0 gflops
BenchmarkPPOCRTuned/det_1x3x640x640/GPU-none-2  	      20	  40000000 ns/op	        40.00 ms/infer	        25.00 infer/s
BenchmarkPPOCRTuned/det_1x3x640x640/GPU-tuned-2 	      20	  30000000 ns/op	        30.00 ms/infer	        33.33 infer/s
BenchmarkSGEMMTuned/GPU-tuned-2           	       5	  12574914 ns/op	       150.0 gflops
BenchmarkDataMovement-2                   	       5	  52929918 ns/op	        30.00 GB/s	        20.00 resize-GB/s
BenchmarkPeakFMA-2                        	       5	   2447118 ns/op	       220.0 gflops
BenchmarkPeakFMA-2                        	       5	   2447118 ns/op	       210.0 gflops
`

// TestTuneReport checks the -tune figures: medians of the runs, shares of
// the peak and of the copy bandwidth, the device, the tuning passes; and
// that the figures stay out of the model table.
func TestTuneReport(t *testing.T) {
	dir := t.TempDir()
	goPath := filepath.Join(dir, "go.txt")
	require.NoError(t, os.WriteFile(goPath, []byte(tuneOut), 0o644))
	tunePath := filepath.Join(dir, "tune.json")
	require.NoError(t, os.WriteFile(tunePath, []byte(`{"model":"det.onnx","shapes":"x=[1,3,640,640]","mode":"FAST","tune_seconds":42.5,"before_ms":40,"after_ms":32,"tuned":70,"recorded":23}`), 0o644))
	var out bytes.Buffer
	require.NoError(t, run(goPath, "", tunePath, &out))
	s := out.String()
	table, report, ok := strings.Cut(s, "device (GPU)")
	require.True(t, ok, s)
	assert.Contains(t, table, "GPU-tuned")
	assert.NotContains(t, table, "PeakFMA")
	assert.NotContains(t, table, "d2d")
	assert.Contains(t, report, "pthread-skylake-avx512-AMD EPYC")
	assert.Regexp(t, `FP32 FMA peak \(BenchmarkPeakFMA\)\s+210.0 GFLOPS`, report, "the median of three runs")
	assert.Regexp(t, `SGEMM 1024 \(GPU-tuned\)\s+150.0 GFLOPS\s+peak\s+71%`, report)
	assert.Regexp(t, `det 640 data movement: resize\s+20.0 GB/s\s+copy\s+40%`, report)
	assert.Regexp(t, `det 640 data movement: all\s+30.0 GB/s\s+copy\s+60%`, report)
	assert.Contains(t, report, "42.5 s")
	assert.Contains(t, report, "1.25x")
}
