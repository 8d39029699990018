package fusion_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/onnx"
)

// wakeWordHead builds openWakeWord's head on x [rows, 2, 12] (Flatten to
// 24): MatMul+Add, LayerNormalization, Relu twice, then MatMul+Add and
// Sigmoid, widths 24 -> 16 -> 12 -> 1. extra adds three layers
// (MatMul+Add+Relu) after the second, making a run of six.
func wakeWordHead(t *testing.T, rows int64, extra bool) *graph.Model {
	b := newBuilder(t)
	x := b.param("x", rows, 2, 12)
	h := b.op("Flatten", graph.Attrs{"axis": int64(1)}, x)
	dense := func(h graph.Output, k, c int64, norm bool) graph.Output {
		h = b.op("Add", nil, b.op("MatMul", nil, h, b.rand(-0.5, 0.5, k, c)), b.rand(-0.2, 0.2, c))
		if norm {
			h = b.op("LayerNormalization", graph.Attrs{"axis": int64(-1), "epsilon": float32(1e-5)}, h, b.rand(0.5, 1.5, c), b.rand(-0.3, 0.3, c))
		}
		return b.op("Relu", nil, h)
	}
	h = dense(dense(h, 24, 16, true), 16, 12, true)
	if extra {
		h = dense(dense(dense(h, 12, 12, false), 12, 12, false), 12, 12, false)
	}
	y := b.op("Sigmoid", nil, b.op("Add", nil, b.op("MatMul", nil, h, b.rand(-0.5, 0.5, 12, 1)), b.rand(-0.2, 0.2, 1)))
	return b.model(y)
}

// TestFuseDenseChain fuses openWakeWord's head (FullyConnected +
// LayerNormalization + Relu twice, FullyConnected + Sigmoid, after
// FuseFullyConnected) into one dense_chain KernelFusion node whose inputs
// are x and the layers' weights, biases, scales and shifts, and the CPU
// computes the same with and without it. It leaves the chain alone
// without Options.DenseChain (the CPU device), when the weights or the
// kernel's row halves (DenseChainRowFloats) do not fit the device's local
// memory, with more rows than MaxRows, with dynamic
// rows, and where a layer's op type is excluded (GPU_DISABLED_OPS); a run
// of six layers becomes a chain of DenseChainMaxLayers and one of two.
func TestFuseDenseChain(t *testing.T) {
	passes := func() []fusion.Pass {
		return []fusion.Pass{fusion.FuseFullyConnected(), fusion.FuseDenseChain(), fusion.DeadCodeRemoval()}
	}
	fits := &fusion.DenseChainOptions{LocalBytes: 64 << 10, MaxRows: 2}
	m := wakeWordHead(t, 1, false)
	ins := randomInputs(t, m, 4, nil)

	tm, rep := transformWith(t, m, ins, fusion.Options{DenseChain: fits}, passes()...)
	assert.Equal(t, 1, rep.Passes[1].Rewrites)
	chains := kernelFusions(t, tm)
	require.Len(t, chains, 1)
	c := chains[0]
	assert.Equal(t, fusion.DenseChainKernel, c.Attrs.String(graph.AttrKernel, ""))
	assert.Equal(t, graph.LaunchDenseChain, c.Attrs.String(graph.AttrLaunch, ""))
	assert.Len(t, c.Inputs, 1+4+4+2, "x, then w, b, scale, shift, w, b, scale, shift, w, b")
	assert.Equal(t, []float32{1e-5, 1e-5, 0}, c.Attrs.Floats(graph.AttrParams, nil), "each layer's epsilon")
	assert.Equal(t, 0, opCount(t, tm, graph.OpFullyConnected)+opCount(t, tm, "LayerNormalization")+opCount(t, tm, "Relu"))
	assert.Equal(t, 1, opCount(t, tm, "Flatten"), "the Flatten before the chain is a view, not a layer")
	body, err := graph.KernelFusionBody(c)
	require.NoError(t, err)
	layers, err := fusion.DenseChainLayers(body)
	require.NoError(t, err)
	assert.Equal(t, []fusion.DenseLayer{{Norm: true, Act: 1}, {Norm: true, Act: 1}, {Act: 2}}, layers)

	for _, tc := range []struct {
		name string
		m    *graph.Model
		opts fusion.Options
	}{
		{"no device options", m, fusion.Options{}},
		{"weights over local memory", m, fusion.Options{DenseChain: &fusion.DenseChainOptions{LocalBytes: 2 << 10, MaxRows: 2}}},
		{"rows over MaxRows", wakeWordHead(t, 3, false), fusion.Options{DenseChain: fits}},
		{"dynamic rows", wakeWordHead(t, -1, false), fusion.Options{DenseChain: fits}},
		{"FullyConnected excluded", m, fusion.Options{DenseChain: fits, Chains: &fusion.ChainOptions{Exclude: map[string]bool{graph.OpFullyConnected: true}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := randomInputs(t, tc.m, 5, func(string, int) int64 { return 2 })
			tm, rep := transformWith(t, tc.m, ins, tc.opts, passes()...)
			assert.Zero(t, rep.Passes[1].Rewrites)
			assert.Empty(t, kernelFusions(t, tm))
		})
	}

	// The three layers' 673 floats of weights, the reduction array's 256
	// and two row halves: halves of 16 floats would fit, the kernel's 64
	// do not, so only the last two layers (241 floats) form a chain.
	tight := fusion.Options{DenseChain: &fusion.DenseChainOptions{LocalBytes: 4 * (673 + 2*16 + 256), MaxRows: 2}}
	tm, _ = transformWith(t, m, ins, tight, passes()...)
	chains = kernelFusions(t, tm)
	require.Len(t, chains, 1)
	assert.Len(t, chains[0].Inputs, 1+4+2, "the second and third layers")

	long := wakeWordHead(t, 1, true)
	tm, rep = transformWith(t, long, randomInputs(t, long, 6, nil), fusion.Options{DenseChain: fits}, passes()...)
	assert.Equal(t, 2, rep.Passes[1].Rewrites)
	chains = kernelFusions(t, tm)
	require.Len(t, chains, 2)
	assert.Len(t, chains[0].Inputs, 1+4+4+2+2, "the first four layers")
	assert.Len(t, chains[1].Inputs, 1+2+2, "the last two: a Relu layer and the Sigmoid one")
}

// TestDenseChainWakeWordHeads runs the standard pipeline on the wake-word
// heads (make models) with a POCL device's figures (2 MiB of local memory,
// 2 compute units): each head's three dense layers become one dense_chain
// node, and the CPU computes the same; with a discrete GPU's 64 KiB of
// local memory the first layer's 300 KB of weights do not fit: it stays an
// fc_layer_norm_relu node, and the last two layers form the chain.
func TestDenseChainWakeWordHeads(t *testing.T) {
	for _, file := range []string{"hello_deepa.onnx", "namaste_deepa.onnx"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(modelDir(), file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("model %s is missing (%v); fetch the real models with: make models", path, err)
			}
			m, err := onnx.ReadFile(path)
			require.NoError(t, err)
			ins := randomInputs(t, m, 12, nil)
			pocl := &fusion.DenseChainOptions{LocalBytes: 2 << 20, MaxRows: 2}
			tm, _ := transformWith(t, m, ins, fusion.Options{DenseChain: pocl}, fusion.DefaultPasses()...)
			chains := kernelFusions(t, tm)
			require.Len(t, chains, 1)
			assert.Equal(t, fusion.DenseChainKernel, chains[0].Attrs.String(graph.AttrKernel, ""))
			assert.Zero(t, opCount(t, tm, graph.OpFullyConnected))
			gpu := &fusion.DenseChainOptions{LocalBytes: 64 << 10, MaxRows: 80}
			tm, _ = transformWith(t, m, ins, fusion.Options{DenseChain: gpu}, fusion.DefaultPasses()...)
			var kinds []string
			for _, n := range kernelFusions(t, tm) {
				kinds = append(kinds, n.Attrs.String(graph.AttrKernel, ""))
			}
			assert.Equal(t, []string{"fc_layer_norm_relu", fusion.DenseChainKernel}, kinds, "the first layer alone, the last two (5 KB) in one chain")
			assert.Zero(t, opCount(t, tm, graph.OpFullyConnected))
		})
	}
}
