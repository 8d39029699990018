package graph

import "github.com/clinfer/clinfer/tensor"

// inferDet is Det(X [..., M, M]) -> the determinants [...].
func inferDet(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	s := x.Shape()
	if !s.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	r := len(s.Dims)
	if r < 2 {
		return n.Errorf("input has shape %v, want [..., M, M]", s)
	}
	if a, b := s.Dims[r-2], s.Dims[r-1]; a.IsStatic() && b.IsStatic() && a.Size != b.Size {
		return n.Errorf("input has shape %v: the matrices are not square", s)
	}
	setOutput(n, 0, x.Type(), PartialShape{RankKnown: true, Dims: append([]Dim(nil), s.Dims[:r-2]...)})
	return nil
}

// detOps are the gemm family's linear algebra beyond products.
var detOps = []OpSpec{
	{Name: "Det", Since: 11, MinInputs: 1, MaxInputs: 1, Infer: inferDet, Examples: []Example{
		{Name: "batch", Inputs: []ExampleInput{{Shape: []int64{3, 2, 4, 4}}}},
		{Name: "single", Inputs: []ExampleInput{{Shape: []int64{7, 7}}}},
		{Name: "f64", Inputs: []ExampleInput{{Type: tensor.F64, Shape: []int64{2, 3, 3}}}},
	}},
}
