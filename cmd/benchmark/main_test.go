package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mainEnv = "BENCHMARK_TEST_MAIN"

// TestMain lets a test run the command as a child process: with
// BENCHMARK_TEST_MAIN set, the test binary is the benchmark command.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestJSONReport(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		nireq int
	}{
		{"Async2", []string{"-api", "async", "-nireq", "2", "-niter", "8"}, 2},
		{"AsyncOptimal", []string{"-hint", "latency", "-niter", "4"}, 1},
		{"Sync", []string{"-api", "sync", "-niter", "4", "-hint", "none"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.json")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), append(tc.args, "-json", path), &out, false))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(b, &raw))
			for _, k := range []string{"device", "model", "nireq", "nstreams", "count", "duration_ms", "throughput_fps", "latency_ms", "first_inference_ms", "compile_ms"} {
				assert.Contains(t, raw, k)
			}
			var rep Report
			require.NoError(t, json.Unmarshal(b, &rep))
			assert.Equal(t, "CPU", rep.Device)
			assert.Contains(t, rep.Model, "smallcnn")
			want := 8
			if tc.name != "Async2" {
				want = 4
			}
			assert.Equal(t, want, rep.Count)
			assert.Equal(t, tc.nireq, rep.NIReq)
			assert.GreaterOrEqual(t, rep.NStreams, 1)
			assert.Positive(t, rep.DurationMS)
			assert.Positive(t, rep.ThroughputFPS)
			assert.InEpsilon(t, float64(rep.Count)/(rep.DurationMS/1000), rep.ThroughputFPS, 1e-9)
			l := rep.LatencyMS
			assert.Positive(t, l.Min)
			assert.LessOrEqual(t, l.Min, l.Median)
			assert.LessOrEqual(t, l.Median, l.P90)
			assert.LessOrEqual(t, l.P90, l.P99)
			assert.LessOrEqual(t, l.P99, l.Max)
			assert.LessOrEqual(t, l.Min, l.Avg)
			assert.LessOrEqual(t, l.Avg, l.Max)
			assert.Positive(t, rep.FirstInferenceMS)
			assert.Positive(t, rep.CompileMS)
			assert.Contains(t, out.String(), "throughput")
			assert.NotContains(t, out.String(), "\r", "no progress bar when not on a terminal")
		})
	}
}

func TestTraceAndCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-nireq", "2", "-niter", "6", "-trace", path, "-pc"}, &out, false))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var ct struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
			Tid  int    `json:"tid"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(b, &ct))
	stages, tids := map[string]int{}, map[int]bool{}
	for _, e := range ct.TraceEvents {
		if e.Ph == "X" {
			stages[e.Name]++
			tids[e.Tid] = true
		}
	}
	assert.Equal(t, map[string]int{"preprocess": 6, "infer": 6, "postprocess": 6}, stages, "the warm-up is not traced")
	assert.Len(t, tids, 2, "one track per request")
	s := out.String()
	assert.Contains(t, s, "performance counters")
	assert.Contains(t, s, "Conv")
	assert.Contains(t, s, "stage      infer")
}

// TestShapeAndDataShape: -shape sets the model's input shape before
// compiling (Model.Reshape, as benchmark_app's -shape), in benchmark_app's
// spellings, and the data takes it; -data_shape sets only the data's
// shape, for dimensions the model leaves dynamic (the batch here).
func TestShapeAndDataShape(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		input string
	}{
		{"ShapeNamed", []string{"-shape", "image=[2,3,32,32]"}, "f32[2,3,32,32]"},
		{"ShapeBenchmarkApp", []string{"-shape", "image[1,3,48,48]"}, "f32[1,3,48,48]"},
		{"ShapeEveryInput", []string{"-shape", "[1,3,16,16]"}, "f32[1,3,16,16]"},
		{"ShapeSomeDims", []string{"-shape", "image=[?,3,32,32]", "-data_shape", "image=[3,3,32,32]"}, "f32[3,3,32,32]"},
		{"DataShape", []string{"-data_shape", "image=[2,3,64,64]"}, "f32[2,3,64,64]"},
		{"OldReshapeSpelling", []string{"-reshape", "image=[1,3,40,40]"}, "f32[1,3,40,40]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), append(tc.args, "-niter", "1", "-api", "sync"), &out, false))
			assert.Regexp(t, `input +image +`+regexp.QuoteMeta(tc.input), out.String())
		})
	}
}

func TestTerminalProgressBar(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-niter", "3"}, &out, true))
	assert.Contains(t, out.String(), "inferences", "progress bar description")
	assert.Contains(t, out.String(), "3/3")
}

func TestBadFlagsExitOneWithOneLine(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cases := []struct {
		name    string
		args    []string
		mention string
	}{
		{"UnknownFlag", []string{"-nosuch"}, "nosuch"},
		{"BadHint", []string{"-hint", "fast"}, "-hint"},
		{"BadAPI", []string{"-api", "both"}, "-api"},
		{"NegativeNireq", []string{"-nireq", "-1"}, "-nireq"},
		{"NegativeTime", []string{"-t", "-3"}, "-t"},
		{"BadDevice", []string{"-d", "GPU,CPU", "-niter", "1"}, "GPU,CPU"},
		{"UnknownDevice", []string{"-d", "NOSUCHDEV", "-niter", "1"}, "NOSUCHDEV"},
		{"MissingModel", []string{"-m", "/nonexistent/model.onnx", "-niter", "1"}, "/nonexistent/model.onnx"},
		{"BadProperty", []string{"-p", "NOSUCHKEY=1", "-niter", "1"}, "NOSUCHKEY"},
		{"BadPropertySyntax", []string{"-p", "NOEQUALS", "-niter", "1"}, "NOEQUALS"},
		{"BadStreams", []string{"-nstreams", "-4", "-niter", "1"}, "NUM_STREAMS"},
		{"BadShape", []string{"-shape", "nosuchinput=[1,3,64,64]", "-niter", "1"}, "nosuchinput"},
		{"MisspeltShapeInput", []string{"-shape", "Image=[1,3,64,64]", "-niter", "1"}, "did you mean image?"},
		{"ShapeModelCannotTake", []string{"-shape", "image=[1,3,1,1]", "-niter", "1"}, "dimension 2 is 1: too small"},
		{"DataShapeNotModelShape", []string{"-data_shape", "image=[1,3,32,32]", "-niter", "1"}, `-data_shape image=[1,3,32,32]: does not fit input "image"`},
		{"BadPrecision", []string{"-infer_precision", "f7", "-niter", "1"}, "f7"},
		{"StrayArgument", []string{"-niter", "1", "extra"}, "extra"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe, tc.args...)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want exit status 1, got %v; stdout:\n%s", err, stdout.String())
			assert.Equal(t, 1, exit.ExitCode())
			msg := strings.TrimRight(stderr.String(), "\n")
			assert.NotContains(t, msg, "\n", "the error must be one line")
			assert.True(t, strings.HasPrefix(msg, "benchmark: "), "stderr: %q", msg)
			assert.Contains(t, msg, tc.mention)
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-h")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "output:\n%s", out)
	assert.Contains(t, string(out), "-nireq")
}
