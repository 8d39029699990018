package graph

// Normalisations by statistics computed on the input:
// MeanVarianceNormalization, LpNormalization and training-mode batch
// normalisation.

// MVNEpsilon is what MeanVarianceNormalization adds to the standard
// deviation (ONNX's function body).
const MVNEpsilon = 1e-9

// MVNAxes returns MeanVarianceNormalization's axes, normalised (default
// 0, 2, 3: all but the channels of NCHW data).
func MVNAxes(n *Node, rank int) ([]int, error) {
	return normalizeAxes(n, n.Attrs.Ints("axes", []int64{0, 2, 3}), rank)
}

// inferSameFloat sets output 0 to input 0's float type and shape.
func inferSameFloat(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	if s := x.Shape(); s.RankKnown {
		if n.OpType == "MeanVarianceNormalization" {
			if _, err := MVNAxes(n, len(s.Dims)); err != nil {
				return err
			}
		} else if _, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), len(s.Dims)); err != nil {
			return err
		}
	}
	if n.OpType == "LpNormalization" {
		if p := n.Attrs.Int("p", 2); p != 1 && p != 2 {
			return n.Errorf("p %d is not 1 or 2", p)
		}
	}
	setOutput(n, 0, x.Type(), x.Shape().Clone())
	return nil
}

// inferBatchNormTraining is BatchNormalizationTraining(X, scale, B,
// input_mean, input_var) -> (Y, running_mean, running_var): X normalised
// with its own per-channel mean and (population) variance, and the running
// statistics moved towards them by 1-momentum.
func inferBatchNormTraining(n *Node) error {
	if err := checkOutputs(n, 1, 3); err != nil {
		return err
	}
	m := *n
	m.Outputs = n.Outputs[:1]
	if err := inferBatchNorm(&m); err != nil {
		return err
	}
	c := n.Inputs[3].Shape()
	for i := 1; i < len(n.Outputs); i++ {
		setOutput(n, i, n.Inputs[3].Type(), c.Clone())
	}
	return nil
}

// normStatsOps are the norm family's normalisations by the input's own
// statistics.
var normStatsOps = []OpSpec{
	{Name: "MeanVarianceNormalization", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferSameFloat, Examples: []Example{
		{Name: "default_axes", Inputs: []ExampleInput{{Shape: []int64{2, 3, 4, 5}}}},
		{Name: "last_axis", Attrs: Attrs{"axes": []int64{-1}}, Inputs: []ExampleInput{{Shape: []int64{3, 17}}}},
	}},
	{Name: "LpNormalization", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferSameFloat, Examples: []Example{
		{Name: "l2_last", Inputs: []ExampleInput{{Shape: []int64{4, 9}}}},
		{Name: "l1_axis1", Attrs: Attrs{"p": int64(1), "axis": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 5, 3}}}},
	}},
	{Name: "BatchNormalizationTraining", MinInputs: 5, MaxInputs: 5, KeepOutputs: 1, Params: []Param{{"epsilon", 1e-5}, {"momentum", 0.9}},
		Infer: inferBatchNormTraining, Examples: []Example{
			{Name: "nchw", Attrs: Attrs{"momentum": float32(0.8)}, Outputs: 3, Inputs: []ExampleInput{{Shape: []int64{2, 3, 4, 5}},
				{Shape: []int64{3}}, {Shape: []int64{3}}, {Shape: []int64{3}}, {Shape: []int64{3}, Positive: true}}},
			{Name: "nc", Inputs: []ExampleInput{{Shape: []int64{6, 4}}, {Shape: []int64{4}}, {Shape: []int64{4}}, {Shape: []int64{4}}, {Shape: []int64{4}, Positive: true}}},
		}},
}
