package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// lowerRoiAlign pools each roi's bins from bilinear samples
// (detection_roi_align.cl), CPI channels per work item (the roi_align
// family).
func lowerRoiAlign(b *builder, n *graph.Node) error {
	x, rois, bi, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	half := b.halfDefine(x)
	if !b.sameFloat(y, x) || b.val(rois).typ != tensor.F32 {
		return errUnsupported(n, "X and rois of types %s and %s (the GPU kernel takes f32 or f16 X, f32 rois)", b.val(x).typ, b.val(rois).typ)
	}
	idx, err := b.indexType(n, bi)
	if err != nil {
		return err
	}
	xs, ys := b.val(x).shape, b.val(y).shape
	R, C, OH, OW := ys[0], xs[1], ys[2], ys[3]
	boolInt := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	m := []int64{xs[0], C, xs[2], xs[3], OH, OW, n.Attrs.Int("sampling_ratio", 0),
		boolInt(n.Attrs.String("mode", "avg") == "max"),
		boolInt(n.Attrs.String("coordinate_transformation_mode", "half_pixel") == "half_pixel")}
	meta := b.meta(m)
	scale := n.Attrs.Float("spatial_scale", 1)
	key := fmt.Sprintf("%v R=%d", m, R)
	heur := mustVariant("roi_align", "channels", 4)
	if C < 4 {
		heur = mustVariant("roi_align", "channels", 1)
	}
	return b.choose(n, "roi_align", key, true, func(kernels.Variant) string { return "" }, heur, func(v kernels.Variant) error {
		cpi := int64(v.Get("CPI"))
		cnt := R * OH * OW * ((C + cpi - 1) / cpi)
		return b.emit(n, "roi_align", half+" -DIDX="+idx+" "+v.Defines(), cnt, slotArg(x), slotArg(rois), slotArg(bi), slotArg(y),
			uint64(cnt), meta, scale)
	})
}

// detectionLowerings are the GPU table entries (see lowering) of the
// detection-head ops: RoiAlign (rois stay f32, batch_indices integers).
func detectionLowerings() map[string]lowering {
	return map[string]lowering{"RoiAlign": {lower: lowerRoiAlign, half: true, f32: []int{1}}}
}
