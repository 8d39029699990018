package kernels_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/kernels"
)

// clEnv is a context and an in-order queue on the first OpenCL device,
// closed when the test ends.
type clEnv struct {
	dev *cl.Device
	ctx *cl.Context
	q   *cl.CommandQueue
	// lim are the device's variant limits (clbackend.DeviceLimits, what
	// the GPU device's planner launches there); launch refuses anything
	// over them.
	lim kernels.Limits
	// variant is the variant forVariants is running (nil outside it);
	// launch checks it against lim.
	variant *kernels.Variant
	// progs are the programs built so far, by file and options: the
	// variant specs launch one program in several geometries.
	progs map[string]*cl.Program
}

func newCLEnv(t *testing.T) *clEnv {
	t.Helper()
	dev := firstDevice(t)
	ctx, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ctx.Close()) })
	q, err := ctx.CreateCommandQueue(dev, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	e := &clEnv{dev: dev, ctx: ctx, q: q, lim: testLimits(t, dev), progs: map[string]*cl.Program{}}
	t.Cleanup(func() {
		for _, p := range e.progs {
			assert.NoError(t, p.Close())
		}
	})
	return e
}

// testLimits are the limits the launch tests honour on dev: the device's
// own (clbackend.DeviceLimits), except that oclgrind, which interprets
// the kernels with no target ABI, takes every vector width: the tables'
// every declared variant runs there. Integer dot products count as
// present everywhere: the kernels that use them carry their own
// emulation where the device lacks cl_khr_integer_dot_product (the
// planner keeps those forms off such devices; the tests check them on
// every device and under oclgrind).
func testLimits(t *testing.T, dev *cl.Device) kernels.Limits {
	lim := clbackend.DeviceLimits(dev)
	lim.IntegerDot = true
	name, err := dev.Platform().Name()
	require.NoError(t, err)
	if strings.Contains(name, "Oclgrind") {
		lim.VectorWidth = 0
	}
	return lim
}

// vwOption finds the vector-width options of a build: -DVW=n, and
// max_pool2d_2x2's -DPV=n.
var vwOption = regexp.MustCompile(`(?:^|\s)-D(?:VW|PV)=(\d+)(?:\s|$)`)

// refusal says why the device's limits refuse a launch of k built with
// its options plus extra in work groups of local ("" when they do not):
// the variant forVariants runs, a vector width (-DVW or -DPV, the last one wins)
// or a work group over the limits. A launch test that ignores the
// device's limits fails here, before it builds anything.
func (e *clEnv) refusal(k kernels.Kernel, extra string, local []int) string {
	if v := e.variant; v != nil {
		if why := v.Fits(e.lim); why != "" {
			return fmt.Sprintf("variant %s: %s", v, why)
		}
	}
	opts := k.Options + " " + extra
	if m := vwOption.FindAllStringSubmatch(opts, -1); m != nil {
		w, err := strconv.Atoi(m[len(m)-1][1])
		if err != nil {
			return fmt.Sprintf("options %q: %v", opts, err)
		}
		if why := e.lim.VectorFits(w); why != "" {
			return fmt.Sprintf("options %q: %s", strings.TrimSpace(opts), why)
		}
	}
	if local != nil {
		items := 1
		for _, l := range local {
			items *= l
		}
		if why := e.lim.WorkGroupFits(items); why != "" {
			return fmt.Sprintf("local size %v: %s", local, why)
		}
	}
	return ""
}

// program returns k's program built with its options plus extra and
// -Werror (a warning fails the launch: every option set a spec runs builds
// cleanly on the device), built once per environment.
func (e *clEnv) program(t testing.TB, k kernels.Kernel, extra string) *cl.Program {
	t.Helper()
	src, err := k.Source()
	require.NoError(t, err)
	return e.programOf(t, k.File, src, k.Options+" "+extra)
}

// programOf builds src (known as file) with options and -Werror, once per
// environment.
func (e *clEnv) programOf(t testing.TB, file, src, options string) *cl.Program {
	t.Helper()
	opts := options + " -cl-std=CL1.2 -Werror"
	key := file + "|" + src + "|" + opts
	if p, ok := e.progs[key]; ok {
		return p
	}
	prog, err := e.ctx.CreateProgramWithSource([]string{src})
	require.NoError(t, err)
	if err := prog.BuildProgram(nil, opts); err != nil {
		assert.NoError(t, prog.Close())
		require.NoError(t, err, "building %s with %q", file, options)
	}
	e.progs[key] = prog
	return prog
}

// launch builds the catalogue entry k with its options plus extra, passes
// args (slices become exactly-sized device buffers, anything else a scalar),
// runs it over global/local (local may be nil) and returns every slice
// argument read back from the device, in argument order.
//
// It fails, before building, for a launch the device's limits refuse
// (refusal): a test must launch what the device takes.
func (e *clEnv) launch(t testing.TB, k kernels.Kernel, extra string, global, local []int, args ...any) [][]byte {
	t.Helper()
	if why := e.refusal(k, extra, local); why != "" {
		dev, _ := e.dev.Name()
		require.FailNow(t, "launch of "+k.Name+" refused by the device's limits", "%s on %s (%+v): run only what fits the device (clEnv.forVariants, clEnv.lim)", why, dev, e.lim)
	}
	// The launch's arguments against the signature in the .cl file.
	check := make([]any, len(args))
	for i, a := range args {
		check[i] = a
		if _, isSlice := hostBytes(a); isSlice {
			check[i] = kernels.Buffer{}
		}
	}
	require.NoError(t, kernels.CheckArgs(k, extra, check))
	return e.run(t, e.program(t, k, extra), k.Name, k.Entry, global, local, args...)
}

// run launches entry (of kernel name, for messages) of prog as launch
// does.
func (e *clEnv) run(t testing.TB, prog *cl.Program, name, entry string, global, local []int, args ...any) [][]byte {
	t.Helper()
	kern, err := prog.CreateKernel(entry)
	require.NoError(t, err)
	defer func() { assert.NoError(t, kern.Close()) }()

	var bufs []*cl.MemObject
	defer func() {
		for _, b := range bufs {
			assert.NoError(t, b.Close())
		}
	}()
	for i, a := range args {
		host, isSlice := hostBytes(a)
		if !isSlice {
			require.NoError(t, kern.SetArg(i, a), "argument %d of %s", i, name)
			continue
		}
		if len(host) == 0 {
			host = []byte{0, 0, 0, 0} // OpenCL has no empty buffers; the kernel must not read it
		}
		buf, err := e.ctx.CreateBuffer(cl.MemReadWrite|cl.MemCopyHostPtr, host)
		require.NoError(t, err)
		bufs = append(bufs, buf)
		require.NoError(t, kern.SetArg(i, buf), "argument %d of %s", i, name)
	}
	ev, err := e.q.EnqueueNDRangeKernel(kern, nil, global, local, nil)
	require.NoError(t, err, "launching %s", name)
	require.NoError(t, ev.Wait())
	require.NoError(t, ev.Close())
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = make([]byte, b.Size())
		rev, err := cl.EnqueueReadSlice(e.q, b, true, 0, out[i], nil)
		require.NoError(t, err)
		require.NoError(t, rev.Close())
	}
	return out
}

// failRecorder stands in for a test in a launch that must fail: it
// records the failure and stops the launch (FailNow) without failing the
// test that runs it.
type failRecorder struct {
	testing.TB
	msgs []string
}

// errStopped is what failRecorder.FailNow panics with.
var errStopped = errors.New("stopped by FailNow")

func (f *failRecorder) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *failRecorder) FailNow() { panic(errStopped) }

// try runs fn with f and reports whether it stopped by FailNow.
func (f *failRecorder) try(fn func(t testing.TB)) (stopped bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errStopped {
				panic(r)
			}
			stopped = true
		}
	}()
	fn(f)
	return false
}

// TestLaunchRefusesOverTheLimits checks the launch helpers against a
// device whose limits are narrower than the variants a test asks for
// (float vectors of 4, groups of 256 items, 1 KiB of local memory): a
// variant, a -DVW or -DPV build option or a work group over them fails
// the launch before anything is built, naming what is refused, so that a launch
// test cannot ignore the device's limits (VW=16 on a haswell POCL, VW=8
// on a plain x86-64 one); what fits passes the check.
func TestLaunchRefusesOverTheLimits(t *testing.T) {
	e := newCLEnv(t)
	narrow := *e
	narrow.lim = kernels.Limits{VectorWidth: 4, MaxWorkGroup: 256, LocalMem: 1 << 10}
	parse := func(s string) *kernels.Variant {
		v, err := kernels.ParseVariant(s)
		require.NoError(t, err)
		return &v
	}
	gemm, tiled := kernels.MustLookup("fused_gemm"), kernels.MustLookup("fused_gemm_tiled")
	for _, c := range []struct {
		name    string
		variant *kernels.Variant
		k       kernels.Kernel
		extra   string
		local   []int
		want    string // "" when the launch fits
	}{
		{"variant_vw16", parse("gemm/direct:VW=16,MR=8,NV=2,WG=1"), gemm, "-DVW=16 -DMR=8 -DNV=2", nil, "vector width 16 is wider than the device's 4"},
		{"variant_vw8", parse("gemm/direct:VW=8,MR=4,NV=2,WG=1"), gemm, "", nil, "variant gemm/direct:VW=8"},
		{"option_vw8", nil, kernels.MustLookup("sgemm"), kernels.DefaultSGEMMTiling.Options(), nil, "vector width 8 is wider"},
		{"option_pv8", nil, kernels.MustLookup("max_pool2d_2x2"), "-DRUN=16 -DPV=8", nil, "vector width 8 is wider"}, // max_pool2d_2x2's vectors
		{"local_memory", parse("gemm/tiled:TS_M=64,TS_N=64,TS_K=16,WPT_M=4,WPT_N=4,VW=4"), tiled, "", nil, "bytes of local memory exceed the device's 1024"},
		{"work_group", nil, kernels.MustLookup("relu"), "", []int{32, 16}, "work group of 512 items exceeds the device's 256"},
		{"fits", parse("gemm/direct:VW=4,MR=4,NV=2,WG=1"), gemm, "-DVW=4", []int{1, 1, 1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			narrow.variant = c.variant
			if c.want == "" {
				assert.Empty(t, narrow.refusal(c.k, c.extra, c.local))
				return
			}
			built := len(narrow.progs)
			rec := &failRecorder{TB: t}
			stopped := rec.try(func(tb testing.TB) {
				narrow.launch(tb, c.k, c.extra, []int{1}, c.local, make([]float32, 1))
			})
			require.True(t, stopped, "the launch over the limits went ahead")
			require.NotEmpty(t, rec.msgs)
			assert.Contains(t, rec.msgs[0], "refused by the device's limits")
			assert.Contains(t, rec.msgs[0], c.want)
			assert.Equal(t, built, len(narrow.progs), "nothing is built for a refused launch")
		})
	}
}
