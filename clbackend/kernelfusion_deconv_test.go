package clbackend

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// deconvFusionCases are lowerCases' cases of fusion.FuseDeconvActivation,
// fused before the GPU sees them (the CPU runs the body): a kernel =
// stride ConvTranspose with a bias and Relu (PP-OCRv4 det's head), which
// the blocked kernel takes with the Relu as its post-op, and a padded 3x3
// stride-2 one without a bias and Sigmoid, which it does not: the body's
// nodes run.
func deconvFusionCases() []lowerCase {
	op := numberedNodes()
	fused := func(g *caseGen, y graph.Output) *graph.Model {
		m := g.model(y.Node)
		require.NoError(g.t, m.InferShapes())
		rep, err := fusion.NewManager(fusion.FuseDeconvActivation(), fusion.DeadCodeRemoval()).Run(context.Background(), m, fusion.Options{BodyFusions: true})
		require.NoError(g.t, err)
		require.Equal(g.t, 1, rep.Passes[0].Rewrites, "the case's ConvTranspose and activation were not fused")
		return m
	}
	return []lowerCase{
		{"deconv_relu", func(g *caseGen) *graph.Model {
			C, OC := g.dim(1, 9), g.dim(1, 12)
			x := g.x("x", g.dim(1, 2), C, g.dim(1, 7), g.dim(1, 9))
			h := op("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}}, x, g.c(-0.5, 0.5, C, OC, 2, 2), g.c(-0.2, 0.2, OC))
			return fused(g, op("Relu", nil, h))
		}},
		{"deconv_sigmoid_padded", func(g *caseGen) *graph.Model {
			C, OC := g.dim(1, 5), g.dim(1, 4)
			x := g.x("x", 1, C, g.dim(2, 6), g.dim(2, 6))
			h := op("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}}, x, g.c(-0.5, 0.5, C, OC, 3, 3))
			return fused(g, op("Sigmoid", nil, h))
		}},
	}
}

// TestDeconvFusionPaths runs the deconv fusion cases: the kernel = stride
// one as one fused_deconv2d launch (IMPL_TYPE fused_deconv2d:fused_deconv2d,
// the activation in its epilogue), the padded one through its body's
// nodes (IMPL_TYPE fused_deconv2d:body ...), both matching the CPU.
func TestDeconvFusionPaths(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	want := map[string]string{"deconv_relu": "fused_deconv2d:fused_deconv2d", "deconv_sigmoid_padded": "fused_deconv2d:body (a ConvTranspose"}
	ran := 0
	for ci, c := range lowerCases()[graph.OpKernelFusion] {
		if !strings.HasPrefix(c.name, "deconv_") {
			continue
		}
		ran++
		t.Run(c.name, func(t *testing.T) {
			m, ins := c.instance(t, graph.OpKernelFusion, ci)
			got, cm := inferAll(t, gpu, m, ins)
			wantOut, _ := inferAll(t, cpu, m, ins)
			assertOutputsClose(t, wantOut, got, 1e-5, 1e-4)
			assert.Contains(t, kernelFusionImpls(t, cm), want[c.name])
		})
	}
	assert.Equal(t, 2, ran, "the two deconv cases of lowerCases")
}
