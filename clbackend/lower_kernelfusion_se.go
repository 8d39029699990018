package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// lowerSEBlock launches KernelFusion node n of graph.LaunchSEBlock
// (fusion.FuseSEBlock): a squeeze-excitation block in one se_block
// launch of G work groups per image, where the profile's seBlockFused
// takes it. G is the device's compute units, at most one per channel, so
// the scaling spreads over the device as the unfused Mul did. A larger
// image, or one whose channels overflow the local arrays, runs the
// block's body node by node (pooling, the two convolutions and the Mul
// or se_residual), as it ran before the fusion.
func lowerSEBlock(b *builder, n *graph.Node, half string) error {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	layout, err := fusion.SEBlockLayoutOf(body)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	p := n.Attrs.Floats(graph.AttrParams, nil)
	if len(n.Inputs) != 5 || len(n.Outputs) != 1 || len(p) != 4 {
		return errUnsupported(n, "%d inputs, %d outputs and %d params (want x, w1, b1, w2, b2, one output and two post-ops' alpha and beta)", len(n.Inputs), len(n.Outputs), len(p))
	}
	xs := b.val(b.in(n, 0)).shape
	w1, w2 := b.val(b.in(n, 1)).shape, b.val(b.in(n, 3)).shape
	if len(xs) != 4 || len(w1) != 4 || len(w2) != 4 || w1[1] != xs[1] || w2[0] != xs[1] || w2[1] != w1[0] {
		return errUnsupported(n, "x %v with layers %v and %v (want [N, C, H, W], [CM, C, 1, 1] and [C, CM, 1, 1])", xs, w1, w2)
	}
	C, HW, CM := xs[1], xs[2]*xs[3], w1[0]
	esz := int64(4)
	if half != "" {
		esz = 2
	}
	sw := fusion.DenseChainRowFloats(max(C, CM))
	prof := b.profile()
	lm := prof.localMem
	G := min(int64(max(1, prof.computeUnits)), C)
	if HW == 0 || !prof.seBlockFused(C*HW*esz, G) {
		return b.lowerFusionBody(n, body, fmt.Sprintf("an image of %d bytes over the device's %d bytes of local memory, pooled by each of %d groups", C*HW*esz, lm, G))
	}
	if 3*sw*4 > lm {
		return b.lowerFusionBody(n, body, fmt.Sprintf("%d channels whose three rows of %d floats exceed the device's %d bytes of local memory", max(C, CM), sw, lm))
	}
	images := xs[0]
	if images == 0 {
		return nil
	}
	res := int64(0)
	if layout.Residual {
		res = 1
	}
	table := []int64{C, HW, CM, G, layout.Acts[0], layout.Acts[1], res}
	defines := fmt.Sprintf("%s -DSW=%d -DVW=%d", half, sw, b.rowsVW())
	group, err := b.rowsGroup(n, defines, max(C, CM), 1)
	if err != nil {
		return err
	}
	args := []any{slotArg(b.in(n, 0)), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)), slotArg(b.in(n, 3)), slotArg(b.in(n, 4)),
		slotArg(b.out(n, 0)), uint64(images * G), b.meta(table), b.floats(p)}
	return b.emitND(n, fusion.SEBlockKernel, defines, []int{int(images*G) * group}, []int{group}, args...)
}

// seBlockFused reports whether an se_block launch of groups work groups
// per image of image bytes beats the block's body: every group pools the
// whole image before it scales its slice of channels. Where the image
// fits the local memory (on POCL a core's cache, so the groups after the
// first read it from there; on a GPU, the shared memory's size keeps the
// repeated pooling to small images), and on a CPU device where at most
// two groups pool it: a core then reads the image once for the pooling
// and half of it again for the scaling, where the body's four launches
// (pooling, the two layers, the Mul) read half for each and pay three
// more launches, whose pooling and element-wise kernels read slower than
// se_block's (PP-OCRv4 on pthread-skylake-avx512-AMD EPYC, 2 compute
// units, 512 KiB of local memory: rec's 921600-byte block 215 us over
// its four nodes against 68 fused; det 640's blocks of 0.6, 2.5 and
// 9.8 MB 75-124, 360-365 and 1444 us against 39-55, 188-230 and 913, per
// node medians). With more groups the repeated pooling grows with them.
func (p deviceProfile) seBlockFused(image, groups int64) bool {
	return image <= p.localMem || !p.gpu && groups <= 2
}

// lowerFusionBody plans the body of KernelFusion node n node by node (why
// says why its kernel does not take it), its result as n's output; the
// body takes the element types of n's values (f16 activations).
func (b *builder) lowerFusionBody(n *graph.Node, body *graph.Model, why string) error {
	body = body.Clone()
	for i, p := range body.Parameters {
		p.Outputs[0].Type = b.val(b.in(n, i)).typ
	}
	if err := body.InferShapes(); err != nil {
		return errUnsupported(n, "body %q on the node's element types: %v", body.Name, err)
	}
	first := len(b.pl.launches)
	res, err := b.lowerBody(n, graph.AttrBody, body, b.inputs(n, 0))
	if err != nil {
		return err
	}
	b.of[n.Out(0)] = res[0]
	b.pl.impl[n] = fmt.Sprintf("%s:body (%s: %d launches)", n.Attrs.String(graph.AttrKernel, ""), why, len(b.pl.launches)-first)
	return nil
}
