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

// seBlockModel builds a MobileNetV3 squeeze-excitation block on x [n, 6,
// 3, 5]: GlobalAveragePool, Conv 6 -> 2 + act1, Conv 2 -> 6 +
// HardSigmoid, Mul by x (gate first when swap), plus x when residual.
// stride is the first Conv's (not 1: not a squeeze layer).
func seBlockModel(t *testing.T, n int64, act1 string, residual, swap bool, stride int64) *graph.Model {
	b := newBuilder(t)
	x := b.param("x", n, 6, 3, 5)
	g := b.op("GlobalAveragePool", nil, x)
	g = b.op("Conv", graph.Attrs{"strides": []int64{stride, stride}}, g, b.rand(-0.5, 0.5, 2, 6, 1, 1), b.rand(-0.2, 0.2, 2))
	if act1 != "" {
		g = b.op(act1, nil, g)
	}
	g = b.op("Conv", nil, g, b.rand(-0.5, 0.5, 6, 2, 1, 1), b.rand(-0.2, 0.2, 6))
	g = b.op("HardSigmoid", graph.Attrs{"alpha": float32(0.2), "beta": float32(0.5)}, g)
	y := b.op("Mul", nil, x, g)
	if swap {
		y = b.op("Mul", nil, g, x)
	}
	if residual {
		y = b.op("Add", nil, x, y)
	}
	return b.model(y)
}

// TestFuseSEBlock fuses a squeeze-excitation block (after FuseConv, with
// the residual form after FuseSEResidual) into one se_block KernelFusion
// node whose inputs are x and the two layers' weights and biases, whose
// params are the post-ops' alpha and beta and whose body's layout gives the
// activations and the residual; the CPU computes the same with and without
// it. It leaves the block alone without Options.BodyFusions (the CPU device),
// when the pooling's op type is excluded (GPU_DISABLED_OPS) and when a
// convolution is not a 1x1 squeeze layer.
func TestFuseSEBlock(t *testing.T) {
	passes := append(append([]fusion.Pass{fusion.FuseConv()}, fusion.KernelFusionPasses()...), fusion.FuseSEBlock(), fusion.DeadCodeRemoval())
	se := len(passes) - 2
	on := fusion.Options{BodyFusions: true}
	for _, tc := range []struct {
		name           string
		act1           string
		residual, swap bool
		layout         fusion.SEBlockLayout
	}{
		{"relu", "Relu", false, false, fusion.SEBlockLayout{Acts: [2]int64{fusion.SEActRelu, fusion.SEActHardSigmoid}}},
		{"gate first", "Sigmoid", false, true, fusion.SEBlockLayout{Acts: [2]int64{fusion.SEActSigmoid, fusion.SEActHardSigmoid}}},
		{"residual", "Relu", true, false, fusion.SEBlockLayout{Acts: [2]int64{fusion.SEActRelu, fusion.SEActHardSigmoid}, Residual: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := seBlockModel(t, 2, tc.act1, tc.residual, tc.swap, 1)
			ins := randomInputs(t, m, 7, nil)
			tm, rep := transformWith(t, m, ins, on, passes...)
			assert.Equal(t, 1, rep.Passes[se].Rewrites)
			ks := kernelFusions(t, tm)
			require.Len(t, ks, 1)
			k := ks[0]
			assert.Equal(t, fusion.SEBlockKernel, k.Attrs.String(graph.AttrKernel, ""))
			assert.Equal(t, graph.LaunchSEBlock, k.Attrs.String(graph.AttrLaunch, ""))
			assert.Len(t, k.Inputs, 5, "x, w1, b1, w2, b2")
			p := k.Attrs.Floats(graph.AttrParams, nil)
			require.Len(t, p, 4)
			assert.Equal(t, []float32{0.2, 0.5}, p[2:], "HardSigmoid's alpha and beta")
			assert.Zero(t, opCount(t, tm, "GlobalAveragePool")+opCount(t, tm, graph.OpFusedConv)+opCount(t, tm, "Mul"))
			body, err := graph.KernelFusionBody(k)
			require.NoError(t, err)
			layout, err := fusion.SEBlockLayoutOf(body)
			require.NoError(t, err)
			assert.Equal(t, tc.layout, layout)
			names := 5 // GlobalAveragePool, Conv, Conv, HardSigmoid, Mul
			if tc.act1 != "" {
				names++
			}
			if tc.residual {
				names++
			}
			assert.Len(t, k.RT.FusedNames, names, "the user's nodes it stands for")
		})
	}
	m := seBlockModel(t, 2, "Relu", false, false, 1)
	for _, tc := range []struct {
		name string
		m    *graph.Model
		opts fusion.Options
	}{
		{"no device option", m, fusion.Options{}},
		{"pooling excluded", m, fusion.Options{BodyFusions: true, Chains: &fusion.ChainOptions{Exclude: map[string]bool{"GlobalAveragePool": true}}}},
		{"strided convolution", seBlockModel(t, 2, "Relu", false, false, 2), on},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, rep := transformWith(t, tc.m, randomInputs(t, tc.m, 8, nil), tc.opts, passes...)
			assert.Zero(t, rep.Passes[se].Rewrites)
			assert.Equal(t, 1, opCount(t, tm, "GlobalAveragePool"))
		})
	}
}

// TestBodyFusionsRealModels runs the standard pipeline with the GPU's
// option on PP-OCR cls, rec and det (make models): every
// squeeze-excitation block becomes one se_block node (cls has nine, rec
// two, det ten; cls's last pooling, before its classifier, stays), det's
// two ConvTranspose + activation pairs become fused_deconv2d nodes, and
// the CPU computes the same.
func TestBodyFusionsRealModels(t *testing.T) {
	for _, tc := range []struct {
		file           string
		shape          []int64
		blocks, deconv int
		pools          int
	}{
		{"ch_ppocr_mobile_v2.0_cls_infer.onnx", []int64{1, 3, 48, 192}, 9, 0, 1},
		{"ch_PP-OCRv4_rec_infer.onnx", []int64{1, 3, 48, 160}, 2, 0, 0},
		{"ch_PP-OCRv4_det_infer.onnx", []int64{1, 3, 64, 64}, 10, 2, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(modelDir(), tc.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("model %s is missing (%v); fetch the real models with: make models", path, err)
			}
			m, err := onnx.ReadFile(path)
			require.NoError(t, err)
			ins := randomInputs(t, m, 13, func(_ string, axis int) int64 { return tc.shape[axis] })
			tm, _ := transformWith(t, m, ins, fusion.Options{BodyFusions: true}, fusion.DefaultPasses()...)
			kinds := map[string]int{}
			for _, k := range kernelFusions(t, tm) {
				kinds[k.Attrs.String(graph.AttrKernel, "")]++
			}
			assert.Equal(t, tc.blocks, kinds[fusion.SEBlockKernel])
			assert.Equal(t, tc.deconv, kinds[fusion.DeconvKernel])
			assert.Equal(t, tc.pools, opCount(t, tm, "GlobalAveragePool"), "the pools outside squeeze-excitation blocks")
		})
	}
}
