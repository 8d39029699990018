package graph

import "github.com/clinfer/clinfer/tensor"

// LpPool, GlobalLpPool and MaxUnpool.

// inferLpPool is LpPool: inferPool's windows, the p-norm of each.
func inferLpPool(n *Node) error {
	if p := n.Attrs.Int("p", 2); p < 1 {
		return n.Errorf("p %d must be at least 1", p)
	}
	if x := n.Input(0); x.Valid() && !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	return inferPool(n)
}

// inferGlobalLpPool is GlobalLpPool: the p-norm of each plane.
func inferGlobalLpPool(n *Node) error {
	if p := n.Attrs.Int("p", 2); p < 1 {
		return n.Errorf("p %d must be at least 1", p)
	}
	return inferGlobalPool(n)
}

// UnpoolShape returns MaxUnpool's output shape for input shape x: the
// output_shape input's values when given (out), else each spatial dim
// (in-1)*stride + kernel - pad_begin - pad_end.
func UnpoolShape(n *Node, x tensor.Shape, out []int64) (tensor.Shape, error) {
	if out != nil {
		if len(out) != len(x) {
			return nil, n.Errorf("output_shape %v has %d values for an input of rank %d", out, len(out), len(x))
		}
		return tensor.Shape(out), nil
	}
	k := n.Attrs.Ints("kernel_shape", nil)
	r := len(x) - 2
	if len(k) != r {
		return nil, n.Errorf("kernel_shape %v for an input of rank %d", k, len(x))
	}
	strides := n.Attrs.Ints("strides", nil)
	pads := n.Attrs.Ints("pads", make([]int64, 2*r))
	if len(pads) != 2*r || (strides != nil && len(strides) != r) {
		return nil, n.Errorf("strides %v and pads %v do not fit kernel_shape %v", strides, pads, k)
	}
	s := tensor.Shape{x[0], x[1]}
	for i := range r {
		st := int64(1)
		if strides != nil {
			st = strides[i]
		}
		s = append(s, (x[2+i]-1)*st+k[i]-pads[i]-pads[r+i])
	}
	return s, nil
}

// UnpoolIndex maps MaxUnpool index at, a flat index into the default
// output shape def (what MaxPool's Indices address), to the flat index of
// the same coordinates in the output shape out (output_shape may pad the
// default); ok is false when those coordinates are outside out.
func UnpoolIndex(at int64, def, out tensor.Shape) (int64, bool) {
	if at < 0 || at >= def.NumElements() {
		return 0, false
	}
	o, mul := int64(0), int64(1)
	for d := len(def) - 1; d >= 0; d-- {
		c := at % def[d]
		at /= def[d]
		if c >= out[d] {
			return 0, false
		}
		o += c * mul
		mul *= out[d]
	}
	return o, true
}

// inferMaxUnpool is MaxUnpool(X, I, output_shape?): X's values placed at
// the flat indices I of a zero tensor (what MaxPool's Indices say, in the
// default output shape; see UnpoolIndex).
func inferMaxUnpool(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	i, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if i.Type() != tensor.I64 {
		return n.Errorf("indices have element type %v, want i64", i.Type())
	}
	xs, ok := x.Shape().ToShape()
	if !ok {
		r := len(n.Attrs.Ints("kernel_shape", nil)) + 2
		setOutput(n, 0, x.Type(), dynamicShape(r))
		return nil
	}
	var out []int64
	if n.Input(2).Valid() {
		if out, ok = n.ConstInts(2); !ok {
			setOutput(n, 0, x.Type(), dynamicShape(len(xs)))
			return nil
		}
	}
	s, err := UnpoolShape(n, xs, out)
	if err != nil {
		return err
	}
	setOutput(n, 0, x.Type(), StaticShape(s))
	return nil
}

// lpPoolOps are the pool family's p-norm poolings and MaxUnpool.
var lpPoolOps = []OpSpec{
	{Name: "LpPool", Since: 11, MinInputs: 1, MaxInputs: 1, Infer: inferLpPool, Examples: []Example{
		{Name: "p3_pads_strides", Attrs: Attrs{"kernel_shape": []int64{3, 2}, "p": int64(3), "strides": []int64{2, 1}, "pads": []int64{1, 0, 1, 1}},
			Inputs: []ExampleInput{{Shape: []int64{2, 3, 7, 6}}}},
		{Name: "p2_1d", Attrs: Attrs{"kernel_shape": []int64{4}}, Inputs: []ExampleInput{{Shape: []int64{1, 2, 9}}}},
	}},
	{Name: "GlobalLpPool", Since: 2, MinInputs: 1, MaxInputs: 1, Infer: inferGlobalLpPool, Examples: []Example{
		{Name: "p1", Attrs: Attrs{"p": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 5, 4}}}},
		{Name: "p2", Inputs: []ExampleInput{{Shape: []int64{1, 4, 6}}}},
	}},
	{Name: "MaxUnpool", Since: 11, MinInputs: 2, MaxInputs: 3, HostInputs: []int{2}, Infer: inferMaxUnpool, Examples: []Example{
		{Name: "2x2", Attrs: Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}},
			Inputs: []ExampleInput{{Shape: []int64{1, 2, 2, 2}}, {Shape: []int64{1, 2, 2, 2}, Ints: []int64{0, 3, 9, 14, 16, 22, 25, 31}}}},
		{Name: "output_shape", Attrs: Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}},
			Inputs: []ExampleInput{{Shape: []int64{1, 1, 2, 2}}, {Shape: []int64{1, 1, 2, 2}, Ints: []int64{1, 6, 12, 15}}, {Ints: []int64{1, 1, 5, 5}}}},
	}},
}
