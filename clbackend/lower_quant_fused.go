package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// The fused integer ops (graph.OpQuantizedConv and
// graph.OpQuantizedFullyConnected) run as variants of the qconv, qdwconv
// and qgemm families (kernels/variant_tables_quant.go) with the weights
// packed once per compiled model, shifted by their zero points, in the
// layout of the chosen algorithm; the forms no family takes (dilations,
// grouped convolutions that are not depthwise, weights known only at run
// time) run on conv_integer's FUSED form, one output per work item.

// quantOp is one fused integer op: its values and epilogue arguments.
type quantOp struct {
	x, w, y       int
	xz, xs, ws    slotArg
	bias          slotArg
	hasBias       int64
	perCh         int64
	ys, yz        slotArg
	quant         bool
	pm, pf, res   slotArg
	defines       string // XT, YT, QUANT, QMIN, QMAX and the division option
	wt            tensor.ElementType
	xt            tensor.ElementType // the data's 8-bit type (after quantizing on load)
	onLoad        bool               // f32 data quantized on load (graph.QuantizesOnLoad)
	maxW          int64              // the largest |w - w_zero_point|
	wz            []int64
	hostW         []int64
	c, oc, kh, kw int64
}

// quantOperands reads the inputs of fused integer op n shared by both ops.
func (b *builder) quantOperands(n *graph.Node) (*quantOp, error) {
	op := &quantOp{x: b.in(n, graph.QuantInX), w: b.in(n, graph.QuantInW), y: b.out(n, 0)}
	xt, wt := b.val(op.x).typ, b.val(op.w).typ
	var defs string
	var err error
	if graph.QuantizesOnLoad(n) {
		// f32 data quantized on load into x_zero_point's type.
		xt = b.val(b.in(n, graph.QuantInXZero)).typ
		lo, hi, _ := xt.IntRange()
		if xt != tensor.I8 && xt != tensor.U8 {
			return nil, errUnsupported(n, "f32 data quantized to %s (want i8 or u8)", xt)
		}
		defs = fmt.Sprintf(" -DXT=float -DXQ -DZT=%s -DXQMIN=%d -DXQMAX=%d", clType(xt), lo, hi)
		op.onLoad = true
	} else if defs, err = b.int8Defines(n, map[int]string{graph.QuantInX: "XT"}); err != nil {
		return nil, err
	}
	op.xt = xt
	if wt != tensor.I8 && wt != tensor.U8 {
		return nil, errUnsupported(n, "weights of type %s (want i8 or u8)", wt)
	}
	op.wt = wt
	op.xz = slotArg(b.in(n, graph.QuantInXZero))
	op.xs = slotArg(b.in(n, graph.QuantInXScale))
	ws := b.in(n, graph.QuantInWScale)
	op.ws, op.perCh = slotArg(ws), b.perChannel(ws)
	op.bias, op.hasBias = optArg(b.in(n, graph.QuantInBias), op.x)
	if ys := b.in(n, graph.QuantInYScale); ys >= 0 {
		qd, err := quantDefines(n, "Y", b.val(op.y).typ)
		if err != nil {
			return nil, err
		}
		op.quant, op.ys, op.yz = true, slotArg(ys), slotArg(b.in(n, graph.QuantInYZero))
		defs += " -DQUANT" + qd
	}
	if xt == tensor.I8 {
		defs += " -DXS_SIGNED"
	}
	op.defines = defs + b.exactDivision()
	if op.pm, op.pf, op.res, err = b.postTables(n, op.y); err != nil {
		return nil, err
	}
	if h := b.val(op.w).host; h != nil {
		op.hostW, _ = h.Int64s()
		op.wz = make([]int64, 1)
		if z := b.in(n, graph.QuantInWZero); z >= 0 {
			zv, ok := b.hostInts(z)
			if !ok {
				return nil, errUnsupported(n, "a weight zero point known only at run time with constant weights")
			}
			op.wz = zv
		}
	}
	return op, nil
}

// zeroAt is the weight zero point of output channel c.
func (op *quantOp) zeroAt(c int64) int64 {
	if len(op.wz) == 1 {
		return op.wz[0]
	}
	return op.wz[c]
}

// epilogueArgs are the kernel arguments after the weights (and, for dot4,
// the weight sums): x's zero point, the scales, the bias, the residual,
// y's scale and zero point (with -DQUANT) and the output.
func (op *quantOp) epilogueArgs() []any {
	args := []any{op.xz, op.xs, op.ws, op.bias, op.res}
	if op.quant {
		args = append(args, op.ys, op.yz)
	}
	return append(args, slotArg(op.y))
}

// chunk is how many runs of per products (each at most 255 * maxW) an f32
// sum can take and stay an exact integer (below 2^24).
func chunk(per, maxW int64) int64 {
	return max(1, (1<<24-1)/(255*max(maxW, 1)*max(per, 1)))
}

// oneRun reports whether every output channel's sum of products, over
// all its oc-th share of the weights, stays an exact f32 integer whatever
// the 8-bit data: 255 times the largest sum of |w - w_zero_point| of a
// channel is below 2^24 (so is every partial sum), a far tighter bound
// than chunk's (most weights are small: PP-OCR det's 3x3 convolutions
// over 96 channels fit).
func (op *quantOp) oneRun(oc int64) bool {
	per := int64(len(op.hostW)) / max(oc, 1)
	for o := int64(0); o < oc; o++ {
		l1 := int64(0)
		for _, q := range op.hostW[o*per : (o+1)*per] {
			d := q - op.zeroAt(o)
			l1 += max(d, -d)
		}
		if 255*l1 >= 1<<24 {
			return false
		}
	}
	return true
}

// intLayout adds a host layout of weight value v made of integers, as an
// i32 (or u32 for dot4) weight of the compiled model named after v.
func (b *builder) intLayout(v int, t tensor.ElementType, vals []int64, suffix string) slotArg {
	x, _ := tensor.New(t, tensor.Shape{max(int64(len(vals)), 1)})
	switch t {
	case tensor.I32:
		d := x.I32()
		for i, q := range vals {
			d[i] = int32(q)
		}
	default: // u32 bits, held in an i32 tensor's bytes
		d := x.I32()
		for i, q := range vals {
			d[i] = int32(uint32(q))
		}
	}
	p := b.newValue(x.Type(), x.Shape(), x)
	if name := b.val(v).weight; name != "" {
		b.val(p).weight = name + suffix
	}
	return slotArg(p)
}

// lowerQuantizedConv runs graph.OpQuantizedConv: depthwise forms as qdwconv,
// one-group forms with constant weights and dilation 1 as qconv, the rest
// on conv_integer's FUSED form.
func lowerQuantizedConv(b *builder, n *graph.Node) error {
	op, err := b.quantOperands(n)
	if err != nil {
		return err
	}
	xs, ws, ys := b.val(op.x).shape, b.val(op.w).shape, b.val(op.y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernels take 1-D and 2-D convolutions)", len(xs)-2)
	}
	g := conv2DOf(n, xs, ws, ys)
	op.c, op.oc, op.kh, op.kw = g.C, g.OC, g.KH, g.KW
	if ys.NumElements() == 0 {
		return nil
	}
	for _, q := range op.hostW {
		op.maxW = max(op.maxW, q-op.zeroAt(0), op.zeroAt(0)-q)
	}
	if len(op.wz) > 1 {
		per := int64(len(op.hostW)) / g.OC
		op.maxW = 0
		for i, q := range op.hostW {
			d := q - op.wz[int64(i)/per]
			op.maxW = max(op.maxW, d, -d)
		}
	}
	depthwise := g.group == g.C && g.OC == g.C && ws[1] == 1
	direct := op.hostW != nil && (g.group == 1 || depthwise && g.KH*g.KW <= 49 && g.DH == 1 && g.DW == 1)
	if !direct {
		if op.onLoad {
			return errUnsupported(n, "f32 data quantized on load in a convolution the qconv and qdwconv kernels do not take (group %d, constant weights %v)", g.group, op.hostW != nil)
		}
		return b.quantConvGeneric(n, op, g)
	}
	if !depthwise {
		g = g.pointwiseRow()
	}
	key := fmt.Sprintf("x=%dx%dx%dx%d oc=%d k=%dx%d s=%dx%d p=%dx%d d=%dx%d %s%s", g.N, g.C, g.H, g.W, g.OC, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, op.xt, op.defines)
	if depthwise {
		rb := 4
		if g.SH == 2 {
			rb = 2
		}
		heur := mustVariant("qdwconv", "direct", b.profile().vw(), rb, b.profile().groupPolicy())
		return b.choose(n, "qdwconv", key, true, func(kernels.Variant) string { return "" }, heur,
			func(v kernels.Variant) error { return b.emitQDWConv(n, v, op, g) })
	}
	vw := b.profile().vw()
	mr := convRows(g.OC, vw)
	if g.KH*g.KW == 1 {
		// A pointwise window feeds each loaded input vector to MR
		// products only; with an f32 and an i32 accumulator per output
		// channel, 8 channels keep both in registers (PP-OCR det on
		// POCL: its 1x1 convolutions 15% faster than with 16 or 24).
		mr = 8
	}
	heur := mustVariant("qconv", "fma", vw, mr, b.profile().groupPolicy())
	if b.profile().gpu {
		heur = mustVariant("qconv", "int", 4, 8, 0)
		if b.limits().IntegerDot {
			heur = mustVariant("qconv", "dot4", 4, 8, 0)
		}
	}
	return b.choose(n, "qconv", key, true, func(kernels.Variant) string { return "" }, heur,
		func(v kernels.Variant) error { return b.emitQConv(n, v, op, g) })
}

// pointwiseRow is g with a pointwise convolution (a 1x1 window, stride 1,
// no padding) seen as one row of H*W pixels per image: the same elements
// (an output pixel reads the input pixel at its own offset), blocked by
// qconv2d_blocked without a partial tile at the end of each row. Other
// geometries are returned unchanged.
func (g conv2D) pointwiseRow() conv2D {
	if g.KH != 1 || g.KW != 1 || g.SH != 1 || g.SW != 1 || g.PH != 0 || g.PW != 0 || g.OH != g.H || g.OW != g.W {
		return g
	}
	g.W, g.OW = g.H*g.W, g.OH*g.OW
	g.H, g.OH = 1, 1
	return g
}

// emitQConv emits a one-group quantized convolution as variant v of the
// qconv family, packing the weights for its algorithm.
func (b *builder) emitQConv(n *graph.Node, v kernels.Variant, op *quantOp, g conv2D) error {
	mr := int64(v.Get("MR"))
	vw := int64(v.Get("VW"))
	K := g.KH * g.KW
	blocks := ceilDiv(g.OC, mr)
	defs := v.Defines() + op.defines + fmt.Sprintf(" -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", g.KH, g.KW, g.SH, g.SW)
	m := []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.PH, g.PW, op.hasBias, op.perCh, g.C * K, g.DH, g.DW}
	args := []any{slotArg(op.x)}
	switch v.Algorithm {
	case "dot4":
		c4 := ceilDiv(g.C, 4)
		packed := make([]int64, blocks*c4*K*mr)
		wq := make([]int64, 2*g.OC)
		for o := int64(0); o < g.OC; o++ {
			wq[2*o] = op.zeroAt(o)
			for c := int64(0); c < g.C; c++ {
				for k := int64(0); k < K; k++ {
					q := op.hostW[(o*g.C+c)*K+k]
					wq[2*o+1] += q
					i := (((o/mr)*c4+c/4)*K+k)*mr + o%mr
					packed[i] |= (q & 0xff) << (8 * (c % 4))
				}
			}
		}
		sig := "u"
		if op.xt == tensor.I8 {
			sig = "s"
		}
		if op.wt == tensor.I8 {
			sig += "s"
		} else {
			sig += "u"
		}
		defs += " -DDOT4=" + sig
		args = append(args, b.intLayout(op.w, tensor.I32, packed, fmt.Sprintf("#qdot4/%d", mr)), op.xz, b.intLayout(op.w, tensor.I32, wq, "#qsums"))
		args = append(args, op.epilogueArgs()[1:]...)
	default:
		packed := make([]int64, blocks*g.C*K*mr)
		for o := int64(0); o < g.OC; o++ {
			for ck := int64(0); ck < g.C*K; ck++ {
				packed[((o/mr)*g.C*K+ck)*mr+o%mr] = op.hostW[o*g.C*K+ck] - op.zeroAt(o)
			}
		}
		if v.Algorithm == "int" {
			args = append(args, b.intLayout(op.w, tensor.I32, packed, fmt.Sprintf("#qint/%d", mr)))
		} else {
			f := make([]float32, len(packed))
			for i, q := range packed {
				f[i] = float32(q)
			}
			args = append(args, slotArg(b.layout(op.w, f, fmt.Sprintf("#qfma/%d", mr))))
			defs += fmt.Sprintf(" -DCHUNK=%d", chunk(K, op.maxW))
			if op.oneRun(g.OC) {
				defs += " -DONE_RUN"
			}
		}
		args = append(args, op.epilogueArgs()...)
	}
	args = append(args, b.meta(m), op.pm, op.pf)
	local := groupOf(v.Get("WG"), 3)
	global := roundGlobal([]int64{blocks, g.OH * ceilDiv(g.OW, vw), g.N}, local)
	return b.emitND(n, "qconv2d_blocked", defs, global, local, args...)
}

// emitQDWConv emits a depthwise quantized convolution as variant v of the
// qdwconv family.
func (b *builder) emitQDWConv(n *graph.Node, v kernels.Variant, op *quantOp, g conv2D) error {
	K := g.KH * g.KW
	f := make([]float32, g.C*K)
	for i := range f {
		f[i] = float32(op.hostW[i] - op.zeroAt(int64(i)/K))
	}
	defs := v.Defines() + op.defines + fmt.Sprintf(" -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", g.KH, g.KW, g.SH, g.SW)
	m := []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.PH, g.PW, op.hasBias, op.perCh}
	args := []any{slotArg(op.x), slotArg(b.layout(op.w, f, "#qdw"))}
	args = append(args, op.epilogueArgs()...)
	args = append(args, b.meta(m), op.pm, op.pf)
	vw, rb := int64(v.Get("VW")), int64(v.Get("RB"))
	local := groupOf(v.Get("WG"), 3)
	global := roundGlobal([]int64{ceilDiv(g.OW, vw), ceilDiv(g.OH, rb), g.N * g.C}, local)
	return b.emitND(n, "qdwconv2d", defs, global, local, args...)
}

// quantConvGeneric runs a quantized convolution no family takes on
// conv_integer's FUSED form: one output per work item, any group and
// dilation, the weights and their zero points read at run time.
func (b *builder) quantConvGeneric(n *graph.Node, op *quantOp, g conv2D) error {
	wt := b.val(op.w).typ
	defs := op.defines + " -DFUSED -DWT=" + clType(wt)
	wz := b.in(n, graph.QuantInWZero)
	m := append(g.meta(op.hasBias), b.perChannel(wz), op.perCh)
	args := []any{slotArg(op.x), slotArg(op.w), op.xz, b.zeroOf(wz, wt), op.bias, op.xs, op.ws, op.res}
	if op.quant {
		args = append(args, op.ys, op.yz)
	}
	cnt := b.val(op.y).shape.NumElements()
	args = append(args, slotArg(op.y), uint64(cnt), b.meta(m), op.pm, op.pf)
	return b.emit(n, "conv_integer", defs, cnt, args...)
}

// lowerQuantizedFullyConnected runs graph.OpQuantizedFullyConnected (A
// contiguous, W [K, N] known at compile time) as a variant of the qgemm
// family.
func lowerQuantizedFullyConnected(b *builder, n *graph.Node) error {
	op, err := b.quantOperands(n)
	if err != nil {
		return err
	}
	ws := b.val(op.w).shape
	if op.onLoad {
		return errUnsupported(n, "f32 data quantized on load (the GPU takes it in QuantizedConv)")
	}
	if len(ws) != 2 || op.hostW == nil {
		return errUnsupported(n, "weights %v known at run time (the GPU kernel takes constant [K, N] weights)", ws)
	}
	K, N := ws[0], ws[1]
	M := b.val(op.y).shape.NumElements() / max(N, 1)
	if M*N == 0 {
		return nil
	}
	for i, q := range op.hostW {
		d := q - op.zeroAt(int64(i)%N)
		op.maxW = max(op.maxW, d, -d)
	}
	key := fmt.Sprintf("M=%d N=%d K=%d %s%s", M, N, K, b.val(op.x).typ, op.defines)
	heur := mustVariant("qgemm", "fma", b.profile().vw(), b.profile().groupPolicy())
	return b.choose(n, "qgemm", key, true, func(kernels.Variant) string { return "" }, heur, func(v kernels.Variant) error {
		vw := int64(v.Get("VW"))
		np := ceilDiv(N, vw) * vw
		packed := make([]int64, K*np)
		for k := int64(0); k < K; k++ {
			for c := int64(0); c < N; c++ {
				packed[k*np+c] = op.hostW[k*N+c] - op.zeroAt(c)
			}
		}
		defs := v.Defines() + op.defines
		var warg slotArg
		if v.Algorithm == "int" {
			warg = b.intLayout(op.w, tensor.I32, packed, fmt.Sprintf("#qfcint/%d", vw))
		} else {
			f := make([]float32, len(packed))
			for i, q := range packed {
				f[i] = float32(q)
			}
			warg = slotArg(b.layout(op.w, f, fmt.Sprintf("#qfcfma/%d", vw)))
			defs += fmt.Sprintf(" -DCHUNK=%d", chunk(1, op.maxW))
		}
		args := append([]any{slotArg(op.x), warg}, op.epilogueArgs()...)
		args = append(args, b.meta([]int64{M, N, K, op.hasBias, op.perCh}), op.pm, op.pf)
		local := groupOf(v.Get("WG"), 2)
		global := roundGlobal([]int64{ceilDiv(N, vw), M}, local)
		return b.emitND(n, "qfc_blocked", defs, global, local, args...)
	})
}
