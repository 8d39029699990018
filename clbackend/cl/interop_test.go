//go:build cgo && !noopencl

package cl_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// TestRetainedHandles wraps a context, queue and buffer that "other code"
// made: the wrapper works like the original, each wrapper's Close takes
// back exactly the reference it added, and the original's reference is
// untouched.
func TestRetainedHandles(t *testing.T) {
	dev := testDevice(t)
	before := cl.LiveObjects()
	ctx, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer ctx.Close()
	q, err := ctx.CreateCommandQueue(dev, 0)
	require.NoError(t, err)
	defer q.Close()
	buf, err := ctx.CreateBuffer(cl.MemReadWrite, make([]byte, 64))
	require.NoError(t, err)
	defer buf.Close()

	refs := func() (int, int, int) {
		c, err := ctx.ReferenceCount()
		require.NoError(t, err)
		qq, err := q.ReferenceCount()
		require.NoError(t, err)
		b, err := buf.ReferenceCount()
		require.NoError(t, err)
		return c, qq, b
	}
	// Implementations keep references of their own to a queue that ran
	// commands (POCL: one, to its last command): run one first.
	ev, err := cl.EnqueueWriteSlice(q, buf, true, 0, make([]float32, 16), nil)
	require.NoError(t, err)
	require.NoError(t, ev.Close())
	require.NoError(t, q.Finish())
	c0, q0, b0 := refs()

	wctx, err := cl.RetainContext(ctx.Handle())
	require.NoError(t, err)
	require.Len(t, wctx.Devices(), 1)
	assert.True(t, wctx.Devices()[0].Equal(dev))
	assert.Equal(t, ctx.Handle(), wctx.Handle())
	wq, err := cl.RetainCommandQueue(wctx, q.Handle())
	require.NoError(t, err)
	assert.True(t, wq.Device().Equal(dev))
	wbuf, err := cl.RetainMemObject(buf.Handle())
	require.NoError(t, err)
	assert.Equal(t, 64, wbuf.Size())
	assert.Equal(t, cl.MemReadWrite, wbuf.Flags()&cl.MemReadWrite)
	owner, err := wbuf.ContextHandle()
	require.NoError(t, err)
	assert.Equal(t, ctx.Handle(), owner)

	c1, q1, b1 := refs()
	assert.Equal(t, c0+1, c1, "context references")
	assert.Equal(t, q0+1, q1, "queue references")
	assert.Equal(t, b0+1, b1, "buffer references")

	// The wrappers work: write through one, read through the other.
	in := []float32{1, 2, 3, 4}
	ev, err = cl.EnqueueWriteSlice(wq, wbuf, true, 0, in, nil)
	require.NoError(t, err)
	require.NoError(t, ev.Close())
	out := make([]float32, 4)
	ev, err = cl.EnqueueReadSlice(q, buf, true, 0, out, nil)
	require.NoError(t, err)
	require.NoError(t, ev.Close())
	assert.Equal(t, in, out)
	require.NoError(t, wq.Finish())
	require.NoError(t, q.Finish())

	require.NoError(t, wbuf.Close())
	require.NoError(t, wq.Close())
	require.NoError(t, wctx.Close())
	c2, q2, b2 := refs()
	assert.Equal(t, []int{c0, q0, b0}, []int{c2, q2, b2}, "the wrappers gave back what they took")

	require.NoError(t, buf.Close())
	require.NoError(t, q.Close())
	require.NoError(t, ctx.Close())
	assert.Equal(t, before, cl.LiveObjects())
}

// TestRetainErrors: a zero handle, a queue of another context and a
// closed object are errors naming the call, and take no reference.
func TestRetainErrors(t *testing.T) {
	dev := testDevice(t)
	before := cl.LiveObjects()
	a, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer a.Close()
	b, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer b.Close()
	qb, err := b.CreateCommandQueue(dev, 0)
	require.NoError(t, err)
	defer qb.Close()

	cases := []struct {
		name string
		run  func() error
		code cl.ErrorCode
	}{
		{"zero context", func() error { _, err := cl.RetainContext(0); return err }, cl.ErrInvalidContext},
		{"zero buffer", func() error { _, err := cl.RetainMemObject(0); return err }, cl.ErrInvalidMemObject},
		{"zero queue", func() error { _, err := cl.RetainCommandQueue(a, 0); return err }, cl.ErrInvalidCommandQueue},
		{"queue of another context", func() error { _, err := cl.RetainCommandQueue(a, qb.Handle()); return err }, cl.ErrInvalidContext},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.code)
		})
	}
	require.NoError(t, qb.Close())
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	assert.Equal(t, before, cl.LiveObjects())
}

// TestQueueHints: hints the device lacks are an error naming the
// extension; without hints the queue is an ordinary one; a device that has
// the extension gets a working queue.
func TestQueueHints(t *testing.T) {
	dev := testDevice(t)
	ctx, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer ctx.Close()
	q, err := ctx.CreateCommandQueueWithHints(dev, cl.CommandQueueProfilingEnable, cl.QueueHints{})
	require.NoError(t, err)
	assert.Equal(t, cl.CommandQueueProfilingEnable, q.Properties())
	require.NoError(t, q.Close())

	for _, tc := range []struct {
		ext   string
		hints cl.QueueHints
	}{
		{"cl_khr_priority_hints", cl.QueueHints{Priority: cl.QueuePriorityHigh}},
		{"cl_khr_throttle_hints", cl.QueueHints{Throttle: cl.QueueThrottleLow}},
	} {
		t.Run(tc.ext, func(t *testing.T) {
			has, err := dev.HasExtension(tc.ext)
			require.NoError(t, err)
			q, err := ctx.CreateCommandQueueWithHints(dev, 0, tc.hints)
			if !has {
				require.Error(t, err)
				assert.ErrorIs(t, err, cl.ErrInvalidQueueProperties)
				assert.Contains(t, err.Error(), tc.ext)
				return
			}
			require.NoError(t, err)
			buf, err := ctx.CreateBuffer(cl.MemReadWrite, make([]byte, 16))
			require.NoError(t, err)
			defer buf.Close()
			ev, err := cl.EnqueueWriteSlice(q, buf, true, 0, []float32{1, 2, 3, 4}, nil)
			require.NoError(t, err)
			require.NoError(t, ev.Close())
			require.NoError(t, q.Close())
		})
	}
}
