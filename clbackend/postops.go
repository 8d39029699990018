package clbackend

import (
	"fmt"
	"strconv"

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
	return b.postTablesOf(n, ops, out)
}

// postTablesOf is postTables with post-ops ops in place of n's own (a
// fusion's, whose body holds them).
func (b *builder) postTablesOf(n *graph.Node, ops []graph.PostOp, out int) (pm, pf, res slotArg, err error) {
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

// maxFixedPostOps is the most post-ops post_ops.clh takes as build options
// (POST_K0..POST_K3).
const maxFixedPostOps = 4

// postDefines are the build options that fix the post-op table pm (from
// postTables) at compile time: POST_N and the kind of each post-op,
// POST_K0.. (post_ops.clh). The kernel then applies the post-ops unrolled,
// without reading and branching on the table per stored vector (on
// pthread-skylake-avx512 10-25% of PP-OCR rec's pointwise and depthwise
// convolutions with HardSwish and the affine). Only the register-blocked
// kernels of PP-OCR's small convolutions take them (fused_gemm,
// fused_dwconv2d, fused_deconv2d): each distinct list of post-ops builds
// its own program.
func (b *builder) postDefines(pm slotArg) string {
	t, _ := b.hostInts(int(pm))
	return postDefinesOf(t)
}

// postDefinesOf is postDefines of the int table t: empty for a table of
// more post-ops than the options name (it is then read at run time) or a
// malformed one.
func postDefinesOf(t []int64) string {
	if len(t) == 0 || t[0] < 0 || t[0] > maxFixedPostOps || int64(len(t)) < 1+t[0] {
		return ""
	}
	s := " -DPOST_N=" + strconv.FormatInt(t[0], 10)
	for i := int64(0); i < t[0]; i++ {
		s += fmt.Sprintf(" -DPOST_K%d=%d", i, t[1+i])
	}
	return s
}
