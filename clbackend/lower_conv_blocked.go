package clbackend

import (
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
)

// convRows is fused_conv2d_blocked's MR for oc output channels: of 8, 16
// and 24 (8 only with vectors narrower than 16) the one that pads oc
// least, the larger on a tie (more reuse of each input vector).
func convRows(oc, vw int64) int64 {
	if vw < 16 {
		return 8
	}
	best := int64(8)
	for _, mr := range []int64{16, 24} {
		if ceilDiv(oc, mr)*mr <= ceilDiv(oc, best)*best {
			best = mr
		}
	}
	return best
}

// fastConv lowers a 1-D or 2-D Conv or FusedConv with f32 data (or f16
// throughout: the kernels are built with halfDefine), a host
// (constant) weight, dilation 1 and one group or depthwise groups to one
// launch of the register-blocked kernels (block.clh) with the node's post-ops:
// fused_gemm for a 1x1 convolution without stride or pads (a GEMM per
// image: W [OC, C] x X [C, H*W]), fused_dwconv2d for a depthwise one,
// fused_conv2d_blocked for the others. It reports false for other forms,
// which the caller runs with its one-output-per-item kernel.
func (b *builder) fastConv(n *graph.Node) (bool, error) {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 || len(ws) != len(xs) {
		return false, nil
	}
	if !b.sameFloat(y, x, w, bias) {
		return false, nil
	}
	cg := conv2DOf(n, xs, ws, ys)
	N, C, OC, H, W, OH, OW := cg.N, cg.C, cg.OC, cg.H, cg.W, cg.OH, cg.OW
	KH, KW, SH, SW, PH, PW, DH, DW, group := cg.KH, cg.KW, cg.SH, cg.SW, cg.PH, cg.PW, cg.DH, cg.DW, cg.group
	depthwise := group == C && OC == C && ws[1] == 1
	if DH != 1 || DW != 1 || (group != 1 && !depthwise) || (!depthwise && b.val(w).host == nil) {
		return false, nil
	}
	if KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0 && OH == H && OW == W && !depthwise {
		g := gemmGeom{M: OC, N: H * W, K: C, aRow: C, aK: 1, bK: H * W, bCol: 1,
			batch: []int64{N}, aBatch: []int64{0}, bBatch: []int64{C * H * W}}
		mode := int64(0)
		if bias >= 0 {
			mode = 1
		}
		return true, b.fusedGEMM(n, w, x, bias, y, g, mode, 1, 0)
	}
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return true, err
	}
	if ys.NumElements() == 0 {
		return true, nil
	}
	barg, hasBias := optArg(bias, w)
	bl := b.blocking()
	window := fmt.Sprintf("-DVW=%d -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", bl.vw, KH, KW, SH, SW) + b.halfDefine(y)
	if depthwise {
		const rb = 4
		m := []int64{N, C, H, W, OH, OW, PH, PW, hasBias}
		global, local := bl.geometry(ceilDiv(OW, bl.vw), ceilDiv(OH, rb), N*C)
		return true, b.emitND(n, "fused_dwconv2d", fmt.Sprintf("%s -DRB=%d", window, rb), global, local,
			slotArg(x), slotArg(w), barg, res, slotArg(y), b.meta(m), pm, pf)
	}
	mr := convRows(OC, bl.vw)
	m := []int64{N, C, H, W, OC, OH, OW, PH, PW, hasBias}
	global, local := bl.geometry(ceilDiv(OC, mr), OH*ceilDiv(OW, bl.vw), N)
	return true, b.emitND(n, "fused_conv2d_blocked", fmt.Sprintf("%s -DMR=%d", window, mr), global, local,
		slotArg(x), b.packRows(w, OC, C*KH*KW, C*KH*KW, 1, mr), barg, res, slotArg(y), b.meta(m), pm, pf)
}

// fastDeconv lowers a 2-D ConvTranspose whose kernel equals its stride
// (no pads, output padding or dilation, one group, f32 or f16 throughout,
// host weights) to one fused_deconv2d launch, and reports false for other
// forms.
func (b *builder) fastDeconv(n *graph.Node) (bool, error) {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 4 || len(ws) != 4 || b.val(w).host == nil || n.Attrs.Int("group", 1) != 1 {
		return false, nil
	}
	if !b.sameFloat(y, x, w, bias) {
		return false, nil
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	OC, KH, KW := ws[1], ws[2], ws[3]
	stride := n.Attrs.Ints("strides", ones(2))
	bl := b.blocking()
	if stride[0] != KH || stride[1] != KW || bl.vw%KW != 0 || ys[2] != H*KH || ys[3] != W*KW ||
		slices.ContainsFunc(n.Attrs.Ints("dilations", ones(2)), func(d int64) bool { return d != 1 }) {
		return false, nil // pads or output padding show as another output size
	}
	OH, OW := ys[2], ys[3]
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return true, err
	}
	if ys.NumElements() == 0 {
		return true, nil
	}
	mr := int64(8)
	for _, c := range []int64{1, 2, 4} {
		if OC <= c {
			mr = c
			break
		}
	}
	// Weight vectors: lane l of (block, c, kh, i) is w[c, oc, kh, l % KW].
	src := b.hostF32(w)
	blocks := ceilDiv(OC, mr)
	dst := make([]float32, blocks*C*KH*mr*bl.vw)
	for oc := int64(0); oc < OC; oc++ {
		for c := int64(0); c < C; c++ {
			for kh := int64(0); kh < KH; kh++ {
				base := (((oc/mr)*C+c)*KH+kh)*mr*bl.vw + (oc%mr)*bl.vw
				for l := int64(0); l < bl.vw; l++ {
					dst[base+l] = src[((c*OC+oc)*KH+kh)*KW+l%KW]
				}
			}
		}
	}
	wp := b.layout(w, dst, fmt.Sprintf("#deconv%d/%d", mr, bl.vw))
	barg, hasBias := optArg(bias, w)
	m := []int64{N, C, H, W, OC, OH, OW, hasBias}
	global, local := bl.geometry(blocks, OH*ceilDiv(OW, bl.vw), N)
	return true, b.emitND(n, "fused_deconv2d", fmt.Sprintf("-DVW=%d -DMR=%d -DSTR_H=%d -DSTR_W=%d", bl.vw, mr, KH, KW)+b.halfDefine(y), global, local,
		slotArg(x), slotArg(wp), barg, res, slotArg(y), b.meta(m), pm, pf)
}
