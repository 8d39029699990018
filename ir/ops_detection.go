package ir

import (
	"encoding/xml"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// detectionImports are the detection heads' post-processing.
var detectionImports = []importRow{
	{"ROIAlign", 3, importROIAlign},
	{"ROIAlign", 9, importROIAlign},
	{"NonMaxSuppression", 5, importNMS},
	{"NonMaxSuppression", 9, importNMS},
}

// importNMS: NonMaxSuppression-5 and -9 select as the op set's does;
// sort_result_descending orders the selection across classes and
// batches, which is the op set's order only for one batch of one class.
// selected_scores is gathered from the scores and valid_outputs counted
// when something reads them.
func importNMS(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 6); err != nil {
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
	if desc {
		ss := c.in[1].Shape()
		if !ss.RankKnown || len(ss.Dims) != 3 || ss.Dims[0].Size != 1 || ss.Dims[1].Size != 1 {
			return nil, c.attrErrorf("sort_result_descending", "true orders the selection across batches and classes, which is not supported for scores %v (one batch of one class is)", ss)
		}
	}
	if len(c.in) == 6 {
		if v, err := c.scalar(5, "soft_nms_sigma"); err != nil || v != 0 {
			return nil, c.errorf(ErrUnsupportedAttribute, "soft NMS (soft_nms_sigma %v) is not supported", v)
		}
	}
	t, err := c.elemType("output_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	in := append([]graph.Output(nil), c.in[:min(len(c.in), 5)]...)
	n, err := c.node("NonMaxSuppression", "", in, graph.Attrs{"center_point_box": b2i(enc == "center")}, 1)
	if err != nil {
		return nil, err
	}
	sel := n.Out(0)
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
