package graph

// opList is the op set. Add an op here and put its inference function in the
// ops_*.go file of its family.
func opList() []OpSpec {
	return []OpSpec{
		{Name: OpParameter, MinInputs: 0, MaxInputs: 0},
		{Name: OpConstant, MinInputs: 0, MaxInputs: 0},
		{Name: OpResult, MinInputs: 1, MaxInputs: 1, Infer: inferResult},
	}
}

func inferResult(n *Node) error {
	in := n.Inputs[0]
	if !in.Valid() {
		return n.Errorf("result has no input")
	}
	n.Outputs[0].Type = in.Type()
	n.Outputs[0].Shape = in.Shape().Clone()
	return nil
}
