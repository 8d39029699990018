package graph

import "github.com/clinfer/clinfer/tensor"

// inferPool is MaxPool and AveragePool.
func inferPool(n *Node) error {
	maxOuts := 1
	if n.OpType == "MaxPool" {
		maxOuts = 2
	}
	if err := checkOutputs(n, 1, maxOuts); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	kernel := n.Attrs.Ints("kernel_shape", nil)
	if kernel == nil {
		return n.Errorf("attribute kernel_shape is required")
	}
	xs := x.Shape()
	rank := len(kernel) + 2
	if xs.RankKnown && len(xs.Dims) != rank {
		return n.Errorf("input %v has rank %d but kernel_shape %v needs rank %d", xs, len(xs.Dims), kernel, rank)
	}
	if !xs.RankKnown {
		xs = dynamicShape(rank)
	}
	w, err := readWindow(n, len(kernel), kernel)
	if err != nil {
		return err
	}
	if w.autoPad == "NOTSET" {
		// A pad as large as the window would make a window of padding
		// alone, with no input to pool (an average's divisor of 0);
		// onnxruntime refuses such a node too.
		for i, k := range kernel {
			if w.pads[i] >= k || w.pads[i+len(kernel)] >= k {
				return n.Errorf("pads %v: each pad must be smaller than kernel_shape %v (a window of padding alone has no input to pool)", w.pads, kernel)
			}
		}
	}
	sp, err := w.outDims(n, xs.Dims[2:], n.Attrs.Int("ceil_mode", 0) != 0)
	if err != nil {
		return err
	}
	out := PartialShape{Dims: append([]Dim{xs.Dims[0], xs.Dims[1]}, sp...), RankKnown: true}
	setOutput(n, 0, x.Type(), out)
	if len(n.Outputs) == 2 {
		setOutput(n, 1, tensor.I64, out.Clone())
	}
	return nil
}

func inferGlobalPool(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	if len(xs.Dims) < 3 {
		return n.Errorf("input has shape %v, want rank >= 3 (N, C, spatial...)", xs)
	}
	out := xs.Clone()
	for i := 2; i < len(out.Dims); i++ {
		out.Dims[i] = StaticDim(1)
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// poolOps are the poolings.
var poolOps = []OpSpec{
	{Name: "MaxPool", MinInputs: 1, MaxInputs: 1, KeepOutputs: 1, Infer: inferPool},
	{Name: "AveragePool", MinInputs: 1, MaxInputs: 1, Infer: inferPool},
	{Name: "GlobalAveragePool", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferGlobalPool},
	{Name: "GlobalMaxPool", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferGlobalPool},
}
