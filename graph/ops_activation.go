package graph

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

// activationOps are the activation functions and the softmax family.
var activationOps = []OpSpec{
	{Name: "Relu", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferSignedUnary},
	{Name: "LeakyRelu", Since: 1, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 0.01}}, Infer: inferFloatUnary},
	{Name: "Sigmoid", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Tanh", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "HardSigmoid", Since: 1, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 0.2}, {"beta", 0.5}}, Infer: inferFloatUnary},
	{Name: "HardSwish", Since: 14, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Elu", Since: 1, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 1}}, Infer: inferFloatUnary},
	{Name: "Selu", Since: 1, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}}, Infer: inferFloatUnary},
	{Name: "Celu", Since: 12, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 1}}, Infer: inferFloatUnary},
	{Name: "Gelu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Mish", Since: 18, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Softplus", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "Softsign", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
	{Name: "ThresholdedRelu", Since: 10, MinInputs: 1, MaxInputs: 1, Params: []Param{{"alpha", 1}}, Infer: inferFloatUnary},
	{Name: "Shrink", Since: 9, MinInputs: 1, MaxInputs: 1, Params: []Param{{"lambd", 0.5}, {"bias", 0}}, Infer: inferNumericUnary},
	{Name: "Clip", Since: 11, MinInputs: 1, MaxInputs: 3, HostInputs: []int{1, 2}, Infer: inferClip},
	{Name: "PRelu", Since: 7, MinInputs: 2, MaxInputs: 2, Infer: inferPRelu},
	{Name: "Softmax", Since: 13, MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},
	{Name: "LogSoftmax", Since: 13, MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},
	{Name: "Hardmax", Since: 13, MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},
}
