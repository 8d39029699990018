package onnx

import "github.com/clinfer/clinfer/graph"

var resizeModes = []check{
	enum("mode", "nearest", "linear", "cubic"),
	enum("coordinate_transformation_mode", "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
		"align_corners", "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"),
	enum("nearest_mode", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"),
	enum("keep_aspect_ratio_policy", "stretch", "not_larger", "not_smaller"),
}

// upsample converts Upsample (7-9) and Resize-10 to the newest Resize: the
// scales (an attribute before Upsample-9) are input 2, coordinates are
// asymmetric and nearest rounds down when upsampling and up when
// downsampling, as those versions did.
func upsample(c *nodeCtx) ([]graph.Output, error) {
	if err := enum("mode", "nearest", "linear")(c); err != nil {
		return nil, err
	}
	mode := c.attrs.String("mode", "nearest")
	var scales graph.Output
	var scaleVals []float64
	if c.n.opType == "Upsample" && c.version < 9 {
		s, ok := c.attrs["scales"].([]float32)
		if !ok {
			return nil, c.invalidf("required attribute \"scales\" is missing or not a list of floats")
		}
		scales = c.constF32("scales", s, false)
		for _, v := range s {
			scaleVals = append(scaleVals, float64(v))
		}
	} else {
		scales = c.input(1)
		if t, ok := constInput(c, 1); ok {
			scaleVals = t.Float64s()
		}
	}
	if scales.Node == nil {
		return nil, c.invalidf("has no scales input")
	}
	attrs := graph.Attrs{"mode": mode, "coordinate_transformation_mode": "asymmetric"}
	if mode == "nearest" {
		down, up := false, false
		for _, s := range scaleVals {
			down = down || s < 1
			up = up || s > 1
		}
		if down && up {
			return nil, c.attrErrorf("scales", "mixed up- and downsampling with nearest mode is not supported")
		}
		attrs["nearest_mode"] = "floor"
		if down {
			attrs["nearest_mode"] = "ceil"
		}
	}
	return outputsOf(c.node("Resize", "", []graph.Output{c.input(0), {}, scales}, attrs, 1)), nil
}

// resize imports Resize 11+; empty roi and scales constants (how exporters
// spell "omitted" before opset 13) become omitted inputs, and roi is dropped
// unless the coordinate mode reads it.
func resize(c *nodeCtx) ([]graph.Output, error) {
	if err := runChecks(c, resizeModes); err != nil {
		return nil, err
	}
	inputs := append([]graph.Output{}, c.in...)
	for len(inputs) < 4 {
		inputs = append(inputs, graph.Output{})
	}
	if c.attrs.String("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize" {
		inputs[1] = graph.Output{}
	}
	for i := 1; i < 4; i++ {
		if t, ok := constInput(c, i); ok && t.NumElements() == 0 {
			inputs[i] = graph.Output{}
		}
	}
	for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
		inputs = inputs[:len(inputs)-1]
	}
	return outputsOf(c.node("Resize", "", inputs, c.attrs, 1)), nil
}

// gridSample16 imports GridSample-16, whose modes are called bilinear and
// bicubic, as the opset-20 form (linear, cubic).
func gridSample16(c *nodeCtx) ([]graph.Output, error) {
	if err := enum("mode", "bilinear", "nearest", "bicubic")(c); err != nil {
		return nil, err
	}
	switch c.attrs.String("mode", "bilinear") {
	case "bilinear":
		c.attrs["mode"] = "linear"
	case "bicubic":
		c.attrs["mode"] = "cubic"
	}
	return outputsOf(c.node("GridSample", "", c.in, c.attrs, 1)), nil
}

// resizeImports converts Upsample and the scales-only Resize-10 to Resize,
// and GridSample-16 to the opset-20 form.
var resizeImports = []opEntry{
	{"Upsample", "", 7, 10, upsample},
	{"Resize", "", 10, 11, upsample},
	{"Resize", "", 11, 0, resize},
	{"GridSample", "", 16, 20, gridSample16},
}
