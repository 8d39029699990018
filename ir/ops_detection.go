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

// detectionExports write RoiAlign as ROIAlign-9.
var detectionExports = map[string]exportFunc{
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
