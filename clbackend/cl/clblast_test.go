//go:build cgo && !noopencl && clblast

package cl_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// TestCLBlastSgemm checks the CLBlast binding on a small transposed
// problem against a host reference, and that a closed buffer is an error.
func TestCLBlastSgemm(t *testing.T) {
	e := newEnv(t, 0)
	const m, n, k = 3, 4, 5
	a := seq(k*m, 0.5) // stored [k, m]: transposed
	b := seq(k*n, -0.25)
	c := seq(m*n, 1)
	want := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				s += a[p*m+i] * b[p*n+j]
			}
			want[i*n+j] = 2*s + 0.5*c[i*n+j]
		}
	}
	ab, err := e.ctx.CreateBuffer(cl.MemReadOnly, f32bytes(a))
	require.NoError(t, err)
	closeLater(t, ab)
	bb, err := e.ctx.CreateBuffer(cl.MemReadOnly, f32bytes(b))
	require.NoError(t, err)
	closeLater(t, bb)
	cb, err := e.ctx.CreateBuffer(cl.MemReadWrite, f32bytes(c))
	require.NoError(t, err)
	closeLater(t, cb)
	ev, err := cl.CLBlastSgemm(e.q, true, false, m, n, k, 2, ab, 0, m, bb, 0, n, 0.5, cb, 0, n)
	require.NoError(t, err)
	require.NoError(t, ev.Wait())
	require.NoError(t, ev.Close())
	got := make([]float32, m*n)
	rev, err := e.q.EnqueueReadBufferFloat32(cb, true, 0, got, nil)
	require.NoError(t, err)
	require.NoError(t, rev.Close())
	assert.InDeltaSlice(t, want, got, 1e-4)

	require.NoError(t, ab.Close())
	_, err = cl.CLBlastSgemm(e.q, true, false, m, n, k, 2, ab, 0, m, bb, 0, n, 0.5, cb, 0, n)
	assert.True(t, errors.Is(err, cl.ErrInvalidMemObject), "got %v", err)
}
