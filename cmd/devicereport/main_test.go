package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goTestOutput = `=== RUN   TestA
--- PASS: TestA (0.01s)
=== RUN   TestB
=== RUN   TestB/x
=== RUN   TestB/x-y
=== PAUSE TestB/x-y
    --- PASS: TestB/x (0.00s)
    --- FAIL: TestB/x-y (1.50s)
--- FAIL: TestB (1.50s)
=== RUN   TestC
    c_test.go:3: no device
--- SKIP: TestC (0.00s)
FAIL
`

func TestParseTestOutput(t *testing.T) {
	r := parseTestOutput(goTestOutput)
	assert.Equal(t, testResults{"TestA": "PASS", "TestB": "FAIL", "TestB/x": "PASS", "TestB/x-y": "FAIL", "TestC": "SKIP"}, r)
	assert.Equal(t, []string{"TestA", "TestB/x", "TestB/x-y", "TestC"}, r.leaves(), "TestB has subtests; its sibling x-y is not x's child")
	p, f, s, failing := r.counts()
	assert.Equal(t, [3]int{2, 1, 1}, [3]int{p, f, s})
	assert.Equal(t, []string{"TestB/x-y"}, failing)
}

func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkSGEMM/1024x1024x1024/clinfer-16         	       5	    650000 ns/op	      3305 gflops	         0.65 ms/gemm
BenchmarkCopy/h2d/64MiB                     	       5	   3007864 ns/op	        22.50 GB/s
BenchmarkLaunch/batch-2      	       5	    279485 ns/op	         2.680 µs/launch
PASS`
	r := parseBench(out)
	assert.InDelta(t, 3305, r["BenchmarkSGEMM/1024x1024x1024/clinfer"]["gflops"], 1e-9)
	assert.Equal(t, []SGEMMBench{{N: 1024, Impl: "clinfer", GFLOPS: 3305, MS: 0.65}}, sgemmFigures(r))
	cp, la := copyLaunchFigures(r)
	assert.Equal(t, map[string]float64{"h2d 64MiB": 22.5}, cp)
	assert.Equal(t, map[string]float64{"batch": 2.68}, la)
}

func TestCompileFigures(t *testing.T) {
	out := "model m on GPU\n1x3x640x640\tcold         \trun 1\t 9435.6 ms\tLOADED_FROM_CACHE=NO\n" +
		"1x3x640x640\tcold         \tmedian\t   9435.6 ms\n1x3x640x640\tprogram-cache\tmedian\t   7990.9 ms\n1x3x640x640\tmodel-cache  \tmedian\t   6423.9 ms\n"
	assert.Equal(t, []CompileBench{{Shape: "1x3x640x640", ColdMS: 9435.6, ProgramCacheMS: 7990.9, ModelCacheMS: 6423.9}}, compileFigures(out))
}

// fakeBundle writes a bundle whose binaries are shell scripts printing
// canned output: two devices, and on GPU.1 a lowering case fails.
func fakeBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clinfo := `{"platforms":[{"name":"P","vendor":"V","version":"OpenCL 3.0","devices":[
{"name":"Dev A","type":"GPU","driverVersion":"1.0","fp16":true,"clinfer":{"device":"GPU.0"}},
{"name":"Dev B","type":"CPU","driverVersion":"2.0","clinfer":{"device":"GPU.1"}}]}]}`
	scripts := map[string]string{
		"bin/clinfo":               "cat <<'EOF'\n" + clinfo + "\nEOF\n",
		"bin/benchmark":            `while [ $# -gt 0 ]; do if [ "$1" = -json ]; then echo '{"throughput_fps": 100, "latency_ms": {"median": 5}, "compile_ms": 300, "nireq": 4}' > "$2"; fi; shift; done`,
		"bin/compiletime":          `printf '1x3x640x640\tcold\tmedian\t  900.0 ms\n'`,
		"bin/tune":                 `while [ $# -gt 0 ]; do if [ "$1" = -json ]; then echo '{"mode": "FAST", "tune_seconds": 12.5, "before_ms": 40, "after_ms": 32, "tuned": 90, "recorded": 3}' > "$2"; fi; shift; done`,
		"tests/tests.test":         `echo "    x.go:1: f16 mode: native (GPU.0 has cl_khr_fp16)"; echo "--- PASS: TestONNXBackendGPU/node/test_relu (0.0s)"; echo "--- SKIP: TestONNXBackendGPU/node/test_odd (0.0s)"; echo "ONNX backend suite: CPU and GPU pass the same cases"`,
		"clbackend/clbackend.test": `if [ "$CLINFER_GPU_DEVICE" = GPU.1 ]; then echo "--- FAIL: TestLoweringsMatchCPU/Relu (0.1s)"; exit 1; fi; echo "--- PASS: TestLoweringsMatchCPU/Relu (0.1s)"`,
		"clbackend/cl/cl.test":     `echo "--- PASS: TestVectorAdd (0.1s)"`,
		"kernels/kernels.test":     `echo "--- PASS: TestBuildOnOpenCL (0.1s)"`,
		"bench/bench.test":         `echo "BenchmarkSGEMM/1024x1024x1024/clinfer-2 5 100 ns/op 50 gflops 1 ms/gemm"`,
	}
	for name, body := range scripts {
		if strings.HasSuffix(name, ".test") {
			// -list-suites: the binary lists its tests.
			body = `if [ "$1" = -test.list ]; then echo TestListedA; echo TestListedB; echo ok; exit 0; fi` + "\n" + body
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "BUNDLE"), []byte("clinfer test\n"), 0o644))
	return dir
}

// TestRunWritesReport runs the whole driver on a fake bundle: every step
// runs on every device, a failing case fails the run with exit status 1,
// and report.json and report.md carry the figures and the failure.
func TestRunWritesReport(t *testing.T) {
	bundle, out := fakeBundle(t), t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bundle", bundle, "-out", out, "-quick"}, &stdout, &stderr)
	assert.Equal(t, 1, code, "GPU.1's lowering failure fails the run\n%s\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "GPU.1 lowering: FAIL")
	assert.Contains(t, stdout.String(), "failed: TestLoweringsMatchCPU/Relu")

	var rep Report
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Complete)
	assert.False(t, rep.Passed)
	assert.Equal(t, []string{"GPU.1 lowering"}, rep.failures())
	require.Len(t, rep.Devices, 2)
	d := rep.Devices[0]
	assert.Equal(t, "Dev A", d.Name)
	assert.Equal(t, "native (GPU.0 has cl_khr_fp16)", d.F16)
	assert.Equal(t, "CPU and GPU pass the same cases", d.Parity)
	assert.Equal(t, &Counts{Passed: 1, Skipped: 1}, d.ONNX)
	require.Len(t, d.Bench.Models, 3)
	assert.InDelta(t, 5, d.Bench.Models[0].LatencyMS, 1e-9)
	assert.InDelta(t, 100, d.Bench.Models[0].ThroughputFPS, 1e-9)
	assert.Equal(t, []SGEMMBench{{N: 1024, Impl: "clinfer", GFLOPS: 50, MS: 1}}, d.Bench.SGEMM)
	assert.Equal(t, []CompileBench{{Model: "hello_deepa", Shape: "1x3x640x640", ColdMS: 900}}, d.Bench.Compile)
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "**FAILED**: GPU.1 lowering")
	assert.Contains(t, string(md), "`TestLoweringsMatchCPU/Relu`")
	assert.Contains(t, string(md), "| compile hello_deepa | cold (ms) |")
	assert.Equal(t, &TuneBench{Model: "Conv2d", Mode: "FAST", Seconds: 12.5, Choices: 93, BeforeMS: 40, AfterMS: 32}, d.Bench.Tune)
	assert.Contains(t, string(md), "| tuning | FAST on Conv2d: 93 kernel choices in 12.5 s; latency 40.00 ms with the heuristics, 32.00 ms tuned (1.25x) |")
	assert.FileExists(t, filepath.Join(out, "logs", "GPU.1-lowering.log"))

	// -devices keeps one device; it passes.
	out2 := t.TempDir()
	code = run([]string{"-bundle", bundle, "-out", out2, "-quick", "-devices", "GPU.0"}, &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	code = run([]string{"-bundle", bundle, "-out", t.TempDir(), "-devices", "GPU.7"}, &stdout, &stderr)
	assert.Equal(t, 2, code, "no such device")
}

// TestRunListSuites: with -list-suites every test binary lists its tests
// instead of running them (GPU.1's failing lowering case does not run),
// and the benchmarks still run.
func TestRunListSuites(t *testing.T) {
	bundle, out := fakeBundle(t), t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bundle", bundle, "-out", out, "-quick", "-list-suites"}, &stdout, &stderr)
	assert.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "GPU.1 lowering: ok: 2 tests listed (not run: -list-suites)")
	assert.Contains(t, stdout.String(), "kernels: ok: 2 tests listed")
	var rep Report
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Passed)
	for _, s := range rep.Machine {
		assert.Equal(t, 2, s.Listed, s.Name)
		assert.Zero(t, s.Passed+s.Failed+s.Skipped, s.Name)
	}
	d := rep.Devices[0]
	assert.Equal(t, []SGEMMBench{{N: 1024, Impl: "clinfer", GFLOPS: 50, MS: 1}}, d.Bench.SGEMM, "benchmarks run")
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| lowering | listed 2 tests, not run |")

	// A binary that lists nothing fails its step.
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "kernels", "kernels.test"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	code = run([]string{"-bundle", bundle, "-out", t.TempDir(), "-quick", "-list-suites"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout.String(), "kernels: FAIL (listed no tests)")
}

// TestRunNoOpenCL: a clinfo that finds nothing is exit status 2.
func TestRunNoOpenCL(t *testing.T) {
	bundle := fakeBundle(t)
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "bin", "clinfo"), []byte("#!/bin/sh\necho 'no OpenCL platform' >&2\nexit 1\n"), 0o755))
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"-bundle", bundle, "-out", t.TempDir()}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no OpenCL platform")
}

func TestMatrix(t *testing.T) {
	dir := t.TempDir()
	rep := Report{Complete: true, Passed: true, Devices: []DeviceReport{{
		ID: "GPU.0", Name: "Dev A", Type: "GPU", Driver: "1.0", F16: "native",
		Suites: []Suite{{Name: "onnx-backend", Passed: 3}, {Name: "bench-sgemm"}},
		Bench: Benchmarks{
			Models: []ModelBench{{Name: "det_1x3x640x640", LatencyMS: 9.75}},
			SGEMM:  []SGEMMBench{{N: 1024, Impl: "clinfer", GFLOPS: 3305}},
		},
	}}}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dev-a.json"), b, 0o644))
	readme := filepath.Join(dir, "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("# x\n\n"+matrixBegin+"\nold\n"+matrixEnd+"\nafter\n"), 0o644))

	var out bytes.Buffer
	require.Error(t, updateMatrix(dir, readme, true, &out), "stale")
	require.NoError(t, updateMatrix(dir, readme, false, &out))
	got, err := os.ReadFile(readme)
	require.NoError(t, err)
	assert.Contains(t, string(got), "| Dev A (GPU) | 1.0 | 1/1 | 9.75 ms | 3305 GFLOPS | native | [dev-a](docs/devices/dev-a.md) |")
	assert.True(t, strings.HasSuffix(string(got), matrixEnd+"\nafter\n"))
	assert.NotContains(t, string(got), "old")
	require.NoError(t, updateMatrix(dir, readme, true, &out), "fresh after the update")
}
