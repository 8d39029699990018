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

// TestEveryDeviceRegistered: importing the root package alone registers
// CPU, GPU, HETERO, AUTO and BATCH, and its names are plugin's.
func TestEveryDeviceRegistered(t *testing.T) {
	assert.Subset(t, clinfer.Devices(), []string{"CPU", "GPU", "HETERO", "AUTO", "BATCH"})
	assert.Equal(t, plugin.Devices(), clinfer.Devices())
	var core *plugin.Core = clinfer.NewCore() // the same type
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	assert.Contains(t, core.AvailableDevices(), "CPU")
	assert.Equal(t, plugin.ErrClosed, clinfer.ErrClosed)
	assert.Equal(t, plugin.Props(plugin.WithProfiling(true), plugin.WithNumStreams(2)),
		clinfer.Props(clinfer.WithProfiling(true), clinfer.WithNumStreams(2)))
}

// TestZeroValueCoreRoot: `var c clinfer.Core` compiles and runs a model.
func TestZeroValueCoreRoot(t *testing.T) {
	var c clinfer.Core
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	m, err := c.ReadModel("internal/defaultmodel/smallcnn.onnx")
	require.NoError(t, err)
	cm, err := c.CompileModel(context.Background(), m, "CPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	out, err := cm.Infer(context.Background(), map[string]*tensor.Tensor{"image": tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 64, 64})})
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{1, 10}, out["probs"].Shape())
}

// TestBatchStats: concurrent Infer calls on a BATCH model are gathered
// into one batched inference, which BatchStats counts; a model compiled on
// a device that does not batch has none.
func TestBatchStats(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	m, err := core.ReadModel("internal/defaultmodel/smallcnn.onnx")
	require.NoError(t, err)
	ctx := context.Background()

	plain, err := core.CompileModel(ctx, m, "CPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, plain.Close()) })
	st, ok := plain.BatchStats()
	assert.False(t, ok)
	assert.Equal(t, clinfer.BatchStats{}, st)

	// Two rounds of two concurrent inferences: in the first, one may run
	// alone before the other's request exists (then the other waits out
	// the timeout); in the second both pooled requests exist and gather.
	cm, err := core.CompileModel(ctx, m, "BATCH:CPU(2)", clinfer.Props(clinfer.WithProperty("AUTO_BATCH_TIMEOUT", "500")))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	for range 2 {
		errs := make(chan error, 2)
		for range 2 {
			go func() { // exits when Infer returns
				_, err := cm.Infer(ctx, map[string]*tensor.Tensor{"image": tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 64, 64})})
				errs <- err
			}()
		}
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
	}
	st, ok = cm.BatchStats()
	assert.True(t, ok)
	assert.Equal(t, 2, st.Size)
	assert.GreaterOrEqual(t, st.Batches, int64(1), "%+v", st)
	assert.Equal(t, int64(4), 2*st.Batches+st.Alone, "every inference is counted once: %+v", st)
	assert.Zero(t, st.Gathering)
}
