package graph

// inferRoiAlign is RoiAlign(X [N,C,H,W], rois [R,4], batch_indices [R]):
// [R, C, output_height, output_width], each bin the average (mode avg) or
// maximum (max) of bilinear samples of X; coordinate_transformation_mode
// half_pixel shifts the rois by half a pixel, output_half_pixel (the form
// before opset 16) does not and makes every roi at least 1x1.
func inferRoiAlign(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 3 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	x, rois, bi := n.Inputs[0], n.Inputs[1], n.Inputs[2]
	if !isFloat(x.Type()) || !isFloat(rois.Type()) { // rois may stay f32 beside f16 X
		return n.Errorf("X and rois have element types %v and %v, want floating-point types", x.Type(), rois.Type())
	}
	if !isIndexType(bi.Type()) {
		return n.Errorf("batch_indices have element type %v, want i64", bi.Type())
	}
	switch m := n.Attrs.String("mode", "avg"); m {
	case "avg", "max":
	default:
		return n.Errorf("mode %q is not avg or max", m)
	}
	switch m := n.Attrs.String("coordinate_transformation_mode", "half_pixel"); m {
	case "half_pixel", "output_half_pixel":
	default:
		return n.Errorf("coordinate_transformation_mode %q is not half_pixel or output_half_pixel", m)
	}
	oh, ow := n.Attrs.Int("output_height", 1), n.Attrs.Int("output_width", 1)
	if oh < 1 || ow < 1 || n.Attrs.Int("sampling_ratio", 0) < 0 {
		return n.Errorf("output %dx%d and sampling_ratio %d: want positive sizes and a ratio >= 0", oh, ow, n.Attrs.Int("sampling_ratio", 0))
	}
	xs, rs := x.Shape(), rois.Shape()
	if xs.RankKnown && len(xs.Dims) != 4 {
		return n.Errorf("X has shape %v, want [N, C, H, W]", xs)
	}
	if rs.RankKnown && (len(rs.Dims) != 2 || (rs.Dims[1].IsStatic() && rs.Dims[1].Size != 4)) {
		return n.Errorf("rois have shape %v, want [num_rois, 4]", rs)
	}
	r, c := DynamicDim(""), DynamicDim("")
	if rs.RankKnown {
		r = rs.Dims[0]
	}
	if bs := bi.Shape(); bs.RankKnown {
		if len(bs.Dims) != 1 {
			return n.Errorf("batch_indices have shape %v, want [num_rois]", bs)
		}
		var ok bool
		if r, ok = mergeDim(r, bs.Dims[0]); !ok {
			return n.Errorf("rois %v and batch_indices %v disagree on num_rois", rs, bs)
		}
	}
	if xs.RankKnown {
		c = xs.Dims[1]
	}
	setOutput(n, 0, x.Type(), PartialShape{Dims: []Dim{r, c, StaticDim(oh), StaticDim(ow)}, RankKnown: true})
	return nil
}

// detectionOps are the detection-head post-processing ops.
var detectionOps = []OpSpec{
	{Name: "RoiAlign", Since: 16, MinInputs: 3, MaxInputs: 3, Infer: inferRoiAlign, Examples: []Example{
		{Name: "avg_half_pixel", Attrs: Attrs{"output_height": int64(3), "output_width": int64(4), "spatial_scale": float32(0.5)},
			Inputs: []ExampleInput{{Shape: []int64{2, 3, 10, 12}}, {Shape: []int64{4, 4}, Floats: []float32{
				0, 0, 8, 8, 2.5, 3, 20, 14, 10, 1, 12.5, 19, -3, -2, 30, 25}}, {Ints: []int64{0, 1, 1, 0}}}},
		{Name: "max_output_half_pixel", Attrs: Attrs{"mode": "max", "output_height": int64(2), "output_width": int64(3),
			"sampling_ratio": int64(2), "coordinate_transformation_mode": "output_half_pixel"},
			Inputs: []ExampleInput{{Shape: []int64{1, 2, 9, 7}}, {Shape: []int64{3, 4}, Floats: []float32{
				0, 0, 3, 3, 1.5, 2, 6.5, 8, 4, 4, 4.2, 4.1}}, {Ints: []int64{0, 0, 0}}}},
	}},
}
