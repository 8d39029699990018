// Remote tensors exist only on the GPU device, which needs a build with
// OpenCL.

//go:build cgo && !noopencl

package clinfer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// TestRemoteTensorsThroughTheUserAPI: the Core's remote contexts, a
// compiled model's context, remote bindings, transfers, memory statistics
// and ReleaseMemory as a user of the root package sees them; and the
// errors of devices without device memory (a GPU remote tensor bound to a
// CPU request names the tensor and says why).
func TestRemoteTensorsThroughTheUserAPI(t *testing.T) {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	require.NoError(t, err)
	gpu, err := core.CompileModel(ctx, model, "GPU", nil)
	require.NoError(t, err)
	defer gpu.Close()
	rc, err := gpu.Context()
	require.NoError(t, err)
	defer rc.Close()
	def, err := core.DefaultContext("GPU")
	require.NoError(t, err)
	assert.Equal(t, def.Params(), rc.Params(), "CompileModel compiles in the device's default context")
	require.NoError(t, def.Close())

	in := gpu.Inputs()[0] // dynamic: a remote tensor's shape picks the plan
	x := image(1, 64, 64)
	s := x.Shape()
	rx, err := rc.CreateTensor("image-on-gpu", in.Type, s, nil)
	require.NoError(t, err)
	defer rx.Close()
	require.NoError(t, rx.CopyFrom(ctx, x))
	req, err := gpu.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	require.NoError(t, req.SetRemoteTensor(in.Name, rx))
	require.NoError(t, req.Infer(ctx))
	tr, err := req.Transfers()
	require.NoError(t, err)
	assert.Zero(t, tr.HostToDevice, "the input came from the device")
	assert.Equal(t, x.ByteSize(), tr.DeviceToDevice)
	out := gpu.Outputs()[0].Name
	got, err := req.Tensor(out)
	require.NoError(t, err)
	want, err := gpu.Infer(ctx, map[string]*tensor.Tensor{in.Name: x})
	require.NoError(t, err)
	assert.InDeltaSlice(t, want[out].F32(), got.F32(), 1e-5, "remote input, same result as the host path")

	stat := func() plugin.MemoryStatistics {
		v, err := core.Property("GPU", plugin.KeyMemoryStatistics)
		require.NoError(t, err)
		m, err := plugin.ParseMemoryStatistics(v)
		require.NoError(t, err)
		return m
	}
	before := stat()
	require.Positive(t, before.Activations)
	require.NoError(t, gpu.ReleaseMemory())
	assert.Less(t, stat().Activations, before.Activations)
	require.NoError(t, req.Infer(ctx))
	got, err = req.Tensor(out)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want[out].F32(), got.F32(), 1e-5, "right after ReleaseMemory")

	cpu, err := core.CompileModel(ctx, model, "CPU", nil)
	require.NoError(t, err)
	defer cpu.Close()
	creq, err := cpu.CreateInferRequest()
	require.NoError(t, err)
	defer creq.Close()
	err = creq.SetRemoteTensor(in.Name, rx)
	assert.ErrorIs(t, err, clinfer.ErrNotImplemented)
	assert.ErrorContains(t, err, `"image-on-gpu"`)
	assert.ErrorContains(t, err, "host tensors only")
	_, err = cpu.Context()
	assert.ErrorIs(t, err, clinfer.ErrNotImplemented)
	assert.ErrorIs(t, cpu.ReleaseMemory(), clinfer.ErrNotImplemented)
	_, err = core.DefaultContext("CPU")
	assert.ErrorIs(t, err, clinfer.ErrNotImplemented)
	_, err = core.DefaultContext("HETERO:GPU,CPU")
	assert.ErrorIs(t, err, clinfer.ErrNotImplemented)
}

// TestAsyncRequestsTakeRemoteTensors: an asynchronous GPU request binds a
// remote output and runs with no device-to-host bytes; an asynchronous
// CPU request refuses the tensor by name.
func TestAsyncRequestsTakeRemoteTensors(t *testing.T) {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	require.NoError(t, err)
	gpu, err := core.CompileModel(ctx, model, "GPU", nil)
	require.NoError(t, err)
	defer gpu.Close()
	rc, err := gpu.Context()
	require.NoError(t, err)
	defer rc.Close()
	x := image(1, 64, 64)
	want, err := gpu.Infer(ctx, map[string]*tensor.Tensor{"image": x})
	require.NoError(t, err)
	w := want["probs"]
	out, err := rc.CreateTensor("probs-on-gpu", w.Type(), w.Shape(), nil)
	require.NoError(t, err)
	defer out.Close()

	req, err := gpu.CreateAsyncInferRequest()
	require.NoError(t, err)
	defer req.Close()
	require.NoError(t, req.SetTensor("image", x))
	require.NoError(t, req.SetRemoteTensor("probs", out))
	require.NoError(t, req.StartAsync(ctx))
	require.NoError(t, req.Wait(ctx))
	tr, err := req.Transfers()
	require.NoError(t, err)
	assert.Zero(t, tr.DeviceToHost)
	assert.Equal(t, w.ByteSize(), tr.DeviceToDevice)
	got := tensor.MustNew(w.Type(), w.Shape())
	require.NoError(t, out.CopyTo(ctx, got))
	assert.InDeltaSlice(t, w.F32(), got.F32(), 1e-5)

	cpu, err := core.CompileModel(ctx, model, "CPU", nil)
	require.NoError(t, err)
	defer cpu.Close()
	creq, err := cpu.CreateAsyncInferRequest()
	require.NoError(t, err)
	defer creq.Close()
	err = creq.SetRemoteTensor("probs", out)
	assert.ErrorIs(t, err, clinfer.ErrNotImplemented)
	assert.ErrorContains(t, err, `"probs-on-gpu"`)
}
