package devicetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Remote checks remote contexts and tensors. A device with them
// (driver.RemotePlugin) must run the Relu model compiled in its default
// context on remote input and output tensors with no host transfer,
// report the context it compiled in, count its remote tensors in
// GPU_MEMORY_STATISTICS, and refuse a tensor of the wrong shape or a
// closed one by name. A device without them must not claim to bind
// remote tensors.
func Remote(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	rp, ok := p.(driver.RemotePlugin)
	if !ok {
		cm, _ := compile(t, p, nil)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		_, binds := r.(driver.RemoteBinder)
		assert.False(t, binds, "%s has no remote contexts (not a driver.RemotePlugin), yet its requests take remote tensors", p.Name())
		return
	}
	ctx := context.Background()
	rc, err := rp.DefaultContext("")
	require.NoError(t, err)
	defer func() { assert.NoError(t, rc.Close()) }()
	assert.NotEmpty(t, rc.Params(), "a context describes itself")

	cm, err := rp.CompileModelIn(ctx, ReluModel(), rc, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	if c, ok := cm.(driver.ContextModel); assert.True(t, ok, "a model compiled in a context reports it") {
		mc, err := c.Context()
		require.NoError(t, err)
		assert.Equal(t, rc.Params(), mc.Params())
		assert.NoError(t, mc.Close())
	}

	shape := tensor.Shape{1, 4}
	stats := func() driver.MemoryStatistics { return rc.MemoryStatistics() }
	before := stats()
	x, err := rc.CreateTensor("x-remote", tensor.F32, shape, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, x.Close()) }()
	y, err := rc.CreateTensor("y-remote", tensor.F32, shape, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, y.Close()) }()
	assert.Equal(t, before.RemoteTensors+32, stats().RemoteTensors, "two f32[1,4] remote tensors")

	in, err := tensor.FromF32(shape, []float32{-1.5, 2, -0, 3.25})
	require.NoError(t, err)
	require.NoError(t, x.CopyFrom(ctx, in))
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	rb, ok := r.(driver.RemoteBinder)
	require.True(t, ok, "%s has remote contexts, so its requests take remote tensors (driver.RemoteBinder)", p.Name())
	require.NoError(t, rb.SetRemoteTensor(InputName, x))
	require.NoError(t, rb.SetRemoteTensor(OutputName, y))
	require.NoError(t, r.Infer(ctx))
	got := tensor.MustNew(tensor.F32, shape)
	require.NoError(t, y.CopyTo(ctx, got))
	assert.InDeltaSlice(t, []float32{0, 2, 0, 3.25}, got.F32(), 1e-6)
	if tc, ok := r.(driver.TransferCounter); ok {
		tr := tc.Transfers()
		assert.Zero(t, tr.HostToDevice+tr.DeviceToHost, "remote in, remote out: nothing crosses the host (%s)", tr)
		assert.Equal(t, int64(32), tr.DeviceToDevice)
	}
	bound, err := rb.RemoteTensor(OutputName)
	require.NoError(t, err)
	assert.Equal(t, "y-remote", bound.Name())

	bad, err := rc.CreateTensor("wrong-shape", tensor.F32, tensor.Shape{2, 4}, nil)
	require.NoError(t, err)
	err = rb.SetRemoteTensor(InputName, bad)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorContains(t, err, `"wrong-shape"`)
	require.NoError(t, bad.Close())
	err = rb.SetRemoteTensor(InputName, bad)
	assert.True(t, errors.Is(err, driver.ErrClosed) || errors.Is(err, driver.ErrInvalidArgument), "a closed remote tensor: %v", err)
	assert.ErrorContains(t, err, `"wrong-shape"`)
	assert.Equal(t, before.RemoteTensors+32, stats().RemoteTensors, "a closed remote tensor's memory is given back")
}
