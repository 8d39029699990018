package graph

import "slices"

// opList is the op set: the rows of every family, each row given its
// family here. Add an op as a row of its family's table in ops_F.go, with
// its inference function beside it; a row with Since > 0 is also all the
// ONNX frontend needs.
//
// Semantics are ONNX's newest opset, with attribute-era values as inputs:
//
//   - Slice(data, starts, ends, axes?, steps?); Squeeze(data, axes?);
//     Unsqueeze(data, axes); Clip(x, min?, max?); Pad(data, pads,
//     constant_value?, axes?) with mode constant/reflect/edge/wrap;
//     Split(x, split?) with attributes axis and num_outputs (the number of
//     outputs is the node's output count); ReduceXxx(data, axes?) with
//     keepdims and noop_with_empty_axes; Resize(X, roi?, scales?, sizes?).
//   - Cast's "to" attribute holds a tensor.ElementType as int64 (the onnx
//     frontend converts ONNX TensorProto data types), as does
//     LayerNormalization's optional stash_type.
//   - BatchNormalization is the inference form (one output); Dropout is the
//     inference form (Y and an optional boolean mask); MaxPool may have a
//     second output, the i64 Indices; LayerNormalization may have Mean and
//     InvStdDev outputs.
//   - Pooling with ceil_mode drops a last window that would start in the end
//     padding (PyTorch and onnxruntime behaviour).
func opList() []OpSpec {
	var all []OpSpec
	for _, f := range []struct {
		family Family
		ops    []OpSpec
	}{
		{FamilyModel, modelOps}, {FamilyEltwise, append(eltwiseOps, bitOps...)}, {FamilyActivation, activationOps},
		{FamilyCompare, compareOps}, {FamilyMovement, append(movementOps, cropOps...)}, {FamilyIndex, indexOps},
		{FamilyReduce, reduceOps}, {FamilyConv, append(convOps, col2ImOps...)}, {FamilyPool, append(poolOps, lpPoolOps...)}, {FamilyNorm, append(normOps, normStatsOps...)},
		{FamilyGemm, append(gemmOps, detOps...)}, {FamilyResize, append(resizeOps, affineOps...)}, {FamilyCast, castOps}, {FamilyShape, shapeOps},
		{FamilyCompact, compactOps}, {FamilyColor, colorOps}, {FamilyDetection, detectionOps}, {FamilySignal, append(signalOps, windowOps...)},
		{FamilyQuant, slices.Concat(quantOps, quantFusedOps)}, {FamilyKernelFusion, kernelFusionOps},
		{FamilyControl, controlOps},
		{FamilyRecurrent, recurrentOps},
		{FamilyLoss, lossOps}, {FamilySequence, sequenceOps}, {FamilyRandom, randomOps}, {FamilyString, stringOps},
	} {
		for _, s := range f.ops {
			s.Family = f.family
			all = append(all, s)
		}
	}
	return all
}

// modelOps are the model's housekeeping nodes.
var modelOps = []OpSpec{
	{Name: OpParameter, MinInputs: 0, MaxInputs: 0, Fold: FoldNever, Values: true},
	{Name: OpConstant, MinInputs: 0, MaxInputs: 0, Infer: inferConstant},
	{Name: OpResult, MinInputs: 1, MaxInputs: 1, Fold: FoldNever, Values: true, Infer: inferResult},
}

// inferConstant re-derives the port from the value, so a pass that swaps a
// constant's value (folding, precision conversion) only has to set Value.
func inferConstant(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if n.Elided() {
		return checkElided(n) // the port is what the value was
	}
	if n.Value == nil {
		return n.Errorf("constant has no value")
	}
	setOutput(n, 0, n.Value.Type(), StaticShape(n.Value.Shape()))
	return nil
}

func inferResult(n *Node) error {
	in := n.Inputs[0]
	if !in.Valid() {
		return n.Errorf("result has no input")
	}
	n.Outputs[0].Type = in.Type()
	n.Outputs[0].Shape = in.Shape().Clone()
	n.Outputs[0].Kind = in.Kind()
	return nil
}
