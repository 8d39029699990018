package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// resizeImports are Interpolate and GridSample.
var resizeImports = []importRow{
	{"Interpolate", 4, importInterpolate},
	{"Interpolate", 11, importInterpolate},
	{"GridSample", 9, importGridSample},
}

// interpolateModes maps Interpolate's modes to Resize's: linear (without
// antialias) and linear_onnx are both the two-tap linear interpolation.
var interpolateModes = map[string]string{"nearest": "nearest", "linear": "linear", "linear_onnx": "linear", "cubic": "cubic"}

// importInterpolate is Resize with axes: Interpolate-4 takes (data, sizes,
// scales, axes?) and uses the input shape_calculation_mode names,
// Interpolate-11 (data, scales_or_sizes, axes?).
func importInterpolate(c *layerCtx) ([]graph.Output, error) {
	var axesIdx, sizesIdx, scalesIdx int
	if c.opset >= 11 {
		if err := c.inputs(2, 3); err != nil {
			return nil, err
		}
		sizesIdx, scalesIdx, axesIdx = 1, 1, 2
	} else {
		if err := c.inputs(3, 4); err != nil {
			return nil, err
		}
		sizesIdx, scalesIdx, axesIdx = 1, 2, 3
	}
	mode, err := c.enum("mode", "nearest", "nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow")
	if err != nil {
		return nil, err
	}
	m, ok := interpolateModes[mode]
	if !ok {
		return nil, c.attrErrorf("mode", "%s is not supported (nearest, linear, linear_onnx, cubic are)", mode)
	}
	calc, err := c.enum("shape_calculation_mode", "sizes", "sizes", "scales")
	if err != nil {
		return nil, err
	}
	ctm, err := c.enum("coordinate_transformation_mode", "half_pixel", "half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
	if err != nil {
		return nil, err
	}
	nearest, err := c.enum("nearest_mode", "round_prefer_floor", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
	if err != nil {
		return nil, err
	}
	if nearest == "simple" {
		return nil, c.attrErrorf("nearest_mode", "simple is not supported")
	}
	aa, err := c.boolean("antialias", false)
	if err != nil {
		return nil, err
	}
	if aa {
		return nil, c.attrErrorf("antialias", "true is not supported")
	}
	for _, p := range []string{"pads_begin", "pads_end"} {
		v, _, err := c.intList(p)
		if err != nil {
			return nil, err
		}
		for _, x := range v {
			if x != 0 {
				return nil, c.attrErrorf(p, "%v: padding before interpolation is not supported", v)
			}
		}
	}
	cube, err := c.float("cube_coeff", -0.75)
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{"mode": m, "coordinate_transformation_mode": ctm, "cubic_coeff_a": cube, "nearest_mode": nearest}
	if a := c.input(axesIdx); a.Valid() {
		axes, err := c.ints(axesIdx, "axes")
		if err != nil {
			return nil, err
		}
		attrs["axes"] = axes
	} else if r := c.in[0].Shape().Rank(); c.opset >= 11 && r < 0 {
		return nil, c.errorf(ErrUnsupportedAttribute, "Interpolate without axes needs an input of known rank")
	}
	in := []graph.Output{c.in[0], {}, {}, {}}
	if calc == "sizes" {
		s, err := c.castTo(c.in[sizesIdx], tensor.I64, "sizes_i64")
		if err != nil {
			return nil, err
		}
		in[3] = s
	} else {
		s, err := c.castTo(c.in[scalesIdx], tensor.F32, "scales_f32")
		if err != nil {
			return nil, err
		}
		in[2] = s
	}
	return one(c.op("Resize", "", attrs, in...))
}

// gridSampleModes maps GridSample-9's modes to the op set's.
var gridSampleModes = map[string]string{"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}

func importGridSample(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "bilinear", "bilinear", "bicubic", "nearest")
	if err != nil {
		return nil, err
	}
	pad, err := c.enum("padding_mode", "zeros", "zeros", "border", "reflection")
	if err != nil {
		return nil, err
	}
	ac, err := c.boolean("align_corners", false)
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{"mode": gridSampleModes[mode], "padding_mode": pad, "align_corners": b2i(ac)}
	return one(c.op("GridSample", "", attrs, c.in...))
}

// resizeExports write Resize as Interpolate-11 and GridSample.
var resizeExports = map[string]exportFunc{
	"Resize": exportResize,
	"GridSample": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("mode", "padding_mode", "align_corners") {
			return false, nil
		}
		mode := ""
		for k, v := range gridSampleModes {
			if v == e.n.Attrs.String("mode", "linear") {
				mode = k
			}
		}
		pad := e.n.Attrs.String("padding_mode", "zeros")
		if mode == "" || (pad != "zeros" && pad != "border" && pad != "reflection") {
			return false, nil
		}
		return e.single("GridSample", 9, []xml.Attr{dataAttr("align_corners", boolStr(e.attrInt("align_corners", 0) != 0)),
			dataAttr("mode", mode), dataAttr("padding_mode", pad)}, in...)
	},
}

// exportResize: Interpolate-11 takes sizes or scales (not both), no roi,
// and the modes both ops have.
func exportResize(e *exportCtx) (bool, error) {
	x, roi, scales, sizes := e.in(0), e.in(1), e.in(2), e.in(3)
	if !x.Valid() || roi.Valid() || scales.Valid() == sizes.Valid() || len(e.n.Inputs) > 4 ||
		!e.onlyAttrs("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "antialias", "exclude_outside",
			"extrapolation_value", "keep_aspect_ratio_policy", "axes") {
		return false, nil
	}
	a := e.n.Attrs
	if a.Int("antialias", 0) != 0 || a.Int("exclude_outside", 0) != 0 || a.Float("extrapolation_value", 0) != 0 ||
		a.String("keep_aspect_ratio_policy", "stretch") != "stretch" {
		return false, nil
	}
	mode := map[string]string{"nearest": "nearest", "linear": "linear_onnx", "cubic": "cubic"}[a.String("mode", "nearest")]
	ctm := a.String("coordinate_transformation_mode", "half_pixel")
	nearest := a.String("nearest_mode", "round_prefer_floor")
	switch {
	case mode == "":
		return false, nil
	case ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "asymmetric" && ctm != "tf_half_pixel_for_nn" && ctm != "align_corners":
		return false, nil
	case nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" && nearest != "ceil":
		return false, nil
	}
	calc, in := "sizes", src{}
	if sizes.Valid() {
		if sizes.Type() != tensor.I64 {
			return false, nil
		}
		in = from(sizes)
	} else {
		if scales.Type() != tensor.F32 {
			return false, nil
		}
		calc, in = "scales", from(scales)
	}
	data := []xml.Attr{dataAttr("mode", mode), dataAttr("shape_calculation_mode", calc),
		dataAttr("coordinate_transformation_mode", ctm), dataAttr("nearest_mode", nearest),
		dataAttr("antialias", "false"), dataAttr("pads_begin", "0"), dataAttr("pads_end", "0"),
		dataAttr("cube_coeff", formatFloat(a.Float("cubic_coeff_a", -0.75)))}
	ins := []src{from(x), in}
	if axes := a.Ints("axes", nil); axes != nil {
		ins = append(ins, e.i64Src("axes", false, axes...))
	}
	return e.single("Interpolate", 11, data, ins...)
}
