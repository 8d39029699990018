package graph

import "github.com/clinfer/clinfer/tensor"

// The compaction ops keep the elements their inputs' values select, so
// their output size is data-dependent (OpSpec.DataSized): one dimension is
// dynamic after inference unless the node carries AttrDataSize.

// valuesInput checks the outputs (1 to most) of an op that selects by
// value and returns its numeric or boolean input 0.
func valuesInput(n *Node, most int) (Output, error) {
	if err := checkOutputs(n, 1, most); err != nil {
		return Output{}, err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return Output{}, err
	}
	if !isNumeric(x.Type()) && !isBool(x.Type()) {
		return Output{}, n.Errorf("input has element type %v, want a numeric or boolean type", x.Type())
	}
	return x, nil
}

// inferNonZero is NonZero(X): the i64 coordinates [rank, count] of X's
// non-zero elements in row-major order (a scalar counts as rank 1).
func inferNonZero(n *Node) error {
	x, err := valuesInput(n, 1)
	if err != nil {
		return err
	}
	rank := DynamicDim("")
	if xs := x.Shape(); xs.RankKnown {
		rank = StaticDim(int64(max(len(xs.Dims), 1)))
	}
	setOutput(n, 0, tensor.I64, PartialShape{Dims: []Dim{rank, dataSize(n)}, RankKnown: true})
	return nil
}

// inferCompress is Compress(input, condition): the slices along axis (the
// flattened input without one) whose condition is true; condition is a
// boolean vector, shorter than the axis or as long.
func inferCompress(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	cond, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if cond.Type() != tensor.Bool {
		return n.Errorf("condition has element type %v, want bool", cond.Type())
	}
	if cs := cond.Shape(); cs.RankKnown && len(cs.Dims) != 1 {
		return n.Errorf("condition has shape %v, want a vector", cs)
	}
	if !n.Attrs.Has("axis") {
		setOutput(n, 0, x.Type(), PartialShape{Dims: []Dim{dataSize(n)}, RankKnown: true})
		return nil
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(xs.Dims))
	if err != nil {
		return err
	}
	out := xs.Clone()
	out.Dims[axis] = dataSize(n)
	setOutput(n, 0, x.Type(), out)
	return nil
}

// inferUnique is Unique(X) with up to four outputs: the unique values Y (or
// slices along axis), the i64 indices of their first occurrences, the i64
// inverse indices (one per element or slice of X) and the i64 counts.
func inferUnique(n *Node) error {
	x, err := valuesInput(n, 4)
	if err != nil {
		return err
	}
	k := dataSize(n)
	xs := x.Shape()
	y := PartialShape{Dims: []Dim{k}, RankKnown: true}
	inverse := DynamicDim("")
	if n.Attrs.Has("axis") {
		y = DynamicRank
		if xs.RankKnown {
			axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(xs.Dims))
			if err != nil {
				return err
			}
			y = xs.Clone()
			y.Dims[axis], inverse = k, xs.Dims[axis]
		}
	} else if xs.IsStatic() {
		s, _ := xs.ToShape()
		inverse = StaticDim(s.NumElements())
	}
	setOutput(n, 0, x.Type(), y)
	for i := 1; i < len(n.Outputs); i++ {
		d := k
		if i == 2 {
			d = inverse
		}
		setOutput(n, i, tensor.I64, PartialShape{Dims: []Dim{d}, RankKnown: true})
	}
	return nil
}

// compactOps are the stream-compaction ops.
var compactOps = []OpSpec{
	{Name: "NonZero", Since: 9, MinInputs: 1, MaxInputs: 1, DataSized: true, Infer: inferNonZero, Examples: []Example{
		{Name: "bool", Inputs: []ExampleInput{{Type: tensor.Bool, Shape: []int64{3, 5, 4}}}},
		{Name: "i32_blocks", Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{2, 700}}}},
		{Name: "f32", Inputs: []ExampleInput{{Shape: []int64{4, 7}}}},
	}},
	{Name: "Compress", Since: 9, MinInputs: 2, MaxInputs: 2, DataSized: true, Infer: inferCompress, Examples: []Example{
		{Name: "axis1", Attrs: Attrs{"axis": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{3, 7, 2}}, {Type: tensor.Bool, Shape: []int64{7}}}},
		{Name: "flat_short", Inputs: []ExampleInput{{Shape: []int64{4, 5}}, {Type: tensor.Bool, Shape: []int64{13}}}},
	}},
	{Name: "Unique", Since: 11, MinInputs: 1, MaxInputs: 1, DataSized: true, KeepOutputs: 1, Infer: inferUnique, Examples: []Example{
		{Name: "flat", Outputs: 4, Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{6, 5}}}},
		{Name: "axis0_unsorted", Attrs: Attrs{"axis": int64(0), "sorted": int64(0)}, Outputs: 4, Inputs: []ExampleInput{{Type: tensor.I64, Shape: []int64{9, 2}}}},
	}},
}
