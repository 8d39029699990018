package graph

import (
	"github.com/clinfer/clinfer/tensor"
)

// Inference for element-wise ops: unary math and activations, broadcasting
// binary arithmetic, comparisons and logic, the variadic Max/Min/Sum/Mean,
// Clip, PRelu and the softmax family.

// broadcastInputs broadcasts the shapes of the given inputs together.
func broadcastInputs(n *Node, idx ...int) (PartialShape, error) {
	var out PartialShape
	for j, i := range idx {
		in := n.Input(i)
		if !in.Valid() {
			return PartialShape{}, n.Errorf("required input %d is missing", i)
		}
		if j == 0 {
			out = in.Shape().Clone()
			continue
		}
		s, err := BroadcastShapes(out, in.Shape())
		if err != nil {
			return PartialShape{}, n.Errorf("input %d: %w", i, err)
		}
		out = s
	}
	return out, nil
}

// unary returns an inference function for a one-input, one-output op whose
// output has its input's type and shape. pred, when set, restricts the
// input's element type.
func unary(pred func(tensor.ElementType) bool, want string) func(*Node) error {
	return func(n *Node) error {
		if err := checkOutputs(n, 1, 1); err != nil {
			return err
		}
		in, err := requiredInput(n, 0)
		if err != nil {
			return err
		}
		if pred != nil && !pred(in.Type()) {
			return n.Errorf("input has element type %v, want %s", in.Type(), want)
		}
		setOutput(n, 0, in.Type(), in.Shape().Clone())
		return nil
	}
}

func isFloat(t tensor.ElementType) bool { return t.IsFloat() }

func isNumeric(t tensor.ElementType) bool { return t.IsFloat() || t.IsInteger() }

func isSigned(t tensor.ElementType) bool { return t.IsFloat() || (t.IsInteger() && t != tensor.U8) }

func isBool(t tensor.ElementType) bool { return t == tensor.Bool }

var (
	inferFloatUnary   = unary(isFloat, "a floating-point type")
	inferNumericUnary = unary(isNumeric, "a numeric type")
	inferSignedUnary  = unary(isSigned, "a signed numeric type")
	inferNot          = unary(isBool, "boolean")
)

// binary returns the inference function of a broadcasting two-input op.
// out is the output type (Undefined: the inputs' type); pred restricts the
// inputs' type.
func binary(out tensor.ElementType, pred func(tensor.ElementType) bool, want string) func(*Node) error {
	return func(n *Node) error {
		if err := checkOutputs(n, 1, 1); err != nil {
			return err
		}
		s, err := broadcastInputs(n, 0, 1)
		if err != nil {
			return err
		}
		t, err := sameTypes(n, 0, 1)
		if err != nil {
			return err
		}
		if pred != nil && !pred(t) {
			return n.Errorf("inputs have element type %v, want %s", t, want)
		}
		if out != tensor.Undefined {
			t = out
		}
		setOutput(n, 0, t, s)
		return nil
	}
}

var (
	inferArith   = binary(tensor.Undefined, isNumeric, "a numeric type")
	inferCompare = binary(tensor.Bool, nil, "")
	inferLogic   = binary(tensor.Bool, isBool, "boolean")
)

// inferPow allows the exponent to have its own numeric type (ONNX T1).
func inferPow(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	s, err := broadcastInputs(n, 0, 1)
	if err != nil {
		return err
	}
	base, exp := n.Inputs[0].Type(), n.Inputs[1].Type()
	if !isNumeric(base) || !isNumeric(exp) {
		return n.Errorf("inputs have element types %v and %v, want numeric types", base, exp)
	}
	setOutput(n, 0, base, s)
	return nil
}

// inferVariadic is Max, Min, Sum and Mean: one or more same-typed inputs
// broadcast together.
func inferVariadic(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	idx := allInputs(n)
	t, err := sameTypes(n, idx...)
	if err != nil {
		return err
	}
	if !isNumeric(t) {
		return n.Errorf("inputs have element type %v, want a numeric type", t)
	}
	s, err := broadcastInputs(n, idx...)
	if err != nil {
		return err
	}
	setOutput(n, 0, t, s)
	return nil
}

func inferClip(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		if b := n.Input(i); b.Valid() {
			s := b.Shape()
			if s.RankKnown && !(len(s.Dims) == 0 || (len(s.Dims) == 1 && s.Dims[0].Size == 1)) {
				return n.Errorf("input %d (bound) has shape %v, want a scalar", i, s)
			}
		}
	}
	setOutput(n, 0, in.Type(), in.Shape().Clone())
	return nil
}

func inferPRelu(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	slope, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if _, err := sameTypes(n, 0, 1); err != nil {
		return err
	}
	if err := unidirectional(n, slope.Shape(), x.Shape(), "slope"); err != nil {
		return err
	}
	setOutput(n, 0, x.Type(), x.Shape().Clone())
	return nil
}

// inferSoftmax is Softmax, LogSoftmax and Hardmax: like a unary op with an
// axis (default -1) that must be in range.
func inferSoftmax(n *Node) error {
	if err := inferFloatUnary(n); err != nil {
		return err
	}
	if r := n.Inputs[0].Shape().Rank(); r >= 0 {
		if r == 0 {
			return n.Errorf("input is a scalar, want rank >= 1")
		}
		if _, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), r); err != nil {
			return err
		}
	}
	return nil
}
