package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// lowerSEBlock launches KernelFusion node n of graph.LaunchSEBlock
// (fusion.FuseSEBlock): a squeeze-excitation block in one se_block
// launch of G work groups per image, where an image of x fits the
// device's local memory (every group pools the whole image: on POCL the
// local memory is a core's cache, so the groups after the first read it
// from there; on a GPU, the shared memory's size keeps the repeated
// pooling to small images). G is the device's compute units, at most one
// per channel, so the scaling spreads over the device as the unfused Mul
// did. A larger image, or one whose channels overflow the local arrays,
// runs the block's body node by node (pooling, the two convolutions and
// the Mul or se_residual), as it ran before the fusion.
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
	lm := b.profile().localMem
	if HW == 0 || C*HW*esz > lm || 3*sw*4 > lm {
		return b.lowerFusionBody(n, body, fmt.Sprintf("an image of %d bytes over the device's %d bytes of local memory", C*HW*esz, lm))
	}
	images := xs[0]
	if images == 0 {
		return nil
	}
	G := min(int64(max(1, b.profile().computeUnits)), C)
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
