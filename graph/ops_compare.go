package graph

import "github.com/clinfer/clinfer/tensor"

func inferWhere(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 3 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	if c := n.Inputs[0].Type(); c != tensor.Bool {
		return n.Errorf("condition has element type %v, want boolean", c)
	}
	t, err := sameTypes(n, 1, 2)
	if err != nil {
		return err
	}
	s, err := broadcastInputs(n, 0, 1, 2)
	if err != nil {
		return err
	}
	setOutput(n, 0, t, s)
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

// compareOps are the comparisons, logic, Where and the float classifiers.
var compareOps = []OpSpec{
	{Name: "Equal", Since: 7, MinInputs: 2, MaxInputs: 2, ShapeMath: true, Infer: inferCompare},
	{Name: "Greater", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
	{Name: "Less", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
	{Name: "GreaterOrEqual", Since: 12, MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
	{Name: "LessOrEqual", Since: 12, MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
	{Name: "And", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
	{Name: "Or", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
	{Name: "Xor", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
	{Name: "Not", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferNot},
	{Name: "Where", Since: 9, MinInputs: 3, MaxInputs: 3, ShapeMath: true, Infer: inferWhere},
	{Name: "IsNaN", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferIsClass},
	{Name: "IsInf", Since: 10, MinInputs: 1, MaxInputs: 1, Params: []Param{{"detect_positive", 1}, {"detect_negative", 1}}, Infer: inferIsClass},
}
