package clbackend

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// seBlockCases are lowerCases' cases of the se_block kernel
// (fusion.FuseSEBlock): a squeeze-excitation block on x [N, C, H, W] of
// random sizes (C and the squeezed CM over and under the kernel's group,
// images of one element to ~100), fused before the GPU sees it, so the CPU
// runs the block's body. The first is MobileNetV3's (Relu, HardSigmoid,
// Mul), the second the residual form of PP-OCRv4 det's RSE blocks (x +
// x*gate, after FuseSEResidual) with a Sigmoid gate.
func seBlockCases() []lowerCase {
	op := numberedNodes()
	block := func(g *caseGen, residual bool) *graph.Model {
		N, C, CM, H, W := g.dim(1, 2), g.dim(3, 40), g.dim(1, 12), g.dim(1, 9), g.dim(1, 11)
		x := g.x("x", N, C, H, W)
		s := op("Relu", nil, op("Conv", nil, op("GlobalAveragePool", nil, x), g.c(-0.5, 0.5, CM, C, 1, 1), g.c(-0.2, 0.2, CM)))
		s = op("Conv", nil, s, g.c(-0.5, 0.5, C, CM, 1, 1), g.c(-0.2, 0.2, C))
		y := op("Mul", nil, x, op("HardSigmoid", graph.Attrs{"alpha": float32(0.2), "beta": float32(0.5)}, s))
		if residual {
			y = op("Add", nil, x, op("Mul", nil, x, op("Sigmoid", nil, s)))
		}
		m := g.model(y.Node)
		require.NoError(g.t, m.InferShapes())
		passes := append(append([]fusion.Pass{fusion.FuseConv()}, fusion.KernelFusionPasses()...), fusion.FuseSEBlock(), fusion.DeadCodeRemoval())
		rep, err := fusion.NewManager(passes...).Run(context.Background(), m, fusion.Options{BodyFusions: true})
		require.NoError(g.t, err)
		require.Equal(g.t, 1, rep.Passes[len(passes)-2].Rewrites, "the case's squeeze-excitation block was not fused")
		return m
	}
	return []lowerCase{
		{"se_block", func(g *caseGen) *graph.Model { return block(g, false) }},
		{"se_block_residual", func(g *caseGen) *graph.Model { return block(g, true) }},
	}
}

// TestSEBlockOverLocalMemory plans the se_block cases on a device whose
// local memory holds no image (a POCL profile with 64 bytes) and 8
// compute units (every case has at least 3 channels, so at least 3
// groups would pool each image): each block runs its body's nodes
// (IMPL_TYPE se_block:body, naming why) and the results match the CPU;
// on the device's own profile, and with 2 compute units and only the
// local memory the kernel's arrays take (seBlockFused: at most two
// groups pool an image), the same cases run the fused kernel (IMPL_TYPE
// se_block:se_block); with 2 compute units and 4 bytes less than those
// arrays, each block runs its body again, naming the channels' rows as
// the cause.
func TestSEBlockOverLocalMemory(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	tiny := poclSkylake
	tiny.localMem, tiny.computeUnits = 64, 8
	twoCores := tiny
	twoCores.localMem, twoCores.computeUnits = 3*64*4, 2 // the kernel's three local rows of 64 floats (C, CM <= 40)
	shortRows := twoCores
	shortRows.localMem -= 4
	t.Cleanup(func() { testProfile = nil })
	all := lowerCases()[graph.OpKernelFusion]
	ran := 0
	for pi, p := range []*deviceProfile{nil, &tiny, &twoCores, &shortRows} {
		testProfile = p
		want := "se_block:se_block"
		switch p {
		case &tiny:
			want = "se_block:body (an image of"
		case &shortRows:
			want = "channels whose three rows of 64 floats exceed the device's 764 bytes"
		}
		for ci, c := range all {
			if !strings.HasPrefix(c.name, "se_block") {
				continue
			}
			ran++
			t.Run(fmt.Sprintf("%s/%d", c.name, pi), func(t *testing.T) {
				m, ins := c.instance(t, graph.OpKernelFusion, ci)
				got, cm := inferAll(t, gpu, m, ins)
				wantOut, _ := inferAll(t, cpu, m, ins)
				assertOutputsClose(t, wantOut, got, 1e-5, 1e-4)
				assert.Contains(t, kernelFusionImpls(t, cm), want)
			})
		}
	}
	assert.Equal(t, 8, ran, "the two se_block cases of lowerCases on four profiles")
}

// TestSEBlockFusedFollowsTheProfile checks seBlockFused on PP-OCRv4's
// squeeze-excitation images: rec's 480x6x80 block (921600 bytes) and
// det 640's 9.8 MB one run fused on 2-core POCL targets whatever their
// local memory, images within the local memory on any device, and an
// image over it pooled by 8 groups, or on a GPU, runs the body.
func TestSEBlockFusedFollowsTheProfile(t *testing.T) {
	eight := poclHaswell
	eight.computeUnits = 8
	small := smallGPU
	small.computeUnits = 2
	for _, c := range []struct {
		p      deviceProfile
		image  int64
		groups int64
		want   bool
	}{
		{poclHaswell, 921600, 2, true},
		{poclSkylake, 9830400, 2, true},
		{poclHaswell, 512 << 10, 8, true},
		{eight, 921600, 8, false},
		{eight, 921600, 2, true}, // two channels: two groups
		{small, 921600, 2, false},
		{nvidiaH100, 48 << 10, 132, true},
		{nvidiaH100, 921600, 132, false},
	} {
		assert.Equal(t, c.want, c.p.seBlockFused(c.image, c.groups), "%s, %d bytes, %d groups", c.p.name, c.image, c.groups)
	}
}

// numberedNodes returns a maker of single-output nodes named by op type
// and a running number, for building a case's model.
func numberedNodes() func(typ string, attrs graph.Attrs, in ...graph.Output) graph.Output {
	k := 0
	return func(typ string, attrs graph.Attrs, in ...graph.Output) graph.Output {
		k++
		return graph.NewNode(typ, fmt.Sprintf("%s_%d", typ, k), in, attrs, 1).Out(0)
	}
}

// kernelFusionImpls joins the IMPL_TYPE of the KernelFusion nodes of
// compiled model cm's runtime model.
func kernelFusionImpls(t *testing.T, cm driver.CompiledModel) string {
	t.Helper()
	_, rm := opCounts(t, cm)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	impls := ""
	for _, n := range nodes {
		if n.RT.Extra["LAYER_TYPE"] == graph.OpKernelFusion {
			impls += n.RT.Extra["IMPL_TYPE"]
		}
	}
	return impls
}
