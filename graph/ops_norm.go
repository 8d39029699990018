package graph

import "github.com/clinfer/clinfer/tensor"

// checkChannelVec checks that inputs idx are 1-D of the channel count c.
func checkChannelVec(n *Node, c Dim, idx ...int) error {
	for _, i := range idx {
		in := n.Input(i)
		if !in.Valid() {
			continue
		}
		s := in.Shape()
		if !s.RankKnown {
			continue
		}
		if len(s.Dims) != 1 {
			return n.Errorf("input %d has shape %v, want [%v]", i, s, c)
		}
		if _, ok := mergeDim(s.Dims[0], c); !ok {
			return n.Errorf("input %d has shape %v, want [%v] (the input's channels)", i, s, c)
		}
	}
	return nil
}

func inferBatchNorm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 5 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	x := n.Inputs[0]
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a float type", x.Type())
	}
	xs := x.Shape()
	if xs.RankKnown {
		if len(xs.Dims) < 2 {
			return n.Errorf("input has shape %v, want rank >= 2 (N, C, ...)", xs)
		}
		if err := checkChannelVec(n, xs.Dims[1], 1, 2, 3, 4); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), xs.Clone())
	return nil
}

func inferInstanceNorm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 3 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	x := n.Inputs[0]
	xs := x.Shape()
	if xs.RankKnown {
		if len(xs.Dims) < 3 {
			return n.Errorf("input has shape %v, want rank >= 3 (N, C, spatial...)", xs)
		}
		if err := checkChannelVec(n, xs.Dims[1], 1, 2); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), xs.Clone())
	return nil
}

func inferLayerNorm(n *Node) error {
	if err := checkOutputs(n, 1, 3); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	xs := x.Shape()
	setOutput(n, 0, x.Type(), xs.Clone())
	stash := tensor.F32
	if n.Attrs.Has("stash_type") {
		stash = tensor.ElementType(n.Attrs.Int("stash_type", int64(tensor.F32)))
		if !stash.IsFloat() {
			return n.Errorf("stash_type %v is not a floating-point type", stash)
		}
	}
	stat := DynamicRank
	if xs.RankKnown {
		axis, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), len(xs.Dims))
		if err != nil {
			return err
		}
		for i := 1; i <= 2; i++ {
			if in := n.Input(i); in.Valid() {
				if err := unidirectional(n, in.Shape(), PartialShape{Dims: xs.Dims[axis:], RankKnown: true}, "scale/bias"); err != nil {
					return err
				}
			}
		}
		stat = xs.Clone()
		for i := axis; i < len(stat.Dims); i++ {
			stat.Dims[i] = StaticDim(1)
		}
	}
	for i := 1; i < len(n.Outputs); i++ {
		setOutput(n, i, stash, stat.Clone())
	}
	return nil
}

// inferLRN is LRN(X [N,C,...]): X / (bias + alpha/size * S)^beta, S the
// sum of squares over the size channels around each one (floor((size-1)/2)
// before, ceil((size-1)/2) after).
func inferLRN(n *Node) error {
	if err := inferFloatUnary(n); err != nil {
		return err
	}
	if xs := n.Inputs[0].Shape(); xs.RankKnown && len(xs.Dims) < 2 {
		return n.Errorf("input has shape %v, want rank >= 2 (N, C, ...)", xs)
	}
	if size := n.Attrs.Int("size", 0); size < 1 {
		return n.Errorf("size is %d, want a positive number of channels", size)
	}
	return nil
}

// normOps are the normalisations.
var normOps = []OpSpec{
	{Name: "BatchNormalization", MinInputs: 5, MaxInputs: 5, KeepOutputs: 1, Infer: inferBatchNorm},
	{Name: "InstanceNormalization", Since: 1, MinInputs: 3, MaxInputs: 3, Infer: inferInstanceNorm},
	{Name: "LayerNormalization", MinInputs: 2, MaxInputs: 3, KeepOutputs: 1, Infer: inferLayerNorm},
	{Name: "LRN", Since: 1, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 1e-4}, {"beta", 0.75}, {"bias", 1}}, Infer: inferLRN,
		Examples: []Example{
			{Name: "size3", Attrs: Attrs{"size": int64(3)}, Inputs: []ExampleInput{{Shape: []int64{2, 7, 4, 5}}}},
			{Name: "size4_params", Attrs: Attrs{"size": int64(4), "alpha": float32(0.02), "beta": float32(0.6), "bias": float32(2)},
				Inputs: []ExampleInput{{Shape: []int64{1, 9, 11}}}},
		}},
}
