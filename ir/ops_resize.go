package ir

import (
	"encoding/xml"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// resizeImports are Interpolate and GridSample.
var resizeImports = []importRow{
	{"Interpolate", 1, importInterpolate1},
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
	if err := c.noAntialiasOrPads(); err != nil {
		return nil, err
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

// importInterpolate1 reads Interpolate-1 (data, target_spatial_shape)
// with the attributes axes (required), mode, align_corners (true when
// absent), antialias and pads_begin/pads_end, as OpenVINO reads it: the
// sizes of the axes; align_corners true is the align_corners transform;
// otherwise linear without pads is half_pixel unless it resizes axes
// {2, 3} of a 4-D input, and everything else asymmetric; nearest rounds
// down when upsampling and up when downsampling ("simple"), which needs
// the sizes and those input dims known when the model is read.
func importInterpolate1(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	axes, ok, err := c.intList("axes")
	if err != nil {
		return nil, err
	}
	if !ok || len(axes) == 0 {
		return nil, c.errorf(ErrInvalidModel, "attribute axes is required")
	}
	mode, err := c.enum("mode", "", "nearest", "linear", "linear_onnx", "cubic", "area")
	if err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	switch {
	case mode == "":
		return nil, c.errorf(ErrInvalidModel, "attribute mode is required")
	case mode == "area":
		return nil, c.attrErrorf("mode", "area is not supported (nearest, linear, linear_onnx, cubic are)")
	case mode == "linear" && r > 5:
		return nil, c.attrErrorf("mode", "linear of a rank-%d input is not supported (up to rank 5 is)", r)
	}
	ac, err := c.boolean("align_corners", true)
	if err != nil {
		return nil, err
	}
	if err := c.noAntialiasOrPads(); err != nil {
		return nil, err
	}
	ctm := "asymmetric"
	switch {
	case ac:
		ctm = "align_corners"
	case (mode == "linear" || mode == "linear_onnx") && !(r == 4 && len(axes) == 2 && slices.Contains(axes, 2) && slices.Contains(axes, 3)):
		ctm = "half_pixel"
	}
	attrs := graph.Attrs{"mode": interpolateModes[mode], "coordinate_transformation_mode": ctm, "cubic_coeff_a": float32(-0.75), "axes": axes}
	if mode == "nearest" {
		if attrs["nearest_mode"], err = c.simpleNearest(axes); err != nil {
			return nil, err
		}
	}
	sizes, err := c.castTo(c.in[1], tensor.I64, "sizes_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("Resize", "", attrs, c.in[0], graph.Output{}, graph.Output{}, sizes))
}

// noAntialiasOrPads checks that an Interpolate layer asks for neither
// antialiasing nor padding before the interpolation, which Resize lacks.
func (c *layerCtx) noAntialiasOrPads() error {
	aa, err := c.boolean("antialias", false)
	if err != nil {
		return err
	}
	if aa {
		return c.attrErrorf("antialias", "true is not supported")
	}
	for _, p := range []string{"pads_begin", "pads_end"} {
		v, _, err := c.intList(p)
		if err != nil {
			return err
		}
		for _, x := range v {
			if x != 0 {
				return c.attrErrorf(p, "%v: padding before interpolation is not supported", v)
			}
		}
	}
	return nil
}

// simpleNearest is the Resize nearest_mode of OpenVINO's "simple"
// rounding for Interpolate-1 resizing axes to the sizes of input 1: floor
// when no axis shrinks, ceil when none grows (an axis that keeps its size
// lands on whole coordinates either way).
func (c *layerCtx) simpleNearest(axes []int64) (string, error) {
	sizes, err := c.ints(1, "target_spatial_shape")
	if err != nil {
		return "", err
	}
	s := c.in[0].Shape()
	if len(sizes) != len(axes) {
		return "", c.errorf(ErrInvalidModel, "target_spatial_shape has %d values for %d axes", len(sizes), len(axes))
	}
	up, down := false, false
	for i, a := range axes {
		if a < 0 || int(a) >= len(s.Dims) || s.Dims[a].Size < 0 {
			return "", c.errorf(ErrUnsupportedAttribute, "nearest Interpolate-1 needs input dim %d known to choose its rounding (input is %v)", a, s)
		}
		up = up || sizes[i] > s.Dims[a].Size
		down = down || sizes[i] < s.Dims[a].Size
	}
	if up && down {
		return "", c.attrErrorf("mode", "nearest growing some axes and shrinking others (%v to %v on axes %v) is not supported", s, sizes, axes)
	}
	if down {
		return "ceil", nil
	}
	return "floor", nil
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
