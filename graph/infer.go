package graph

import (
	"fmt"

	"github.com/clinfer/clinfer/tensor"
)

// Helpers shared by the inference functions of ops_*.go.

// checkOutputs returns an error unless n has between lo and hi output ports.
func checkOutputs(n *Node, lo, hi int) error {
	if len(n.Outputs) < lo || len(n.Outputs) > hi {
		if lo == hi {
			return n.Errorf("has %d outputs, want %d", len(n.Outputs), lo)
		}
		return n.Errorf("has %d outputs, want %d to %d", len(n.Outputs), lo, hi)
	}
	return nil
}

// setOutput sets output i's type and shape.
func setOutput(n *Node, i int, t tensor.ElementType, s PartialShape) {
	n.Outputs[i].Type = t
	n.Outputs[i].Shape = s
}

// requiredInput returns input i, or an error naming the node when it is
// omitted.
func requiredInput(n *Node, i int) (Output, error) {
	in := n.Input(i)
	if !in.Valid() {
		return Output{}, n.Errorf("required input %d is missing", i)
	}
	return in, nil
}

// present reports whether optional input i is given.
func present(n *Node, i int) bool { return n.Input(i).Valid() }

// NormalizeAxis maps a possibly negative axis into [0, rank), returning an
// error naming the node when it is out of range.
func NormalizeAxis(n *Node, axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, n.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// normalizeAxes normalises a list of axes and rejects duplicates.
func normalizeAxes(n *Node, axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := make(map[int]bool, len(axes))
	for i, a := range axes {
		ax, err := NormalizeAxis(n, a, rank)
		if err != nil {
			return nil, err
		}
		if seen[ax] {
			return nil, n.Errorf("axis %d is listed twice in %v", a, axes)
		}
		seen[ax] = true
		out[i] = ax
	}
	return out, nil
}

// dynamicShape returns a PartialShape of the given rank with every dimension
// dynamic.
func dynamicShape(rank int) PartialShape {
	p := PartialShape{Dims: make([]Dim, rank), RankKnown: true}
	for i := range p.Dims {
		p.Dims[i] = DynamicDim("")
	}
	return p
}

// mergeDim unifies two dimensions that must be equal; ok is false when both
// are static and differ.
func mergeDim(a, b Dim) (Dim, bool) {
	switch {
	case a.IsStatic() && b.IsStatic():
		return a, a.Size == b.Size
	case a.IsStatic():
		return a, true
	case b.IsStatic():
		return b, true
	case a.Name == "":
		return b, true
	default:
		return a, true
	}
}

// broadcastDim combines two dimensions under numpy broadcasting.
func broadcastDim(a, b Dim) (Dim, bool) {
	switch {
	case a.IsStatic() && b.IsStatic():
		if a.Size == b.Size || b.Size == 1 {
			return a, true
		}
		if a.Size == 1 {
			return b, true
		}
		return Dim{}, false
	case a.IsStatic():
		if a.Size == 1 {
			return b, true
		}
		return a, true
	case b.IsStatic():
		if b.Size == 1 {
			return a, true
		}
		return b, true
	default:
		// Both dynamic: either may be 1, so only equal names are known to
		// give the same dimension.
		if a.Name != "" && a.Name == b.Name {
			return a, true
		}
		return DynamicDim(""), true
	}
}

// BroadcastShapes combines two partial shapes under numpy (multidirectional)
// broadcasting. It returns an error naming both shapes when they cannot be
// broadcast.
func BroadcastShapes(a, b PartialShape) (PartialShape, error) {
	if !a.RankKnown || !b.RankKnown {
		return DynamicRank, nil
	}
	r := max(len(a.Dims), len(b.Dims))
	out := PartialShape{Dims: make([]Dim, r), RankKnown: true}
	for i := range r {
		da, db := StaticDim(1), StaticDim(1)
		if j := i - (r - len(a.Dims)); j >= 0 {
			da = a.Dims[j]
		}
		if j := i - (r - len(b.Dims)); j >= 0 {
			db = b.Dims[j]
		}
		d, ok := broadcastDim(da, db)
		if !ok {
			return PartialShape{}, fmt.Errorf("shapes %v and %v cannot be broadcast (axis %d: %v vs %v)", a, b, i, da, db)
		}
		out.Dims[i] = d
	}
	return out, nil
}

// unidirectional checks that from can be broadcast to to (ONNX
// "unidirectional broadcasting") and returns to.
func unidirectional(n *Node, from, to PartialShape, what string) error {
	if !from.RankKnown || !to.RankKnown {
		return nil
	}
	if len(from.Dims) > len(to.Dims) {
		return n.Errorf("%s shape %v cannot be broadcast to %v", what, from, to)
	}
	off := len(to.Dims) - len(from.Dims)
	for i, d := range from.Dims {
		t := to.Dims[off+i]
		if d.IsStatic() && d.Size != 1 && t.IsStatic() && t.Size != d.Size {
			return n.Errorf("%s shape %v cannot be broadcast to %v", what, from, to)
		}
	}
	return nil
}

// sameTypes checks that all present inputs in idx share one element type
// and returns it.
func sameTypes(n *Node, idx ...int) (tensor.ElementType, error) {
	var t tensor.ElementType
	first := -1
	for _, i := range idx {
		in := n.Input(i)
		if !in.Valid() {
			continue
		}
		if first < 0 {
			t, first = in.Type(), i
			continue
		}
		if in.Type() != t {
			return 0, n.Errorf("input %d has element type %v but input %d has %v", i, in.Type(), first, t)
		}
	}
	return t, nil
}

// allInputs returns the indices 0..len(n.Inputs)-1.
func allInputs(n *Node) []int {
	idx := make([]int, len(n.Inputs))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// IntValues returns the elements of an integer tensor as int64s (any layout).
// ok is false for non-integer tensors.
func IntValues(t *tensor.Tensor) ([]int64, bool) {
	if t == nil || t.Kind() != tensor.KindTensor || !t.Type().IsInteger() {
		return nil, false
	}
	return t.Int64s()
}

// floatValues returns the elements of an f32, f64 or integer tensor as
// float64s.
func floatValues(t *tensor.Tensor) ([]float64, bool) {
	if t == nil {
		return nil, false
	}
	c := t.Contiguous()
	switch c.Type() {
	case tensor.F32:
		out := make([]float64, 0, c.NumElements())
		for _, v := range c.F32() {
			out = append(out, float64(v))
		}
		return out, true
	case tensor.F64:
		return append([]float64{}, c.F64()...), true
	}
	ints, ok := IntValues(c)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(ints))
	for i, v := range ints {
		out[i] = float64(v)
	}
	return out, true
}

// ConstInts returns the integer values of input i when they are known
// statically (see StaticValue). ok is false for an omitted input, a value
// that depends on runtime data, or a non-integer value.
func (n *Node) ConstInts(i int) ([]int64, bool) {
	in := n.Input(i)
	if !in.Valid() {
		return nil, false
	}
	t, ok := StaticValue(in)
	if !ok {
		return nil, false
	}
	return IntValues(t)
}

// constFloats returns the values of input i when it is a constant.
func constFloats(n *Node, i int) ([]float64, bool) {
	in := n.Input(i)
	if !in.Valid() {
		return nil, false
	}
	t, ok := StaticValue(in)
	if !ok {
		return nil, false
	}
	return floatValues(t)
}

// shapeVector returns the partially known values of a 1-D integer input
// (Reshape's shape, Expand's shape): one symInt per element. ok is false
// when not even the length is known.
func shapeVector(n *Node, i int) ([]symInt, bool) {
	in := n.Input(i)
	if !in.Valid() {
		return nil, false
	}
	if v := newSymEval().eval(in); v != nil && len(v.shape) <= 1 {
		return v.vals, true
	}
	s := in.Shape()
	if s.Rank() == 1 && s.Dims[0].IsStatic() {
		vals := make([]symInt, s.Dims[0].Size)
		return vals, true
	}
	return nil, false
}

// symToDim converts a partially known shape value into a dimension.
func symToDim(v symInt) Dim {
	if v.known {
		return StaticDim(v.v)
	}
	return DynamicDim(v.name)
}

// ceilDiv is ceil(a/b) for b > 0.
func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	if a >= 0 {
		return (a + b - 1) / b
	}
	return -((-a) / b)
}

// floorDiv is floor(a/b) for b > 0.
func floorDiv(a, b int64) int64 {
	if a >= 0 {
		return a / b
	}
	return -((-a + b - 1) / b)
}

// isIndexType reports whether t can index (i32 or i64).
func isIndexType(t tensor.ElementType) bool { return t == tensor.I32 || t == tensor.I64 }
