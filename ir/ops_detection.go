package ir

import (
	"encoding/xml"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// detectionImports are the detection heads' post-processing.
var detectionImports = []importRow{
	{"ROIAlign", 3, importROIAlign},
	{"ROIAlign", 9, importROIAlign},
	{"NonMaxSuppression", 1, importNMS},
	{"NonMaxSuppression", 3, importNMS},
	{"NonMaxSuppression", 4, importNMS},
	{"NonMaxSuppression", 5, importNMS},
	{"NonMaxSuppression", 9, importNMS},
	{"RegionYolo", 1, importRegionYolo},
	{"ReorgYolo", 2, importReorgYolo},
}

// importNMS: NonMaxSuppression-1, -3, -4, -5 and -9 select as the op
// set's does (per batch, per class, by descending score).
// sort_result_descending (true when absent) then orders the selection
// across batches and classes by descending score, ties by (batch, class,
// box), as OpenVINO's reference does: a stable TopK of the selected
// scores. Versions 1 to 4 have one output of a fixed number of rows,
// filled with -1 past the selection: the row count the layer's output
// port declares, else OpenVINO's shape inference (min(boxes, max * classes)
// for -1 and -3, min(boxes, max) * classes * batches for -4). For -5 and
// -9 selected_scores is gathered from the scores and valid_outputs
// counted when something reads them.
func importNMS(c *layerCtx) ([]graph.Output, error) {
	legacy := c.opset < 5
	if err := c.inputs(2, map[bool]int{true: 5, false: 6}[legacy]); err != nil {
		return nil, err
	}
	enc, err := c.enum("box_encoding", "corner", "corner", "center")
	if err != nil {
		return nil, err
	}
	desc, err := c.boolean("sort_result_descending", true)
	if err != nil {
		return nil, err
	}
	if len(c.in) == 6 {
		if v, err := c.scalar(5, "soft_nms_sigma"); err != nil || v != 0 {
			return nil, c.errorf(ErrUnsupportedAttribute, "soft NMS (soft_nms_sigma %v) is not supported", v)
		}
	}
	t := tensor.I64
	if c.opset >= 3 {
		if t, err = c.elemType("output_type", tensor.I64); err != nil {
			return nil, err
		}
	}
	if t != tensor.I64 && t != tensor.I32 {
		return nil, c.attrErrorf("output_type", "%v is not i64 or i32", t)
	}
	rows := int64(-1)
	if legacy {
		if rows, err = c.nmsRows(); err != nil {
			return nil, err
		}
	}
	in := append([]graph.Output(nil), c.in[:min(len(c.in), 5)]...)
	n, err := c.node("NonMaxSuppression", "", in, graph.Attrs{"center_point_box": b2i(enc == "center")}, 1)
	if err != nil {
		return nil, err
	}
	sel := n.Out(0)
	if ss := c.in[1].Shape(); desc && !(ss.RankKnown && len(ss.Dims) == 3 && ss.Dims[0].Size == 1 && ss.Dims[1].Size == 1) {
		if sel, err = c.nmsSortDescending(sel); err != nil {
			return nil, err
		}
	}
	if legacy {
		if sel, err = c.padRows(sel, rows); err != nil {
			return nil, err
		}
		return one(c.castTo(sel, t, "selected_indices"))
	}
	out := make([]graph.Output, 3)
	if out[0], err = c.castTo(sel, t, "selected_indices"); err != nil {
		return nil, err
	}
	used := func(i int) bool {
		return i < len(c.l.Outputs) && c.gc.consumers[portKey{c.l.ID, c.l.Outputs[i].ID}] > 0
	}
	if used(1) {
		score, err := c.op("GatherND", "scores", nil, c.in[1], sel)
		if err != nil {
			return nil, err
		}
		if score, err = c.op("Unsqueeze", "scores_column", nil, score, c.constI64("column_axis", false, 1)); err != nil {
			return nil, err
		}
		bc, err := c.op("Slice", "batch_class", nil, sel, c.constI64("bc_start", false, 0), c.constI64("bc_end", false, 2), c.constI64("bc_axes", false, 1))
		if err != nil {
			return nil, err
		}
		if bc, err = c.castTo(bc, score.Type(), "batch_class_float"); err != nil {
			return nil, err
		}
		if out[1], err = c.op("Concat", "selected_scores", graph.Attrs{"axis": int64(1)}, bc, score); err != nil {
			return nil, err
		}
	}
	if used(2) {
		s, err := c.op("Shape", "selected_shape", graph.Attrs{"end": int64(1)}, sel)
		if err != nil {
			return nil, err
		}
		if out[2], err = c.castTo(s, t, "valid_outputs"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nmsSortDescending reorders the selected [batch, class, box] rows by
// descending score; TopK keeps equal scores in their order, which is
// (batch, class, box) order.
func (c *layerCtx) nmsSortDescending(sel graph.Output) (graph.Output, error) {
	score, err := c.op("GatherND", "selected_score", nil, c.in[1], sel)
	if err != nil {
		return graph.Output{}, err
	}
	k, err := c.op("Shape", "selected_count", graph.Attrs{"end": int64(1)}, sel)
	if err != nil {
		return graph.Output{}, err
	}
	top, err := c.node("TopK", "by_score", []graph.Output{score, k}, graph.Attrs{"axis": int64(0), "largest": int64(1), "sorted": int64(1)}, 2)
	if err != nil {
		return graph.Output{}, err
	}
	return c.op("Gather", "sorted", graph.Attrs{"axis": int64(0)}, sel, top.Out(1))
}

// nmsRows is the row count of a NonMaxSuppression-1, -3 or -4 output.
func (c *layerCtx) nmsRows() (int64, error) {
	if len(c.l.Outputs) > 0 {
		if d := c.l.Outputs[0].Dims; len(d) == 2 {
			if v, err := strconv.ParseInt(strings.TrimSpace(d[0]), 10, 64); err == nil && v >= 0 {
				return v, nil
			}
		}
	}
	bs, ss := c.in[0].Shape(), c.in[1].Shape()
	maxOut := int64(0)
	if len(c.in) > 2 {
		v, err := c.ints(2, "max_output_boxes_per_class")
		if err != nil || len(v) != 1 {
			return 0, c.errorf(ErrUnsupportedAttribute, "the output's row count needs a static output port or a constant max_output_boxes_per_class")
		}
		maxOut = v[0]
	}
	if !bs.RankKnown || !ss.RankKnown || len(bs.Dims) != 3 || len(ss.Dims) != 3 || bs.Dims[1].Size < 0 || ss.Dims[0].Size < 0 || ss.Dims[1].Size < 0 {
		return 0, c.errorf(ErrUnsupportedAttribute, "the output's row count needs a static output port or static boxes %v and scores %v", bs, ss)
	}
	boxes, batches, classes := bs.Dims[1].Size, ss.Dims[0].Size, ss.Dims[1].Size
	if c.opset >= 4 {
		return min(boxes, maxOut) * classes * batches, nil
	}
	return min(boxes, maxOut*classes), nil
}

// padRows cuts or fills x's rows to n, the new rows -1.
func (c *layerCtx) padRows(x graph.Output, n int64) (graph.Output, error) {
	cut, err := c.op("Slice", "rows", nil, x, c.constI64("rows_start", false, 0), c.constI64("rows_end", false, n), c.constI64("rows_axis", false, 0))
	if err != nil {
		return graph.Output{}, err
	}
	have, err := c.op("Shape", "rows_have", graph.Attrs{"end": int64(1)}, cut)
	if err != nil {
		return graph.Output{}, err
	}
	fill, err := c.op("Sub", "rows_fill", nil, c.constI64("rows_want", false, n), have)
	if err != nil {
		return graph.Output{}, err
	}
	pads, err := c.op("Concat", "rows_pads", graph.Attrs{"axis": int64(0)}, c.constI64("pads_begin", false, 0, 0), fill, c.constI64("pads_end_col", false, 0))
	if err != nil {
		return graph.Output{}, err
	}
	return c.op("Pad", "padded", graph.Attrs{"mode": "constant"}, cut, pads, c.constI64("fill_value", true, -1))
}

// roiAlignModes maps ROIAlign-9's aligned_mode to RoiAlign's
// coordinate_transformation_mode (ROIAlign-3 is asymmetric).
var roiAlignModes = map[string]string{"asymmetric": "output_half_pixel", "half_pixel": "half_pixel"}

func importROIAlign(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	attrs := graph.Attrs{}
	for _, p := range []struct{ ir, op string }{{"pooled_h", "output_height"}, {"pooled_w", "output_width"}, {"sampling_ratio", "sampling_ratio"}} {
		v, err := c.int(p.ir, 1)
		if err != nil {
			return nil, err
		}
		attrs[p.op] = v
	}
	scale, err := c.float("spatial_scale", 1)
	if err != nil {
		return nil, err
	}
	attrs["spatial_scale"] = scale
	mode, err := c.enum("mode", "avg", "avg", "max")
	if err != nil {
		return nil, err
	}
	attrs["mode"] = mode
	aligned := "asymmetric"
	if c.opset >= 9 {
		if aligned, err = c.enum("aligned_mode", "asymmetric", "asymmetric", "half_pixel_for_nn", "half_pixel"); err != nil {
			return nil, err
		}
	}
	ctm, ok := roiAlignModes[aligned]
	if !ok {
		return nil, c.attrErrorf("aligned_mode", "%s is not supported (asymmetric, half_pixel are)", aligned)
	}
	attrs["coordinate_transformation_mode"] = ctm
	idx, err := c.castTo(c.in[2], tensor.I64, "batch_indices_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("RoiAlign", "", attrs, c.in[0], c.in[1], idx))
}

// detectionExports write RoiAlign as ROIAlign-9 and NonMaxSuppression as
// NonMaxSuppression-9 (per batch and class, as the op set orders it).
var detectionExports = map[string]exportFunc{
	"NonMaxSuppression": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("center_point_box") || len(e.n.Outputs) != 1 {
			return false, nil
		}
		enc := "corner"
		if e.attrInt("center_point_box", 0) != 0 {
			enc = "center"
		}
		_, err := e.emit(layerSpec{typ: "NonMaxSuppression", opset: 9, in: in, outs: 3, node: true, data: []xml.Attr{
			dataAttr("box_encoding", enc), dataAttr("sort_result_descending", "false"), dataAttr("output_type", "i64")}})
		return err == nil, err
	},
	"RoiAlign": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 3 || e.in(2).Type() != tensor.I64 || !e.onlyAttrs("output_height", "output_width", "sampling_ratio", "spatial_scale", "mode", "coordinate_transformation_mode") {
			return false, nil
		}
		aligned := ""
		for k, v := range roiAlignModes {
			if v == e.n.Attrs.String("coordinate_transformation_mode", "half_pixel") {
				aligned = k
			}
		}
		if aligned == "" {
			return false, nil
		}
		a := e.n.Attrs
		return e.single("ROIAlign", 9, []xml.Attr{dataAttr("pooled_h", strconv.FormatInt(a.Int("output_height", 1), 10)),
			dataAttr("pooled_w", strconv.FormatInt(a.Int("output_width", 1), 10)),
			dataAttr("sampling_ratio", strconv.FormatInt(a.Int("sampling_ratio", 0), 10)),
			dataAttr("spatial_scale", formatFloat(a.Float("spatial_scale", 1))), dataAttr("mode", a.String("mode", "avg")),
			dataAttr("aligned_mode", aligned)}, in...)
	},
}
