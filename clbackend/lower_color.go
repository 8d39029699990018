package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// colorLowerings are the colour conversions.
func colorLowerings() map[string]lowering {
	return map[string]lowering{
		"NV12toRGB": {lower: lowerNV12, noF64: true, half: true},
		"NV12toBGR": {lower: lowerNV12, noF64: true, half: true},
	}
}

// lowerNV12 converts an NV12 image (one plane or two) with nv12_to_rgb.
func lowerNV12(b *builder, n *graph.Node) error {
	yIn, out := b.in(n, 0), b.out(n, 0)
	ys := b.val(yIn).shape
	if len(ys) != 4 {
		return errUnsupported(n, "luma input of rank %d (want [N,H,W,1])", len(ys))
	}
	batch, h, w := ys[0], ys[1], ys[2]
	uvIn := yIn
	ystride, uvstride, uvoff := h*w, (h/2)*(w/2)*2, int64(0)
	if len(n.Inputs) == 2 && n.Inputs[1].Valid() {
		uvIn = b.in(n, 1)
	} else {
		h = h / 3 * 2
		ystride = h * w * 3 / 2
		uvstride, uvoff = ystride, h*w
	}
	uvrow := w
	var defines string
	switch t := b.val(out).typ; {
	case t == tensor.U8:
		defines = "-DT=uchar -DU8"
	case t == tensor.F16:
		defines = "-DHALF"
	case t == tensor.F32:
		defines = "-DT=float"
	default:
		return errUnsupported(n, "element type %v (u8, f16 and f32 are supported)", t)
	}
	if n.OpType == "NV12toBGR" {
		defines += " -DBGR"
	}
	pixels := batch * h * w
	return b.emit(n, "nv12_to_rgb", defines, pixels, slotArg(yIn), slotArg(uvIn), slotArg(out), uint64(pixels), uint64(h),
		uint64(w), uint64(ystride), uint64(uvstride), uint64(uvoff), uint64(uvrow))
}
