package graph

// opList is the op set. Add an op here and put its inference function in the
// ops_*.go file of its family.
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
	return []OpSpec{
		{Name: OpParameter, MinInputs: 0, MaxInputs: 0},
		{Name: OpConstant, MinInputs: 0, MaxInputs: 0, Infer: inferConstant},
		{Name: OpResult, MinInputs: 1, MaxInputs: 1, Infer: inferResult},

		// Convolution, pooling, normalisation, linear algebra.
		{Name: "Conv", MinInputs: 2, MaxInputs: 3, Infer: inferConv},
		{Name: "ConvTranspose", MinInputs: 2, MaxInputs: 3, Infer: inferConvTranspose},
		{Name: "MaxPool", MinInputs: 1, MaxInputs: 1, Infer: inferPool},
		{Name: "AveragePool", MinInputs: 1, MaxInputs: 1, Infer: inferPool},
		{Name: "GlobalAveragePool", MinInputs: 1, MaxInputs: 1, Infer: inferGlobalPool},
		{Name: "GlobalMaxPool", MinInputs: 1, MaxInputs: 1, Infer: inferGlobalPool},
		{Name: "BatchNormalization", MinInputs: 5, MaxInputs: 5, Infer: inferBatchNorm},
		{Name: "LayerNormalization", MinInputs: 2, MaxInputs: 3, Infer: inferLayerNorm},
		{Name: "InstanceNormalization", MinInputs: 3, MaxInputs: 3, Infer: inferInstanceNorm},
		{Name: "MatMul", MinInputs: 2, MaxInputs: 2, Infer: inferMatMul},
		{Name: "Gemm", MinInputs: 2, MaxInputs: 3, Infer: inferGemm},
		{Name: "Resize", MinInputs: 1, MaxInputs: 4, Infer: inferResize},

		// Binary arithmetic (numpy broadcasting, same element types).
		{Name: "Add", MinInputs: 2, MaxInputs: 2, Infer: inferArith},
		{Name: "Sub", MinInputs: 2, MaxInputs: 2, Infer: inferArith},
		{Name: "Mul", MinInputs: 2, MaxInputs: 2, Infer: inferArith},
		{Name: "Div", MinInputs: 2, MaxInputs: 2, Infer: inferArith},
		{Name: "Pow", MinInputs: 2, MaxInputs: 2, Infer: inferPow},
		{Name: "PRelu", MinInputs: 2, MaxInputs: 2, Infer: inferPRelu},
		{Name: "Max", MinInputs: 1, MaxInputs: -1, Infer: inferVariadic},
		{Name: "Min", MinInputs: 1, MaxInputs: -1, Infer: inferVariadic},
		{Name: "Sum", MinInputs: 1, MaxInputs: -1, Infer: inferVariadic},
		{Name: "Mean", MinInputs: 1, MaxInputs: -1, Infer: inferVariadic},

		// Comparisons and logic (boolean outputs).
		{Name: "Equal", MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
		{Name: "Greater", MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
		{Name: "Less", MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
		{Name: "GreaterOrEqual", MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
		{Name: "LessOrEqual", MinInputs: 2, MaxInputs: 2, Infer: inferCompare},
		{Name: "And", MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
		{Name: "Or", MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
		{Name: "Xor", MinInputs: 2, MaxInputs: 2, Infer: inferLogic},
		{Name: "Not", MinInputs: 1, MaxInputs: 1, Infer: inferNot},
		{Name: "Where", MinInputs: 3, MaxInputs: 3, Infer: inferWhere},

		// Unary math.
		{Name: "Sqrt", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Exp", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Log", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Erf", MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
		{Name: "Reciprocal", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Neg", MinInputs: 1, MaxInputs: 1, Infer: inferSignedUnary},
		{Name: "Abs", MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
		{Name: "Sign", MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
		{Name: "Floor", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Ceil", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Round", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Sin", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Cos", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},

		// Activations.
		{Name: "Relu", MinInputs: 1, MaxInputs: 1, Infer: inferSignedUnary},
		{Name: "LeakyRelu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Sigmoid", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Tanh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "HardSigmoid", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "HardSwish", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Elu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Selu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Celu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Gelu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Mish", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Softplus", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Softsign", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "ThresholdedRelu", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Clip", MinInputs: 1, MaxInputs: 3, Infer: inferClip},
		{Name: "Softmax", MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},
		{Name: "LogSoftmax", MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},
		{Name: "Hardmax", MinInputs: 1, MaxInputs: 1, Infer: inferSoftmax},

		// Reductions.
		{Name: "ReduceMean", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceSum", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceMax", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceMin", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},

		// Shape and data movement.
		{Name: "Reshape", MinInputs: 2, MaxInputs: 2, Infer: inferReshape},
		{Name: "Flatten", MinInputs: 1, MaxInputs: 1, Infer: inferFlatten},
		{Name: "Transpose", MinInputs: 1, MaxInputs: 1, Infer: inferTranspose},
		{Name: "Squeeze", MinInputs: 1, MaxInputs: 2, Infer: inferSqueeze},
		{Name: "Unsqueeze", MinInputs: 2, MaxInputs: 2, Infer: inferUnsqueeze},
		{Name: "Concat", MinInputs: 1, MaxInputs: -1, Infer: inferConcat},
		{Name: "Split", MinInputs: 1, MaxInputs: 2, Infer: inferSplit},
		{Name: "Slice", MinInputs: 3, MaxInputs: 5, Infer: inferSlice},
		{Name: "Gather", MinInputs: 2, MaxInputs: 2, Infer: inferGather},
		{Name: "Shape", MinInputs: 1, MaxInputs: 1, Infer: inferShape},
		{Name: "Cast", MinInputs: 1, MaxInputs: 1, Infer: inferCast},
		{Name: "ConstantOfShape", MinInputs: 1, MaxInputs: 1, Infer: inferConstantOfShape},
		{Name: "Expand", MinInputs: 2, MaxInputs: 2, Infer: inferExpand},
		{Name: "Tile", MinInputs: 2, MaxInputs: 2, Infer: inferTile},
		{Name: "Pad", MinInputs: 2, MaxInputs: 4, Infer: inferPad},
		{Name: "Range", MinInputs: 3, MaxInputs: 3, Infer: inferRange},
		{Name: "Identity", MinInputs: 1, MaxInputs: 1, Infer: inferIdentity},
		{Name: "Dropout", MinInputs: 1, MaxInputs: 3, Infer: inferDropout},

		// Ops added for ONNX coverage (ops_more.go).
		{Name: "ArgMax", MinInputs: 1, MaxInputs: 1, Infer: inferArg},
		{Name: "ArgMin", MinInputs: 1, MaxInputs: 1, Infer: inferArg},
		{Name: "ReduceProd", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceL1", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceL2", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceSumSquare", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "ReduceLogSumExp", MinInputs: 1, MaxInputs: 2, Infer: inferReduce},
		{Name: "Size", MinInputs: 1, MaxInputs: 1, Infer: inferSize},
		{Name: "GatherElements", MinInputs: 2, MaxInputs: 2, Infer: inferGatherElements},
		{Name: "GatherND", MinInputs: 2, MaxInputs: 2, Infer: inferGatherND},
		{Name: "ScatterElements", MinInputs: 3, MaxInputs: 3, Infer: inferScatter},
		{Name: "ScatterND", MinInputs: 3, MaxInputs: 3, Infer: inferScatter},
		{Name: "Trilu", MinInputs: 1, MaxInputs: 2, Infer: inferTrilu},
		{Name: "Mod", MinInputs: 2, MaxInputs: 2, Infer: inferMod},
		{Name: "CastLike", MinInputs: 2, MaxInputs: 2, Infer: inferCastLike},
		{Name: "Tan", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Acos", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Asin", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Atan", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Sinh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Cosh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Asinh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Acosh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "Atanh", MinInputs: 1, MaxInputs: 1, Infer: inferFloatUnary},
		{Name: "IsNaN", MinInputs: 1, MaxInputs: 1, Infer: inferIsClass},
		{Name: "IsInf", MinInputs: 1, MaxInputs: 1, Infer: inferIsClass},
		{Name: "Shrink", MinInputs: 1, MaxInputs: 1, Infer: inferNumericUnary},
		{Name: "CumSum", MinInputs: 2, MaxInputs: 2, Infer: inferCumSum},
		{Name: "OneHot", MinInputs: 3, MaxInputs: 3, Infer: inferOneHot},
		{Name: "DepthToSpace", MinInputs: 1, MaxInputs: 1, Infer: inferSpaceDepth},
		{Name: "SpaceToDepth", MinInputs: 1, MaxInputs: 1, Infer: inferSpaceDepth},
		{Name: "TopK", MinInputs: 2, MaxInputs: 2, Infer: inferTopK},
		{Name: "EyeLike", MinInputs: 1, MaxInputs: 1, Infer: inferEyeLike},

		// Fused ops made by the fusion passes (ops_fused.go).
		{Name: OpFusedConv, MinInputs: 2, MaxInputs: 4, Infer: inferFusedConv},
		{Name: OpFullyConnected, MinInputs: 2, MaxInputs: 4, Infer: inferFullyConnected},
		{Name: OpKernelFusion, MinInputs: 1, MaxInputs: -1, Infer: inferKernelFusion}, // ops_kernelfusion.go
	}
}

// inferConstant re-derives the port from the value, so a pass that swaps a
// constant's value (folding, precision conversion) only has to set Value.
func inferConstant(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
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
	return nil
}
