package graph

import (
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// shapeRange returns Shape's [start, end) over a rank, clamped as ONNX does.
func shapeRange(n *Node, rank int) (int, int) {
	clamp := func(v int64) int {
		if v < 0 {
			v += int64(rank)
		}
		return int(min(max(v, 0), int64(rank)))
	}
	lo := clamp(n.Attrs.Int("start", 0))
	hi := clamp(n.Attrs.Int("end", int64(rank)))
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func inferShape(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	if !s.RankKnown {
		setOutput(n, 0, tensor.I64, dynamicShape(1))
		return nil
	}
	lo, hi := shapeRange(n, len(s.Dims))
	setOutput(n, 0, tensor.I64, ShapeOf(int64(hi-lo)))
	return nil
}

// shapeFromInput builds an output shape from a 1-D shape input (Expand,
// ConstantOfShape).
func shapeFromInput(n *Node, i int) (PartialShape, error) {
	in := n.Input(i)
	if in.Type() != tensor.I64 {
		return PartialShape{}, n.Errorf("shape input has element type %v, want i64", in.Type())
	}
	if r := in.Shape().Rank(); r > 1 {
		return PartialShape{}, n.Errorf("shape input has rank %d, want 1", r)
	}
	vals, ok := shapeVector(n, i)
	if !ok {
		return DynamicRank, nil
	}
	out := PartialShape{Dims: make([]Dim, len(vals)), RankKnown: true}
	for j, v := range vals {
		if v.known && v.v < 0 {
			return PartialShape{}, n.Errorf("shape %v has a negative dimension", symString(vals))
		}
		out.Dims[j] = symToDim(v)
	}
	return out, nil
}

func inferConstantOfShape(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if _, err := requiredInput(n, 0); err != nil {
		return err
	}
	t := tensor.F32
	if v := n.Attrs.Tensor("value"); v != nil {
		if v.NumElements() != 1 {
			return n.Errorf("value attribute has %d elements, want 1", v.NumElements())
		}
		t = v.Type()
	}
	s, err := shapeFromInput(n, 0)
	if err != nil {
		return err
	}
	setOutput(n, 0, t, s)
	return nil
}

func inferRange(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	for i := range 3 {
		in := n.Input(i)
		if !in.Valid() {
			return n.Errorf("required input %d is missing", i)
		}
		if r := in.Shape().Rank(); r > 0 && !(r == 1 && in.Shape().Dims[0].Size == 1) {
			return n.Errorf("input %d has shape %v, want a scalar", i, in.Shape())
		}
	}
	start, ok1 := constFloats(n, 0)
	limit, ok2 := constFloats(n, 1)
	delta, ok3 := constFloats(n, 2)
	if !ok1 || !ok2 || !ok3 || len(start) != 1 || len(limit) != 1 || len(delta) != 1 {
		setOutput(n, 0, t, dynamicShape(1))
		return nil
	}
	if delta[0] == 0 {
		return n.Errorf("delta is 0")
	}
	cnt := int64(max(math.Ceil((limit[0]-start[0])/delta[0]), 0))
	setOutput(n, 0, t, ShapeOf(cnt))
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

// EvalFromShapes computes the output of a node whose op folds from shapes
// alone (Fold FoldShapes: Shape, Size), given its inputs' static shapes;
// devices that know shapes before inference use it instead of running a
// kernel. Any other op is an error naming the node.
func EvalFromShapes(n *Node, in []tensor.Shape) (*tensor.Tensor, error) {
	if FoldOf(n) != FoldShapes || len(in) != 1 {
		return nil, n.Errorf("does not fold from %d input shapes", len(in))
	}
	s := in[0]
	switch n.OpType {
	case "Shape":
		lo, hi := shapeRange(n, len(s))
		dims := append([]int64{}, s[lo:hi]...)
		return tensor.FromI64(tensor.Shape{int64(len(dims))}, dims)
	case "Size":
		return tensor.FromI64(tensor.Shape{}, []int64{s.NumElements()})
	}
	return nil, n.Errorf("has no shape-only evaluation")
}

// shapeOps make values from shapes.
var shapeOps = []OpSpec{
	{Name: "Shape", Since: 1, MinInputs: 1, MaxInputs: 1, Fold: FoldShapes, ShapeMath: true, Infer: inferShape},
	{Name: "Size", Since: 1, MinInputs: 1, MaxInputs: 1, Fold: FoldShapes, ShapeMath: true, Infer: inferSize},
	{Name: "ConstantOfShape", Since: 9, MinInputs: 1, MaxInputs: 1, HostInputs: []int{0}, ShapeMath: true, Infer: inferConstantOfShape},
	{Name: "Range", Since: 11, MinInputs: 3, MaxInputs: 3, HostInputs: []int{0, 1, 2}, ShapeMath: true, Infer: inferRange},
	{Name: "EyeLike", MinInputs: 1, MaxInputs: 1, Infer: inferEyeLike},
}
