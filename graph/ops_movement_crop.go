package graph

import "github.com/clinfer/clinfer/tensor"

// CenterCropPads returns the pads (begin and end per axis of x, negative
// where they crop) that center-crop or center-pad x to target along
// CenterCropPad node n's axes (default all): the odd element of a crop or
// pad goes to the end.
func CenterCropPads(n *Node, x tensor.Shape, target []int64) (begin, end []int64, err error) {
	r := len(x)
	axes := n.Attrs.Ints("axes", nil)
	if axes == nil {
		for i := range r {
			axes = append(axes, int64(i))
		}
	}
	if len(target) != len(axes) {
		return nil, nil, n.Errorf("shape has %d values for %d axes", len(target), len(axes))
	}
	norm, err := normalizeAxes(n, axes, r)
	if err != nil {
		return nil, nil, err
	}
	begin, end = make([]int64, r), make([]int64, r)
	for i, a := range norm {
		d, t := x[a], target[i]
		if t < 0 {
			return nil, nil, n.Errorf("shape %v has a negative size", target)
		}
		if t < d {
			begin[a] = -((d - t) / 2)
		} else {
			begin[a] = (t - d) / 2
		}
		end[a] = t - d - begin[a]
	}
	return begin, end, nil
}

// inferCenterCropPad is CenterCropPad(input_data, shape): input_data
// center-cropped or zero-padded to shape along axes.
func inferCenterCropPad(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !s.Type().IsInteger() {
		return n.Errorf("shape has element type %v, want an integer type", s.Type())
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	axes := n.Attrs.Ints("axes", nil)
	if axes == nil {
		for i := range xs.Dims {
			axes = append(axes, int64(i))
		}
	}
	norm, err := normalizeAxes(n, axes, len(xs.Dims))
	if err != nil {
		return err
	}
	out := xs.Clone()
	target, known := n.ConstInts(1)
	if known && len(target) != len(norm) {
		return n.Errorf("shape has %d values for %d axes", len(target), len(norm))
	}
	for i, a := range norm {
		out.Dims[a] = DynamicDim("")
		if known {
			out.Dims[a] = StaticDim(target[i])
		}
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// cropOps are the movement family's center crop.
var cropOps = []OpSpec{
	{Name: "CenterCropPad", Since: 18, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, Infer: inferCenterCropPad, Examples: []Example{
		{Name: "crop_and_pad", Inputs: []ExampleInput{{Shape: []int64{5, 4, 3}}, {Ints: []int64{2, 7, 3}}}},
		{Name: "axes", Attrs: Attrs{"axes": []int64{-1, 1}}, Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{2, 6, 5}}, {Ints: []int64{8, 3}}}},
	}},
}
