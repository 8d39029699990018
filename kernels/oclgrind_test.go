package kernels_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/fusion"
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
	t.Parallel() // a child process, beside TestCatalogueKernels (see there)
	out, log, err := runUnderOclgrind(t)
	require.NoError(t, err, "the kernels failed under oclgrind:\n%s\noclgrind log:\n%s", out, log)
	assert.Empty(t, strings.TrimSpace(log), "oclgrind reported errors:\n%s", log)
	assert.Contains(t, out, "--- PASS: TestCatalogueKernels", "the child run did not pass:\n%s", out)
	for _, k := range kernels.All() {
		assert.Contains(t, out, "--- PASS: TestCatalogueKernels/"+k.Name+" ", "kernel %s did not run under oclgrind", k.Name)
	}
	for _, v := range declaredVariants() {
		assert.Contains(t, out, "/"+v.String()+" (", "declared variant %s did not pass under oclgrind", v)
	}
	assert.Contains(t, out, "--- PASS: TestCatalogueKernels/generated_chain ", "the generated chain kernels did not run under oclgrind")
}

// TestOclgrindCatchesOutOfBounds checks the checker: a kernel that writes
// one element past its buffer must show up in oclgrind's log.
func TestOclgrindCatchesOutOfBounds(t *testing.T) {
	t.Parallel() // a child process, beside TestCatalogueKernels (see there)
	_, log, _ := runUnderOclgrind(t, envProbe+"=1")
	assert.Contains(t, log, "Invalid write", "oclgrind did not report the out-of-bounds write of the probe kernel")
}

// TestCatalogueKernels launches every catalogue entry once on small shapes
// with exactly-sized buffers. It runs on any OpenCL device as a smoke test;
// TestKernelsUnderOclgrind runs it under oclgrind, where every access is
// checked.
//
// It runs in parallel with the package's other long tests, which share
// nothing with it or each other: TestPortabilityMatrix (clang-15
// processes, 2 at a time) and TestKernelsUnderOclgrind and
// TestOclgrindCatchesOutOfBounds (child processes). In sequence the
// package took their sum, and POCL builds one program at a time (one
// core) while go test runs another package beside it; TestBuildOnOpenCL
// and TestSGEMM stay sequential, before them, so that the programs this
// test shares with them are in POCL's kernel cache instead of built twice
// at once.
func TestCatalogueKernels(t *testing.T) {
	t.Parallel()
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
	dev, err := e.dev.Name()
	require.NoError(t, err)
	t.Logf("launching on device %s with limits %+v", dev, e.lim)
	ran := 0 // entries whose spec ran (a -run pattern may select some)
	for _, k := range kernels.All() {
		t.Run(k.Name, func(t *testing.T) {
			ran++
			spec, ok := launchSpecs[k.Entry]
			if !ok {
				spec, ok = variantSpecs[k.Entry]
			}
			if f, declared := fusion.LookupKernelFusion(k.Name); declared && !ok {
				// A kernel fusion's launch follows from its declaration.
				spec, ok = kernelFusionSpec(f), true
			}
			require.True(t, ok, "no launch spec for kernel entry %s (%s): add one to launchSpecs", k.Entry, k.File)
			spec(t, e, k)
		})
	}
	// Kernels package gen generates for chains of element-wise ops.
	t.Run("generated_chain", func(t *testing.T) { launchGeneratedChains(t, e) })
	// Every declared variant that fits the device ran: a variant no spec
	// runs is untested. Those the device refuses are built for every
	// target by TestPortabilityMatrix and run under oclgrind.
	if !t.Failed() && ran == len(kernels.All()) {
		var refused []string
		for _, v := range declaredVariants() {
			if why := v.Fits(e.lim); why != "" {
				refused = append(refused, v.String()+": "+why)
				continue
			}
			_, ran := ranVariants.Load(v.String())
			assert.True(t, ran, "declared variant %s ran in no launch spec: its kernel's spec must run every point of its algorithm (clEnv.forVariants)", v)
		}
		if len(refused) > 0 {
			t.Logf("%d declared variants exceed the limits of %s (%+v), not launched here:\n%s", len(refused), dev, e.lim, strings.Join(refused, "\n"))
		}
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

// recMeta is recurrent_cell.cl's int table for D 2, N 2, H 3, S 2 at step
// 1 with flags, direction 1 backward, xw rows by batch entry (layout 1)
// and y [N, S, D, H] of a cell of g gates; every activation code from
// first (mod 11).
func recMeta(flags, first, g int32) []int32 {
	m := []int32{2, 2, 3, 2, 1, flags, 2, 1, 2, 4 * 3 * g, 6, 3, 12}
	for i := int32(0); i < 6; i++ {
		m = append(m, (first+i)%11)
	}
	return m
}

// recParams is the float table: clip 2, then alpha and beta per activation.
func recParams() []float32 {
	return []float32{2, 0.5, 0.2, 0.3, 0.1, 1, 1, 0.2, 0.5, 0.01, 0, 1, 0}
}

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
			if hasFP64(e) {
				e.launch(t, k, "-DT=double", global1D(8), nil, make([]float64, 24), make([]int64, 8), uint64(8), uint64(3), uint64(4), last)
			}
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
		// i8 summed in wrapping 64 bits (stored modulo 2^8), an i32 axis.
		i8 := make([]int8, 24)
		for i := range i8 {
			i8[i] = int8(i*37 - 100)
		}
		e.launch(t, k, "-DT=char -DACC=ulong -DIDX=int", global1D(24), nil, i8, make([]int8, 24), uint64(24), m, []int32{1}, int32(0), int32(1))
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
		// bfloat16 both ways (a NaN among the floats), f16 to bool.
		f := fill(10, -2, 2)
		f[3] = float32(math.NaN())
		e.launch(t, k, "-DDST_BF16", global1D(10), nil, f, make([]uint16, 10), uint64(10))
		e.launch(t, k, "-DSRC_BF16 -DDST_T=int", global1D(10), nil, []uint16{0x3f80, 0xc000, 0x7fc0, 0, 0x4120, 1, 2, 3, 4, 5}, make([]int32, 10), uint64(10))
		e.launch(t, k, "-DSRC_HALF -DDST_T=uchar -DDST_BOOL", global1D(10), nil, make([]uint16, 10), make([]byte, 10), uint64(10))
		// The 8-bit floats both ways (every code decoded; out of range,
		// infinite and NaN floats encoded saturating and not).
		codes := make([]byte, 256)
		for i := range codes {
			codes[i] = byte(i)
		}
		g := []float32{0, -0.0, 1e-9, 0.3, -2.5, 500, -1e6, float32(math.Inf(1)), float32(math.NaN()), 57344}
		for f := 1; f <= 4; f++ {
			e.launch(t, k, fmt.Sprintf("-DSRC_F8=%d -DDST_T=float", f), global1D(256), nil, codes, make([]float32, 256), uint64(256))
			e.launch(t, k, fmt.Sprintf("-DDST_F8=%d", f), global1D(10), nil, g, make([]byte, 10), uint64(10))
			e.launch(t, k, fmt.Sprintf("-DDST_F8=%d -DF8_NOSAT", f), global1D(10), nil, g, make([]byte, 10), uint64(10))
		}
	},
	"conv2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,5], w [4,1,3,3], groups 2, stride 2, pad 1 -> [1,4,3,3].
		m := []int32{1, 2, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1}
		e.launch(t, k, "", global1D(36), nil, fill(50, -1, 1), fill(36, -1, 1), fill(4, 0, 1), make([]float32, 36), uint64(36), m)
		e.launch(t, k, "-DHALF -DOCB=2", global1D(18), nil, f16Pattern(50, false), f16Pattern(36, false), f16Pattern(4, true), make([]uint16, 36), uint64(18), m)
	},
	"conv_transpose2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,3,3], w [2,2,3,3], stride 2, pad 1 -> [1,2,5,5].
		m := []int32{1, 2, 3, 3, 2, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}
		e.launch(t, k, "", global1D(50), nil, fill(18, -1, 1), fill(36, -1, 1), fill(2, 0, 1), make([]float32, 50), uint64(50), m)
		e.launch(t, k, "-DHALF -DOCB=2", global1D(25), nil, f16Pattern(18, false), f16Pattern(36, false), f16Pattern(2, true), make([]uint16, 50), uint64(25), m)
	},
	"copy_bytes": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(13), nil, []byte("hello, oclgrind"[:13]), make([]byte, 13), uint64(13))
	},
	"copy_words": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(7), nil, []uint32{1, 2, 3, 4, 5, 6, 7}, make([]uint32, 7), uint64(7))
	},
	"eltwise_unary": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(10), nil, fill(10, 0.1, 1), make([]float32, 10), uint64(10), float32(1), float32(0.5))
		// f16 storage computed in float (f16 bits: 0x3c00 is 1).
		e.launch(t, k, "-DHALF", global1D(10), nil, f16Pattern(10, true), make([]uint16, 10), uint64(10), float32(1), float32(0.5))
		if hasFP64(e) { // every op in double
			e.launch(t, k, "-DT=double -DIS_DOUBLE", global1D(10), nil, make([]float64, 10), make([]float64, 10), uint64(10), float32(1), float32(0.5))
		}
		switch k.Name {
		case "relu", "neg", "abs", "sign", "bitwise_not":
			// Integer forms; negating the minimum wraps.
			e.launch(t, k, "-DT=long -DIS_INT", global1D(4), nil, []int64{math.MinInt64, -3, 0, 5}, make([]int64, 4), uint64(4), float32(0), float32(0))
		}
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
		e.launch(t, k, "-DHALF", global1D(12), nil, f16Pattern(12, false), f16Pattern(3, true), f16Pattern(3, false), f16Pattern(3, false),
			f16Pattern(3, true), make([]uint16, 12), uint64(12), uint64(3), uint64(4), float32(1e-5))
		if hasFP64(e) {
			one := []float64{1, 1, 1}
			e.launch(t, k, "-DDOUBLE", global1D(12), nil, make([]float64, 12), one, make([]float64, 3), make([]float64, 3), one,
				make([]float64, 12), uint64(12), uint64(3), uint64(4), float32(1e-5))
		}
	},
	"instance_norm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(6), nil, fill(24, -1, 1), fill(3, 0.5, 1), fill(3, 0, 1),
			make([]float32, 24), uint64(6), uint64(3), uint64(4), float32(1e-5))
		e.launch(t, k, "-DHALF", global1D(6), nil, f16Pattern(24, false), f16Pattern(3, true), f16Pattern(3, false),
			make([]uint16, 24), uint64(6), uint64(3), uint64(4), float32(1e-5))
		if hasFP64(e) {
			e.launch(t, k, "-DDOUBLE", global1D(6), nil, make([]float64, 24), []float64{1, 1, 1}, make([]float64, 3),
				make([]float64, 24), uint64(6), uint64(3), uint64(4), float32(1e-5))
		}
	},
	"layer_norm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		args := []any{fill(12, -1, 1), fill(4, 0.5, 1), fill(4, 0, 1), make([]float32, 12)}
		if strings.Contains(k.Options, "-DLN_STATS") {
			args = append(args, make([]float32, 3), make([]float32, 3)) // mean, inv_std_dev
		}
		args = append(args, uint64(3), uint64(4), float32(1e-5), uint32(1))
		e.launch(t, k, "", global1D(3), nil, args...)
		// f16 data; the statistics stay f32.
		args[0], args[1], args[2], args[3] = f16Pattern(12, false), f16Pattern(4, true), f16Pattern(4, false), make([]uint16, 12)
		e.launch(t, k, "-DHALF", global1D(3), nil, args...)
		if hasFP64(e) {
			args[0], args[1], args[2], args[3] = make([]float64, 12), []float64{1, 1, 1, 1}, make([]float64, 4), make([]float64, 12)
			e.launch(t, k, "-DDOUBLE", global1D(3), nil, args...)
		}
	},
	"pad": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3] -> [4,5] with one leading pad per axis, in every mode.
		m := []int32{2, 4, 5, 2, 3, 3, 1, 1, 1}
		for mode := range int32(4) {
			e.launch(t, k, "", global1D(20), nil, fill(6, -1, 1), make([]float32, 20), uint64(20), m, mode, float32(0.5))
		}
	},
	"pool": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,3,5,5], 2x3x3 window, stride (1,2,2), pads (0,1,1) ->
		// [1,2,2,3,3]; then x [1,2,5,5] (D = 1), 3x3, stride 2, pad 1 ->
		// [1,2,3,3].
		for _, c := range []struct {
			m       []int32
			in, out int
		}{
			{[]int32{3, 5, 5, 2, 3, 3, 2, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 1, 3, 7, 7}, 150, 36},
			{[]int32{1, 5, 5, 1, 3, 3, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 1, 1, 7, 7}, 50, 18},
		} {
			run := func(extra string, x, out any) {
				args := []any{x, out}
				if strings.Contains(k.Options, "-DPOOL_INDICES") {
					args = append(args, make([]int64, c.out), int32(1)) // indices, column-major
				}
				args = append(args, uint64(c.out), append(c.m, 3)) // m[22]: LpPool's p
				e.launch(t, k, extra, global1D(c.out), nil, args...)
			}
			run("", fill(c.in, -1, 1), make([]float32, c.out))
			run("-DHALF", f16Pattern(c.in, false), make([]uint16, c.out))
			if hasFP64(e) {
				run("-DT=double -DA=double", make([]float64, c.in), make([]float64, c.out))
			}
			if strings.Contains(k.Options, "-DPOOL_MAX") {
				u8 := make([]byte, c.in)
				for i := range u8 {
					u8[i] = byte(i * 37)
				}
				run("-DT=uchar -DIS_INT", u8, make([]byte, c.out))
			}
		}
	},
	"conv3d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,3,4,4], w [4,1,2,3,3], groups 2, stride (1,2,2), pads
		// (0,1,1) -> [1,4,2,2,2].
		m := []int32{1, 2, 3, 4, 4, 4, 2, 2, 2, 2, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 2, 1}
		e.launch(t, k, "", global1D(32), nil, fill(96, -1, 1), fill(72, -1, 1), fill(4, 0, 1), make([]float32, 32), uint64(32), m)
		e.launch(t, k, "-DHALF", global1D(32), nil, f16Pattern(96, false), f16Pattern(72, false), f16Pattern(4, true), make([]uint16, 32), uint64(32), m)
	},
	"conv_transpose3d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,2,2,2], w [2,1,2,3,3], groups 2, stride (1,2,2), pads
		// (0,1,1) -> [1,2,3,3,3].
		m := []int32{1, 2, 2, 2, 2, 2, 3, 3, 3, 2, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, 2, 1}
		e.launch(t, k, "", global1D(54), nil, fill(16, -1, 1), fill(36, -1, 1), fill(2, 0, 1), make([]float32, 54), uint64(54), m)
		e.launch(t, k, "-DHALF", global1D(54), nil, f16Pattern(16, false), f16Pattern(36, false), f16Pattern(2, true), make([]uint16, 54), uint64(54), m)
	},
	"gather_nd": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// data [2,3,2] uint, indices [2,2,1] long with batch_dims 1 (one
		// negative, one clamped) -> [2,2,2].
		m := []int32{1, 2, 2, 6, 3, 2}
		e.launch(t, k, "", global1D(8), nil, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, []int64{2, -1, 0, 7},
			make([]uint32, 8), uint64(8), m)
	},
	"hardmax": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] along axis 1.
		e.launch(t, k, "", global1D(8), nil, fill(24, -1, 1), make([]float32, 24), uint64(8), uint64(3), uint64(4))
		if hasFP64(e) {
			e.launch(t, k, "-DT=double", global1D(8), nil, make([]float64, 24), make([]float64, 24), uint64(8), uint64(3), uint64(4))
		}
	},
	"lstm_cell": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// D 2, N 2, H 3, S 2 at step 1; batch entry 1's sequence (length
		// 1) ended; peepholes, clip, direction 1 backward, layout 1
		// strides for y.
		for _, flags := range []int32{1 | 2 | 4, 0} {
			e.launch(t, k, "", global1D(12), nil, fill(2*4*12, -1, 1), fill(2*2*12, -1, 1), fill(2*24, -1, 1), fill(2*9, -1, 1),
				[]int32{2, 1}, fill(12, -1, 1), fill(12, -1, 1), make([]float32, 24), uint64(12), recMeta(flags, 1, 4), recParams())
		}
	},
	"lstm_step": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// D 2, N 2, H 8, I 3: peepholes, clip, input_forget, then none;
		// 4 and 8 units per item.
		m := func(flags int32) []int32 {
			t := []int32{2, 2, 8, 3, 0, flags, 0, 0, 0, 0, 0, 0, 0}
			for i := int32(0); i < 6; i++ {
				t = append(t, (i+2)%11)
			}
			return t
		}
		for _, c := range []struct {
			opts  string
			items int
			flags int32
		}{{"-DVW=4", 8, 2 | 4}, {"-DVW=8", 4, 0}} {
			e.launch(t, k, c.opts, global1D(c.items), nil, fill(6, -1, 1), fill(2*3*32, -1, 1), fill(2*8*32, -1, 1), fill(2*64, -1, 1),
				fill(2*24, -1, 1), fill(32, -1, 1), fill(32, -1, 1), make([]float32, 32), make([]float32, 32), make([]float32, 32),
				uint64(c.items), m(c.flags), recParams())
		}
	},
	"gru_reset": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(12), nil, fill(2*4*9, -1, 1), fill(2*2*9, -1, 1), fill(2*18, -1, 1), []int32{2, 1},
			fill(12, -1, 1), make([]float32, 12), uint64(12), recMeta(1, 0, 3), recParams())
	},
	"gru_cell": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, flags := range []int32{1, 8} {
			e.launch(t, k, "", global1D(12), nil, fill(2*4*9, -1, 1), fill(2*2*9, -1, 1), fill(12, -1, 1), fill(2*18, -1, 1),
				[]int32{2, 1}, fill(12, -1, 1), make([]float32, 24), uint64(12), recMeta(flags, 2, 3), recParams())
		}
	},
	"rnn_cell": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(12), nil, fill(2*4*3, -1, 1), fill(2*2*3, -1, 1), fill(2*6, -1, 1), []int32{2, 1},
			fill(12, -1, 1), make([]float32, 24), uint64(12), recMeta(1, 3, 1), recParams())
	},
	"reverse_sequence": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [4, 3, 2] time first with lengths 4, 0 and 9 (clamped); [3, 4, 2]
		// batch first.
		for _, tf := range []int32{1, 0} {
			e.launch(t, k, "", global1D(24), nil, make([]uint32, 24), []int64{4, 0, 9}, make([]uint32, 24), uint64(24),
				uint64(4), uint64(3), uint64(2), tf)
		}
	},
	"onehot": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// indices [2,3] long (one negative, one out of range), depth 3 on
		// axis 1 -> [2,3,3].
		e.launch(t, k, "", global1D(18), nil, []int64{0, 2, -1, 5, 1, -4}, []uint32{7, 9}, make([]uint32, 18),
			uint64(18), uint64(3), uint64(3))
	},
	"pow_mixed": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3] with b [3] broadcast over rows: f32 ** i32 (the
		// defaults), i64 ** f32 (integral and not), i32 ** i32.
		m := []int32{2, 2, 3, 3, 1, 0, 1}
		e.launch(t, k, "", global1D(6), nil, fill(6, 0.5, 3), []int32{2, -1, 0}, make([]float32, 6), uint64(6), m)
		// An f16 base (storage, computed in float) ** i32 and ** f32.
		e.launch(t, k, "-DHALF", global1D(6), nil, f16Pattern(6, true), []int32{2, -1, 0}, make([]uint16, 6), uint64(6), m)
		e.launch(t, k, "-DHALF -DTB=float", global1D(6), nil, f16Pattern(6, false), []float32{2, 0.5, -1}, make([]uint16, 6), uint64(6), m)
		e.launch(t, k, "-DTA=long -DTB=float -DA_INT", global1D(6), nil, []int64{2, -3, 0, 5, 1, -1}, []float32{2, 0.5, -1},
			make([]int64, 6), uint64(6), m)
		e.launch(t, k, "-DTA=int -DTB=int -DA_INT -DB_INT", global1D(6), nil, []int32{2, -3, 0, 5, 1, -1}, []int32{3, -1, 0},
			make([]int32, 6), uint64(6), m)
	},
	"scatter_elements": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// out [3,3], indices and updates [2,3] along axis 0 (a duplicate,
		// a negative and a clamped index), every reduction.
		m := []int32{2, 2, 3, 3, 1, 0, 3}
		for red := range int32(5) {
			e.launch(t, k, "", global1D(3), nil, []int64{0, -1, 1, 0, 2, 7}, fill(6, -1, 1), fill(9, -1, 1), uint64(3), m, red)
		}
	},
	"scatter_nd": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// out [4,4], indices [3,1] (a duplicate, a negative), updates
		// [3,4], every reduction.
		m := []int32{1, 3, 4, 4, 4}
		for red := range int32(5) {
			e.launch(t, k, "", global1D(4), nil, []int64{1, -1, 1}, fill(12, -1, 1), fill(16, -1, 1), uint64(4), m, red)
		}
	},
	"topk": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,5,3] along axis 1 (with ties), k = 2.
		e.launch(t, k, "", global1D(30), nil, fill(30, -1, 1), make([]float32, 12), make([]int64, 12),
			uint64(30), uint64(5), uint64(3), uint64(2))
	},
	"sgemm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, tl := range []kernels.SGEMMTiling{kernels.DefaultSGEMMTiling, {TileM: 16, TileN: 8, TileK: 4, WorkM: 2, WorkN: 2}} {
			if tl.Fits(e.lim) != "" {
				continue // float8 on a device without AVX; the small tiling runs
			}
			g := gemmCase{m: 19, n: 10, k: 7, alpha: 1, beta: 0.5, transB: true, aOff: 1, cOff: 2, ldcPad: 1}
			got, want := g.run(t, e, tl, 3)
			assert.InDeltaSlice(t, want, got, 1e-4)
		}
	},
	"softmax": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] along axis 1.
		e.launch(t, k, "", global1D(8), nil, fill(24, -2, 2), make([]float32, 24), uint64(8), uint64(3), uint64(4))
		e.launch(t, k, "-DHALF", global1D(8), nil, f16Pattern(24, false), make([]uint16, 24), uint64(8), uint64(3), uint64(4))
		if hasFP64(e) {
			e.launch(t, k, "-DIS_DOUBLE", global1D(8), nil, make([]float64, 24), make([]float64, 24), uint64(8), uint64(3), uint64(4))
		}
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
		// f16 tensors (the post-op tables stay int and f32).
		e.launch(t, k, "-DOCB=2 -DHALF", global1D(18), nil, f16Pattern(50, false), f16Pattern(36, false), f16Pattern(4, true), f16Pattern(4, false),
			make([]uint16, 36), uint64(18), m, pm, pf)
	},
	"fully_connected": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [3,4] . w [4,5] + bias [5], then sum (residual [3,1]) and gelu.
		pm := []int32{2, 0, 7, 2, 3, 5, 1, 0}
		pf := []float32{0, 0, 0, 0}
		e.launch(t, k, "", global1D(15), nil, fill(12, -1, 1), fill(20, -1, 1), fill(5, -1, 1), fill(3, -1, 1),
			make([]float32, 15), uint64(15), int32(5), int32(4), int32(1), pm, pf)
		e.launch(t, k, "-DHALF", global1D(15), nil, f16Pattern(12, false), f16Pattern(20, false), f16Pattern(5, false), f16Pattern(3, false),
			make([]uint16, 15), uint64(15), int32(5), int32(4), int32(1), pm, pf)
	},
	"matmul": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3,4] . b [4,5] + c [5] -> [2,3,5].
		m := []int32{3, 5, 4, 4, 1, 5, 1, 0, 1, 1, 1, 2, 12, 0, 0}
		e.launch(t, k, "", global1D(30), nil, fill(24, -1, 1), fill(20, -1, 1), fill(5, -1, 1), make([]float32, 30),
			uint64(30), m, float32(1), float32(0.5))
		e.launch(t, k, "-DHALF", global1D(30), nil, f16Pattern(24, false), f16Pattern(20, false), f16Pattern(5, false), make([]uint16, 30),
			uint64(30), m, float32(1), float32(0.5))
		// Integers: i16 wrapping with whole alpha and beta, u32 scaled in
		// double.
		a, b, c := make([]int16, 24), make([]int16, 20), make([]int16, 5)
		for i := range a {
			a[i] = int16(i*1999 - 20000)
		}
		for i := range b {
			b[i] = int16(i*313 - 3000)
		}
		e.launch(t, k, "-DIS_INT -DT=short", global1D(30), nil, a, b, c, make([]int16, 30), uint64(30), m, float32(2), float32(-1))
		if hasFP64(e) {
			e.launch(t, k, "-DIS_INT -DT=uint -DINT_SCALED", global1D(30), nil, make([]uint32, 24), make([]uint32, 20), make([]uint32, 5), make([]uint32, 30),
				uint64(30), m, float32(0.5), float32(1.5))
		}
	},
}

// hasFP64 reports whether e's device has cl_khr_fp64 (the f64 forms of
// the kernels launch only there, as the GPU device plans them).
func hasFP64(e *clEnv) bool {
	fp64, err := e.dev.HasFP64()
	return err == nil && fp64
}
