package graph

import "github.com/clinfer/clinfer/tensor"

// AffineGridBase returns the normalised coordinate of index i of an axis
// of n points (ONNX AffineGrid): linspace(-1, 1, n) with align_corners,
// else the centres of n cells over [-1, 1]. A single point with
// align_corners is 0, as in PyTorch's affine_grid, which the op's spec
// names (ONNX's reference takes -1 there and ONNX Runtime 1).
func AffineGridBase(i, n int64, alignCorners bool) float64 {
	if alignCorners {
		if n == 1 {
			return 0
		}
		return -1 + 2*float64(i)/float64(n-1)
	}
	return (2*float64(i)+1)/float64(n) - 1
}

// inferAffineGrid is AffineGrid(theta [N, 2, 3] or [N, 3, 4], size [N, C,
// H, W] or [N, C, D, H, W]) -> the sampling grid [N, H, W, 2] or [N, D, H,
// W, 3] of GridSample.
func inferAffineGrid(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	th, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isFloat(th.Type()) {
		return n.Errorf("theta has element type %v, want a floating-point type", th.Type())
	}
	sz, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if sz.Type() != tensor.I64 {
		return n.Errorf("size has element type %v, want i64", sz.Type())
	}
	size, ok := n.ConstInts(1)
	if !ok {
		r := DynamicRank
		if s, known := sz.Shape().ToShape(); known && len(s) == 1 {
			r = dynamicShape(int(s[0]) - 1)
		}
		setOutput(n, 0, th.Type(), r)
		return nil
	}
	if len(size) != 4 && len(size) != 5 {
		return n.Errorf("size %v, want [N, C, H, W] or [N, C, D, H, W]", size)
	}
	dims := len(size) - 2
	if s := th.Shape(); s.RankKnown {
		if len(s.Dims) != 3 || (s.Dims[1].IsStatic() && s.Dims[1].Size != int64(dims)) || (s.Dims[2].IsStatic() && s.Dims[2].Size != int64(dims+1)) {
			return n.Errorf("theta has shape %v, want [N, %d, %d] for size %v", s, dims, dims+1, size)
		}
	}
	out := append(append([]int64{size[0]}, size[2:]...), int64(dims))
	setOutput(n, 0, th.Type(), ShapeOf(out...))
	return nil
}

// affineOps are the resize family's grid generator.
var affineOps = []OpSpec{
	{Name: "AffineGrid", Since: 20, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, Infer: inferAffineGrid, Examples: []Example{
		{Name: "2d", Inputs: []ExampleInput{{Shape: []int64{2, 2, 3}}, {Ints: []int64{2, 3, 5, 7}}}},
		{Name: "2d_align", Attrs: Attrs{"align_corners": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{1, 2, 3}}, {Ints: []int64{1, 1, 4, 1}}}},
		{Name: "3d", Inputs: []ExampleInput{{Shape: []int64{2, 3, 4}}, {Ints: []int64{2, 1, 3, 4, 2}}}},
	}},
}
