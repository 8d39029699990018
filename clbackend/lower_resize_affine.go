package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerAffineGrid runs AffineGrid as one affine_grid launch over the grid's
// points, the size known at plan time.
func lowerAffineGrid(b *builder, n *graph.Node) error {
	th := b.in(n, 0)
	if t := b.val(th).typ; t != tensor.F32 && t != tensor.F16 {
		return errUnsupported(n, "theta of type %s (the GPU kernel takes f32 and f16)", t)
	}
	defs := b.halfDefine(th)
	size, ok := b.hostInts(b.in(n, 1))
	if !ok {
		return errUnsupported(n, "size not known at plan time")
	}
	dims := int32(len(size) - 2)
	D, H, W := int64(1), size[len(size)-2], size[len(size)-1]
	if dims == 3 {
		D = size[2]
	}
	cnt := size[0] * D * H * W
	return b.emit(n, "affine_grid", defs, cnt, slotArg(th), slotArg(b.out(n, 0)), uint64(cnt), dims, D, H, W,
		int32(n.Attrs.Int("align_corners", 0)))
}

// affineLowerings are the GPU table entries of the resize family's grid
// generator.
func affineLowerings() map[string]lowering {
	return map[string]lowering{"AffineGrid": {lower: lowerAffineGrid, noF64: true, half: true}}
}
