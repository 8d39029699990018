package clbackend

import (
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerConvAnyRank sends 3-D Conv and ConvTranspose to conv_3d.cl and the
// others to lowerConv.
func lowerConvAnyRank(b *builder, n *graph.Node) error {
	if len(b.val(b.in(n, 0)).shape) == 5 {
		return lowerConv3D(b, n)
	}
	return lowerConv(b, n)
}

// lowerConv3D runs a 3-D Conv or ConvTranspose, one output element per
// work item, on f32 data or f16 throughout.
func lowerConv3D(b *builder, n *graph.Node) error {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	c := convWindowOf(n, xs, ws, ys)
	name := "conv3d"
	if n.OpType == "ConvTranspose" {
		name = "conv_transpose3d"
	}
	barg, hasBias := optArg(bias, w)
	m := []int64{xs[0], xs[1], xs[2], xs[3], xs[4], ys[1], ys[2], ys[3], ys[4], c.kernel[0], c.kernel[1], c.kernel[2]}
	m = append(m, c.stride...)
	m = append(m, c.begin...)
	m = append(m, c.dil...)
	m = append(m, c.group, hasBias)
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, name, half, cnt, slotArg(x), slotArg(w), barg, slotArg(y), uint64(cnt), b.meta(m))
}

// to2D returns a per-spatial-axis value of a 1-D or 2-D op on NC... data
// as (H, W), with 1-D as (fill, v[0]).
func to2D(v []int64, fill int64) (int64, int64) {
	if len(v) == 1 {
		return fill, v[0]
	}
	return v[0], v[1]
}

// windowPads returns the begin and end pads of a windowed op (Conv, pools)
// per spatial axis, honouring auto_pad.
func windowPads(n *graph.Node, in, out, kernel, stride, dil []int64) (begin, end []int64) {
	r := len(in)
	pads := n.Attrs.Ints("pads", nil)
	auto := n.Attrs.String("auto_pad", "NOTSET")
	begin, end = make([]int64, r), make([]int64, r)
	for i := 0; i < r; i++ {
		switch auto {
		case "SAME_UPPER", "SAME_LOWER":
			total := max(0, (out[i]-1)*stride[i]+(kernel[i]-1)*dil[i]+1-in[i])
			if auto == "SAME_UPPER" {
				begin[i], end[i] = total/2, total-total/2
			} else {
				begin[i], end[i] = total-total/2, total/2
			}
		case "VALID":
		default:
			if len(pads) == 2*r {
				begin[i], end[i] = pads[i], pads[i+r]
			}
		}
	}
	return begin, end
}

func ones(r int) []int64 {
	o := make([]int64, r)
	for i := range o {
		o[i] = 1
	}
	return o
}

func lowerConv(b *builder, n *graph.Node) error {
	// lower_conv_blocked.go: register-blocked kernels for the common forms.
	fast := b.fastConv
	if n.OpType == "ConvTranspose" {
		fast = func(n *graph.Node) (bool, error) {
			posts, err := graph.PostOps(n)
			if err != nil {
				return true, errUnsupported(n, "%v", err)
			}
			return b.fastDeconv(n, n.Attrs, posts)
		}
	}
	if ok, err := fast(n); ok || err != nil {
		return err
	}
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	g := conv2DOf(n, xs, ws, ys)
	barg, hasBias := optArg(bias, w)
	if !b.sameFloat(y, x, w, bias) {
		return errUnsupported(n, "element types %s, %s (the GPU kernel takes f32, or f16 throughout)", b.val(x).typ, b.val(w).typ)
	}
	cnt := ys.NumElements()
	name := "conv2d"
	if n.OpType == "ConvTranspose" {
		name = "conv_transpose2d"
	}
	ocb := convBlock(g.OC / g.group)
	return b.emit(n, name, "-DOCB="+strconv.FormatInt(ocb, 10)+b.halfDefine(y), cnt/ocb, slotArg(x), slotArg(w), barg, slotArg(y), uint64(cnt/ocb), b.meta(g.meta(hasBias)))
}

// convWindow is the window of a Conv, FusedConv or ConvTranspose node:
// per spatial axis the kernel size, stride, dilation and begin pad, and
// the group count.
type convWindow struct {
	kernel, stride, dil, begin []int64
	group                      int64
}

// convWindowOf reads n's window from its attributes and its input, weight
// and output shapes xs, ws and ys (NC... layout).
func convWindowOf(n *graph.Node, xs, ws, ys tensor.Shape) convWindow {
	r := len(xs) - 2
	c := convWindow{
		kernel: ws[2:],
		stride: n.Attrs.Ints("strides", ones(r)),
		dil:    n.Attrs.Ints("dilations", ones(r)),
		group:  n.Attrs.Int("group", 1),
	}
	if n.OpType != "ConvTranspose" {
		c.begin, _ = windowPads(n, xs[2:], ys[2:], c.kernel, c.stride, c.dil)
		return c
	}
	c.begin = make([]int64, r)
	pads := n.Attrs.Ints("pads", nil)
	auto := n.Attrs.String("auto_pad", "NOTSET")
	outPad := n.Attrs.Ints("output_padding", make([]int64, r))
	for i := 0; i < r; i++ {
		total := c.stride[i]*(xs[2+i]-1) + outPad[i] + (c.kernel[i]-1)*c.dil[i] + 1 - ys[2+i]
		switch {
		case len(pads) == 2*r && auto == "NOTSET" && !n.Attrs.Has("output_shape"):
			c.begin[i] = pads[i]
		case auto == "SAME_LOWER":
			c.begin[i] = total - total/2
		default: // SAME_UPPER, or NOTSET with output_shape
			c.begin[i] = total / 2
		}
	}
	return c
}

// conv2D is the geometry of a 1-D or 2-D convolution as conv.cl and
// conv_fused.cl take it, with 1-D as H = 1: batch N, channels C in and OC out,
// input H x W, output OH x OW, kernel KH x KW, strides, begin pads,
// dilations and the group count.
type conv2D struct {
	N, C, OC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, group int64
}

// conv2DOf reads the geometry of Conv-like node n with input, weight and
// output shapes xs, ws and ys of rank 3 or 4.
func conv2DOf(n *graph.Node, xs, ws, ys tensor.Shape) conv2D {
	c := convWindowOf(n, xs, ws, ys)
	g := conv2D{N: xs[0], C: xs[1], OC: ys[1], group: c.group}
	g.H, g.W = to2D(xs[2:], 1)
	g.OH, g.OW = to2D(ys[2:], 1)
	g.KH, g.KW = to2D(c.kernel, 1)
	g.SH, g.SW = to2D(c.stride, 1)
	g.PH, g.PW = to2D(c.begin, 0)
	g.DH, g.DW = to2D(c.dil, 1)
	return g
}

// meta is the metadata of conv.cl's kernels (and fused_conv2d) for g;
// hasBias is 1 when the bias argument is read.
func (g conv2D) meta(hasBias int64) []int64 {
	return []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.group, hasBias}
}

// optArg is the kernel argument of optional value v (a bias) and whether
// the kernel reads it: v and 1, or, where v is absent (< 0), stand (any
// bound value, which the kernel leaves unread) and 0.
func optArg(v, stand int) (slotArg, int64) {
	if v >= 0 {
		return slotArg(v), 1
	}
	return slotArg(stand), 0
}

// convBlock is the output-channel block (OCB) of the conv2d and
// conv_transpose2d kernels for ocg output channels per group: the largest
// of 8, 4, 2 that divides it, else 1. Each input element a work item loads
// then feeds OCB accumulators; on POCL this made PP-OCR det 3-4x faster
// than one output per work item.
func convBlock(ocg int64) int64 {
	for _, c := range []int64{8, 4, 2} {
		if ocg%c == 0 {
			return c
		}
	}
	return 1
}

// lowerFusedConv runs FusedConv as one launch of a register-blocked
// kernel (fastConv), else of fused_conv2d: conv.cl's direct convolution
// with the post-ops applied before the store. Its data is f32, or f16
// throughout (INFERENCE_PRECISION_HINT=f16).
func lowerFusedConv(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	if ok, err := b.fastConv(n); ok || err != nil {
		return err
	}
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	g := conv2DOf(n, xs, ws, ys)
	barg, hasBias := optArg(bias, w)
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return err
	}
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	ocb := convBlock(g.OC / g.group)
	return b.emit(n, "fused_conv2d", "-DOCB="+strconv.FormatInt(ocb, 10)+half, cnt/ocb,
		slotArg(x), slotArg(w), barg, res, slotArg(y), uint64(cnt/ocb), b.meta(g.meta(hasBias)), pm, pf)
}

// convLowerings are the GPU table entries (see lowering) of the convolutions.
func convLowerings() map[string]lowering {
	return map[string]lowering{
		"Conv": {lower: lowerConvAnyRank, half: true}, "ConvTranspose": {lower: lowerConvAnyRank, half: true},
		graph.OpFusedConv: {lower: lowerFusedConv, half: true},
	}
}
