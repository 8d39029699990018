package graph

import (
	"slices"

	"github.com/clinfer/clinfer/tensor"
)

// Attributes of the quantization ops that are not ONNX's: the ONNX
// frontend converts ONNX's output_dtype (a TensorProto data type) into
// AttrOutputType (an int64(tensor.ElementType)), as it does Cast's "to".
const (
	// AttrOutputType is QuantizeLinear's output element type when it has
	// no zero point (ONNX output_dtype; u8 when absent).
	AttrOutputType = "output_type"
)

// QuantTypes are the element types quantized values may have: the
// integer types of QuantizeLinear's output and DequantizeLinear's input
// (DequantizeLinear also reads i32).
var QuantTypes = []tensor.ElementType{tensor.I8, tensor.U8, tensor.I16, tensor.U16, tensor.I4, tensor.U4}

// QuantAxis is the quantization geometry of QuantizeLinear and
// DequantizeLinear: how the scale (and zero point) of shape Scale maps
// onto the data of shape Data. Per-tensor: one scale. Per-axis: a 1-D
// scale of Data[Axis] elements. Blocked: a scale of Data's rank whose
// Axis dim is ceil(Data[Axis] / Block), the other dims Data's.
type QuantAxis struct {
	// Axis is the quantized axis in [0, rank), -1 for per-tensor.
	Axis int
	// Block is the block size along Axis (0: per-axis or per-tensor).
	Block int64
}

// QuantGeometry returns the geometry of a QuantizeLinear or
// DequantizeLinear node for data and scale shapes (static, as a device
// sees them): per-tensor for a scale of one element, per-axis for a 1-D
// scale with block_size 0, blocked with block_size > 0. It rejects a
// scale that fits none (naming the node).
func QuantGeometry(n *Node, data, scale tensor.Shape) (QuantAxis, error) {
	block := n.Attrs.Int("block_size", 0)
	if block < 0 {
		return QuantAxis{}, n.Errorf("block_size %d must not be negative", block)
	}
	if block == 0 && scale.NumElements() == 1 && len(scale) <= 1 {
		return QuantAxis{Axis: -1}, nil
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 1), len(data))
	if err != nil {
		return QuantAxis{}, err
	}
	if block == 0 {
		if len(scale) != 1 || scale[0] != data[axis] {
			return QuantAxis{}, n.Errorf("scale %v: want a scalar or a vector of %d elements (axis %d of %v)", scale, data[axis], axis, data)
		}
		return QuantAxis{Axis: axis}, nil
	}
	if len(scale) != len(data) {
		return QuantAxis{}, n.Errorf("blocked scale %v must have the rank of the data %v", scale, data)
	}
	for i := range data {
		want := data[i]
		if i == axis {
			want = (data[i] + block - 1) / block
		}
		if scale[i] != want {
			return QuantAxis{}, n.Errorf("blocked scale %v does not fit data %v with block_size %d on axis %d (want %d on axis %d)", scale, data, block, axis, want, i)
		}
	}
	return QuantAxis{Axis: axis, Block: block}, nil
}

// checkQuantParams checks a (de)quantization's scale (input si) and
// optional zero point (input si+1) against the data (input 0): a float
// scale, a zero point of the scale's shape and of type zt (when zt is
// set), and, where shapes are static, a geometry QuantGeometry accepts.
func checkQuantParams(n *Node, si int, zt tensor.ElementType) error {
	s := n.Input(si)
	if !s.Type().IsFloat() {
		return n.Errorf("scale has element type %v, want a float type", s.Type())
	}
	z := n.Input(si + 1)
	if z.Valid() {
		if zt != tensor.Undefined && z.Type() != zt {
			return n.Errorf("zero point has element type %v, want %v", z.Type(), zt)
		}
		ss, ok1 := s.Shape().ToShape()
		zs, ok2 := z.Shape().ToShape()
		if ok1 && ok2 && !ss.Equal(zs) {
			return n.Errorf("zero point %v and scale %v differ in shape", zs, ss)
		}
	}
	ds, ok1 := n.Input(0).Shape().ToShape()
	ss, ok2 := s.Shape().ToShape()
	if ok1 && ok2 {
		if _, err := QuantGeometry(n, ds, ss); err != nil {
			return err
		}
	}
	return nil
}

// inferQuantizeLinear is QuantizeLinear(x, y_scale, y_zero_point?): y has
// x's shape and the zero point's type (AttrOutputType, or u8, without one).
func inferQuantizeLinear(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	if t := x.Type(); !t.IsFloat() && t != tensor.I32 {
		return n.Errorf("input has element type %v, want a float type or i32", t)
	}
	out := tensor.ElementType(n.Attrs.Int(AttrOutputType, int64(tensor.U8)))
	if z := n.Input(2); z.Valid() {
		if n.Attrs.Has(AttrOutputType) && z.Type() != out {
			return n.Errorf("output type %v differs from the zero point's %v", out, z.Type())
		}
		out = z.Type()
	}
	if !slices.Contains(QuantTypes, out) {
		return n.Errorf("output type %v is not a quantized type (accepted: %v)", out, QuantTypes)
	}
	if err := checkQuantParams(n, 1, out); err != nil {
		return err
	}
	setOutput(n, 0, out, x.Shape().Clone())
	return nil
}

// inferDequantizeLinear is DequantizeLinear(x, x_scale, x_zero_point?): y
// has x's shape and the scale's type.
func inferDequantizeLinear(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if t := x.Type(); !slices.Contains(QuantTypes, t) && t != tensor.I32 {
		return n.Errorf("input has element type %v, want a quantized type (%v) or i32", t, QuantTypes)
	}
	if err := checkQuantParams(n, 1, x.Type()); err != nil {
		return err
	}
	setOutput(n, 0, s.Type(), x.Shape().Clone())
	return nil
}

// inferDynamicQuantizeLinear is DynamicQuantizeLinear(x): y (u8, x's
// shape), y_scale (f32 scalar), y_zero_point (u8 scalar).
func inferDynamicQuantizeLinear(n *Node) error {
	if err := checkOutputs(n, 3, 3); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if x.Type() != tensor.F32 {
		return n.Errorf("input has element type %v, want f32", x.Type())
	}
	setOutput(n, 0, tensor.U8, x.Shape().Clone())
	setOutput(n, 1, tensor.F32, ShapeOf())
	setOutput(n, 2, tensor.U8, ShapeOf())
	return nil
}

// isQuant8 reports whether t is one of the 8-bit types of the integer
// convolutions and products.
func isQuant8(t tensor.ElementType) bool { return t == tensor.I8 || t == tensor.U8 }

// checkInt8Operands checks that inputs idx are 8-bit integers and that each
// zero point zp[i] (an input, -1 for none) present has its operand's type.
func checkInt8Operands(n *Node, ops []int, zps []int) error {
	for i, o := range ops {
		in := n.Input(o)
		if !isQuant8(in.Type()) {
			return n.Errorf("input %d has element type %v, want i8 or u8", o, in.Type())
		}
		if z := n.Input(zps[i]); zps[i] >= 0 && z.Valid() && z.Type() != in.Type() {
			return n.Errorf("zero point (input %d) has element type %v, its operand (input %d) %v", zps[i], z.Type(), o, in.Type())
		}
	}
	return nil
}

// inferConvInteger is ConvInteger(x, w, x_zero_point?, w_zero_point?):
// Conv's shape, i32.
func inferConvInteger(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	xs, ws, group, rank, err := convOperands(n, 0, 1, tensor.I32)
	if err != nil || rank < 0 {
		return err
	}
	if err := checkInt8Operands(n, []int{0, 1}, []int{2, 3}); err != nil {
		return err
	}
	return convOutput(n, tensor.I32, xs, ws, group, rank, -1)
}

// inferQLinearConv is QLinearConv(x, x_scale, x_zero_point, w, w_scale,
// w_zero_point, y_scale, y_zero_point, B?): Conv's shape, y_zero_point's
// type; B is i32.
func inferQLinearConv(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for _, i := range []int{1, 2, 4, 5, 6, 7} {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	t := n.Input(7).Type()
	xs, ws, group, rank, err := convOperands(n, 0, 3, t)
	if err != nil || rank < 0 {
		return err
	}
	if err := checkInt8Operands(n, []int{0, 3, 7}, []int{2, 5, -1}); err != nil {
		return err
	}
	if b := n.Input(8); b.Valid() && b.Type() != tensor.I32 {
		return n.Errorf("bias has element type %v, want i32", b.Type())
	}
	return convOutput(n, t, xs, ws, group, rank, 8)
}

// inferMatMulInteger is MatMulInteger(A, B, a_zero_point?,
// b_zero_point?): MatMul's shape, i32.
func inferMatMulInteger(n *Node) error {
	a, b, err := matMulOperands(n)
	if err != nil {
		return err
	}
	if err := checkInt8Operands(n, []int{0, 1}, []int{2, 3}); err != nil {
		return err
	}
	return matMulOutput(n, a, b, tensor.I32)
}

// inferQLinearMatMul is QLinearMatMul(a, a_scale, a_zero_point, b,
// b_scale, b_zero_point, y_scale, y_zero_point): MatMul's shape,
// y_zero_point's type.
func inferQLinearMatMul(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7} {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	if err := checkInt8Operands(n, []int{0, 3, 7}, []int{2, 5, -1}); err != nil {
		return err
	}
	return matMulOutput(n, n.Input(0), n.Input(3), n.Input(7).Type())
}

// quantExamples are examples of QuantizeLinear and DequantizeLinear in
// each geometry, on the types the tests fill with values.
func quantExamples(data, quant tensor.ElementType) []Example {
	x := func(s ...int64) ExampleInput { return ExampleInput{Type: data, Shape: s} }
	scale := func(s ...int64) ExampleInput { return ExampleInput{Positive: true, Shape: s} }
	zp := func(s ...int64) ExampleInput { return ExampleInput{Type: quant, Shape: s} }
	return []Example{
		{Name: "per_tensor", Inputs: []ExampleInput{x(2, 3, 4), scale(), zp()}},
		{Name: "per_axis", Attrs: Attrs{"axis": int64(1)}, Inputs: []ExampleInput{x(2, 3, 4), scale(3), zp(3)}},
		{Name: "blocked", Attrs: Attrs{"axis": int64(-1), "block_size": int64(2)}, Inputs: []ExampleInput{x(2, 3, 5), scale(2, 3, 3), zp(2, 3, 3)}},
	}
}

// quantOps are the quantization ops: quantize and dequantize (static and
// dynamic) and the integer convolutions and matrix products.
var quantOps = []OpSpec{
	{Name: "QuantizeLinear", MinInputs: 2, MaxInputs: 3, Infer: inferQuantizeLinear,
		Examples: quantExamples(tensor.F32, tensor.I8)},
	{Name: "DequantizeLinear", MinInputs: 2, MaxInputs: 3, Infer: inferDequantizeLinear,
		Examples: quantExamples(tensor.U8, tensor.U8)},
	{Name: "DynamicQuantizeLinear", Since: 11, MinInputs: 1, MaxInputs: 1, Infer: inferDynamicQuantizeLinear,
		Examples: []Example{{Inputs: []ExampleInput{{Shape: []int64{2, 3, 5}}}, Outputs: 3}}},
	{Name: "ConvInteger", Since: 10, MinInputs: 2, MaxInputs: 4, Infer: inferConvInteger,
		Examples: []Example{{Attrs: Attrs{"pads": []int64{1, 1, 1, 1}}, Inputs: []ExampleInput{
			{Type: tensor.U8, Shape: []int64{1, 3, 5, 5}}, {Type: tensor.I8, Shape: []int64{4, 3, 3, 3}},
			{Type: tensor.U8, Shape: []int64{}}, {Type: tensor.I8, Shape: []int64{4}}}}}},
	{Name: "QLinearConv", Since: 10, MinInputs: 8, MaxInputs: 9, Infer: inferQLinearConv,
		Examples: []Example{{Attrs: Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 1}}, Inputs: []ExampleInput{
			{Type: tensor.U8, Shape: []int64{1, 3, 6, 5}}, {Positive: true, Shape: []int64{}}, {Type: tensor.U8, Shape: []int64{}},
			{Type: tensor.I8, Shape: []int64{4, 3, 3, 3}}, {Positive: true, Shape: []int64{4}}, {Type: tensor.I8, Shape: []int64{4}},
			{Positive: true, Shape: []int64{}}, {Type: tensor.U8, Shape: []int64{}}, {Type: tensor.I32, Shape: []int64{4}}}}}},
	{Name: "MatMulInteger", Since: 10, MinInputs: 2, MaxInputs: 4, Infer: inferMatMulInteger,
		Examples: []Example{{Inputs: []ExampleInput{
			{Type: tensor.U8, Shape: []int64{2, 3, 5}}, {Type: tensor.I8, Shape: []int64{5, 4}},
			{Type: tensor.U8, Shape: []int64{3}}, {Type: tensor.I8, Shape: []int64{4}}}}}},
	{Name: "QLinearMatMul", Since: 10, MinInputs: 8, MaxInputs: 8, Infer: inferQLinearMatMul,
		Examples: []Example{{Inputs: []ExampleInput{
			{Type: tensor.U8, Shape: []int64{2, 3, 5}}, {Positive: true, Shape: []int64{}}, {Type: tensor.U8, Shape: []int64{}},
			{Type: tensor.I8, Shape: []int64{5, 4}}, {Positive: true, Shape: []int64{4}}, {Type: tensor.I8, Shape: []int64{4}},
			{Positive: true, Shape: []int64{}}, {Type: tensor.I8, Shape: []int64{}}}}}},
}
