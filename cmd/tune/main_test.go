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

	"github.com/clinfer/clinfer/clbackend/cl"
)

// TestTuneDefaultModel tunes the embedded default model on the GPU
// device: the per-op table, the totals, the JSON report and the tuning
// file under -cache_dir; a second run reads every choice from the file.
func TestTuneDefaultModel(t *testing.T) {
	if !cl.Enabled {
		t.Skip("built without OpenCL (CGO_ENABLED=0 or -tags noopencl): rebuild with cgo to tune on a device")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "tune.json")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-cache_dir", dir, "-runs", "2", "-json", jsonPath}, &out, false))
	s := out.String()
	assert.Contains(t, s, "smallcnn.onnx (embedded)")
	assert.Contains(t, s, "progress   ")
	assert.Regexp(t, `(?m)^  node\s+op\s+variant\s+source\s+before ms\s+after ms\s+speedup\s+in model$`, s)
	assert.Regexp(t, `confirm    \d+ of the choices differ from the heuristics, \d+ faster in the model; whole model (.* ms, faster in \d+/\d+ rounds|not run)`, s)
	assert.Regexp(t, `gemm/direct:VW=\d+,MR=\d+,NV=2,WG=\d\s+tuned`, s)
	assert.Regexp(t, `tuning     FAST: \d+ kernel choices timed, 0 read from .*clinfer-tuning-[0-9a-f]+\.json`, s)
	assert.Contains(t, s, "latency    before ")
	var rep Report
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Positive(t, rep.Tuned)
	assert.Positive(t, rep.BeforeMs)
	assert.Positive(t, rep.AfterMs)
	matches, err := filepath.Glob(filepath.Join(dir, "clinfer-tuning-*.json"))
	require.NoError(t, err)
	require.Len(t, matches, 1)

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-cache_dir", dir, "-runs", "1", "-json", jsonPath}, &out, false))
	b, err = os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Zero(t, rep.Tuned, "every choice came from the file")
	assert.Positive(t, rep.Recorded)
}

// TestFlagErrors checks the one-line errors of bad flags.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "none"}, "tunes nothing"},
		{[]string{"-mode", "quick"}, "NONE, FAST, EXHAUSTIVE"},
		{[]string{"-runs", "0"}, "-runs 0"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		err := run(context.Background(), c.args, &bytes.Buffer{}, false)
		require.Error(t, err, c.args)
		assert.Contains(t, err.Error(), c.want, c.args)
	}
}
