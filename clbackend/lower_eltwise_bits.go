package clbackend

import "github.com/clinfer/clinfer/graph"

// lowerBitShift runs BitShift on eltwise_binary.cl's shl or shr.
func lowerBitShift(b *builder, n *graph.Node) error {
	name := "shl"
	if n.Attrs.String("direction", "") == "RIGHT" {
		name = "shr"
	}
	return b.binary(n, name, b.in(n, 0), b.in(n, 1), b.out(n, 0))
}

// bitLowerings are the GPU table entries of the eltwise family's bit
// operations, on integers only (no f16 form).
func bitLowerings() map[string]lowering {
	return map[string]lowering{
		"BitwiseNot": {lower: lowerUnary, kernel: "bitwise_not"},
		"BitShift":   {lower: lowerBitShift},
		"BitwiseAnd": {lower: lowerBinary, kernel: "bit_and"},
		"BitwiseOr":  {lower: lowerBinary, kernel: "bit_or"},
		"BitwiseXor": {lower: lowerBinary, kernel: "bit_xor"},
	}
}
