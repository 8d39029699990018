//go:build cgo && !noopencl && linux

package cl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPinKernelBinaries: after a launch on POCL's basic device its kernel
// binary is loaded, and PinKernelBinaries finds it (a shared object in a
// "-goffs" folder of POCL's kernel cache) and pins it once: a second call
// with nothing loaded since pins nothing more.
func TestPinKernelBinaries(t *testing.T) {
	_, basic := companionPair(t)
	ctx, err := CreateContext([]*Device{basic})
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Close()) }()
	q, err := ctx.CreateCommandQueue(basic, 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	p, err := ctx.CreateProgramWithSource([]string{`__kernel void pin_one(__global int *a) { a[get_global_id(0)] = 1; }`})
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	require.NoError(t, p.BuildProgram(nil, ""))
	k, err := p.CreateKernel("pin_one")
	require.NoError(t, err)
	defer func() { assert.NoError(t, k.Close()) }()
	buf, err := ctx.CreateEmptyBuffer(MemReadWrite, 64*4)
	require.NoError(t, err)
	defer func() { assert.NoError(t, buf.Close()) }()
	require.NoError(t, k.SetArgs(buf))

	before := PinKernelBinaries()
	require.NoError(t, q.EnqueueNDRangeKernelNoEvent(k, nil, []int{64}, []int{8}))
	require.NoError(t, q.Finish())
	after := PinKernelBinaries()
	assert.Greater(t, after, before, "the launch's binary is pinned")
	assert.Equal(t, after, PinKernelBinaries(), "pinned once")
}
