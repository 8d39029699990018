// The hostile-model corpus runs on the GPU and HETERO devices too, which
// needs a build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// hostileRun is one inference of a hostile case: its inputs and what it
// must end in.
type hostileRun struct {
	inputs map[string]*tensor.Tensor
	// exhausted: the run must fail with driver.ErrResourceExhausted;
	// otherwise it must succeed.
	exhausted bool
}

// hostileCase is a valid but hostile model and the runs to make on one
// compiled model, in order (a huge input, then a reasonable one).
type hostileCase struct {
	name string
	// compileExhausted: CompileModel itself must fail with
	// driver.ErrResourceExhausted (the shapes are static).
	compileExhausted bool
	model            func() []byte
	runs             []hostileRun
	// devices are the devices the case runs on (nil: CPU, GPU and
	// HETERO); envHostileEveryDevice runs it on all three.
	devices []string
}

func f32s(shape tensor.Shape) *tensor.Tensor { return tensor.MustNew(tensor.F32, shape) }

func i64s(v ...int64) *tensor.Tensor {
	t, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	return t
}

func f32c(v ...float32) *tensor.Tensor {
	t, _ := tensor.FromF32(tensor.Shape{int64(len(v))}, v)
	return t
}

// hostileCases is the corpus: every case ends in an error or a result,
// never a crash, on every device.
var hostileCases = []hostileCase{
	{
		name: "ConstantOfShape 131072x131072 (64 GiB) into Add", compileExhausted: true,
		model: func() []byte {
			return onnxbuild.New("cos", 13).Input("x", tensor.F32, onnxbuild.Dims(1)).
				Initializer("shape", i64s(131072, 131072)).
				Node("ConstantOfShape", "big", []string{"shape"}, []string{"c"}, map[string]any{"value": f32c(1)}).
				Node("Add", "add", []string{"c", "x"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Expand to 100000x100000", compileExhausted: true,
		model: func() []byte {
			return onnxbuild.New("expand", 13).Input("x", tensor.F32, onnxbuild.Dims(1)).
				Initializer("shape", i64s(100000, 100000)).
				Node("Expand", "big", []string{"x", "shape"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Tile 1000x1000 by 1000x1000", compileExhausted: true,
		model: func() []byte {
			return onnxbuild.New("tile", 13).Input("x", tensor.F32, onnxbuild.Dims(1000, 1000)).
				Initializer("reps", i64s(1000, 1000)).
				Node("Tile", "big", []string{"x", "reps"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Range of 1e12", compileExhausted: true,
		model: func() []byte {
			return onnxbuild.New("range", 13).Input("x", tensor.F32, onnxbuild.Dims(1)).
				Initializer("start", tensor.Scalar(0)).Initializer("limit", tensor.Scalar(1e12)).Initializer("delta", tensor.Scalar(1)).
				Node("Range", "big", []string{"start", "limit", "delta"}, []string{"r"}, nil).
				Node("Add", "add", []string{"r", "x"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Resize by 100000", compileExhausted: true,
		model: func() []byte {
			s, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 1e5, 1e5})
			return onnxbuild.New("resize", 13).Input("x", tensor.F32, onnxbuild.Dims(1, 1, 8, 8)).
				Initializer("scales", s).
				Node("Resize", "big", []string{"x", "", "scales"}, []string{"y"}, map[string]any{"mode": "nearest"}).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Pad by 1000000", compileExhausted: true,
		model: func() []byte {
			return onnxbuild.New("pad", 13).Input("x", tensor.F32, onnxbuild.Dims(1, 1, 2, 2)).
				Initializer("pads", i64s(0, 0, 1000000, 1000000, 0, 0, 1000000, 1000000)).
				Node("Pad", "big", []string{"x", "pads"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
	},
	{
		name: "Expand to a size from the input",
		model: func() []byte {
			return onnxbuild.New("dyn", 13).Input("x", tensor.F32, []onnxbuild.Dim{{Param: "N"}}).
				Input("shape", tensor.I64, onnxbuild.Dims(2)).
				Node("Expand", "big", []string{"x", "shape"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
		runs: []hostileRun{
			{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{1}), "shape": i64s(200000, 200000)}, exhausted: true},
			{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{1}), "shape": i64s(30, 40)}},
		},
	},
	{
		name: "outer product of a huge dynamic input",
		model: func() []byte {
			return onnxbuild.New("outer", 13).Input("x", tensor.F32, []onnxbuild.Dim{{Param: "N"}}).
				Initializer("col", i64s(-1, 1)).Initializer("row", i64s(1, -1)).
				Node("Reshape", "c", []string{"x", "col"}, []string{"xc"}, nil).
				Node("Reshape", "r", []string{"x", "row"}, []string{"xr"}, nil).
				Node("Mul", "big", []string{"xc", "xr"}, []string{"y"}, nil).
				Output("y", tensor.F32, nil).Bytes()
		},
		runs: []hostileRun{
			{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{1 << 20})}, exhausted: true},
			{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{100})}},
		},
	},
	{
		name: "100000 nodes", model: deepChain(100000), devices: []string{"CPU", "GPU"},
		runs: []hostileRun{{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{4})}}},
	},
	// HETERO:GPU,CPU puts the whole chain on the GPU, so at 100000 nodes
	// it compiled and ran the GPU case's 100000 kernels again (134 s of
	// TestHostileModels' 305 s, load 14, POCL pthread-skylake-avx512);
	// its own part (the query of every node, the partition, the
	// sub-request) gets a chain a fifth as deep.
	// CLINFER_HOSTILE_EVERY_DEVICE=1 runs the 100000 nodes there too.
	{
		name: "20000 nodes", model: deepChain(20000), devices: []string{heteroGPUCPU},
		runs: []hostileRun{{inputs: map[string]*tensor.Tensor{"x": f32s(tensor.Shape{4})}}},
	},
}

// deepChain is a chain of n unary nodes (Relu, Neg, Abs in turn).
func deepChain(n int) func() []byte {
	return func() []byte {
		m := onnxbuild.New("deep", 13).Input("x", tensor.F32, onnxbuild.Dims(4))
		prev := "x"
		for i := range n {
			out := fmt.Sprintf("t%d", i)
			m.Node([]string{"Relu", "Neg", "Abs"}[i%3], fmt.Sprintf("n%d", i), []string{prev}, []string{out}, nil)
			prev = out
		}
		return m.Node("Identity", "last", []string{prev}, []string{"y"}, nil).Output("y", tensor.F32, nil).Bytes()
	}
}

const (
	envHostileCase   = "CLINFER_HOSTILE_CASE"
	envHostileDevice = "CLINFER_HOSTILE_DEVICE"
	// envHostileEveryDevice=1 runs every case on CPU, GPU and HETERO,
	// whatever its devices.
	envHostileEveryDevice = "CLINFER_HOSTILE_EVERY_DEVICE"
	// hostileLimit is each case's time limit on each device.
	hostileLimit = 3 * time.Minute
	// hostileAddressSpace caps the helper's address space, so that an
	// allocation the runtime should have refused fails in the helper
	// (a crash the parent reports) instead of taking the machine's memory.
	hostileAddressSpace = 20 << 30
)

// TestHostileModels runs each case of the corpus on CPU, GPU and HETERO
// (or its devices; CLINFER_HOSTILE_EVERY_DEVICE=1: all three),
// each in a child process (a Go out-of-memory error cannot be recovered),
// and checks that it ends in the expected error or result within its time
// limit: never a crash, never a hang. A huge allocation must be an error
// wrapping driver.ErrResourceExhausted — at compile time when the shapes
// are static, at inference when they come from the inputs — after which the
// same compiled model runs a reasonable input.
func TestHostileModels(t *testing.T) {
	if os.Getenv(envHostileCase) != "" {
		t.Skip("the parent of TestHostileModelsHelper")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, c := range hostileCases {
		devices := c.devices
		if devices == nil || os.Getenv(envHostileEveryDevice) == "1" {
			devices = []string{"CPU", "GPU", heteroGPUCPU}
		}
		for _, dev := range devices {
			t.Run(c.name+"/"+dev, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), hostileLimit)
				defer cancel()
				cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHostileModelsHelper$", "-test.v")
				cmd.Env = append(os.Environ(), envHostileCase+"="+c.name, envHostileDevice+"="+dev)
				t0 := time.Now()
				out, err := cmd.CombinedOutput()
				if ctx.Err() != nil {
					t.Fatalf("hung: no result within %v\n%s", hostileLimit, tail(out))
				}
				require.NoError(t, err, "the helper crashed or failed:\n%s", tail(out))
				assert.Contains(t, string(out), "--- PASS: TestHostileModelsHelper", tail(out))
				t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), strings.Join(resultLines(out), "; "))
			})
		}
	}
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

// resultLines are the helper's "hostile:" log lines.
func resultLines(out []byte) []string {
	var r []string
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "hostile: "); i >= 0 {
			r = append(r, l[i+len("hostile: "):])
		}
	}
	return r
}

// TestHostileModelsHelper is the child of TestHostileModels: it runs one
// case on one device under an address-space limit.
func TestHostileModelsHelper(t *testing.T) {
	name, dev := os.Getenv(envHostileCase), os.Getenv(envHostileDevice)
	if name == "" {
		t.Skip("helper of TestHostileModels: runs only in its subprocess, with " + envHostileCase + " set")
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: hostileAddressSpace, Max: hostileAddressSpace}))
	var c *hostileCase
	for i := range hostileCases {
		if hostileCases[i].name == name {
			c = &hostileCases[i]
		}
	}
	require.NotNil(t, c, "no case %q", name)
	m, err := onnx.Read(c.model())
	require.NoError(t, err)
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm, err := core.CompileModel(context.Background(), m, dev, nil)
	if c.compileExhausted {
		require.Error(t, err, "compiling must fail")
		assert.ErrorIs(t, err, driver.ErrResourceExhausted)
		t.Logf("hostile: compile: %v", err)
		return
	}
	require.NoError(t, err, "compile")
	defer func() { assert.NoError(t, cm.Close()) }()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	for i, run := range c.runs {
		for k, v := range run.inputs {
			require.NoError(t, r.SetTensor(k, v), "run %d: input %s", i, k)
		}
		err := r.Infer(context.Background())
		if run.exhausted {
			require.Error(t, err, "run %d must fail", i)
			assert.True(t, errors.Is(err, driver.ErrResourceExhausted), "run %d: %v", i, err)
			t.Logf("hostile: run %d: %v", i, err)
			continue
		}
		require.NoError(t, err, "run %d", i)
		t.Logf("hostile: run %d: ok", i)
	}
}
