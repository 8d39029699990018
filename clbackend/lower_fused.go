package clbackend

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/clinfer/clinfer/clbackend/cl"
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
	r := -1
	if n.OpType == graph.OpFusedConv || n.OpType == graph.OpFullyConnected {
		r = b.in(n, 3)
	}
	switch {
	case r >= 0 && b.val(r).typ != b.val(out).typ:
		return 0, 0, 0, errUnsupported(n, "residual of type %s (the GPU kernel takes the output's, %s)", b.val(r).typ, b.val(out).typ)
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

// lowerFusedConv runs FusedConv as one launch of a register-blocked
// kernel (fastConv), else of fused_conv2d: conv.cl's direct convolution
// with the post-ops applied before the store. Its data is f32, or f16
// throughout (INFERENCE_PRECISION_HINT=f16).
func lowerFusedConv(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	if ok, err := b.fastConv(n); ok || err != nil {
		return err
	}
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	g := conv2DOf(n, xs, ws, ys)
	barg, hasBias := optArg(bias, w)
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return err
	}
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	ocb := convBlock(g.OC / g.group)
	return b.emit(n, "fused_conv2d", "-DOCB="+strconv.FormatInt(ocb, 10)+half, cnt/ocb,
		slotArg(x), slotArg(w), barg, res, slotArg(y), uint64(cnt/ocb), b.meta(g.meta(hasBias)), pm, pf)
}

// lowerFullyConnected runs FullyConnected over A viewed as rows of K (A
// is contiguous; W is [K, N]): one fused_gemm launch when the GEMM is
// large enough, else one fully_connected launch. Its data is f32, or f16
// throughout.
func lowerFullyConnected(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	a, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	ws := b.val(w).shape
	if len(ws) != 2 || len(b.val(a).shape) == 0 {
		return errUnsupported(n, "weights %v and input %v (want [K, N] and at least 1-D)", ws, b.val(a).shape)
	}
	K, N := ws[0], ws[1]
	if rows := b.val(a).shape.NumElements() / max(K, 1); useGEMM(rows, N, K) {
		g := gemmGeom{M: rows, N: N, K: K, aRow: K, aK: 1, bK: N, bCol: 1}
		mode := int64(0)
		if bias >= 0 {
			mode = 2
		}
		return b.fusedGEMM(n, a, w, bias, y, g, mode, 1, 0)
	}
	barg, has := optArg(bias, w)
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return err
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "fully_connected", half, cnt,
		slotArg(a), slotArg(w), barg, res, slotArg(y), uint64(cnt), int32(N), int32(K), int32(has), pm, pf)
}

// blocking is the register blocking of the blocked kernels (block.clh) on the
// plan's device: the vector width VW and the work-group size.
type blocking struct {
	vw    int64
	local func(dims int) []int // nil: the driver picks
}

// blocking picks VW from the device's preferred float vector width (4, 8
// or 16). On a CPU device each work item is its own work group: POCL then
// runs items one after another with their blocks in registers, 2-6x
// faster than larger groups on the PP-OCR shapes (bench/conv_test.go). On
// other devices the driver picks the group size.
func (b *builder) blocking() blocking {
	bl := blocking{vw: 4}
	if w, err := b.c.dev.cl.PreferredVectorWidths(); err == nil {
		switch {
		case w.Float >= 16:
			bl.vw = 16
		case w.Float >= 8:
			bl.vw = 8
		}
	}
	if b.c.dev.typ&cl.DeviceTypeCPU != 0 {
		bl.local = func(dims int) []int {
			l := make([]int, dims)
			for i := range l {
				l[i] = 1
			}
			return l
		}
	}
	return bl
}

// geometry returns the NDRange global rounded up to the work-group size,
// and the work-group size.
func (bl blocking) geometry(global ...int64) (g, l []int) {
	g = make([]int, len(global))
	for i, x := range global {
		g[i] = int(x)
	}
	if bl.local == nil {
		return g, nil
	}
	l = bl.local(len(g))
	for i := range g {
		g[i] = (g[i] + l[i] - 1) / l[i] * l[i]
	}
	return g, l
}

// gemmRows is fused_gemm's MR for m rows: 12 where that pads m less than
// 8 does, else 8; 4 with vectors narrower than 16 (fewer registers).
func gemmRows(m, vw int64) int64 {
	if vw < 16 {
		return 4
	}
	if ceilDiv(m, 12)*12 < ceilDiv(m, 8)*8 {
		return 12
	}
	return 8
}

// convRows is fused_conv2d_blocked's MR for oc output channels: of 8, 16
// and 24 (8 only with vectors narrower than 16) the one that pads oc
// least, the larger on a tie (more reuse of each input vector).
func convRows(oc, vw int64) int64 {
	if vw < 16 {
		return 8
	}
	best := int64(8)
	for _, mr := range []int64{16, 24} {
		if ceilDiv(oc, mr)*mr <= ceilDiv(oc, best)*best {
			best = mr
		}
	}
	return best
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// useGEMM reports whether an M x N x K product is worth fused_gemm's
// blocks: enough work and rows of at least 8 columns; smaller ones run
// one output per work item (matmul, fully_connected).
func useGEMM(m, n, k int64) bool { return n >= 8 && m*n*k >= 4096 }

// hostF32 returns the elements of host value v, f32 or f16, as f32 (f16
// widens exactly, so a layout of them stored as f16 again holds the same
// values).
func (b *builder) hostF32(v int) []float32 {
	h := b.val(v).host.Contiguous()
	if h.Type() != tensor.F32 {
		h, _ = h.Convert(tensor.F32)
	}
	return h.F32()
}

// layout adds f, a layout of host value v made for a kernel, stored in
// v's element type (floatsFor: f16 for the f16 weights of
// INFERENCE_PRECISION_HINT=f16). The layout of a Constant's tensor is a
// weight of the compiled model named after it with suffix (uploaded once
// for all plans).
func (b *builder) layout(v int, f []float32, suffix string) int {
	p := int(b.floatsFor(v, f))
	if name := b.val(v).weight; name != "" {
		b.val(p).weight = name + suffix
	}
	return p
}

// packRows returns host matrix v (element (r, k) at r*rs + k*ks, rows x
// kk) packed for A_PACKED as [ceil(rows/mr)][kk][mr], zero-padded, in v's
// element type (layout).
func (b *builder) packRows(v int, rows, kk, rs, ks, mr int64) slotArg {
	src := b.hostF32(v)
	blocks := ceilDiv(rows, mr)
	dst := make([]float32, blocks*kk*mr)
	for r := int64(0); r < rows; r++ {
		for k := int64(0); k < kk; k++ {
			dst[((r/mr)*kk+k)*mr+r%mr] = src[r*rs+k*ks]
		}
	}
	return slotArg(b.layout(v, dst, fmt.Sprintf("#rows%dx%d/%d,%d/%d", rows, kk, rs, ks, mr)))
}

// relaid returns host matrix v ([rows, cols] with element (r, c) at r*rs
// + c*cs) as a contiguous row-major host value in v's element type
// (layout): a transposed B becomes rows fused_gemm can load.
func (b *builder) relaid(v int, rows, cols, rs, cs int64) int {
	src := b.hostF32(v)
	dst := make([]float32, rows*cols)
	for r := int64(0); r < rows; r++ {
		for c := int64(0); c < cols; c++ {
			dst[r*cols+c] = src[r*rs+c*cs]
		}
	}
	return b.layout(v, dst, fmt.Sprintf("#%dx%d/%d,%d", rows, cols, rs, cs))
}

// fusedGEMM emits out = post(alpha * A.B + bias) as one fused_gemm launch
// over g's batch (B's columns must be contiguous: g.bCol == 1). mode is
// the bias mode of gemm_fused.cl (0 none, 1 bias[row], 2 bias[column], 3 beta *
// C with g's C strides); a host A is packed. The data is of out's type,
// f32 or f16 (the caller checks).
func (b *builder) fusedGEMM(n *graph.Node, a, bb, bias, out int, g gemmGeom, mode int64, alpha, beta float32) error {
	if g.bCol != 1 && g.N > 1 {
		return errUnsupported(n, "fused_gemm needs B with contiguous rows (column stride %d)", g.bCol)
	}
	pm, pf, res, err := b.postTables(n, out)
	if err != nil {
		return err
	}
	bl := b.blocking()
	mr := gemmRows(g.M, bl.vw)
	const nv = 2
	defines := fmt.Sprintf("-DVW=%d -DMR=%d -DNV=%d", bl.vw, mr, nv) + b.halfDefine(out)
	aarg := slotArg(a)
	if b.val(a).host != nil && !slices.ContainsFunc(g.aBatch, func(s int64) bool { return s != 0 }) {
		aarg = b.packRows(a, g.M, g.K, g.aRow, g.aK, mr)
		defines += " -DA_PACKED"
	}
	q := int64(len(g.batch))
	m := []int64{g.M, g.N, g.K, g.aRow, g.aK, g.bK, g.N, mode, g.cRow, g.cCol, q}
	m = append(m, g.batch...)
	m = append(m, g.aBatch...)
	m = append(m, g.bBatch...)
	batch := int64(1)
	outStrides := make([]int64, q)
	for d := q - 1; d >= 0; d-- {
		outStrides[d] = batch * g.M * g.N
		batch *= g.batch[d]
	}
	m = append(m, outStrides...)
	if g.M*g.N*batch == 0 {
		return nil
	}
	barg, _ := optArg(bias, bb)
	global, local := bl.geometry(ceilDiv(g.M, mr), ceilDiv(g.N, nv*bl.vw), batch)
	return b.emitND(n, "fused_gemm", defines, global, local,
		aarg, slotArg(bb), barg, res, slotArg(out), b.meta(m), alpha, beta, pm, pf)
}

// fastConv lowers a 1-D or 2-D Conv or FusedConv with f32 data (or f16
// throughout: the kernels are built with halfDefine), a host
// (constant) weight, dilation 1 and one group or depthwise groups to one
// launch of the register-blocked kernels (block.clh) with the node's post-ops:
// fused_gemm for a 1x1 convolution without stride or pads (a GEMM per
// image: W [OC, C] x X [C, H*W]), fused_dwconv2d for a depthwise one,
// fused_conv2d_blocked for the others. It reports false for other forms,
// which the caller runs with its one-output-per-item kernel.
func (b *builder) fastConv(n *graph.Node) (bool, error) {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 || len(ws) != len(xs) {
		return false, nil
	}
	if !b.sameFloat(y, x, w, bias) {
		return false, nil
	}
	cg := conv2DOf(n, xs, ws, ys)
	N, C, OC, H, W, OH, OW := cg.N, cg.C, cg.OC, cg.H, cg.W, cg.OH, cg.OW
	KH, KW, SH, SW, PH, PW, DH, DW, group := cg.KH, cg.KW, cg.SH, cg.SW, cg.PH, cg.PW, cg.DH, cg.DW, cg.group
	depthwise := group == C && OC == C && ws[1] == 1
	if DH != 1 || DW != 1 || (group != 1 && !depthwise) || (!depthwise && b.val(w).host == nil) {
		return false, nil
	}
	if KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0 && OH == H && OW == W && !depthwise {
		g := gemmGeom{M: OC, N: H * W, K: C, aRow: C, aK: 1, bK: H * W, bCol: 1,
			batch: []int64{N}, aBatch: []int64{0}, bBatch: []int64{C * H * W}}
		mode := int64(0)
		if bias >= 0 {
			mode = 1
		}
		return true, b.fusedGEMM(n, w, x, bias, y, g, mode, 1, 0)
	}
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return true, err
	}
	if ys.NumElements() == 0 {
		return true, nil
	}
	barg, hasBias := optArg(bias, w)
	bl := b.blocking()
	window := fmt.Sprintf("-DVW=%d -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", bl.vw, KH, KW, SH, SW) + b.halfDefine(y)
	if depthwise {
		const rb = 4
		m := []int64{N, C, H, W, OH, OW, PH, PW, hasBias}
		global, local := bl.geometry(ceilDiv(OW, bl.vw), ceilDiv(OH, rb), N*C)
		return true, b.emitND(n, "fused_dwconv2d", fmt.Sprintf("%s -DRB=%d", window, rb), global, local,
			slotArg(x), slotArg(w), barg, res, slotArg(y), b.meta(m), pm, pf)
	}
	mr := convRows(OC, bl.vw)
	m := []int64{N, C, H, W, OC, OH, OW, PH, PW, hasBias}
	global, local := bl.geometry(ceilDiv(OC, mr), OH*ceilDiv(OW, bl.vw), N)
	return true, b.emitND(n, "fused_conv2d_blocked", fmt.Sprintf("%s -DMR=%d", window, mr), global, local,
		slotArg(x), b.packRows(w, OC, C*KH*KW, C*KH*KW, 1, mr), barg, res, slotArg(y), b.meta(m), pm, pf)
}

// fastDeconv lowers a 2-D ConvTranspose whose kernel equals its stride
// (no pads, output padding or dilation, one group, f32 or f16 throughout,
// host weights) to one fused_deconv2d launch, and reports false for other
// forms.
func (b *builder) fastDeconv(n *graph.Node) (bool, error) {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 4 || len(ws) != 4 || b.val(w).host == nil || n.Attrs.Int("group", 1) != 1 {
		return false, nil
	}
	if !b.sameFloat(y, x, w, bias) {
		return false, nil
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	OC, KH, KW := ws[1], ws[2], ws[3]
	stride := n.Attrs.Ints("strides", ones(2))
	bl := b.blocking()
	if stride[0] != KH || stride[1] != KW || bl.vw%KW != 0 || ys[2] != H*KH || ys[3] != W*KW ||
		slices.ContainsFunc(n.Attrs.Ints("dilations", ones(2)), func(d int64) bool { return d != 1 }) {
		return false, nil // pads or output padding show as another output size
	}
	OH, OW := ys[2], ys[3]
	pm, pf, res, err := b.postTables(n, y)
	if err != nil {
		return true, err
	}
	if ys.NumElements() == 0 {
		return true, nil
	}
	mr := int64(8)
	for _, c := range []int64{1, 2, 4} {
		if OC <= c {
			mr = c
			break
		}
	}
	// Weight vectors: lane l of (block, c, kh, i) is w[c, oc, kh, l % KW].
	src := b.hostF32(w)
	blocks := ceilDiv(OC, mr)
	dst := make([]float32, blocks*C*KH*mr*bl.vw)
	for oc := int64(0); oc < OC; oc++ {
		for c := int64(0); c < C; c++ {
			for kh := int64(0); kh < KH; kh++ {
				base := (((oc/mr)*C+c)*KH+kh)*mr*bl.vw + (oc%mr)*bl.vw
				for l := int64(0); l < bl.vw; l++ {
					dst[base+l] = src[((c*OC+oc)*KH+kh)*KW+l%KW]
				}
			}
		}
	}
	wp := b.layout(w, dst, fmt.Sprintf("#deconv%d/%d", mr, bl.vw))
	barg, hasBias := optArg(bias, w)
	m := []int64{N, C, H, W, OC, OH, OW, hasBias}
	global, local := bl.geometry(blocks, OH*ceilDiv(OW, bl.vw), N)
	return true, b.emitND(n, "fused_deconv2d", fmt.Sprintf("-DVW=%d -DMR=%d -DSTR_H=%d -DSTR_W=%d", bl.vw, mr, KH, KW)+b.halfDefine(y), global, local,
		slotArg(x), slotArg(wp), barg, res, slotArg(y), b.meta(m), pm, pf)
}

// sameFloat reports whether output out is f32 or f16 and every present
// value of vs has its type: the conv and GEMM kernels, built with
// halfDefine(out), read every tensor buffer in that one type.
func (b *builder) sameFloat(out int, vs ...int) bool {
	t := b.val(out).typ
	if t != tensor.F32 && t != tensor.F16 {
		return false
	}
	for _, v := range vs {
		if v >= 0 && b.val(v).typ != t {
			return false
		}
	}
	return true
}
