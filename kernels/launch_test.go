package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/kernels"
)

// clEnv is a context and an in-order queue on the first OpenCL device,
// closed when the test ends.
type clEnv struct {
	dev *cl.Device
	ctx *cl.Context
	q   *cl.CommandQueue
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
	e := &clEnv{dev: dev, ctx: ctx, q: q, progs: map[string]*cl.Program{}}
	t.Cleanup(func() {
		for _, p := range e.progs {
			assert.NoError(t, p.Close())
		}
	})
	return e
}

// program returns k's program built with its options plus extra and
// -Werror (a warning fails the launch: every option set a spec runs builds
// cleanly on the device), built once per environment.
func (e *clEnv) program(t *testing.T, k kernels.Kernel, extra string) *cl.Program {
	t.Helper()
	opts := k.Options + " " + extra + " -cl-std=CL1.2 -Werror"
	key := k.File + "|" + opts
	if p, ok := e.progs[key]; ok {
		return p
	}
	src, err := k.Source()
	require.NoError(t, err)
	prog, err := e.ctx.CreateProgramWithSource([]string{src})
	require.NoError(t, err)
	if err := prog.BuildProgram(nil, opts); err != nil {
		assert.NoError(t, prog.Close())
		require.NoError(t, err, "building %s with %q %q", k.File, k.Options, extra)
	}
	e.progs[key] = prog
	return prog
}

// launch builds the catalogue entry k with its options plus extra, passes
// args (slices become exactly-sized device buffers, anything else a scalar),
// runs it over global/local (local may be nil) and returns every slice
// argument read back from the device, in argument order.
func (e *clEnv) launch(t *testing.T, k kernels.Kernel, extra string, global, local []int, args ...any) [][]byte {
	t.Helper()
	prog := e.program(t, k, extra)
	kern, err := prog.CreateKernel(k.Entry)
	require.NoError(t, err)
	defer func() { assert.NoError(t, kern.Close()) }()
	// The launch's arguments against the signature in the .cl file.
	check := make([]any, len(args))
	for i, a := range args {
		check[i] = a
		if _, isSlice := hostBytes(a); isSlice {
			check[i] = kernels.Buffer{}
		}
	}
	require.NoError(t, kernels.CheckArgs(k, extra, check))

	var bufs []*cl.MemObject
	defer func() {
		for _, b := range bufs {
			assert.NoError(t, b.Close())
		}
	}()
	for i, a := range args {
		host, isSlice := hostBytes(a)
		if !isSlice {
			require.NoError(t, kern.SetArg(i, a), "argument %d of %s", i, k.Name)
			continue
		}
		if len(host) == 0 {
			host = []byte{0, 0, 0, 0} // OpenCL has no empty buffers; the kernel must not read it
		}
		buf, err := e.ctx.CreateBuffer(cl.MemReadWrite|cl.MemCopyHostPtr, host)
		require.NoError(t, err)
		bufs = append(bufs, buf)
		require.NoError(t, kern.SetArg(i, buf), "argument %d of %s", i, k.Name)
	}
	ev, err := e.q.EnqueueNDRangeKernel(kern, nil, global, local, nil)
	require.NoError(t, err, "launching %s", k.Name)
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
