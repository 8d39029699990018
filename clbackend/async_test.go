package clbackend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// TestAsyncExecutorsBelongToPlugin: the asynchronous requests of two
// compiled models run on executors the plugin shares by name, and closing
// the plugin stops them, so no goroutine outlives it; a compiled model that
// outlives its plugin keeps synchronous Infer and refuses async work.
func TestAsyncExecutorsBelongToPlugin(t *testing.T) {
	needOpenCL(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p, err := New()
	require.NoError(t, err)
	ctx := context.Background()
	var cms []driver.CompiledModel
	for range 2 {
		cm, err := p.CompileModel(ctx, devicetest.ReluModel(), nil)
		require.NoError(t, err)
		cms = append(cms, cm)
		r, err := cm.(*CompiledModel).CreateAsyncInferRequest()
		require.NoError(t, err)
		x := tensor.MustNew(tensor.F32, tensor.Shape{1, 4})
		require.NoError(t, r.SetTensor(devicetest.InputName, x))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(ctx))
		require.NoError(t, r.Close())
	}
	stats := p.executors.Stats()
	require.NotEmpty(t, stats, "the plugin's manager runs the async executors")
	for _, s := range stats {
		assert.True(t, strings.HasPrefix(s.Name, "GPU.0."), "executor %q is named by device", s.Name)
	}
	// Both compiled models share the executors: one set, not two.
	names := map[string]bool{}
	for _, s := range stats {
		names[s.Name] = true
	}
	assert.Len(t, names, len(stats))

	require.NoError(t, p.Close())
	assert.Empty(t, p.executors.Stats(), "Close stops the executors")
	_, err = cms[0].(*CompiledModel).CreateAsyncInferRequest()
	assert.True(t, errors.Is(err, driver.ErrClosed), "async after the plugin closed: %v", err)
	req, err := cms[0].CreateInferRequest()
	require.NoError(t, err, "sync requests outlive the plugin")
	require.NoError(t, req.SetTensor(devicetest.InputName, tensor.MustNew(tensor.F32, tensor.Shape{1, 4})))
	require.NoError(t, req.Infer(ctx))
	require.NoError(t, req.Close())
	for _, cm := range cms {
		require.NoError(t, cm.Close())
	}
}
