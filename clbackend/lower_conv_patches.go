package clbackend

import (
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Convolutions with few output pixels per image and many taps, unpadded
// (a streaming audio model's STFT: Silero VAD's is a 256-tap convolution
// of stride 128 on one channel giving 4 frames), leave most lanes of the
// register-blocked conv kernels empty, which vectorise along an output
// row, and read the input with the window's stride (Silero's: 65 us on
// POCL, 11 us so). They run instead as the GEMM of their patches with the
// weights, vectorised along the output channels: P [OH*OW, C*KH*KW] per
// image, read in place for one channel and one row of taps (row j at
// j*SW) or else copied from the input, times W^T [C*KH*KW, OC] (the
// weights transposed at plan time) with the bias per column and the
// post-ops, into y's [OC, OH*OW] through a transposing copy where an image
// has more than one output pixel. A padded convolution keeps the blocked
// kernels: its pad would be one launch more, which on a small model costs
// what the GEMM saves.

// Bounds of a convolution lowered through its patches: at most
// maxPatchPixels output pixels per image, at least minPatchTaps taps per
// output and minPatchChannels output channels, a patch matrix of at most
// maxPatchBytes.
const (
	maxPatchPixels   = 16
	minPatchTaps     = 64
	minPatchChannels = 16
	maxPatchBytes    = 1 << 20
)

// patchConvFits reports whether conv g (one group, host weights) of node
// n runs through its patches on a device whose vectors hold vw floats: a
// 1x1 convolution of one pixel per image always; else no pads (the
// windows within the input), output rows narrower than a vector, the
// bounds above, and no residual post-op where the product is transposed
// (its broadcast table is y's).
func patchConvFits(n *graph.Node, g conv2D, vw int) bool {
	taps, pix := g.C*g.KH*g.KW, g.OH*g.OW
	if g.group == 1 && g.KH == 1 && g.KW == 1 && g.wholeInput() {
		// A 1x1 convolution of one pixel (a squeeze-excitation gate's FC
		// on pooled channels): the GEMM of the 1x1 form would have one
		// column, this one has the output channels.
		return true
	}
	if !g.wholeInput() && (g.PH != 0 || g.PW != 0 || (g.OH-1)*g.SH+(g.KH-1)*g.DH+1 > g.H || (g.OW-1)*g.SW+(g.KW-1)*g.DW+1 > g.W) {
		return false
	}
	if g.group != 1 || g.OW >= int64(vw) || pix > maxPatchPixels || taps < minPatchTaps || g.OC < minPatchChannels ||
		g.N*pix*taps*4 > maxPatchBytes {
		return false
	}
	if pix > 1 {
		ops, err := graph.PostOps(n)
		if err != nil || slices.ContainsFunc(ops, func(p graph.PostOp) bool { return p.Kind == graph.PostSum }) {
			return false
		}
	}
	return true
}

// wholeInput reports whether g has one output pixel per image whose
// window, undilated, covers the whole input (the rest of it padding):
// its patch is the image itself, with the taps that fall on padding left
// out (the last frames of Silero's encoder, 3 taps over 2 and 1).
func (g conv2D) wholeInput() bool {
	return g.OH == 1 && g.OW == 1 && g.DH == 1 && g.DW == 1 && g.KH-g.PH >= g.H && g.KW-g.PW >= g.W
}

// patchConv emits op (patchConvFits; its weight is a host value) through
// its patches.
func (b *builder) patchConv(n *graph.Node, op convOp) error {
	g := op.g
	x := op.x
	typ := b.val(x).typ
	taps, pix := g.C*g.KH*g.KW, g.OH*g.OW
	H, W := g.H, g.W
	gg := gemmGeom{M: pix, N: g.OC, K: taps, aK: 1, bK: g.OC, bCol: 1, batch: []int64{g.N}, bBatch: []int64{0}}
	a := x
	// The weights as W^T [taps, OC]: row k holds tap k of every channel.
	var wt int
	switch {
	case g.wholeInput():
		// P is the image: C*H*W taps, each at its place in the window.
		taps = g.C * H * W
		gg.K, gg.aRow, gg.aBatch = taps, taps, []int64{taps}
		src := b.hostF32(op.w)
		dst := make([]float32, taps*g.OC)
		for oc := range g.OC {
			for c := range g.C {
				for h := range H {
					for w := range W {
						dst[((c*H+h)*W+w)*g.OC+oc] = src[((oc*g.C+c)*g.KH+h+g.PH)*g.KW+w+g.PW]
					}
				}
			}
		}
		wt = b.layout(op.w, dst, fmt.Sprintf("#window%dx%d+%d,%d^T", H, W, g.PH, g.PW))
		return b.patchGEMM(n, op, a, wt, gg)
	case g.C == 1 && g.KH == 1 && g.OH == 1 && g.DW == 1:
		// Row j of P is the input from j*SW on.
		gg.aRow, gg.aBatch = g.SW, []int64{H * W}
	default:
		a = b.temp(typ, tensor.Shape{g.N, pix, taps})
		dims := []int64{g.N, g.OH, g.OW, g.C, g.KH, g.KW}
		src := []int64{g.C * H * W, g.SH * W, g.SW, H * W, g.DH * W, g.DW}
		if err := b.copyView(n, x, a, dims, src, 0, strides(tensor.Shape(dims)), 0); err != nil {
			return err
		}
		gg.aRow, gg.aBatch = taps, []int64{pix * taps}
	}
	wt = b.relaid(op.w, taps, g.OC, 1, taps)
	return b.patchGEMM(n, op, a, wt, gg)
}

// patchGEMM emits the GEMM gg of patch conv op: patches a times the
// transposed weights wt, into y (transposed where an image has more than
// one output pixel).
func (b *builder) patchGEMM(n *graph.Node, op convOp, a, wt int, gg gemmGeom) error {
	g, typ := op.g, b.val(op.y).typ
	pix := g.OH * g.OW
	mode := int64(0)
	if op.bias >= 0 {
		mode = 2
	}
	if pix == 1 {
		return b.fusedGEMM(n, a, wt, op.bias, op.y, gg, mode, 1, 0)
	}
	t := b.temp(typ, tensor.Shape{g.N, pix, g.OC})
	if err := b.fusedGEMM(n, a, wt, op.bias, t, gg, mode, 1, 0); err != nil {
		return err
	}
	dims := []int64{g.N, g.OC, pix}
	return b.copyView(n, t, op.y, dims, []int64{pix * g.OC, 1, g.OC}, 0, strides(tensor.Shape(dims)), 0)
}
