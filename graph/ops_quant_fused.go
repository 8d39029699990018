package graph

import "github.com/clinfer/clinfer/tensor"

// The fused integer ops: what the QDQ fusion (fusion.FuseQuantized) makes
// of quantized convolutions and matrix products. They are not ONNX ops.
const (
	// OpQuantizedConv is a convolution of quantized data (Conv's
	// attributes and post-ops, like FusedConv). Its inputs (QuantIn*):
	// X (i8/u8; or f32, quantized first as QuantizeLinear does with
	// x_scale and x_zero_point: saturate(rne(x / x_scale) + x_zero_point)
	// in x_zero_point's type, what fusion.FuseQuantized makes of a
	// QuantizeLinear whose only consumer it is), W (i8/u8), B (f32 [OC],
	// optional), the residual of a
	// "sum" post-op (f32, optional), x_scale (f32 scalar), x_zero_point
	// (X's type, scalar), w_scale (f32, scalar or [OC]), w_zero_point (W's
	// type, scalar or [OC], optional), y_scale (f32 scalar, optional) and
	// y_zero_point (i8/u8 scalar, with y_scale). It computes
	//
	//	acc = sum of (x - x_zero_point) * (w - w_zero_point[c])   exact, wrapped to i32
	//	v   = f32(acc) * f32(x_scale * w_scale[c]) + B[c]          two f32 roundings (B 0 without one)
	//	v   = post-ops(v)                                           in f32
	//	y   = v, or saturate(rne(v / y_scale) + y_zero_point)       with y_scale
	//
	// so its output is f32, or quantized in y_zero_point's type.
	OpQuantizedConv = "QuantizedConv"
	// OpQuantizedFullyConnected is OpQuantizedConv's epilogue over a
	// matrix product A [..., K] (i8/u8) . W [K, N] (i8/u8): the same inputs
	// with A in X's place, B and the weight scale and zero point per
	// column N.
	OpQuantizedFullyConnected = "QuantizedFullyConnected"
)

// Inputs of OpQuantizedConv and OpQuantizedFullyConnected.
const (
	QuantInX = iota
	QuantInW
	QuantInBias
	QuantInResidual
	QuantInXScale
	QuantInXZero
	QuantInWScale
	QuantInWZero
	QuantInYScale
	QuantInYZero
	numQuantIn
)

// IsQuantizedFused reports whether n is one of the fused integer ops.
func IsQuantizedFused(n *Node) bool {
	return n.Domain == "" && (n.OpType == OpQuantizedConv || n.OpType == OpQuantizedFullyConnected)
}

// integerOps are the ops that compute on 8-bit integers.
var integerOps = map[string]bool{
	OpQuantizedConv: true, OpQuantizedFullyConnected: true, "ConvInteger": true, "QLinearConv": true,
	"MatMulInteger": true, "QLinearMatMul": true,
}

// IntegerPrecision is the element type an integer convolution or product
// computes in, as the runtime model reports it (RUNTIME_PRECISION): its
// data's type (u8, i8; x_zero_point's for an OpQuantizedConv of f32 data
// quantized on load); Undefined for every other node.
func IntegerPrecision(n *Node) tensor.ElementType {
	if !integerOps[n.OpType] || n.Domain != "" || !n.Input(0).Valid() {
		return tensor.Undefined
	}
	if QuantizesOnLoad(n) {
		return n.Input(QuantInXZero).Type()
	}
	return n.Input(0).Type()
}

// QuantizesOnLoad reports whether n is an OpQuantizedConv of f32 data,
// which it quantizes with its x_scale and x_zero_point before the
// integer convolution.
func QuantizesOnLoad(n *Node) bool {
	return n.OpType == OpQuantizedConv && n.Domain == "" && n.Input(QuantInX).Valid() && n.Input(QuantInX).Type() == tensor.F32
}

// checkQuantEpilogue checks the inputs the fused integer ops share: 8-bit
// operands with zero points of their type, f32 scales, an f32 bias and
// residual, a y_zero_point with y_scale, and the post-op list. It returns
// the output's element type (y_zero_point's, or f32).
func checkQuantEpilogue(n *Node) (tensor.ElementType, error) {
	operands, zps := []int{QuantInX, QuantInW}, []int{QuantInXZero, QuantInWZero}
	if QuantizesOnLoad(n) {
		if z := n.Input(QuantInXZero); z.Valid() && !isQuant8(z.Type()) {
			return 0, n.Errorf("x_zero_point (input %d) of f32 data has element type %v, want i8 or u8", QuantInXZero, z.Type())
		}
		operands, zps = operands[1:], zps[1:]
	}
	if err := checkInt8Operands(n, operands, zps); err != nil {
		return 0, err
	}
	if _, err := requiredInput(n, QuantInXScale); err != nil {
		return 0, err
	}
	if _, err := requiredInput(n, QuantInXZero); err != nil {
		return 0, err
	}
	if _, err := requiredInput(n, QuantInWScale); err != nil {
		return 0, err
	}
	for _, i := range []int{QuantInBias, QuantInResidual, QuantInXScale, QuantInWScale, QuantInYScale} {
		if in := n.Input(i); in.Valid() && in.Type() != tensor.F32 {
			return 0, n.Errorf("input %d has element type %v, want f32", i, in.Type())
		}
	}
	out := tensor.F32
	ys, yz := n.Input(QuantInYScale), n.Input(QuantInYZero)
	if ys.Valid() != yz.Valid() {
		return 0, n.Errorf("y_scale and y_zero_point (inputs %d and %d) come together", QuantInYScale, QuantInYZero)
	}
	if yz.Valid() {
		if !isQuant8(yz.Type()) {
			return 0, n.Errorf("y_zero_point has element type %v, want i8 or u8", yz.Type())
		}
		out = yz.Type()
	}
	ops, err := PostOps(n)
	if err != nil {
		return 0, err
	}
	hasSum := false
	for _, p := range ops {
		hasSum = hasSum || p.Kind == PostSum
	}
	if hasSum != present(n, QuantInResidual) {
		return 0, n.Errorf("post-op %q and the residual (input %d) come together", PostSum, QuantInResidual)
	}
	return out, nil
}

// checkResidual checks that the residual, when present, broadcasts to the
// output without growing it.
func checkResidual(n *Node) error {
	if r := n.Input(QuantInResidual); r.Valid() {
		return unidirectional(n, r.Shape(), n.Outputs[0].Shape, "residual input 3")
	}
	return nil
}

// inferQuantizedConv is OpQuantizedConv's inference: Conv's shape.
func inferQuantizedConv(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	t, err := checkQuantEpilogue(n)
	if err != nil {
		return err
	}
	xs, ws, group, rank, err := convOperands(n, QuantInX, QuantInW, t)
	if err != nil || rank < 0 {
		return err
	}
	if err := convOutput(n, t, xs, ws, group, rank, QuantInBias); err != nil {
		return err
	}
	return checkResidual(n)
}

// inferQuantizedFullyConnected is OpQuantizedFullyConnected's inference:
// MatMul's shape with a [K, N] weight and an [N] bias.
func inferQuantizedFullyConnected(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	t, err := checkQuantEpilogue(n)
	if err != nil {
		return err
	}
	a, w := n.Input(QuantInX), n.Input(QuantInW)
	if ws := w.Shape(); ws.RankKnown && len(ws.Dims) != 2 {
		return n.Errorf("weights %v must be a [K, N] matrix", ws)
	}
	if err := matMulOutput(n, a, w, t); err != nil {
		return err
	}
	if b := n.Input(QuantInBias); b.Valid() {
		if bs, ws := b.Shape(), w.Shape(); bs.RankKnown && ws.RankKnown {
			if _, ok := mergeDim(bs.Dims[len(bs.Dims)-1], ws.Dims[1]); len(bs.Dims) != 1 || !ok {
				return n.Errorf("bias %v does not match N=%v", bs, ws.Dims[1])
			}
		}
	}
	return checkResidual(n)
}

// quantizedExample is an example of a fused integer op: u8 x and i8 w of
// the given shapes, a bias, weight scales and zero points of c elements,
// no residual, requantized to u8 when quant is set.
func quantizedExample(name string, attrs Attrs, x, w []int64, c int64, quant bool) Example {
	in := []ExampleInput{
		{Type: tensor.U8, Shape: x}, {Type: tensor.I8, Shape: w}, {Shape: []int64{c}}, {Omit: true},
		{Positive: true, Shape: []int64{}}, {Type: tensor.U8, Shape: []int64{}},
		{Positive: true, Shape: []int64{c}}, {Type: tensor.I8, Shape: []int64{c}},
	}
	if quant {
		in = append(in, ExampleInput{Positive: true, Shape: []int64{}}, ExampleInput{Type: tensor.U8, Shape: []int64{}})
	}
	return Example{Name: name, Attrs: attrs, Inputs: in}
}

// quantFusedOps are the fused integer ops.
var quantFusedOps = []OpSpec{
	{Name: OpQuantizedConv, MinInputs: 7, MaxInputs: numQuantIn, Infer: inferQuantizedConv, Examples: []Example{
		quantizedExample("relu_requantized", Attrs{"pads": []int64{1, 1, 1, 1}, AttrPostOps: []string{PostRelu},
			AttrPostAlpha: []float32{0}, AttrPostBeta: []float32{0}}, []int64{1, 3, 6, 5}, []int64{4, 3, 3, 3}, 4, true),
		quantizedExample("depthwise_f32_out", Attrs{"group": int64(4), "strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}},
			[]int64{1, 4, 7, 6}, []int64{4, 1, 3, 3}, 4, false),
	}},
	// (Its GPU lowering takes constant weights, which an example cannot
	// declare: clbackend's lowerCases have its cases.)
	{Name: OpQuantizedFullyConnected, MinInputs: 7, MaxInputs: numQuantIn, Infer: inferQuantizedFullyConnected},
}
