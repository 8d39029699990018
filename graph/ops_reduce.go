package graph

import "github.com/clinfer/clinfer/tensor"

// inferReduce is ReduceMean, ReduceSum, ReduceMax and ReduceMin with axes
// as an optional input.
func inferReduce(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if a := n.Input(1); a.Valid() && a.Type() != tensor.I64 {
		return n.Errorf("axes have element type %v, want i64", a.Type())
	}
	keep := n.Attrs.Int("keepdims", 1) != 0
	noop := n.Attrs.Int("noop_with_empty_axes", 0) != 0
	xs := x.Shape()
	var axes []int64
	if present(n, 1) {
		v, ok := n.ConstInts(1)
		if !ok {
			if keep && xs.RankKnown {
				setOutput(n, 0, x.Type(), dynamicShape(len(xs.Dims)))
			} else {
				setOutput(n, 0, x.Type(), DynamicRank)
			}
			return nil
		}
		axes = v
	}
	if len(axes) == 0 && noop {
		setOutput(n, 0, x.Type(), xs.Clone())
		return nil
	}
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	r := len(xs.Dims)
	reduce := make([]bool, r)
	if len(axes) == 0 {
		for i := range reduce {
			reduce[i] = true
		}
	} else {
		norm, err := normalizeAxes(n, axes, r)
		if err != nil {
			return err
		}
		for _, a := range norm {
			reduce[a] = true
		}
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	for i, d := range xs.Dims {
		switch {
		case !reduce[i]:
			out.Dims = append(out.Dims, d)
		case keep:
			out.Dims = append(out.Dims, StaticDim(1))
		}
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// inferArg is ArgMax and ArgMin: i64 indices along axis (default 0), kept
// as a size-1 axis unless keepdims=0.
func inferArg(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isNumeric(x.Type()) {
		return n.Errorf("input has element type %v, want a numeric type", x.Type())
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, tensor.I64, DynamicRank)
		return nil
	}
	if len(xs.Dims) == 0 {
		return n.Errorf("input is a scalar, want rank >= 1")
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(xs.Dims))
	if err != nil {
		return err
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	for i, d := range xs.Dims {
		switch {
		case i != axis:
			out.Dims = append(out.Dims, d)
		case n.Attrs.Int("keepdims", 1) != 0:
			out.Dims = append(out.Dims, StaticDim(1))
		}
	}
	setOutput(n, 0, tensor.I64, out)
	return nil
}

// inferCumSum is CumSum(x, axis): x's type and shape; axis is a 0-D or 1-D
// integer tensor.
func inferCumSum(n *Node) error {
	if err := inferNumericUnaryOf(n); err != nil {
		return err
	}
	axis, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isIndexType(axis.Type()) {
		return n.Errorf("axis has element type %v, want i32 or i64", axis.Type())
	}
	return nil
}

// inferTopK is TopK(X, K): values (X's type) and i64 indices, with axis
// (default -1) of size K.
func inferTopK(n *Node) error {
	if err := checkOutputs(n, 2, 2); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	k, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isNumeric(x.Type()) {
		return n.Errorf("input has element type %v, want a numeric type", x.Type())
	}
	if k.Type() != tensor.I64 {
		return n.Errorf("K has element type %v, want i64", k.Type())
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		setOutput(n, 1, tensor.I64, DynamicRank)
		return nil
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), len(xs.Dims))
	if err != nil {
		return err
	}
	out := xs.Clone()
	out.Dims[axis] = DynamicDim("")
	if v, ok := n.ConstInts(1); ok && len(v) == 1 {
		if v[0] < 0 || (xs.Dims[axis].IsStatic() && v[0] > xs.Dims[axis].Size) {
			return n.Errorf("K=%d is out of range for axis %d of %v", v[0], axis, xs)
		}
		out.Dims[axis] = StaticDim(v[0])
	}
	setOutput(n, 0, x.Type(), out)
	setOutput(n, 1, tensor.I64, out.Clone())
	return nil
}

// reduceOps reduce along axes.
var reduceOps = []OpSpec{
	{Name: "ReduceMean", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceSum", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceMax", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceMin", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceProd", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, ShapeMath: true, Infer: inferReduce},
	{Name: "ReduceL1", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceL2", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceSumSquare", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ReduceLogSumExp", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferReduce},
	{Name: "ArgMax", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferArg},
	{Name: "ArgMin", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferArg},
	{Name: "TopK", MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, Infer: inferTopK},
	{Name: "CumSum", Since: 11, MinInputs: 2, MaxInputs: 2, Infer: inferCumSum},
}
