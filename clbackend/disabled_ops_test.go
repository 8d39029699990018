package clbackend

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// TestDisabledOps: GPU_DISABLED_OPS takes op types out of QueryModel and
// makes CompileModel refuse them, per call or per device.
func TestDisabledOps(t *testing.T) {
	p := newGPU(t)
	ctx := context.Background()
	props := map[string]string{KeyDisabledOps: " Relu, Mul ,Relu"}

	q, err := p.QueryModel(ctx, chainModel(t), props)
	require.NoError(t, err)
	// The answer is in the user's names after the fusion passes: Identity
	// is folded into its producer (the disabled Mul), so it and y follow
	// Mul; x and s feed disabled ops, so they stay off the GPU too.
	for _, n := range []string{"relu", "mul", "identity", "y", "x", "s"} {
		assert.NotContains(t, q, n)
	}
	for _, n := range []string{"w", "c", "add", "sum", "z"} {
		assert.Equal(t, DeviceName, q[n], "node %q", n)
	}
	// Without transformations every node keeps its own answer.
	q, err = p.QueryModel(ctx, chainModel(t), map[string]string{KeyDisabledOps: "Relu,Mul", driver.KeyDisableTransformations: "YES"})
	require.NoError(t, err)
	assert.Equal(t, DeviceName, q["identity"])
	assert.NotContains(t, q, "mul")

	_, err = p.CompileModel(ctx, chainModel(t), props)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), KeyDisabledOps)

	// Set on the device: normalised, and compiling follows it.
	require.NoError(t, p.SetProperties(props))
	v, err := p.Property(KeyDisabledOps)
	require.NoError(t, err)
	assert.Equal(t, "Relu,Mul", v)
	_, err = p.CompileModel(ctx, chainModel(t), nil)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	cm, err := p.CompileModel(ctx, chainModel(t), map[string]string{KeyDisabledOps: ""})
	require.NoError(t, err, "a compile-time empty list enables every op again")
	assert.NoError(t, cm.Close())
}
