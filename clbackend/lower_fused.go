package clbackend

import (
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// postCodes maps a post-op kind to its code in fused.cl (POST_*).
var postCodes = map[string]int64{
	graph.PostSum: 0, graph.PostRelu: 1, graph.PostClip: 2, graph.PostHardSwish: 3,
	graph.PostHardSigmoid: 4, graph.PostSigmoid: 5, graph.PostSwish: 6, graph.PostGelu: 7,
	graph.PostLeakyRelu: 8, graph.PostTanh: 9, graph.PostLinear: 10,
}

// postTables builds fused.cl's post-op tables of n (whose output is value
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
	if r := b.in(n, 3); r >= 0 {
		if b.val(r).typ != tensor.F32 {
			return 0, 0, 0, errUnsupported(n, "residual of type %s (the GPU kernel takes f32)", b.val(r).typ)
		}
		ints = append(ints, broadcastMeta(b.val(out).shape, b.val(r).shape)...)
		res = slotArg(r)
	} else {
		ints = append(ints, 0)
	}
	return b.meta(ints), b.floats(floats), res, nil
}

// lowerFusedConv runs FusedConv as one fused_conv2d launch: conv.cl's
// direct convolution with the post-ops applied before the store.
func lowerFusedConv(b *builder, n *graph.Node) error {
	if err := b.allF32(n); err != nil {
		return err
	}
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	r := len(xs) - 2
	kernel := ws[2:]
	stride := n.Attrs.Ints("strides", ones(r))
	dil := n.Attrs.Ints("dilations", ones(r))
	group := n.Attrs.Int("group", 1)
	begin, _ := windowPads(n, xs[2:], ys[2:], kernel, stride, dil)
	H, W := to2D(xs[2:], 1)
	OH, OW := to2D(ys[2:], 1)
	KH, KW := to2D(kernel, 1)
	SH, SW := to2D(stride, 1)
	PH, PW := to2D(begin, 0)
	DH, DW := to2D(dil, 1)
	m := []int64{xs[0], xs[1], H, W, ys[1], OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, group, 0}
	barg := slotArg(w)
	if bias >= 0 {
		m[16] = 1
		barg = slotArg(bias)
	}
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return err
	}
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	ocb := convBlock(ys[1] / group)
	return b.emit(n, "fused_conv2d", "-DOCB="+strconv.FormatInt(ocb, 10), cnt/ocb,
		slotArg(x), slotArg(w), barg, res, slotArg(y), uint64(cnt/ocb), b.meta(m), pm, pf)
}

// lowerFullyConnected runs FullyConnected as one fully_connected launch
// over A viewed as rows of K (A is contiguous; W is [K, N]).
func lowerFullyConnected(b *builder, n *graph.Node) error {
	if err := b.allF32(n); err != nil {
		return err
	}
	a, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	ws := b.val(w).shape
	if len(ws) != 2 || len(b.val(a).shape) == 0 {
		return errUnsupported(n, "weights %v and input %v (want [K, N] and at least 1-D)", ws, b.val(a).shape)
	}
	K, N := ws[0], ws[1]
	barg, has := slotArg(w), int32(0)
	if bias >= 0 {
		barg, has = slotArg(bias), 1
	}
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return err
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "fully_connected", "", cnt,
		slotArg(a), slotArg(w), barg, res, slotArg(y), uint64(cnt), int32(N), int32(K), has, pm, pf)
}
