package graph

import "github.com/clinfer/clinfer/tensor"

func inferCast(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !n.Attrs.Has("to") {
		return n.Errorf("attribute to is required")
	}
	to := tensor.ElementType(n.Attrs.Int("to", 0))
	if !to.Valid() {
		return n.Errorf("attribute to=%d is not a clinfer element type", n.Attrs.Int("to", 0))
	}
	setOutput(n, 0, to, in.Shape().Clone())
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

// castOps convert element types.
var castOps = []OpSpec{
	{Name: "Cast", MinInputs: 1, MaxInputs: 1, ShapeMath: true, Infer: inferCast},
	{Name: "CastLike", Since: 15, MinInputs: 2, MaxInputs: 2, Infer: inferCastLike},
}
