package clbackend

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// opCounts counts the runtime model's nodes by LAYER_TYPE.
func opCounts(t *testing.T, cm driver.CompiledModel) (map[string]int, *graph.Model) {
	t.Helper()
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	out := map[string]int{}
	for _, n := range nodes {
		out[n.RT.Extra["LAYER_TYPE"]]++
	}
	return out, rm
}

// TestCompileRunsFusion: CompileModel runs the fusion passes (Conv+Relu
// become FusedConv launched as fused_conv2d, with the user's names as
// ORIGINAL_NAMES), DISABLE_TRANSFORMATIONS and DISABLED_TRANSFORMATIONS
// turn them off, and results agree with the CPU either way.
func TestCompileRunsFusion(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	x := randInput(t, tensor.Shape{1, 4, 16, 16}, 3)
	want, _ := runModel(t, cpu, convChain(t, 3, graph.StaticDim(1)), x)
	for _, c := range []struct {
		name              string
		props             map[string]string
		fused, conv, relu int
	}{
		{"default", nil, 3, 0, 0},
		{"disable_all", map[string]string{driver.KeyDisableTransformations: "YES"}, 0, 3, 3},
		{"disable_fuse_conv", map[string]string{fusion.KeyDisabledTransformations: fusion.PassFuseConv}, 0, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			cm, err := gpu.CompileModel(context.Background(), convChain(t, 3, graph.StaticDim(1)), c.props)
			require.NoError(t, err)
			defer cm.Close()
			counts, rm := opCounts(t, cm)
			assert.Equal(t, c.fused, counts[graph.OpFusedConv], "FusedConv nodes")
			assert.Equal(t, c.conv, counts["Conv"], "Conv nodes")
			assert.Equal(t, c.relu, counts["Relu"], "Relu nodes")
			if c.fused > 0 {
				nodes, err := rm.Nodes()
				require.NoError(t, err)
				for _, n := range nodes {
					if n.OpType == graph.OpFusedConv {
						assert.Regexp(t, `^fused_(conv2d|conv2d_blocked|dwconv2d):`, n.RT.Extra["IMPL_TYPE"], "a FusedConv runs one of the fused conv kernels")
						assert.Contains(t, n.RT.Extra["ORIGINAL_NAMES"], "conv")
						assert.Contains(t, n.RT.Extra["ORIGINAL_NAMES"], "relu")
					}
				}
			}
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer r.Close()
			require.NoError(t, r.SetTensor("x", x))
			require.NoError(t, r.Infer(context.Background()))
			y, err := r.Tensor("y")
			require.NoError(t, err)
			assertClose(t, want[0], y)
		})
	}
	_, err = gpu.CompileModel(context.Background(), convChain(t, 1, graph.StaticDim(1)), map[string]string{fusion.KeyDisabledTransformations: "NoSuchPass"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "an unknown pass name is a bad property")
}

// TestQueryAfterFusion: QueryModel answers in the user's names after the
// passes, Constants, Parameters and Results included, and a disabled op
// type keeps the fused node that absorbed it off the GPU.
func TestQueryAfterFusion(t *testing.T) {
	gpu := newGPU(t)
	m := convChain(t, 2, graph.StaticDim(1))
	q, err := gpu.QueryModel(context.Background(), m, nil)
	require.NoError(t, err)
	nodes, err := m.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		assert.Equal(t, DeviceName, q[n.Name], "node %q", n.Name)
	}
	q, err = gpu.QueryModel(context.Background(), m, map[string]string{KeyDisabledOps: "Relu"})
	require.NoError(t, err)
	for _, n := range []string{"conv0", "relu0", "w0", "b0", "conv1", "relu1"} {
		assert.NotContains(t, q, n, "Conv and Relu are one FusedConv; Relu is disabled")
	}
	for _, n := range []string{"tr", "sm", "y"} {
		assert.Equal(t, DeviceName, q[n], "node %q", n)
	}
	_, err = gpu.CompileModel(context.Background(), m, map[string]string{KeyDisabledOps: "Relu"})
	assert.ErrorIs(t, err, driver.ErrUnsupported)
}
