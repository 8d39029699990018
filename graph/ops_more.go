package graph

import (
	"github.com/clinfer/clinfer/tensor"
)

// Inference for the ops added to widen ONNX coverage: ArgMax/ArgMin, Size,
// GatherElements, GatherND, ScatterElements, ScatterND, Trilu, Mod,
// CastLike, IsNaN, IsInf, CumSum, OneHot, DepthToSpace, SpaceToDepth, TopK,
// Shrink and EyeLike. (The extra reductions use inferReduce and the extra
// unary math inferFloatUnary.)

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

// inferSize is Size: the i64 scalar number of elements of its input.
func inferSize(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if _, err := requiredInput(n, 0); err != nil {
		return err
	}
	setOutput(n, 0, tensor.I64, PartialShape{Dims: []Dim{}, RankKnown: true})
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

// inferTrilu is Trilu(input, k?): same type and shape, rank >= 2.
func inferTrilu(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if r := x.Shape().Rank(); r >= 0 && r < 2 {
		return n.Errorf("input has rank %d, want >= 2", r)
	}
	if k := n.Input(1); k.Valid() && !isIndexType(k.Type()) {
		return n.Errorf("k has element type %v, want i64", k.Type())
	}
	setOutput(n, 0, x.Type(), x.Shape().Clone())
	return nil
}

// inferMod is Mod: broadcasting, same numeric types; float inputs need
// fmod=1.
func inferMod(n *Node) error {
	if err := binary(tensor.Undefined, isNumeric, "a numeric type")(n); err != nil {
		return err
	}
	if n.Inputs[0].Type().IsFloat() && n.Attrs.Int("fmod", 0) == 0 {
		return n.Errorf("floating-point inputs need fmod=1")
	}
	return nil
}

// inferCastLike is CastLike(input, target_type): input cast to the element
// type of target_type.
func inferCastLike(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	like, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	setOutput(n, 0, like.Type(), x.Shape().Clone())
	return nil
}

// inferIsClass is IsNaN and IsInf: a boolean of the float input's shape.
func inferIsClass(n *Node) error {
	if err := inferFloatUnary(n); err != nil {
		return err
	}
	n.Outputs[0].Type = tensor.Bool
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

// inferNumericUnaryOf sets output 0 to input 0's type and shape, checking
// that it is numeric, without limiting the number of inputs.
func inferNumericUnaryOf(n *Node) error {
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
	setOutput(n, 0, x.Type(), x.Shape().Clone())
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

// inferSpaceDepth is DepthToSpace and SpaceToDepth on NCHW input with
// attribute blocksize.
func inferSpaceDepth(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	b := n.Attrs.Int("blocksize", 0)
	if b <= 0 {
		return n.Errorf("attribute blocksize must be positive, got %d", b)
	}
	if m := n.Attrs.String("mode", "DCR"); m != "DCR" && m != "CRD" {
		return n.Errorf("mode %q is not one of DCR, CRD", m)
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), dynamicShape(4))
		return nil
	}
	if len(xs.Dims) != 4 {
		return n.Errorf("input has shape %v, want rank 4 (N, C, H, W)", xs)
	}
	out := xs.Clone()
	scale := func(d Dim, mul bool) (Dim, error) {
		if !d.IsStatic() {
			return DynamicDim(""), nil
		}
		if mul {
			return StaticDim(d.Size * b), nil
		}
		if d.Size%b != 0 {
			return Dim{}, n.Errorf("dimension %d of %v is not divisible by blocksize %d", d.Size, xs, b)
		}
		return StaticDim(d.Size / b), nil
	}
	d2s := n.OpType == "DepthToSpace"
	c := xs.Dims[1]
	if c.IsStatic() {
		if d2s {
			if c.Size%(b*b) != 0 {
				return n.Errorf("channels %d of %v are not divisible by blocksize^2 = %d", c.Size, xs, b*b)
			}
			c = StaticDim(c.Size / (b * b))
		} else {
			c = StaticDim(c.Size * b * b)
		}
	}
	out.Dims[1] = c
	for i := 2; i < 4; i++ {
		if out.Dims[i], err = scale(xs.Dims[i], d2s); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), out)
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

// inferEyeLike is EyeLike: a 2-D identity of the input's shape, of type
// dtype (an int64(tensor.ElementType), like Cast's "to") or the input's.
func inferEyeLike(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if r := x.Shape().Rank(); r >= 0 && r != 2 {
		return n.Errorf("input has rank %d, want 2", r)
	}
	t := x.Type()
	if n.Attrs.Has("dtype") {
		t = tensor.ElementType(n.Attrs.Int("dtype", 0))
		if !t.Valid() {
			return n.Errorf("attribute dtype=%d is not a clinfer element type", n.Attrs.Int("dtype", 0))
		}
	}
	setOutput(n, 0, t, x.Shape().Clone())
	return nil
}
