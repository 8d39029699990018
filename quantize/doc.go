// Package quantize is clinfer's post-training quantizer: it turns a float
// model into a standard QDQ model (QuantizeLinear / DequantizeLinear pairs
// around the convolutions and matrix products), as ONNX Runtime's
// quantize_static does, which clinfer's devices then run with int8
// kernels (fusion.FuseQuantized) and which ONNX Runtime runs as well.
//
//	q, report, err := quantize.Model(ctx, m, samples, quantize.Options{})
//	err = onnx.WriteFile("model_int8.onnx", q)
//
// What it writes, per Conv, MatMul and Gemm with constant weights (the
// op types Options.OpTypes names, not those Options.Exclude names):
//
//   - the weights per output channel (per tensor with
//     Options.PerTensorWeights), symmetric int8 in [-127, 127] with zero
//     point 0: scale = max|w| / 127;
//   - the data input per tensor, asymmetric uint8 (or int8 with
//     Options.Activations), from the range calibration measured over the
//     samples (its minimum and maximum, or a percentile of its values with
//     Options.Method), widened to hold 0: scale = (max-min) / 255, zero
//     point = round(qmin - min/scale). A value feeding several quantized
//     nodes gets one QuantizeLinear / DequantizeLinear pair;
//   - the bias as int32 with scale x_scale * w_scale[c] and zero point 0.
//
// Outputs stay float: the fusion passes requantize a convolution's output
// in its epilogue when the next quantized node reads it, with the
// activations and residual Adds between them fused. Before calibrating,
// the model goes through the passes that keep it an ONNX model and make
// its convolutions what will run (Identity and Dropout removed, constants
// folded, BatchNormalization and per-channel affine ops folded into the
// weights, HardSwish and HardSigmoid recognised), so the weights quantized
// are the folded ones.
//
// Calibration runs the preprocessed model on Options.Device (CPU unless
// set) with every observed value as an extra output, one sample at a time.
// Nodes not quantized are listed in the Report with the reason.
//
// In DESIGN.md's data flow the quantizer is a tool beside the runtime: it
// takes a graph.Model from a frontend (onnx.Read), runs it through a
// device (driver.Core, for calibration) and returns a graph.Model of ONNX
// ops that onnx.WriteFile writes; fusion.FuseQuantized then turns its QDQ
// patterns into integer ops when a device compiles it.
package quantize
