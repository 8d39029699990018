package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestQuickRun runs the whole benchmark path on one small model with one
// round of one inference per configuration (clinfer CPU, GPU with the
// heuristics and with the shipped database, ONNX Runtime under node), so
// that `make bench-models` cannot rot between its runs.
func TestQuickRun(t *testing.T) {
	_, err := conformance.ModelPath("hello_deepa.onnx")
	conformance.SkipOmitted(t, err)
	require.NoError(t, err, "run `make models`")
	dir := t.TempDir()
	js := filepath.Join(dir, "run.json")
	var out testWriter
	require.NoError(t, run(context.Background(), []string{"-models", "hello_deepa", "-seconds", "0", "-rounds", "1", "-json", js}, &out))
	rep, err := readReport(js)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 1)
	row := rep.Rows[0]
	assert.Equal(t, "1x25x96", row.Input)
	for _, c := range configs {
		res := row.Results[c]
		require.NotNil(t, res, c)
		assert.Empty(t, res.Error, c)
		assert.Equal(t, 1, res.Runs, c)
		assert.Greater(t, res.MedianMS, 0.0, c)
	}
	// hello_deepa's plan has no variant choice left since
	// FuseFCLayerNormRelu (its dense layers are fc_layer_norm_relu
	// launches, its last FullyConnected fully_connected): the counts agree
	// between the two GPU configurations and stay within bounds.
	assert.Equal(t, row.Results[cfgGPU].Choices, row.Results[cfgGPUTuned].Choices, "both GPU configurations plan the same kernels")
	assert.LessOrEqual(t, row.Results[cfgGPUTuned].Shipped, row.Results[cfgGPUTuned].Choices)
	assert.Zero(t, row.Results[cfgGPU].Shipped, "GPU_SHIPPED_TUNING=NO uses no shipped record")
	assert.Equal(t, 2, rep.ORTThreads)
	assert.Len(t, rep.Devices, 2)
	assert.NotEmpty(t, rep.LoadStart)
	assert.Contains(t, out.String(), "| wake word hello_deepa | 1x25x96 |")
}

// TestReadmeTable: README.md's bench-models table is what the committed
// run (docs/bench-models.json) renders.
func TestReadmeTable(t *testing.T) {
	root, err := conformance.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), []string{"-from", filepath.Join(root, "docs", "bench-models.json"),
		"-readme", filepath.Join(root, "README.md"), "-check"}, &testWriter{}))
}

// TestRenderTable checks the cells: a failed configuration, the shipped
// share, the ratios and the units.
func TestRenderTable(t *testing.T) {
	rep := &Report{Date: "d", Devices: []string{"GPU = pocl"}, ORTVersion: "1.30.0", ORTThreads: 2, Rounds: 3, Seconds: 3,
		Configs: configs, Rows: []Row{{Key: "k", Label: "M", Input: "1x3", Results: map[string]*Result{
			cfgCPU:         {Error: "unsupported op"},
			cfgGPU:         {MedianMS: 8380, CompileMS: 3900},
			cfgGPUTuned:    {MedianMS: 7840, Choices: 10, Shipped: 4},
			cfgGPUInThread: {MedianMS: 3920},
			cfgORT:         {MedianMS: 7840},
		}}}}
	got := renderTable(rep)
	assert.Contains(t, got, "| M | 1x3 | fails | 8.38 s | 7.84 s (4/10) | 3.92 s | 7.84 s | 1.07x, 1.00x, 0.50x | 3.90 s |\n")
	assert.Contains(t, got, "k on CPU fails: unsupported op")
	assert.Contains(t, got, "ONNX Runtime 1.30.0 (CPU, 2 threads)")
	for ms, want := range map[float64]string{0.0271: "0.027 ms", 4.5: "4.50 ms", 45.25: "45.2 ms", 127.7: "128 ms", 31600: "31.60 s"} {
		assert.Equal(t, want, formatMS(ms))
	}
}

func TestParseInput(t *testing.T) {
	cases := []struct {
		in    string
		name  string
		shape tensor.Shape
		ok    bool
	}{
		{"x=1x3x48x192", "x", tensor.Shape{1, 3, 48, 192}, true},
		{"sr=", "sr", tensor.Shape{}, true},
		{"x=1x0", "", nil, false},
		{"=1x2", "", nil, false},
		{"x", "", nil, false},
	}
	for _, tc := range cases {
		name, sh, err := bench.ParseInput(tc.in)
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.name, name)
		assert.Equal(t, tc.shape, sh)
	}
}

// TestFlags: unknown rows and configurations are errors naming them.
func TestFlags(t *testing.T) {
	_, err := parseFlags([]string{"-models", "det_641"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "det_641")
	_, err = parseFlags([]string{"-configs", "NPU"})
	require.Error(t, err)
	_, err = parseFlags([]string{"-check"})
	require.Error(t, err)
	o, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Len(t, o.models, len(models))
}

// testWriter collects the command's output.
type testWriter struct{ b []byte }

func (w *testWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *testWriter) String() string              { return string(w.b) }
