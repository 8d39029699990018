package graph

import "github.com/clinfer/clinfer/tensor"

// inferNMS is NonMaxSuppression(boxes [B,N,4], scores [B,C,N],
// max_output_boxes_per_class?, iou_threshold?, score_threshold?): the i64
// rows (batch, class, box) of the selected boxes, [count, 3], count being
// data-dependent (OpSpec.DataSized). center_point_box 0 reads a box as two
// opposite corners [y1,x1,y2,x2], 1 as [x_center,y_center,width,height].
func inferNMS(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	boxes, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	scores, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isFloat(boxes.Type()) || boxes.Type() != scores.Type() {
		return n.Errorf("boxes and scores have element types %v and %v, want one floating-point type", boxes.Type(), scores.Type())
	}
	bs, ss := boxes.Shape(), scores.Shape()
	if bs.RankKnown && (len(bs.Dims) != 3 || (bs.Dims[2].IsStatic() && bs.Dims[2].Size != 4)) {
		return n.Errorf("boxes have shape %v, want [batches, boxes, 4]", bs)
	}
	if ss.RankKnown && len(ss.Dims) != 3 {
		return n.Errorf("scores have shape %v, want [batches, classes, boxes]", ss)
	}
	if bs.RankKnown && ss.RankKnown {
		_, ok1 := mergeDim(bs.Dims[0], ss.Dims[0])
		_, ok2 := mergeDim(bs.Dims[1], ss.Dims[2])
		if !ok1 || !ok2 {
			return n.Errorf("boxes %v and scores %v disagree on batches or boxes", bs, ss)
		}
	}
	if c := n.Attrs.Int("center_point_box", 0); c != 0 && c != 1 {
		return n.Errorf("center_point_box is %d, want 0 or 1", c)
	}
	if in := n.Input(2); in.Valid() && !isIndexType(in.Type()) {
		return n.Errorf("max_output_boxes_per_class has element type %v, want i64", in.Type())
	}
	for i := 3; i <= 4; i++ {
		if in := n.Input(i); in.Valid() && !isFloat(in.Type()) {
			return n.Errorf("input %d has element type %v, want f32", i, in.Type())
		}
	}
	setOutput(n, 0, tensor.I64, PartialShape{Dims: []Dim{dataSize(n), StaticDim(3)}, RankKnown: true})
	return nil
}

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

// nmsBoxes are 12 boxes as corners (y1,x1,y2,x2) around three clusters,
// some with the corners swapped, for the NonMaxSuppression examples.
var nmsBoxes = []float32{
	0, 0, 1, 1, 0, 0.1, 1, 1.1, 0.05, -0.05, 1.02, 0.98, 1.1, 1, 0.1, 0,
	5, 5, 6, 6, 5.2, 5.1, 6.1, 6.2, 6, 6, 5, 5, 4.7, 5, 5.9, 6,
	0, 8, 2, 10, 0.5, 8.5, 2.5, 10.5, 3, 3, 3.5, 3.5, 0, 7.9, 2.1, 10,
}

// detectionOps are the detection-head post-processing ops.
var detectionOps = []OpSpec{
	{Name: "NonMaxSuppression", Since: 10, MinInputs: 2, MaxInputs: 5, HostInputs: []int{2, 3, 4}, DataSized: true,
		Infer: inferNMS, Examples: []Example{
			{Name: "per_class", Inputs: []ExampleInput{{Floats: nmsBoxes, Shape: []int64{1, 12, 4}}, {Shape: []int64{1, 3, 12}},
				{Ints: []int64{3}}, {Floats: []float32{0.4}, Shape: []int64{}}, {Floats: []float32{-0.5}, Shape: []int64{}}}},
			{Name: "center_two_batches", Attrs: Attrs{"center_point_box": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 9, 4}, Positive: true},
				{Shape: []int64{2, 2, 9}}, {Ints: []int64{4}}, {Floats: []float32{0.2}, Shape: []int64{}}}},
		}},
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
