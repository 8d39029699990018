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

// nmsSelected is what NonMaxSuppression's count lowering hands its
// lowering: the kept box indices per segment, their counts and offsets,
// and the geometry.
type nmsSelected struct {
	sel, counts, offs int
	segments, classes int64
	maxk              int64
}

// nmsGeometry reads NonMaxSuppression's inputs: batches, boxes, classes,
// the kept boxes per class (max_output_boxes_per_class, at most the
// boxes), the IoU and score thresholds (useScore: one is given).
func (b *builder) nmsGeometry(n *graph.Node) (B, N, C, maxk int64, iou, score float32, useScore bool, err error) {
	bs, ss := b.val(b.in(n, 0)).shape, b.val(b.in(n, 1)).shape
	if bt, st := b.val(b.in(n, 0)).typ, b.val(b.in(n, 1)).typ; !lowFloat(bt) || !lowFloat(st) {
		return 0, 0, 0, 0, 0, 0, false, errUnsupported(n, "boxes and scores of types %s and %s (the GPU kernels take f32, f16 and bf16 in f32)", bt, st)
	}
	B, N, C = bs[0], bs[1], ss[1]
	if v := b.in(n, 2); v >= 0 {
		mo, ok := b.hostInts(v)
		if !ok || len(mo) > 1 {
			return 0, 0, 0, 0, 0, 0, false, errUnsupported(n, "max_output_boxes_per_class not known at plan time")
		}
		if len(mo) == 1 {
			maxk = min(max(mo[0], 0), N)
		}
	}
	thr := func(i int) (float32, bool, error) {
		v := b.in(n, i)
		if v < 0 || b.val(v).shape.NumElements() == 0 {
			return 0, false, nil
		}
		f, ok := b.hostFloat(v)
		if !ok {
			return 0, false, errUnsupported(n, "input %d not known at plan time", i)
		}
		return float32(f), true, nil
	}
	if iou, _, err = thr(3); err != nil {
		return
	}
	score, useScore, err = thr(4)
	return
}

// countNMS sorts each (batch, class) segment's candidates and selects its
// boxes (the nms family: one item per segment with a heap sort, or a
// bitonic sort and a work group per segment), then scans the counts.
func countNMS(b *builder, n *graph.Node) (int, error) {
	B, N, C, maxk, iou, score, useScore, err := b.nmsGeometry(n)
	if err != nil {
		return 0, err
	}
	S := B * C
	if S*maxk == 0 {
		return b.hostI32(0), nil
	}
	if S*max(N, 1) >= 1<<31 {
		return 0, errUnsupported(n, "%d boxes in %d segments (the GPU indexes them in 32 bits)", N, S)
	}
	p := int64(1)
	for p < N {
		p *= 2
	}
	boxes, err := b.asF32(n, b.in(n, 0))
	if err != nil {
		return 0, err
	}
	scores, err := b.asF32(n, b.in(n, 1))
	if err != nil {
		return 0, err
	}
	meta := b.meta([]int64{N, p, C, maxk, n.Attrs.Int("center_point_box", 0), boolInt(useScore)})
	order := b.temp(tensor.I32, tensor.Shape{S * p})
	sel, counts, offs := b.temp(tensor.I32, tensor.Shape{S * maxk}), b.temp(tensor.I32, tensor.Shape{S}), b.temp(tensor.I32, tensor.Shape{S})
	heur := mustVariant("nms", "serial", 0)
	if b.profile().gpu && maxk <= 1024 {
		heur = mustVariant("nms", "bitonic", 64, 1024)
		if maxk <= 128 {
			heur = mustVariant("nms", "bitonic", 64, 128)
		}
	}
	applies := func(v kernels.Variant) string {
		if v.Algorithm == "bitonic" && maxk > int64(v.Get("KEPT")) {
			return fmt.Sprintf("keeps up to %d boxes per class in local memory, the node keeps %d", v.Get("KEPT"), maxk)
		}
		return ""
	}
	err = b.choose(n, "nms", fmt.Sprintf("S=%d N=%d maxk=%d", S, N, maxk), false, applies, heur, func(v kernels.Variant) error {
		if v.Algorithm == "serial" {
			global, local := group1D(S, v.Get("WG"))
			return b.emitND(n, "nms_serial", "", global, local, slotArg(boxes), slotArg(scores), slotArg(order), slotArg(sel), slotArg(counts),
				uint64(S), meta, score, iou)
		}
		if err := b.emit(n, "nms_init", "", S*p, slotArg(scores), slotArg(order), uint64(S*p), meta, score); err != nil {
			return err
		}
		for k := int64(2); k <= p; k *= 2 {
			for j := k / 2; j > 0; j /= 2 {
				if err := b.emit(n, "nms_sort_step", "", S*p/2, slotArg(scores), slotArg(order), uint64(S*p/2), meta, uint64(j), uint64(k)); err != nil {
					return err
				}
			}
		}
		wg := v.Get("WG")
		return b.emitND(n, "nms_select_group", v.Defines(), []int{int(S) * wg}, []int{wg}, slotArg(boxes), slotArg(order), slotArg(sel),
			slotArg(counts), uint64(S), meta, iou)
	})
	if err != nil {
		return 0, err
	}
	b.setAux(n, nmsSelected{sel: sel, counts: counts, offs: offs, segments: S, classes: C, maxk: maxk}, sel, counts, offs)
	return b.scan(n, counts, offs, S)
}

// lowerNMS writes the (batch, class, box) rows of the kept boxes.
func lowerNMS(b *builder, n *graph.Node) error {
	y := b.out(n, 0)
	if b.val(y).shape[0] == 0 {
		return nil
	}
	s, ok := b.auxOf(n).(nmsSelected)
	if !ok {
		return errUnsupported(n, "its output size was not counted on the device")
	}
	cnt := s.segments * s.maxk
	return b.emit(n, "nms_scatter", "", cnt, slotArg(s.sel), slotArg(s.counts), slotArg(s.offs), slotArg(y),
		uint64(cnt), uint64(s.classes), uint64(s.maxk))
}

// detectionLowerings are the GPU table entries (see lowering) of
// NonMaxSuppression (boxes and scores stay f32) and RoiAlign (rois stay
// f32, batch_indices integers).
func detectionLowerings() map[string]lowering {
	return map[string]lowering{
		"NonMaxSuppression": {lower: lowerNMS, noF64: true, count: countNMS, half: true, f32: []int{0, 1}},
		"RoiAlign":          {lower: lowerRoiAlign, noF64: true, half: true, f32: []int{1}},
	}
}
