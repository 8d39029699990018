package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
)

// sgemmSizes are the square problem sizes BenchmarkSGEMM measures.
var sgemmSizes = []int{256, 512, 1024, 2048}

// sgemmEnv is one OpenCL device with a context, an in-order queue, and the
// operands of an n x n x n SGEMM resident on the device.
type sgemmEnv struct {
	dev     *cl.Device
	ctx     *cl.Context
	q       *cl.CommandQueue
	a, b, c *cl.MemObject
	n       int
}

// newSGEMMEnv sets up the n x n problem on the benchmark device: the first
// GPU, else the first OpenCL device (POCL on a CPU-only machine).
func newSGEMMEnv(n int) (*sgemmEnv, error) {
	dev, err := benchDevice()
	if err != nil {
		return nil, err
	}
	e := &sgemmEnv{dev: dev, n: n}
	if e.ctx, err = cl.CreateContext([]*cl.Device{dev}); err != nil {
		return nil, err
	}
	if e.q, err = e.ctx.CreateCommandQueue(dev, 0); err != nil {
		e.Close()
		return nil, err
	}
	for i, p := range []**cl.MemObject{&e.a, &e.b, &e.c} {
		v := seeded.Float32s(uint32(i+1), n*n, -1, 1)
		if *p, err = e.ctx.CreateBuffer(cl.MemReadWrite, f32Bytes(v)); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// Close releases the buffers, queue and context.
func (e *sgemmEnv) Close() error {
	var errs []error
	for _, c := range []interface{ Close() error }{e.a, e.b, e.c, e.q, e.ctx} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// benchDevice is the device the GPU plugin calls "GPU" (GPU-type devices
// first; clbackend.EnvDefaultDevice picks another), so the kernel
// benchmarks run where the model benchmarks do.
func benchDevice() (*cl.Device, error) {
	d, _, err := clbackend.DefaultCLDevice()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return d, nil
}

func f32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		u := math.Float32bits(x)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return out
}

// sgemmRunner prepares an implementation on env and returns a function
// that enqueues one C = A.B and waits for it.
type sgemmRunner func(e *sgemmEnv) (run func() error, closeFn func() error, err error)

// clinferSGEMM runs kernels/gemm_sgemm.cl with its default tiling (in
// float4 columns where the device's limits refuse float8).
func clinferSGEMM(e *sgemmEnv) (func() error, func() error, error) {
	k := kernels.MustLookup("sgemm")
	tl := kernels.DefaultSGEMMTiling
	if tl.Fits(clbackend.DeviceLimits(e.dev)) != "" {
		tl.Vec = kernels.MinVectorWidth // float8 on a CPU without AVX
	}
	src, err := k.Source()
	if err != nil {
		return nil, nil, err
	}
	prog, err := e.ctx.CreateProgramWithSource([]string{src})
	if err != nil {
		return nil, nil, err
	}
	if err := prog.BuildProgram(nil, k.Options+" "+tl.Options()+" -cl-std=CL1.2 -cl-mad-enable"); err != nil {
		prog.Close()
		return nil, nil, err
	}
	kern, err := prog.CreateKernel(k.Entry)
	if err != nil {
		prog.Close()
		return nil, nil, err
	}
	n := e.n
	if err := kern.SetArgs(int32(n), int32(n), int32(n), float32(1),
		e.a, int64(0), int64(n), int64(1),
		e.b, int64(0), int64(n), int64(1),
		float32(0), e.c, int64(0), int64(n)); err != nil {
		kern.Close()
		prog.Close()
		return nil, nil, err
	}
	global, local := tl.GlobalSize(n, n), tl.LocalSize()
	run := func() error {
		ev, err := e.q.EnqueueNDRangeKernel(kern, nil, global, local, nil)
		if err != nil {
			return err
		}
		return errors.Join(ev.Wait(), ev.Close())
	}
	return run, func() error { return errors.Join(kern.Close(), prog.Close()) }, nil
}

// clinferFusedGEMM runs gemm_fused.cl's fused_gemm, the kernel the GPU device
// lowers MatMul, Gemm, FullyConnected and 1x1 convolutions to, with the
// blocking clbackend picks for the device (VW from the preferred float
// vector width, 8 rows by 2 vectors per work item, one-item work groups
// on a CPU device), A and B read in place (no packing: neither is a
// constant here) and no bias or post-ops.
func clinferFusedGEMM(e *sgemmEnv) (func() error, func() error, error) {
	k := kernels.MustLookup("fused_gemm")
	src, err := k.Source()
	if err != nil {
		return nil, nil, err
	}
	vw := 4
	if w := clbackend.DeviceLimits(e.dev).VectorWidth; w >= 16 {
		vw = 16
	} else if w >= 8 {
		vw = 8
	}
	mr, nv := 8, 2
	if vw < 16 {
		mr = 4
	}
	prog, err := e.ctx.CreateProgramWithSource([]string{src})
	if err != nil {
		return nil, nil, err
	}
	var closers []interface{ Close() error }
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i].Close())
		}
		return errors.Join(errs...)
	}
	closers = append(closers, prog)
	fail := func(err error) (func() error, func() error, error) { return nil, nil, errors.Join(err, closeAll()) }
	if err := prog.BuildProgram(nil, fmt.Sprintf("%s -DVW=%d -DMR=%d -DNV=%d -cl-std=CL1.2", k.Options, vw, mr, nv)); err != nil {
		return fail(err)
	}
	kern, err := prog.CreateKernel(k.Entry)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, kern)
	n := e.n
	tables := [][]int32{{int32(n), int32(n), int32(n), int32(n), 1, int32(n), int32(n), 0, 0, 0, 0}, {0, 0}}
	var bufs []*cl.MemObject
	for _, tb := range tables {
		raw := make([]byte, 4*len(tb))
		for i, v := range tb {
			raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
		buf, err := e.ctx.CreateBuffer(cl.MemReadOnly, raw)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, buf)
		bufs = append(bufs, buf)
	}
	pf, err := e.ctx.CreateBuffer(cl.MemReadOnly, f32Bytes([]float32{0}))
	if err != nil {
		return fail(err)
	}
	closers = append(closers, pf)
	if err := kern.SetArgs(e.a, e.b, e.c, e.c, e.c, bufs[0], float32(1), float32(0), bufs[1], pf); err != nil {
		return fail(err)
	}
	global := []int{(n + mr - 1) / mr, (n + nv*vw - 1) / (nv * vw), 1}
	var local []int
	if t, err := e.dev.Type(); err == nil && t&cl.DeviceTypeCPU != 0 {
		local = []int{1, 1, 1}
	}
	run := func() error {
		ev, err := e.q.EnqueueNDRangeKernel(kern, nil, global, local, nil)
		if err != nil {
			return err
		}
		return errors.Join(ev.Wait(), ev.Close())
	}
	return run, closeAll, nil
}

// BenchmarkSGEMM measures C = A.B for square f32 matrices on one OpenCL
// device: clinfer's fused_gemm (what the GPU device runs; "clinfer") and
// its local-memory tiled sgemm kernel (gemm_sgemm.cl, tuned for GPUs and not
// used by the device's lowerings; "clinfer-tiled") next to CLBlast's Sgemm
// (with -tags clblast; `make bench-gemm`) in the same run. Each iteration
// is one GEMM enqueued and waited for; it reports the median GFLOPS over
// the iterations (gflops) and ms per GEMM (ms/gemm).
func BenchmarkSGEMM(b *testing.B) {
	impls := []struct {
		name string
		r    sgemmRunner
	}{{"clinfer", clinferFusedGEMM}, {"clinfer-tiled", clinferSGEMM}, {"clblast", clblastSGEMM}}
	for _, n := range sgemmSizes {
		b.Run(fmt.Sprintf("%dx%dx%d", n, n, n), func(b *testing.B) {
			for _, impl := range impls {
				b.Run(impl.name, func(b *testing.B) { benchSGEMM(b, n, impl.r) })
			}
		})
	}
}

func benchSGEMM(b *testing.B, n int, r sgemmRunner) {
	if r == nil {
		b.Skip("CLBlast is not built in: run with -tags clblast (needs libclblast-dev; `make bench-gemm` does both)")
	}
	e, err := newSGEMMEnv(n)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			b.Error(err)
		}
	}()
	run, closeFn, err := r(e)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			b.Error(err)
		}
	}()
	// Warm up: CLBlast compiles its kernels on the first call.
	if err := run(); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	med := times[len(times)/2].Seconds()
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)/med/1e9, "gflops")
	b.ReportMetric(med*1e3, "ms/gemm")
}
