package graph

import "github.com/clinfer/clinfer/tensor"

// Bit operations on integer tensors.

func isPlainInt(t tensor.ElementType) bool { return t.IsInteger() && t.Bits() != 4 }

var (
	inferBitwise    = binary(tensor.Undefined, isPlainInt, "an integer type")
	inferBitwiseNot = unary(isPlainInt, "an integer type")
	inferShift      = binary(tensor.Undefined, func(t tensor.ElementType) bool { return t.IsUnsigned() && t.Bits() != 4 }, "an unsigned integer type")
)

// inferBitShift is BitShift(X, Y) with direction LEFT or RIGHT: X shifted
// by Y bits (numpy broadcasting; shifting out every bit gives 0).
func inferBitShift(n *Node) error {
	switch d := n.Attrs.String("direction", ""); d {
	case "LEFT", "RIGHT":
	default:
		return n.Errorf("direction %q is not LEFT or RIGHT", d)
	}
	return inferShift(n)
}

// bitsExamples are examples of a two-input bit op of every integer width.
func bitsExamples(types []tensor.ElementType, attrs Attrs) []Example {
	var out []Example
	for _, t := range types {
		name := t.String()
		if d := attrs.String("direction", ""); d != "" {
			name = d + "_" + name
		}
		out = append(out, Example{Name: name, Attrs: attrs, Inputs: []ExampleInput{{Type: t, Shape: []int64{3, 7}}, {Type: t, Shape: []int64{7}}}})
	}
	return out
}

var (
	unsignedTypes = []tensor.ElementType{tensor.U8, tensor.U16, tensor.U32, tensor.U64}
	intTypes      = []tensor.ElementType{tensor.I8, tensor.U8, tensor.I16, tensor.U16, tensor.I32, tensor.U32, tensor.I64, tensor.U64}
)

// bitOps are the eltwise family's bit operations (eltwiseOps lists them).
var bitOps = []OpSpec{
	{Name: "BitShift", Since: 11, MinInputs: 2, MaxInputs: 2, Infer: inferBitShift,
		Examples: append(bitsExamples(unsignedTypes, Attrs{"direction": "LEFT"}), bitsExamples(unsignedTypes[2:], Attrs{"direction": "RIGHT"})...)},
	{Name: "BitwiseAnd", Since: 18, MinInputs: 2, MaxInputs: 2, Infer: inferBitwise, Examples: bitsExamples(intTypes[4:], nil)},
	{Name: "BitwiseOr", Since: 18, MinInputs: 2, MaxInputs: 2, Infer: inferBitwise, Examples: bitsExamples(intTypes[:4], nil)},
	{Name: "BitwiseXor", Since: 18, MinInputs: 2, MaxInputs: 2, Infer: inferBitwise, Examples: bitsExamples(intTypes[2:6], nil)},
	{Name: "BitwiseNot", Since: 18, MinInputs: 1, MaxInputs: 1, Infer: inferBitwiseNot, Examples: []Example{
		{Name: "i32", Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{5, 3}}}},
		{Name: "u8", Inputs: []ExampleInput{{Type: tensor.U8, Shape: []int64{17}}}},
		{Name: "u64", Inputs: []ExampleInput{{Type: tensor.U64, Shape: []int64{4}}}},
	}},
}
