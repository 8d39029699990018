package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// postCodes maps a post-op kind to its code in post_ops.clh (POST_*).
var postCodes = map[string]int64{
	graph.PostSum: 0, graph.PostRelu: 1, graph.PostClip: 2, graph.PostHardSwish: 3,
	graph.PostHardSigmoid: 4, graph.PostSigmoid: 5, graph.PostSwish: 6, graph.PostGelu: 7,
	graph.PostLeakyRelu: 8, graph.PostTanh: 9, graph.PostLinear: 10,
}

// postTables builds post_ops.clh's post-op tables of n (whose output is value
// out): the int table (count, kind codes, residual broadcast), the float
// table (alpha, beta per post-op) and the residual argument (input 3, or a
// stand-in the kernel does not read).
func (b *builder) postTables(n *graph.Node, out int) (pm, pf, res slotArg, err error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return 0, 0, 0, errUnsupported(n, "%v", err)
	}
	ints := []int64{int64(len(ops))}
	floats := make([]float32, 0, 2*len(ops))
	for _, p := range ops {
		code, ok := postCodes[p.Kind]
		if !ok {
			return 0, 0, 0, errUnsupported(n, "post-op %q has no GPU implementation", p.Kind)
		}
		ints = append(ints, code)
		floats = append(floats, p.Alpha, p.Beta)
	}
	res = slotArg(out)
	r, want := -1, b.val(out).typ
	switch {
	case n.OpType == graph.OpFusedConv || n.OpType == graph.OpFullyConnected:
		r = b.in(n, 3)
	case graph.IsQuantizedFused(n):
		r, want = b.in(n, graph.QuantInResidual), tensor.F32 // the epilogue's float value, before requantization
	}
	switch {
	case r >= 0 && b.val(r).typ != want:
		return 0, 0, 0, errUnsupported(n, "residual of type %s (the GPU kernel takes %s)", b.val(r).typ, want)
	case r >= 0 && b.val(r).shape.Equal(b.val(out).shape):
		ints = append(ints, -1) // dense: the residual element has the output's index
		res = slotArg(r)
	case r >= 0:
		ints = append(ints, broadcastMeta(b.val(out).shape, b.val(r).shape)...)
		res = slotArg(r)
	default:
		ints = append(ints, 0)
	}
	return b.meta(ints), b.floats(floats), res, nil
}
