package clbackend

import "github.com/clinfer/clinfer/graph"

func lowerWhere(b *builder, n *graph.Node) error {
	c, x, y, out := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	os := b.val(out).shape
	m := b.meta(broadcastMeta(os, b.val(c).shape, b.val(x).shape, b.val(y).shape))
	cnt := os.NumElements()
	return b.emit(n, "where", "-DT="+bitsType(b.val(out).typ), cnt, slotArg(c), slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
}

// compareLowerings are the GPU table entries (see lowering) of the comparisons,
// logic ops and Where (Not, IsNaN and IsInf come from unaryOps).
func compareLowerings() map[string]lowering {
	return map[string]lowering{
		"Equal": {lower: lowerBinary, kernel: "equal"}, "Less": {lower: lowerBinary, kernel: "less"},
		"Greater": {lower: lowerBinary, kernel: "greater"}, "LessOrEqual": {lower: lowerBinary, kernel: "less_equal"},
		"GreaterOrEqual": {lower: lowerBinary, kernel: "greater_equal"}, "And": {lower: lowerBinary, kernel: "and"},
		"Or": {lower: lowerBinary, kernel: "or"}, "Xor": {lower: lowerBinary, kernel: "xor"},
		"Where": copies(lowerWhere),
	}
}
