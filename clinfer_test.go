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
