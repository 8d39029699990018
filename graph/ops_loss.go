package graph

import "github.com/clinfer/clinfer/tensor"

// The losses take scores [N, C, d1..dk] (log-probabilities for
// NegativeLogLikelihoodLoss) and integer targets [N, d1..dk] in [0, C) or
// ignore_index, with an optional weight per class, and reduce with
// reduction "none" (the loss per target), "sum" or "mean" (the sum divided
// by the sum of the weights of the targets not ignored).

// LossReduction returns n's reduction attribute, checked.
func LossReduction(n *Node) (string, error) {
	r := n.Attrs.String("reduction", "mean")
	switch r {
	case "none", "sum", "mean":
		return r, nil
	}
	return "", n.Errorf("reduction %q is not none, sum or mean", r)
}

// inferLoss is NegativeLogLikelihoodLoss(input, target, weight?) and
// SoftmaxCrossEntropyLoss(scores, labels, weights?) -> output
// (, log_prob: SoftmaxCrossEntropyLoss's log-softmax of the scores along
// axis 1).
func inferLoss(n *Node) error {
	if err := checkOutputs(n, 1, 2); err != nil {
		return err
	}
	if n.OpType == "NegativeLogLikelihoodLoss" && len(n.Outputs) != 1 {
		return n.Errorf("has %d outputs, want 1", len(n.Outputs))
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	t, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input 0 has element type %v, want a floating-point type", x.Type())
	}
	if t.Type() != tensor.I32 && t.Type() != tensor.I64 {
		return n.Errorf("input 1 (targets) has element type %v, want i32 or i64", t.Type())
	}
	if w := n.Input(2); w.Valid() && w.Type() != x.Type() {
		return n.Errorf("input 2 (weights) has element type %v, want %v as the scores", w.Type(), x.Type())
	}
	red, err := LossReduction(n)
	if err != nil {
		return err
	}
	xs, ts := x.Shape(), t.Shape()
	if xs.RankKnown && len(xs.Dims) < 2 {
		return n.Errorf("input 0 has shape %v, want [N, C, d1..dk]", xs)
	}
	if xs.RankKnown && ts.RankKnown && len(ts.Dims) != len(xs.Dims)-1 {
		return n.Errorf("targets have shape %v, want the scores' %v without axis 1", ts, xs)
	}
	out := PartialShape{RankKnown: true}
	if red == "none" {
		out = ts.Clone()
		if xs.RankKnown && ts.RankKnown {
			for i := range ts.Dims {
				j := i
				if i > 0 {
					j = i + 1 // the scores' axis 1 is the classes
				}
				d, ok := mergeDim(xs.Dims[j], ts.Dims[i])
				if !ok {
					return n.Errorf("targets have shape %v, want the scores' %v without axis 1", ts, xs)
				}
				out.Dims[i] = d
			}
		}
	}
	setOutput(n, 0, x.Type(), out)
	if len(n.Outputs) == 2 {
		setOutput(n, 1, x.Type(), xs.Clone())
	}
	return nil
}

// lossExamples are the examples of both losses: every reduction, class
// weights, an ignored target and extra axes. The targets are constants in
// [0, C).
func lossExamples(withLogProb bool) []Example {
	outs := 1
	if withLogProb {
		outs = 2
	}
	tg := ExampleInput{Shape: []int64{3}, Ints: []int64{2, 0, 3}}
	tg2 := ExampleInput{Type: tensor.I32, Shape: []int64{2, 3}, Ints: []int64{1, 0, 4, 4, 2, 1}}
	return []Example{
		{Name: "mean", Inputs: []ExampleInput{{Shape: []int64{3, 5}}, tg}, Outputs: outs},
		{Name: "sum_weights", Attrs: Attrs{"reduction": "sum"}, Inputs: []ExampleInput{{Shape: []int64{3, 5}}, tg, {Shape: []int64{5}, Positive: true}}, Outputs: outs},
		{Name: "none_ignore", Attrs: Attrs{"reduction": "none", "ignore_index": int64(4)}, Inputs: []ExampleInput{{Shape: []int64{2, 5, 3}}, tg2}, Outputs: outs},
		{Name: "mean_weights_ignore", Attrs: Attrs{"ignore_index": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 5, 3}}, tg2, {Shape: []int64{5}, Positive: true}}, Outputs: outs},
	}
}

// lossOps are the rows of the loss family.
var lossOps = []OpSpec{
	{Name: "NegativeLogLikelihoodLoss", Since: 12, MinInputs: 2, MaxInputs: 3, Infer: inferLoss, Examples: lossExamples(false)},
	{Name: "SoftmaxCrossEntropyLoss", Since: 12, MinInputs: 2, MaxInputs: 3, KeepOutputs: 1, Infer: inferLoss, Examples: lossExamples(true)},
}
