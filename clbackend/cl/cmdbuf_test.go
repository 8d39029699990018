//go:build cgo && !noopencl

package cl_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// incSource adds 1 to every element: three launches make +3.
const incSource = `__kernel void inc(__global float* x, const int n) {
	const int i = get_global_id(0);
	if (i < n) x[i] += 1.0f;
}`

// TestCommandBuffer records three launches of a kernel as one command
// buffer (cl_khr_command_buffer), enqueues it twice around writes and
// reads of the buffer (ordered by the in-order queue), and checks the
// results, the launch-without-event and mapped-transfer calls it is used
// with, and that every handle is released again. A device without the
// extension (POCL has it from 3.0) is said so.
func TestCommandBuffer(t *testing.T) {
	e := newEnv(t, 0)
	if !e.dev.CommandBuffersSupported() {
		v, ok, err := e.dev.ExtensionVersion("cl_khr_command_buffer")
		t.Skipf("the test device has no usable cl_khr_command_buffer (listed %v, version %v, %v); POCL 3.0 and later have it: apt-get install pocl-opencl-icd (make deps)", ok, v, err)
	}
	base := cl.LiveObjects()
	const n = 100
	buf, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, n*4)
	require.NoError(t, err)
	p, err := e.ctx.CreateProgramWithSource([]string{incSource})
	require.NoError(t, err)
	require.NoError(t, p.BuildProgram(nil, "-cl-std=CL1.2"))
	k, err := p.CreateKernel("inc")
	require.NoError(t, err)
	require.NoError(t, k.SetArgs(buf, int32(n)))

	cb, err := e.q.CreateCommandBuffer()
	require.NoError(t, err)
	assert.Equal(t, base["CommandBuffer"]+1, cl.LiveObjects()["CommandBuffer"])
	for range 3 {
		require.NoError(t, cb.NDRangeKernel(k, nil, []int{128}, nil))
	}
	require.NoError(t, cb.Finalize())

	stage, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite|cl.MemAllocHostPtr, n*4)
	require.NoError(t, err)
	mapped, mev, err := e.q.EnqueueMapBuffer(stage, true, cl.MapFlagRead|cl.MapFlagWrite, 0, n*4, nil)
	require.NoError(t, err)
	require.NoError(t, mev.Close())
	vals := cl.MappedSlice[float32](mapped)
	copy(vals, seq(n, 1))
	require.NoError(t, e.q.EnqueueWriteMappedNoEvent(buf, 0, mapped, 0, n*4))
	_, err = cb.Enqueue(false)
	require.NoError(t, err)
	require.NoError(t, e.q.EnqueueNDRangeKernelNoEvent(k, nil, []int{128}, nil))
	last, err := cb.Enqueue(true)
	require.NoError(t, err)
	rd, err := e.q.EnqueueReadMapped(buf, 0, mapped, 0, n*4, true)
	require.NoError(t, err)
	require.NoError(t, rd.Wait())
	want := seq(n, 1)
	for i := range want {
		want[i] += 7
	}
	assert.Equal(t, want, vals, "3 + 1 + 3 increments")
	st, err := last.Status()
	require.NoError(t, err)
	assert.Equal(t, cl.CommandExecStatusComplete, st)
	_, err = e.q.EnqueueReadMapped(buf, 0, mapped, 4, n*4, false)
	assert.ErrorIs(t, err, cl.ErrInvalidValue, "a region past the mapping")

	uev, err := e.q.EnqueueUnmapMemObject(stage, mapped, nil)
	require.NoError(t, err)
	require.NoError(t, uev.Wait())
	for _, c := range []interface{ Close() error }{uev, rd, last, cb, stage, k, p, buf} {
		require.NoError(t, c.Close())
	}
	require.NoError(t, cb.Close(), "Close is idempotent")
	assert.Error(t, cb.Finalize(), "a closed command buffer")
	assert.Equal(t, base, cl.LiveObjects())
}

// TestCommandBufferCopy records launches and then a copy of part of their
// buffer into another (a stateful model's next state into its state
// buffer), enqueues it twice, and checks that the copy saw the launches
// before it each time; a closed buffer is refused.
func TestCommandBufferCopy(t *testing.T) {
	e := newEnv(t, 0)
	if !e.dev.CommandBuffersSupported() {
		t.Skip("the test device has no usable cl_khr_command_buffer; POCL 3.0 and later have it: apt-get install pocl-opencl-icd (make deps)")
	}
	const n = 64
	buf, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, n*4)
	require.NoError(t, err)
	defer buf.Close()
	dst, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, n*4)
	require.NoError(t, err)
	defer dst.Close()
	p, err := e.ctx.CreateProgramWithSource([]string{incSource})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.BuildProgram(nil, "-cl-std=CL1.2"))
	k, err := p.CreateKernel("inc")
	require.NoError(t, err)
	defer k.Close()
	require.NoError(t, k.SetArgs(buf, int32(n)))
	cb, err := e.q.CreateCommandBuffer()
	require.NoError(t, err)
	defer cb.Close()
	require.NoError(t, cb.NDRangeKernel(k, nil, []int{n}, nil))
	if err := cb.CopyBuffer(buf, dst, 4, 8, (n-4)*4); errors.Is(err, cl.ErrInvalidOperation) {
		v, _, _ := e.dev.ExtensionVersion("cl_khr_command_buffer")
		t.Skipf("the device's cl_khr_command_buffer %v records no copies this binding calls (0.9.0-0.9.4 and 1.x do; POCL 3.1's 0.9.0, from apt-get install pocl-opencl-icd via make deps, does): %v", v, err)
	} else {
		require.NoError(t, err)
	}
	require.NoError(t, cb.Finalize())
	ev(t)(cl.EnqueueWriteSlice(e.q, buf, true, 0, f32bytes(seq(n, 1)), nil))
	ev(t)(cl.EnqueueWriteSlice(e.q, dst, true, 0, f32bytes(make([]float32, n)), nil))
	for round := 1; round <= 2; round++ {
		_, err := cb.Enqueue(false)
		require.NoError(t, err)
		got := make([]float32, n)
		rd, err := cl.EnqueueReadSlice(e.q, dst, true, 0, f32bytes(got), nil)
		require.NoError(t, err)
		require.NoError(t, rd.Close())
		want := make([]float32, n)
		for i := 2; i < n-2; i++ {
			want[i] = float32(i-1) + float32(round) // element i-1 of buf after round increments
		}
		assert.Equal(t, want, got, "round %d", round)
	}
	require.NoError(t, dst.Close())
	assert.ErrorIs(t, cb.CopyBuffer(buf, dst, 0, 0, 4), cl.ErrInvalidMemObject)
}
