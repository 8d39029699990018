package graph

import (
	"github.com/clinfer/clinfer/tensor"
)

// The unary and binary inference helpers below serve the activation and
// compare families too.

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

func isNumeric(t tensor.ElementType) bool { return t.IsFloat() || (t.IsInteger() && t.Bits() != 4) }

func isSigned(t tensor.ElementType) bool { return isNumeric(t) && t.IsSigned() }

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

// inferMean is Mean: inferVariadic over float types only (ONNX's Mean
// takes f16, f32, f64 and bf16).
func inferMean(n *Node) error {
	if err := inferVariadic(n); err != nil {
		return err
	}
	if t := n.Outputs[0].Type; !isFloat(t) {
		return n.Errorf("inputs have element type %v, want a float type", t)
	}
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

// eltwiseOps are the element-wise arithmetic and math ops.
var eltwiseOps = []OpSpec{
	{Name: "Add", Since: 7, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferArith},
	{Name: "Sub", Since: 7, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferArith},
	{Name: "Mul", Since: 7, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferArith},
	{Name: "Div", Since: 7, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferArith},
	{Name: "Pow", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferPow},
	{Name: "Mod", Since: 10, MinInputs: 2, MaxInputs: 2, Infer: inferMod},
	{Name: "Max", Since: 1, MinInputs: 1, MaxInputs: -1, ShapeMath: true, Infer: inferVariadic},
	{Name: "Min", Since: 1, MinInputs: 1, MaxInputs: -1, ShapeMath: true, Infer: inferVariadic},
	{Name: "Sum", Since: 1, MinInputs: 1, MaxInputs: -1, Infer: inferVariadic},
	{Name: "Mean", Since: 1, MinInputs: 1, MaxInputs: -1, Infer: inferMean},
	{Name: "Sqrt", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Exp", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Log", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Erf", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
	{Name: "Reciprocal", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Neg", Since: 1, MinInputs: 1, MaxInputs: 1, ShapeMath: true, Infer: inferSignedUnary},
	{Name: "Abs", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
	{Name: "Sign", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
	{Name: "Floor", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Ceil", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Round", Since: 11, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Sin", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Cos", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Tan", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Asin", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Acos", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Atan", Since: 7, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Sinh", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Cosh", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Asinh", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Acosh", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Atanh", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
}
