package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

func TestDefaultModelRuns(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, &out))
	s := out.String()
	assert.Contains(t, s, "smallcnn.onnx (embedded)")
	assert.Contains(t, s, "output     probs")
	assert.Contains(t, s, "runtime model")
	assert.Contains(t, s, "timing")
}

func TestInputsAndOutputFiles(t *testing.T) {
	dir := t.TempDir()
	in, err := tensor.FromF32(tensor.Shape{2, 3, 64, 64}, seeded.Float32s(7, 2*3*64*64, -1, 1))
	require.NoError(t, err)
	inPath := filepath.Join(dir, "image.npy")
	require.NoError(t, npy.WriteFile(inPath, in))
	outDir := filepath.Join(dir, "out")

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-d", "CPU", "-i", defaultmodel.InputName + "=" + inPath, "-o", outDir, "-p", "ENABLE_PROFILING=YES"}, &out))
	got, err := npy.ReadFile(filepath.Join(outDir, defaultmodel.OutputName+".npy"))
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{2, 10}, got.Shape())
	// Softmax rows sum to one.
	v := got.F32()
	for r := 0; r < 2; r++ {
		sum := float32(0)
		for _, x := range v[r*10 : r*10+10] {
			sum += x
		}
		assert.InDelta(t, 1, sum, 1e-5, "row %d", r)
	}
}

func TestShapeFixesDynamicDims(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-shape", "image=[3,3,64,64]"}, &out))
	assert.Contains(t, out.String(), "f32[3,10]")
}

func TestBadArgumentsGiveOneLineErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.npy")
	require.NoError(t, os.WriteFile(bad, []byte("not a numpy file"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing model", []string{"-m", filepath.Join(dir, "nope.onnx")}, "nope.onnx"},
		{"unknown input", []string{"-i", "nosuch=" + bad}, `no input "nosuch"`},
		{"bad npy", []string{"-i", "image=" + bad}, "bad.npy"},
		{"bad property", []string{"-p", "NUM_STREAMS=-10"}, "NUM_STREAMS"},
		{"unknown property", []string{"-p", "NO_SUCH_KEY=1"}, "NO_SUCH_KEY"},
		{"bad shape", []string{"-shape", "image=[1,3,x]"}, "-shape"},
		{"shape misfit", []string{"-shape", "image=[1,3,32,32]"}, "does not fit"},
		{"unknown device", []string{"-d", "NPU"}, `unknown device "NPU"`},
		{"bad -p syntax", []string{"-p", "novalue"}, "want NAME=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n", "errors are one line")
		})
	}
}

// TestExitStatus runs the real binary: errors exit 1 with one line on stderr.
func TestExitStatus(t *testing.T) {
	if os.Getenv("INFER_MAIN") == "1" {
		os.Args = append([]string{"infer"}, strings.Fields(os.Getenv("INFER_ARGS"))...)
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExitStatus$")
	cmd.Env = append(os.Environ(), "INFER_MAIN=1", "INFER_ARGS=-m /nonexistent/model.onnx")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "one line: %q", stderr.String())
	assert.True(t, strings.HasPrefix(stderr.String(), "infer: "))
}

// TestCompareDevices runs the embedded model on two devices and prints the
// largest difference; CPU against itself must be exactly zero.
func TestCompareDevices(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-d", "CPU", "-compare", "CPU", "-v=false"}, &out))
	assert.Contains(t, out.String(), "compare    probs                CPU vs CPU: largest difference 0 ")
	err := run(context.Background(), []string{"-compare", "NPU", "-v=false"}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `-compare NPU`)
}

// TestExecGraph: -exec_graph writes the runtime model as dot whose node
// labels carry the exec-graph annotations, fused nodes naming what they
// absorbed, on CPU and (with OpenCL) GPU.
func TestExecGraph(t *testing.T) {
	for _, dev := range []string{"CPU", "GPU"} {
		t.Run(dev, func(t *testing.T) {
			if dev == "GPU" && !cl.Enabled {
				t.Skip("built without OpenCL (CGO_ENABLED=0 or -tags noopencl); rebuild with cgo and `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` to run it")
			}
			path := filepath.Join(t.TempDir(), "exec.dot")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), []string{"-d", dev, "-p", "ENABLE_PROFILING=YES", "-exec_graph", path}, &out))
			assert.Contains(t, out.String(), "exec graph "+path)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			dot := string(b)
			assert.True(t, strings.HasPrefix(dot, "digraph "), "dot starts with digraph: %.40q", dot)
			for _, k := range []string{"LAYER_TYPE: ", "IMPL_TYPE: ", "EXECUTION_ORDER: ", "PERF_COUNTER: ", "ORIGINAL_NAMES: "} {
				assert.Contains(t, dot, k)
			}
			assert.Contains(t, dot, "LAYER_TYPE: FusedConv", "the passes ran")
			assert.Contains(t, dot, "ORIGINAL_NAMES: conv1,bn1,relu1", "a fused node names the nodes it absorbed")
			assert.NotContains(t, dot, "planned per input shape", "the plan of the inference that ran is reported")
			assert.Contains(t, dot, " -> ")
		})
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"-exec_graph", filepath.Join(t.TempDir(), "no", "such", "dir.dot")}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-exec_graph")
}

// TestVirtualDevices: AUTO and BATCH device names run, and AUTO says which
// device ran each inference.
func TestVirtualDevices(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		mention []string
	}{
		{"Auto", []string{"-d", "AUTO:CPU", "-runs", "2"}, []string{"execution devices: CPU", "ran on     CPU, CPU"}},
		{"Batch", []string{"-d", "BATCH:CPU(2)", "-v=false"}, []string{"device     BATCH:CPU(2) (execution devices: CPU)", "output     probs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), tc.args, &out))
			for _, s := range tc.mention {
				assert.Contains(t, out.String(), s)
			}
		})
	}
}
