package fusion_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// TestFuseDeconvActivation fuses PP-OCRv4 det's head (ConvTranspose +
// Relu, ConvTranspose with no bias + Sigmoid) into two fused_deconv2d
// KernelFusion nodes whose bodies give the ConvTranspose and the
// activation as a post-op, and the CPU computes the same with and without
// them. It leaves the pair alone without Options.BodyFusions (the CPU
// device) and when the ConvTranspose's output is read elsewhere too.
func TestFuseDeconvActivation(t *testing.T) {
	passes := []fusion.Pass{fusion.FuseDeconvActivation(), fusion.DeadCodeRemoval()}
	head := func(shared bool, act string) *graph.Model {
		b := newBuilder(t)
		x := b.param("x", 1, 3, 4, 5)
		h := b.op("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}}, x, b.rand(-0.5, 0.5, 3, 4, 2, 2), b.rand(-0.2, 0.2, 4))
		y := b.op(act, nil, h)
		y = b.op("Sigmoid", nil, b.op("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}}, y, b.rand(-0.5, 0.5, 4, 1, 2, 2)))
		if shared {
			return b.model(y, b.op("Tanh", nil, h))
		}
		return b.model(y)
	}
	m := head(false, "Relu")
	tm, rep := transformWith(t, m, randomInputs(t, m, 3, nil), fusion.Options{BodyFusions: true}, passes...)
	assert.Equal(t, 2, rep.Passes[0].Rewrites)
	ks := kernelFusions(t, tm)
	require.Len(t, ks, 2)
	var kinds []string
	for _, k := range ks {
		assert.Equal(t, fusion.DeconvKernel, k.Attrs.String(graph.AttrKernel, ""))
		assert.Equal(t, graph.LaunchDeconv, k.Attrs.String(graph.AttrLaunch, ""))
		body, err := graph.KernelFusionBody(k)
		require.NoError(t, err)
		cv, post, err := fusion.DeconvFusionParts(body)
		require.NoError(t, err)
		assert.Equal(t, "ConvTranspose", cv.OpType)
		kinds = append(kinds, post.Kind)
		assert.Len(t, k.Inputs, len(cv.Inputs), "x, w and the bias where there is one")
	}
	assert.ElementsMatch(t, []string{graph.PostRelu, graph.PostSigmoid}, kinds)
	assert.Zero(t, opCount(t, tm, "ConvTranspose")+opCount(t, tm, "Relu")+opCount(t, tm, "Sigmoid"))

	for _, tc := range []struct {
		name    string
		m       *graph.Model
		opts    fusion.Options
		rewrite int
	}{
		{"no device option", m, fusion.Options{}, 0},
		{"ConvTranspose read twice", head(true, "Relu"), fusion.Options{BodyFusions: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rep := transformWith(t, tc.m, randomInputs(t, tc.m, 4, nil), tc.opts, passes...)
			assert.Equal(t, tc.rewrite, rep.Passes[0].Rewrites)
		})
	}
}
