package clbackend

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// The convolutions of the hot families (kernels.Families): conv (regular
// KxK: direct register-blocked, implicit GEMM on the tiled GEMM, Winograd
// F(2x2,3x3)), dwconv (depthwise: direct, local-memory tiles) and deconv
// (kernel = stride: direct), each emitted as the variant choose picks;
// 1x1 convolutions are GEMMs (lower_gemm.go).

// convRows is fused_conv2d_blocked's MR for oc output channels under the
// heuristics: of 8, 16 and 24 (8 only with vectors narrower than 16) the
// one that pads oc least, the larger on a tie (more reuse of each input
// vector).
func convRows(oc int64, vw int) int {
	if vw < 16 {
		return 8
	}
	best := 8
	for _, mr := range []int{16, 24} {
		if ceilDiv(oc, int64(mr))*int64(mr) <= ceilDiv(oc, int64(best))*int64(best) {
			best = mr
		}
	}
	return best
}

// convOp is one blocked convolution: values, geometry and post-op tables.
type convOp struct {
	x, w, bias, y int
	g             conv2D
	pm, pf, res   slotArg
}

// fastConv lowers a 1-D or 2-D Conv or FusedConv with f32 data (or f16
// throughout: the kernels are built with halfDefine), a host (constant)
// weight and one group (any dilation: every conv algorithm takes it) or
// depthwise groups (dilation 1) to a variant of a hot family with the
// node's post-ops: the gemm family for a 1x1 convolution without stride or
// pads (a GEMM per image: W [OC, C] x X [C, H*W]), dwconv for a depthwise
// one, conv for the others. It
// reports false for other forms, which the caller runs with its
// one-output-per-item kernel.
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
	if (group != 1 && !depthwise) || (!depthwise && b.val(w).host == nil) || (depthwise && (DH != 1 || DW != 1)) {
		return false, nil
	}
	if KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0 && OH == H && OW == W && !depthwise && H*W > 1 {
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
	op := convOp{x: x, w: w, bias: bias, y: y, g: cg, pm: pm, pf: pf, res: res}
	if !depthwise && b.val(w).host != nil && patchConvFits(n, cg, b.profile().vw()) {
		return true, b.patchConv(n, op) // lower_conv_patches.go
	}
	key := fmt.Sprintf("x=%dx%dx%dx%d oc=%d k=%dx%d s=%dx%d p=%dx%d%s%s", N, C, H, W, OC, KH, KW, SH, SW, PH, PW, dilationKey(DH, DW), b.halfDefine(y))
	if depthwise {
		applies := func(v kernels.Variant) string {
			if v.Algorithm == "local" && (KH > 7 || KW > 7 || SH > 2 || SW > 2) {
				return "the local tile takes windows up to 7x7 and strides up to 2"
			}
			return ""
		}
		// (From the plane's height only in a static model: one with
		// dynamic spatial dims re-plans new shapes from built programs.)
		return true, b.choose(n, "dwconv", key, true, applies, b.profile().dwconv(cg, b.c.shapesStatic && b.pl.parent == nil), func(v kernels.Variant) error { return b.emitDWConv(n, v, op) })
	}
	applies := func(v kernels.Variant) string {
		if v.Algorithm == "winograd_2x2_3x3" && (KH != 3 || KW != 3 || SH != 1 || SW != 1) {
			return "Winograd F(2x2,3x3) takes 3x3 windows of stride 1"
		}
		return ""
	}
	heur := b.profile().conv(cg, KH == 3 && KW == 3 && SH == 1 && SW == 1)
	return true, b.choose(n, "conv", key, true, applies, heur, func(v kernels.Variant) error { return b.emitConv(n, v, op) })
}

// windowDefines are the build options of a convolution's window and
// strides, with the f16 define of its output. A dilated convolution adds
// dilRuntime, never its dilations: the kernels that take any (blocked,
// broadcast, implicit GEMM; Winograd's transforms, emitWinograd) then read
// them from their int array at run time, so that a U-Net-like model's
// dilated convolutions share one program per variant (IS-Net medium: 13
// programs instead of 18, each a build and, on POCL, work-group
// compilations at the warm-up of about a second), while the undilated
// programs keep their constant offsets (with run-time dilations the
// broadcast kernel ran 1.4-1.5x slower, the direct 1.2x).
func (b *builder) windowDefines(op convOp) string {
	g := op.g
	dil := ""
	if g.DH != 1 || g.DW != 1 {
		dil = dilRuntime
	}
	return fmt.Sprintf(" -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", g.KH, g.KW, g.SH, g.SW) + dil + b.halfDefine(op.y)
}

// dilRuntime builds the dilated convolutions' kernels with run-time
// dilations (read from their int arrays).
const dilRuntime = " -DDIL_RT"

// winogradPad is the elements (128 bytes of f32) each row and each of the
// 16 planes of the Winograd temporaries V and M is padded by, so that the
// rows and planes touched together do not map to the same cache sets
// (IS-Net medium's 1024->256 3x3 at 64x64, rows of 1024 tiles: 210-218
// ms CPU per inference without, 106-110 with, on pthread-skylake-avx512).
const winogradPad = 32

// dilationKey is the tuning key's part for dilations dh, dw: "" for 1 x 1
// (so undilated records keep their keys).
func dilationKey(dh, dw int64) string {
	if dh == 1 && dw == 1 {
		return ""
	}
	return fmt.Sprintf(" d=%dx%d", dh, dw)
}

// emitConv emits a regular convolution as variant v of the conv family.
func (b *builder) emitConv(n *graph.Node, v kernels.Variant, op convOp) error {
	g := op.g
	barg, hasBias := optArg(op.bias, op.w)
	switch v.Algorithm {
	case "implicit_gemm":
		K := g.C * g.KH * g.KW
		m := []int64{g.OC, g.OH * g.OW, K, K, 1, 0, g.OH * g.OW, hasBias, 0, 0, 1, g.N, 0, g.C * g.H * g.W, g.OC * g.OH * g.OW,
			g.C, g.H, g.W, g.OW, g.PH, g.PW, g.DH, g.DW}
		local := kernels.TiledLocalSize(v)
		global := []int{int(ceilDiv(g.OH*g.OW, int64(v.Get("TS_N")))) * local[0], int(ceilDiv(g.OC, int64(v.Get("TS_M")))) * local[1], int(g.N)}
		return b.emitND(n, "conv2d_implicit_gemm", v.Defines()+b.windowDefines(op), global, local,
			slotArg(op.w), slotArg(op.x), barg, op.res, slotArg(op.y), b.meta(m), float32(1), float32(0), op.pm, op.pf)
	case "winograd_2x2_3x3":
		return b.emitWinograd(n, v, op)
	case "broadcast":
		return b.emitConvBcast(n, v, op)
	}
	vw, mr, nv, ocg, wg := int64(v.Get("VW")), int64(v.Get("MR")), int64(v.Get("NV")), int64(1), v.Get("WG")
	if v.Algorithm == "grouped" {
		nv, ocg, wg = 1, int64(v.Get("OCG")), 1
	}
	m := []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.PH, g.PW, hasBias, g.DH, g.DW}
	local := groupOf(wg, 3)
	global := roundGlobal([]int64{g.OH * ceilDiv(g.OW, nv*vw), ceilDiv(ceilDiv(g.OC, mr), ocg), g.N}, local) // pixels first (conv_blocked.cl)
	K := g.C * g.KH * g.KW
	return b.emitND(n, "fused_conv2d_blocked", v.Defines()+b.windowDefines(op), global, local,
		slotArg(op.x), b.packRows(op.w, g.OC, K, K, 1, mr), barg, op.res, slotArg(op.y), b.meta(m), op.pm, op.pf)
}

// emitConvBcast emits a regular convolution as the conv family's
// broadcast variant v: weights packed [ceil(OC/(OB*VW))][C][KH][KW][OB*VW]
// once, OB*VW output channels x TL tiles of NP pixels of a row per item.
func (b *builder) emitConvBcast(n *graph.Node, v kernels.Variant, op convOp) error {
	g := op.g
	barg, hasBias := optArg(op.bias, op.w)
	ocv, np := int64(v.Get("OB")*v.Get("VW")), int64(v.Get("NP"))
	m := []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.PH, g.PW, hasBias, g.DH, g.DW}
	local := groupOf(1, 3)                                                                                      // one item per group: its private partial sums
	global := roundGlobal([]int64{g.OH * ceilDiv(g.OW, np*int64(v.Get("TL"))), ceilDiv(g.OC, ocv), g.N}, local) // pixels first (conv_bcast.cl)
	K := g.C * g.KH * g.KW
	return b.emitND(n, "fused_conv2d_bcast", v.Defines()+b.windowDefines(op), global, local,
		slotArg(op.x), b.packRows(op.w, g.OC, K, K, 1, ocv), barg, op.res, slotArg(op.y), b.meta(m), op.pm, op.pf)
}

// emitWinograd emits a 3x3 stride-1 convolution as Winograd F(2x2,3x3):
// the input transform into V [16][C][P] (P output tiles of 2x2), the 16
// GEMMs U . V of fused_gemm with the variant's blocking (U = G g G^T, the
// transformed weights [16][OC][C], made here once), and the output
// transform with bias and post-ops.
func (b *builder) emitWinograd(n *graph.Node, v kernels.Variant, op convOp) error {
	g := op.g
	th, tw := ceilDiv(g.OH, 2*g.DH)*g.DH, ceilDiv(g.OW, 2*g.DW)*g.DW // tiles of 2 outputs a dilation apart
	P := g.N * th * tw
	typ := b.val(op.y).typ
	// Rows of P tiles lie winogradPad elements further apart than P, and
	// the 16 planes of V and M as much further than C and OC rows: rows
	// and planes a multiple of 4 KiB apart share the cache's sets (the
	// GEMMs read 32 columns of each row of V in turn; the transforms write
	// and read all 16 planes at once).
	row := P + winogradPad
	vPlane, mPlane := g.C*row+winogradPad, g.OC*row+winogradPad
	vt := b.temp(typ, []int64{16, vPlane})
	mt := b.temp(typ, []int64{16, mPlane})
	half := b.halfDefine(op.y)
	if g.DH != 1 || g.DW != 1 {
		half = dilRuntime + half
	}
	in := b.meta([]int64{g.N, g.C, g.H, g.W, th, tw, g.PH, g.PW, g.DH, g.DW, vPlane, row})
	if err := b.emitND(n, "winograd_input_2x2_3x3", half, []int{int(P), int(g.C)}, nil, slotArg(op.x), slotArg(vt), in); err != nil {
		return err
	}
	mr := int64(v.Get("MR"))
	u := b.layout(op.w, winogradWeights(b.hostF32(op.w), g.OC, g.C, mr), fmt.Sprintf("#winograd2x2/%d", mr))
	gemm := gemmOp{a: u, aPacked: true, b: vt, bias: -1, out: mt, mode: 0, alpha: 1, pm: b.meta([]int64{0, 0}), pf: b.floats(nil), res: slotArg(mt),
		g: gemmGeom{M: g.OC, N: P, K: g.C, aRow: g.C, aK: 1, bK: row, bCol: 1, oRow: row,
			batch: []int64{16}, aBatch: []int64{ceilDiv(g.OC, mr) * mr * g.C}, bBatch: []int64{vPlane}, oBatch: []int64{mPlane}}}
	if err := b.emitGEMM(n, mustVariant("gemm", "direct", v.Get("VW"), v.Get("MR"), v.Get("NV"), v.Get("WG")), gemm); err != nil {
		return err
	}
	barg, hasBias := optArg(op.bias, op.w)
	out := b.meta([]int64{g.N, g.OC, g.OH, g.OW, th, tw, hasBias, g.DH, g.DW, mPlane, row})
	return b.emitND(n, "winograd_output_2x2_3x3", half, []int{int(P), int(g.OC)}, nil,
		slotArg(mt), barg, op.res, slotArg(op.y), out, op.pm, op.pf)
}

// winogradWeights returns U = G g G^T of 3x3 weights w [OC, C, 3, 3] laid
// out for fused_gemm's packed A (A_PACKED): [16][ceil(OC/mr)][C][mr]
// (element xi = 4i + j of the 4x4 transform; rows past OC zero), so that
// a GEMM item reads its mr rows' weights as one stream; with G = [1 0 0;
// 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], in float64 and rounded once; G's
// halves are exact, so (a + b + c) / 2 is the product's value. The output
// channels are split among the cores (a compile's host work: IS-Net
// medium's Winograd weights are 0.3-0.4 s of one core).
func winogradWeights(w []float32, oc, c, mr int64) []float32 {
	plane := ceilDiv(oc, mr) * mr * c
	u := make([]float32, 16*plane)
	splitRange(oc, func(o0, o1 int64) {
		for o := o0; o < o1; o++ {
			for i := int64(0); i < c; i++ {
				k := w[(o*c+i)*9 : (o*c+i)*9+9]
				var t [4][3]float64 // G g
				for col := 0; col < 3; col++ {
					g0, g1, g2 := float64(k[col]), float64(k[3+col]), float64(k[6+col])
					t[0][col], t[1][col], t[2][col], t[3][col] = g0, 0.5*(g0+g1+g2), 0.5*(g0-g1+g2), g2
				}
				at := ((o/mr)*c+i)*mr + o%mr
				for r := 0; r < 4; r++ { // (G g) G^T
					t0, t1, t2 := t[r][0], t[r][1], t[r][2]
					base := int64(r*4) * plane
					u[base+at] = float32(t0)
					u[base+plane+at] = float32(0.5 * (t0 + t1 + t2))
					u[base+2*plane+at] = float32(0.5 * (t0 - t1 + t2))
					u[base+3*plane+at] = float32(t2)
				}
			}
		}
	})
	return u
}

// splitRange runs f over [0, n) in one contiguous part per core
// (GOMAXPROCS), in parallel, and returns when every part is done.
func splitRange(n int64, f func(lo, hi int64)) {
	parts := min(int64(runtime.GOMAXPROCS(0)), n)
	if parts <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(n*p/parts, n*(p+1)/parts)
		}()
	}
	wg.Wait()
}

// emitDWConv emits a depthwise convolution as variant v of the dwconv
// family.
func (b *builder) emitDWConv(n *graph.Node, v kernels.Variant, op convOp) error {
	g := op.g
	barg, hasBias := optArg(op.bias, op.w)
	m := b.meta([]int64{g.N, g.C, g.H, g.W, g.OH, g.OW, g.PH, g.PW, hasBias})
	if v.Algorithm == "local" {
		tx, ty := int64(v.Get("TX")), int64(v.Get("TY"))
		local := []int{int(tx), int(ty), 1}
		global := []int{int(ceilDiv(g.OW, tx) * tx), int(ceilDiv(g.OH, ty) * ty), int(g.N * g.C)}
		return b.emitND(n, "fused_dwconv2d_local", v.Defines()+b.windowDefines(op)+b.postDefines(op.pm), global, local,
			slotArg(op.x), slotArg(op.w), barg, op.res, slotArg(op.y), m, op.pm, op.pf)
	}
	vw, rb := int64(v.Get("VW")), int64(v.Get("RB"))
	local := groupOf(v.Get("WG"), 3)
	global := roundGlobal([]int64{ceilDiv(g.OW, vw), ceilDiv(g.OH, rb), g.N * g.C}, local)
	return b.emitND(n, "fused_dwconv2d", v.Defines()+b.windowDefines(op)+b.postDefines(op.pm), global, local,
		slotArg(op.x), slotArg(op.w), barg, op.res, slotArg(op.y), m, op.pm, op.pf)
}

// fastDeconv lowers a 2-D ConvTranspose whose kernel equals its stride
// (no pads, output padding or dilation, one group, f32 or f16 throughout,
// host weights) to a variant of the deconv family (fused_deconv2d; its
// vector width must be a multiple of the kernel width) with post-ops
// posts in its epilogue, and reports false for other forms. n is the node
// whose values (x, w, optional bias; one output) it runs on and whose
// launches and variant they are: the ConvTranspose itself, or a
// KernelFusion of it and its activation (lowerDeconvFusion); attrs are
// the ConvTranspose's attributes.
func (b *builder) fastDeconv(n *graph.Node, attrs graph.Attrs, posts []graph.PostOp) (bool, error) {
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 4 || len(ws) != 4 || b.val(w).host == nil || attrs.Int("group", 1) != 1 {
		return false, nil
	}
	if !b.sameFloat(y, x, w, bias) {
		return false, nil
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	OC, KH, KW := ws[1], ws[2], ws[3]
	stride := attrs.Ints("strides", ones(2))
	if stride[0] != KH || stride[1] != KW || ys[2] != H*KH || ys[3] != W*KW ||
		slices.ContainsFunc(attrs.Ints("dilations", ones(2)), func(d int64) bool { return d != 1 }) {
		return false, nil // pads or output padding show as another output size
	}
	applies := func(v kernels.Variant) string {
		if int64(v.Get("VW"))%KW != 0 {
			return fmt.Sprintf("vector width %d is not a multiple of the kernel width %d", v.Get("VW"), KW)
		}
		return ""
	}
	heur, ok := b.profile().deconv(OC, KW)
	if !ok {
		return false, nil
	}
	pm, pf, res, err := b.postTablesOf(n, posts, y)
	if err != nil {
		return true, err
	}
	if ys.NumElements() == 0 {
		return true, nil
	}
	op := convOp{x: x, w: w, bias: bias, y: y, pm: pm, pf: pf, res: res,
		g: conv2D{N: N, C: C, OC: OC, H: H, W: W, OH: ys[2], OW: ys[3], KH: KH, KW: KW, SH: KH, SW: KW, group: 1}}
	key := fmt.Sprintf("x=%dx%dx%dx%d oc=%d k=%dx%d%s", N, C, H, W, OC, KH, KW, b.halfDefine(y))
	return true, b.choose(n, "deconv", key, true, applies, heur,
		func(v kernels.Variant) error { return b.emitDeconv(n, v, op) })
}

// emitDeconv emits a kernel = stride ConvTranspose as variant v of the
// deconv family.
func (b *builder) emitDeconv(n *graph.Node, v kernels.Variant, op convOp) error {
	g := op.g
	vw, mr := int64(v.Get("VW")), int64(v.Get("MR"))
	// Weight vectors: lane l of (block, c, kh, i) is w[c, oc, kh, l % KW].
	src := b.hostF32(op.w)
	blocks := ceilDiv(g.OC, mr)
	dst := make([]float32, blocks*g.C*g.KH*mr*vw)
	for oc := int64(0); oc < g.OC; oc++ {
		for c := int64(0); c < g.C; c++ {
			for kh := int64(0); kh < g.KH; kh++ {
				base := (((oc/mr)*g.C+c)*g.KH+kh)*mr*vw + (oc%mr)*vw
				for l := int64(0); l < vw; l++ {
					dst[base+l] = src[((c*g.OC+oc)*g.KH+kh)*g.KW+l%g.KW]
				}
			}
		}
	}
	wp := b.layout(op.w, dst, fmt.Sprintf("#deconv%d/%d", mr, vw))
	barg, hasBias := optArg(op.bias, op.w)
	m := []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, hasBias}
	local := groupOf(v.Get("WG"), 3)
	global := roundGlobal([]int64{blocks, g.OH * ceilDiv(g.OW, vw), g.N}, local)
	return b.emitND(n, "fused_deconv2d", fmt.Sprintf("%s -DSTR_H=%d -DSTR_W=%d", v.Defines(), g.KH, g.KW)+b.halfDefine(op.y)+b.postDefines(op.pm), global, local,
		slotArg(op.x), slotArg(wp), barg, op.res, slotArg(op.y), b.meta(m), op.pm, op.pf)
}

// ceilDiv is a / b rounded up.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

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
