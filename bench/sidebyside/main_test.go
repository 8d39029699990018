package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goOut = `goos: linux
goarch: amd64
pkg: github.com/clinfer/clinfer/bench
BenchmarkPPOCR/cls_1x3x48x192/CPU-2         	      40	  30000000 ns/op	        30.00 ms/infer	        33.33 infer/s
BenchmarkPPOCR/cls_1x3x48x192/CPU-2         	      40	  10000000 ns/op	        10.00 ms/infer	       100.0 infer/s
BenchmarkPPOCR/cls_1x3x48x192/CPU-2         	      40	  20000000 ns/op	        20.00 ms/infer	        50.00 infer/s
BenchmarkPPOCR/det_1x3x320x320/CPU-2        	       2	 500000000 ns/op
PASS
`

func TestParseGoBench(t *testing.T) {
	res, err := parseGoBench(strings.NewReader(goOut))
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, result{key: "cls_1x3x48x192", device: "CPU", ms: 20, runs: 3}, res[0])
	assert.Equal(t, "det_1x3x320x320", res[1].key)
	assert.InDelta(t, 500.0, res[1].ms, 1e-9, "ns/op is the fallback")

	_, err = parseGoBench(strings.NewReader("FAIL\n"))
	assert.Error(t, err)
}

const ortOut = `bench: loading models
{"model":"ch_ppocr_mobile_v2.0_cls_infer.onnx","shape":"x=1x3x48x192","threads":2,"median_ms":4,"mean_ms":4.2,"iters":50,"ort_version":"1.30.0"}
{"model":"ch_PP-OCRv4_det_infer.onnx","shape":"x=1x3x320x320","threads":2,"median_ms":100,"iters":20}
{"model":"broken.onnx"
`

func TestParseORT(t *testing.T) {
	recs, err := parseORT(strings.NewReader(ortOut))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, ortRecord{Model: "ch_ppocr_mobile_v2.0_cls_infer.onnx", Shape: "x=1x3x48x192", Threads: 2, MedianMS: 4}, recs[0])
}

func TestMatch(t *testing.T) {
	recs, err := parseORT(strings.NewReader(ortOut))
	require.NoError(t, err)
	tests := []struct {
		key, model string
		ok         bool
	}{
		{"cls_1x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", true},
		{"det_1x3x320x320", "ch_PP-OCRv4_det_infer.onnx", true},
		{"det_1x3x640x640", "", false},
		{"rec_1x3x48x192", "", false},
		{"nodims", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			r, ok := match(tc.key, recs)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.model, r.Model)
		})
	}
}

func TestWriteTable(t *testing.T) {
	recs, err := parseORT(strings.NewReader(ortOut))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, writeTable(&b, []result{{"cls_1x3x48x192", "CPU", 20, 3}, {"rec_1x3x48x320", "CPU", 500, 1}}, recs))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `cls_1x3x48x192\s+CPU\s+3\s+20.00\s+4.00\s+2\s+5.00x`, lines[1])
	assert.Regexp(t, `rec_1x3x48x320\s+CPU\s+1\s+500.00\s+-\s+-\s+-`, lines[2])
}
