package kernels_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/kernels"
)

// Environment of the child test process that TestKernelsUnderOclgrind
// starts under oclgrind.
const (
	// envUnder is "1" in the child: TestCatalogueKernels then insists on
	// the Oclgrind platform.
	envUnder = "CLINFER_UNDER_OCLGRIND"
	// envProbe makes the child launch probeSource instead of the
	// catalogue, to prove that an out-of-bounds access is reported.
	envProbe = "CLINFER_OCLGRIND_PROBE"
	// envRequire turns a missing oclgrind into a failure (make oclgrind).
	envRequire = "CLINFER_REQUIRE_OCLGRIND"
)

// probeSource writes one element past the end of its buffer.
const probeSource = `__kernel void probe(__global float* out, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid > n) return;
    out[gid] = 1.0f;
}`

// runUnderOclgrind re-executes this test binary under oclgrind with its
// memcheck (always on) and data-race checks and API checking, running only TestCatalogueKernels, and returns the child's
// output and oclgrind's log (where oclgrind writes every error it finds).
func runUnderOclgrind(t *testing.T, extraEnv ...string) (out, log string, err error) {
	t.Helper()
	if !cl.Enabled {
		t.Skip("built without OpenCL (CGO_ENABLED=0 or -tags noopencl): rebuild with cgo to run the kernels under oclgrind")
	}
	bin, lerr := exec.LookPath("oclgrind")
	if lerr != nil {
		if os.Getenv(envRequire) != "" {
			require.FailNow(t, "oclgrind is not installed: `apt-get install oclgrind` (make deps installs it)")
		}
		t.Skip("oclgrind is not installed: `apt-get install oclgrind` (make deps installs it); make oclgrind fails instead of skipping")
	}
	logPath := filepath.Join(t.TempDir(), "oclgrind.log")
	// Not --uninitialized: in oclgrind 21.10 that plugin rejects LLVM's
	// freeze instruction and crashes in clCreateBuffer.
	cmd := exec.Command(bin, "--check-api", "--data-races", "--log", logPath,
		os.Args[0], "-test.run", "^TestCatalogueKernels$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envUnder+"=1"), extraEnv...)
	b, err := cmd.CombinedOutput()
	lb, rerr := os.ReadFile(logPath)
	if rerr != nil && !os.IsNotExist(rerr) {
		require.NoError(t, rerr)
	}
	return string(b), string(lb), err
}

// TestKernelsUnderOclgrind runs every kernel of the catalogue on small
// shapes under oclgrind and fails on any error it reports: an access
// outside a buffer, a data race, or a misused OpenCL call.
func TestKernelsUnderOclgrind(t *testing.T) {
	out, log, err := runUnderOclgrind(t)
	require.NoError(t, err, "the kernels failed under oclgrind:\n%s\noclgrind log:\n%s", out, log)
	assert.Empty(t, strings.TrimSpace(log), "oclgrind reported errors:\n%s", log)
	assert.Contains(t, out, "--- PASS: TestCatalogueKernels", "the child run did not pass:\n%s", out)
	for _, k := range kernels.All() {
		assert.Contains(t, out, "--- PASS: TestCatalogueKernels/"+k.Name+" ", "kernel %s did not run under oclgrind", k.Name)
	}
}

// TestOclgrindCatchesOutOfBounds checks the checker: a kernel that writes
// one element past its buffer must show up in oclgrind's log.
func TestOclgrindCatchesOutOfBounds(t *testing.T) {
	_, log, _ := runUnderOclgrind(t, envProbe+"=1")
	assert.Contains(t, log, "Invalid write", "oclgrind did not report the out-of-bounds write of the probe kernel")
}

// TestCatalogueKernels launches every catalogue entry once on small shapes
// with exactly-sized buffers. It runs on any OpenCL device as a smoke test;
// TestKernelsUnderOclgrind runs it under oclgrind, where every access is
// checked.
func TestCatalogueKernels(t *testing.T) {
	e := newCLEnv(t)
	if os.Getenv(envUnder) == "1" {
		name, err := e.dev.Platform().Name()
		require.NoError(t, err)
		require.Contains(t, name, "Oclgrind", "%s=1 but the OpenCL platform is %q, not oclgrind's", envUnder, name)
		if os.Getenv(envProbe) != "" {
			runProbe(t, e)
			return
		}
	}
	for _, k := range kernels.All() {
		t.Run(k.Name, func(t *testing.T) {
			spec, ok := launchSpecs[k.Entry]
			require.True(t, ok, "no launch spec for kernel entry %s (%s): add one to launchSpecs", k.Entry, k.File)
			spec(t, e, k)
		})
	}
}

func runProbe(t *testing.T, e *clEnv) {
	prog, err := e.ctx.CreateProgramWithSource([]string{probeSource})
	require.NoError(t, err)
	defer func() { assert.NoError(t, prog.Close()) }()
	require.NoError(t, prog.BuildProgram(nil, ""))
	kern, err := prog.CreateKernel("probe")
	require.NoError(t, err)
	defer func() { assert.NoError(t, kern.Close()) }()
	buf, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, 4*4)
	require.NoError(t, err)
	defer func() { assert.NoError(t, buf.Close()) }()
	require.NoError(t, kern.SetArgs(buf, uint64(4)))
	ev, err := e.q.EnqueueNDRangeKernel(kern, nil, []int{8}, nil, nil)
	require.NoError(t, err)
	assert.NoError(t, ev.Wait())
	assert.NoError(t, ev.Close())
}

// global1D rounds n up so that some work items fall past n and exercise
// the kernels' bounds checks.
func global1D(n int) []int { return []int{(n + 15) / 16 * 16} }

func fill(n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*float32(i%7+1)/8
	}
	return v
}

// launchSpecs holds, per kernel entry point, a launch on small shapes that
// follows the kernel's work-size contract and argument layout.
var launchSpecs = map[string]func(t *testing.T, e *clEnv, k kernels.Kernel){
	"arg_reduce": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] along axis 1, first and last extreme.
		for _, last := range []int32{0, 1} {
			e.launch(t, k, "", global1D(8), nil, fill(24, -1, 1), make([]int64, 8), uint64(8), uint64(3), uint64(4), last)
		}
	},
	"cumsum": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] along axis -2, every exclusive/reverse combination.
		m := []int32{3, 2, 3, 4}
		for _, ex := range []int32{0, 1} {
			for _, rev := range []int32{0, 1} {
				e.launch(t, k, "", global1D(24), nil, fill(24, -1, 1), make([]float32, 24), uint64(24), m, []int64{-2}, ex, rev)
			}
		}
	},
	"gather_elements": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// data [2,3] uint, indices [2,2] long along axis 1 (one negative,
		// one clamped).
		m := []int32{2, 2, 2, 3, 1, 1, 3}
		e.launch(t, k, "", global1D(4), nil, []uint32{1, 2, 3, 4, 5, 6}, []int64{2, -1, 0, 7}, make([]uint32, 4), uint64(4), m)
	},
	"trilu": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4], upper from k=1 and lower from k=-1.
		for _, c := range []struct {
			k     int64
			upper int32
		}{{1, 1}, {-1, 0}} {
			e.launch(t, k, "", global1D(24), nil, fill(24, -1, 1), make([]float32, 24), uint64(24), uint64(3), uint64(4), []int64{c.k}, c.upper)
		}
	},
	"cast": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(10), nil, fill(10, -2, 2), make([]float32, 10), uint64(10))
	},
	"conv2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,5], w [4,1,3,3], groups 2, stride 2, pad 1 -> [1,4,3,3].
		m := []int32{1, 2, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1}
		e.launch(t, k, "", global1D(36), nil, fill(50, -1, 1), fill(36, -1, 1), fill(4, 0, 1), make([]float32, 36), uint64(36), m)
	},
	"conv_transpose2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,3,3], w [2,2,3,3], stride 2, pad 1 -> [1,2,5,5].
		m := []int32{1, 2, 3, 3, 2, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}
		e.launch(t, k, "", global1D(50), nil, fill(18, -1, 1), fill(36, -1, 1), fill(2, 0, 1), make([]float32, 50), uint64(50), m)
	},
	"copy_bytes": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(13), nil, []byte("hello, oclgrind"[:13]), make([]byte, 13), uint64(13))
	},
	"copy_words": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(7), nil, []uint32{1, 2, 3, 4, 5, 6, 7}, make([]uint32, 7), uint64(7))
	},
	"eltwise_binary": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3] with b [3] broadcast over rows.
		m := []int32{2, 2, 3, 3, 1, 0, 1}
		e.launch(t, k, "", global1D(6), nil, fill(6, 0.5, 3), fill(3, 0.5, 2), make([]float32, 6), uint64(6), m)
	},
	"eltwise_unary": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(10), nil, fill(10, 0.1, 1), make([]float32, 10), uint64(10), float32(1), float32(0.5))
	},
	"gather": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// data [2,3,2] uint, indices [4] long (one negative, one clamped).
		data := make([]uint32, 12)
		for i := range data {
			data[i] = uint32(i)
		}
		e.launch(t, k, "", global1D(16), nil, data, []int64{2, -1, 0, 5}, make([]uint32, 16),
			uint64(16), uint64(2), uint64(3), uint64(4))
	},
	"batch_norm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(12), nil, fill(12, -1, 1), fill(3, 0.5, 1), fill(3, 0, 1), fill(3, 0, 1), fill(3, 0.5, 2),
			make([]float32, 12), uint64(12), uint64(3), uint64(4), float32(1e-5))
	},
	"instance_norm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(6), nil, fill(24, -1, 1), fill(3, 0.5, 1), fill(3, 0, 1),
			make([]float32, 24), uint64(6), uint64(3), uint64(4), float32(1e-5))
	},
	"layer_norm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(3), nil, fill(12, -1, 1), fill(4, 0.5, 1), fill(4, 0, 1),
			make([]float32, 12), uint64(3), uint64(4), float32(1e-5), uint32(1))
	},
	"pad": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3] -> [4,5] with one leading pad per axis, in every mode.
		m := []int32{2, 4, 5, 2, 3, 3, 1, 1, 1}
		for mode := range int32(4) {
			e.launch(t, k, "", global1D(20), nil, fill(6, -1, 1), make([]float32, 20), uint64(20), m, mode, float32(0.5))
		}
	},
	"pool2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,5], 3x3 window, stride 2, pad 1 -> [1,2,3,3].
		m := []int32{5, 5, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 7, 7}
		e.launch(t, k, "", global1D(18), nil, fill(50, -1, 1), make([]float32, 18), uint64(18), m)
	},
	"reduce": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] reduced over axis 1.
		m := []int32{2, 2, 4, 12, 1, 1, 3, 4, 3}
		e.launch(t, k, "", global1D(8), nil, fill(24, -1, 1), make([]float32, 8), uint64(8), m)
	},
	"resize": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [1,1,2,2] -> [1,1,4,4], linear along H and W.
		axis := []int32{0, 0, 0, 1, 0, 1, 1, 1}
		m := append([]int32{4, 1, 1, 4, 4, 4, 4, 2, 1, 17, 19, 21, 29, 0, 1, 2, 6, 0, 0, 0, 0}, append(axis, axis...)...)
		w := []float32{0, 0, 0, 0.25, 0.75, 0, 0, 0.25, 0.75, 0}
		e.launch(t, k, "", global1D(16), nil, fill(4, -1, 1), make([]float32, 16), uint64(16), m, w)
	},
	"sgemm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, tl := range []kernels.SGEMMTiling{kernels.DefaultSGEMMTiling, {TileM: 16, TileN: 8, TileK: 4, WorkM: 2, WorkN: 2}} {
			g := gemmCase{m: 19, n: 10, k: 7, alpha: 1, beta: 0.5, transB: true, aOff: 1, cOff: 2, ldcPad: 1}
			got, want := g.run(t, e, tl, 3)
			assert.InDeltaSlice(t, want, got, 1e-4)
		}
	},
	"softmax": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] along axis 1.
		e.launch(t, k, "", global1D(8), nil, fill(24, -2, 2), make([]float32, 24), uint64(8), uint64(3), uint64(4))
	},
	"strided_copy": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// Transpose [2,3] -> [3,2].
		m := []int32{2, 3, 2, 1, 3, 2, 1, 0, 0}
		e.launch(t, k, "", global1D(6), nil, []uint32{1, 2, 3, 4, 5, 6}, make([]uint32, 6), uint64(6), m)
	},
	"where_select": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// cond [3], x [2,3], y scalar.
		m := []int32{2, 2, 3, 0, 1, 3, 1, 0, 0}
		e.launch(t, k, "", global1D(6), nil, []byte{1, 0, 1}, []uint32{1, 2, 3, 4, 5, 6}, []uint32{9}, make([]uint32, 6), uint64(6), m)
	},
	"fused_conv2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// conv2d's shapes with OCB 2, then sum (residual [4,1,1]), hardswish, clip.
		m := []int32{1, 2, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1}
		pm := []int32{3, 0, 3, 2, 2, 4, 9, 1, 0}
		pf := []float32{0, 0, 0, 0, -1, 1}
		e.launch(t, k, "-DOCB=2", global1D(18), nil, fill(50, -1, 1), fill(36, -1, 1), fill(4, 0, 1), fill(4, -1, 1),
			make([]float32, 36), uint64(18), m, pm, pf)
	},
	"fully_connected": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [3,4] . w [4,5] + bias [5], then sum (residual [3,1]) and gelu.
		pm := []int32{2, 0, 7, 2, 3, 5, 1, 0}
		pf := []float32{0, 0, 0, 0}
		e.launch(t, k, "", global1D(15), nil, fill(12, -1, 1), fill(20, -1, 1), fill(5, -1, 1), fill(3, -1, 1),
			make([]float32, 15), uint64(15), int32(5), int32(4), int32(1), pm, pf)
	},
	"matmul": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3,4] . b [4,5] + c [5] -> [2,3,5].
		m := []int32{3, 5, 4, 4, 1, 5, 1, 0, 1, 1, 1, 2, 12, 0, 0}
		e.launch(t, k, "", global1D(30), nil, fill(24, -1, 1), fill(20, -1, 1), fill(5, -1, 1), make([]float32, 30),
			uint64(30), m, float32(1), float32(0.5))
	},
}
