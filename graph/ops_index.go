package graph

func inferGather(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	idx, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isIndexType(idx.Type()) {
		return n.Errorf("indices have element type %v, want i32 or i64", idx.Type())
	}
	ds, is := data.Shape(), idx.Shape()
	if !ds.RankKnown || !is.RankKnown {
		setOutput(n, 0, data.Type(), DynamicRank)
		return nil
	}
	if len(ds.Dims) == 0 {
		return n.Errorf("data must have rank >= 1, got a scalar")
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(ds.Dims))
	if err != nil {
		return err
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	out.Dims = append(out.Dims, ds.Dims[:axis]...)
	out.Dims = append(out.Dims, is.Dims...)
	out.Dims = append(out.Dims, ds.Dims[axis+1:]...)
	setOutput(n, 0, data.Type(), out)
	return nil
}

// indexedInputs checks data (input 0) and integer indices (input idx) of
// the gather/scatter ops.
func indexedInputs(n *Node, idx int) (Output, Output, error) {
	data, err := requiredInput(n, 0)
	if err != nil {
		return Output{}, Output{}, err
	}
	ind, err := requiredInput(n, idx)
	if err != nil {
		return Output{}, Output{}, err
	}
	if !isIndexType(ind.Type()) {
		return Output{}, Output{}, n.Errorf("indices have element type %v, want i32 or i64", ind.Type())
	}
	return data, ind, nil
}

// inferGatherElements: the output has the indices' shape and the data's
// type; data and indices have the same rank.
func inferGatherElements(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, ind, err := indexedInputs(n, 1)
	if err != nil {
		return err
	}
	ds, is := data.Shape(), ind.Shape()
	if ds.RankKnown && is.RankKnown {
		if len(ds.Dims) != len(is.Dims) {
			return n.Errorf("data %v and indices %v have different ranks", ds, is)
		}
		if len(ds.Dims) == 0 {
			return n.Errorf("data is a scalar, want rank >= 1")
		}
		if _, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(ds.Dims)); err != nil {
			return err
		}
	}
	setOutput(n, 0, data.Type(), is.Clone())
	return nil
}

// inferGatherND: indices [..., k] pick slices of data after batch_dims
// leading axes; out = indices.shape[:-1] + data.shape[batch_dims+k:].
func inferGatherND(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, ind, err := indexedInputs(n, 1)
	if err != nil {
		return err
	}
	ds, is := data.Shape(), ind.Shape()
	b := int(n.Attrs.Int("batch_dims", 0))
	if !ds.RankKnown || !is.RankKnown || len(is.Dims) == 0 || !is.Dims[len(is.Dims)-1].IsStatic() {
		setOutput(n, 0, data.Type(), DynamicRank)
		return nil
	}
	k := int(is.Dims[len(is.Dims)-1].Size)
	if b < 0 || b+k > len(ds.Dims) || b >= len(is.Dims) {
		return n.Errorf("indices %v with batch_dims %d do not fit data %v", is, b, ds)
	}
	out := PartialShape{Dims: append([]Dim{}, is.Dims[:len(is.Dims)-1]...), RankKnown: true}
	out.Dims = append(out.Dims, ds.Dims[b+k:]...)
	setOutput(n, 0, data.Type(), out)
	return nil
}

// inferScatter is ScatterElements and ScatterND: the output is data with
// updates written in; updates has data's type.
func inferScatter(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, _, err := indexedInputs(n, 1)
	if err != nil {
		return err
	}
	upd, err := requiredInput(n, 2)
	if err != nil {
		return err
	}
	if upd.Type() != data.Type() {
		return n.Errorf("updates have element type %v, data %v", upd.Type(), data.Type())
	}
	switch r := n.Attrs.String("reduction", "none"); r {
	case "none", "add", "mul", "max", "min":
	default:
		return n.Errorf("reduction %q is not one of none, add, mul, max, min", r)
	}
	setOutput(n, 0, data.Type(), data.Shape().Clone())
	return nil
}

// inferOneHot is OneHot(indices, depth, values): values' type, a new axis
// of size depth inserted at axis (default -1, counted in the output).
func inferOneHot(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	ind, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	vals, err := requiredInput(n, 2)
	if err != nil {
		return err
	}
	if !isNumeric(ind.Type()) {
		return n.Errorf("indices have element type %v, want a numeric type", ind.Type())
	}
	if vs := vals.Shape(); vs.RankKnown && !(len(vs.Dims) == 1 && (!vs.Dims[0].IsStatic() || vs.Dims[0].Size == 2)) {
		return n.Errorf("values have shape %v, want [2]", vs)
	}
	is := ind.Shape()
	if !is.RankKnown {
		setOutput(n, 0, vals.Type(), DynamicRank)
		return nil
	}
	r := len(is.Dims) + 1
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), r)
	if err != nil {
		return err
	}
	depth := DynamicDim("")
	if t, ok := n.ConstInput(1); ok {
		if v, ok := floatValues(t); ok && len(v) == 1 {
			depth = StaticDim(int64(v[0]))
		}
	}
	out := PartialShape{Dims: append([]Dim{}, is.Dims[:axis]...), RankKnown: true}
	out.Dims = append(out.Dims, depth)
	out.Dims = append(out.Dims, is.Dims[axis:]...)
	setOutput(n, 0, vals.Type(), out)
	return nil
}

// indexOps gather and scatter by index tensors.
var indexOps = []OpSpec{
	{Name: "Gather", Since: 1, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferGather},
	{Name: "GatherElements", Since: 11, MinInputs: 2, MaxInputs: 2, Infer: inferGatherElements},
	{Name: "GatherND", Since: 11, MinInputs: 2, MaxInputs: 2, Infer: inferGatherND},
	{Name: "ScatterElements", MinInputs: 3, MaxInputs: 3, Infer: inferScatter},
	{Name: "ScatterND", MinInputs: 3, MaxInputs: 3, Infer: inferScatter},
	{Name: "OneHot", Since: 9, MinInputs: 3, MaxInputs: 3, HostInputs: []int{1}, Infer: inferOneHot},
}
