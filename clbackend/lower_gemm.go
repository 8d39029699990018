package clbackend

import (
	"fmt"
	"math"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// gemm emits out = alpha * A.B + beta * C over broadcast batches; the
// geometry is M, N, K with A, B and C (row, k/col) strides, and batch dims
// with per-input batch strides.
type gemmGeom struct {
	M, N, K                        int64
	aRow, aK, bK, bCol, cRow, cCol int64
	hasC                           bool
	batch, aBatch, bBatch, cBatch  []int64
	// oBatch, when set, are the output's batch strides (else dense:
	// M*N per batch).
	oBatch []int64
	// oRow, when set, is the output's row stride (else N).
	oRow int64
}

// gemm emits out = alpha * A.B + beta * C for geometry g (C is optional:
// c < 0) on f32 data, or f16 throughout (INFERENCE_PRECISION_HINT=f16; the
// kernels are built with halfDefine(out)).
func (b *builder) gemm(n *graph.Node, a, bb, c, out int, g gemmGeom, alpha, beta float32) error {
	defines := b.halfDefine(out)
	integer := b.val(out).typ.IsInteger()
	if t := b.val(out).typ; integer {
		d, err := b.intGemmDefines(n, t, []int{a, bb, c}, alpha, beta)
		if err != nil {
			return err
		}
		defines = d
	} else if t == tensor.F64 {
		// f64 (cl_khr_fp64): the serial matmul kernel, summing in f64.
		for _, v := range []int{a, bb, c} {
			if v >= 0 && b.val(v).typ != t {
				return errUnsupported(n, "inputs of types %s and %s", b.val(v).typ, t)
			}
		}
		d, err := b.floatDefines(n, t)
		if err != nil {
			return err
		}
		defines = d
	} else if !b.sameFloat(out, a, bb, c) {
		for _, v := range []int{a, bb, c, out} {
			if v >= 0 && b.val(v).typ != tensor.F32 {
				return errUnsupported(n, "element type %s (the GPU kernel takes f32, or f16 throughout)", b.val(v).typ)
			}
		}
	}
	if useGEMM(g.M, g.N, g.K) && b.val(out).shape.NumElements() > 0 && b.val(out).typ != tensor.F64 && !integer {
		// register-blocked (fusedGEMM); a host B with strided
		// columns is laid out contiguously first.
		if g.bCol != 1 && b.val(bb).host != nil && len(g.batch) == 0 {
			bb = b.relaid(bb, g.K, g.N, g.bK, g.bCol)
			g.bK, g.bCol = g.N, 1
		}
		if g.bCol == 1 {
			mode := int64(0)
			if g.hasC {
				mode = 3
			}
			return b.fusedGEMM(n, a, bb, c, out, g, mode, alpha, beta)
		}
	}
	m := []int64{g.M, g.N, g.K, g.aRow, g.aK, g.bK, g.bCol, g.cRow, g.cCol, 0, int64(len(g.batch))}
	if g.hasC {
		m[9] = 1
	}
	m = append(m, g.batch...)
	m = append(m, g.aBatch...)
	m = append(m, g.bBatch...)
	if g.cBatch == nil {
		g.cBatch = make([]int64, len(g.batch))
	}
	m = append(m, g.cBatch...)
	cnt := b.val(out).shape.NumElements()
	carg := slotArg(a)
	if c >= 0 {
		carg = slotArg(c)
	}
	return b.emit(n, "matmul", defines, cnt, slotArg(a), slotArg(bb), carg, slotArg(out), uint64(cnt), b.meta(m), alpha, beta)
}

// intGemmDefines returns gemm_matmul.cl's defines for an integer GEMM of
// type t over the values ins (-1: absent), which must all be of type t:
// exact wrapping arithmetic when alpha and beta are whole numbers, else
// the scaling in double (-DINT_SCALED, cl_khr_fp64), as the CPU reference.
func (b *builder) intGemmDefines(n *graph.Node, t tensor.ElementType, ins []int, alpha, beta float32) (string, error) {
	for _, v := range ins {
		if v >= 0 && b.val(v).typ != t {
			return "", errUnsupported(n, "inputs of types %s and %s", b.val(v).typ, t)
		}
	}
	if clType(t) == "" || t.Bits() == 4 {
		return "", errUnsupported(n, "element type %s", t)
	}
	defines := "-DIS_INT -DT=" + clType(t)
	whole := func(f float32) bool { return f == float32(math.Trunc(float64(f))) && math.Abs(float64(f)) < 1<<62 }
	if !whole(alpha) || !whole(beta) {
		if _, err := b.numType(n, tensor.F64); err != nil {
			return "", err
		}
		defines += " -DINT_SCALED"
	}
	return defines, nil
}

func lowerMatMul(b *builder, n *graph.Node) error {
	a, bb, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	g, err := matMulGeom(n, b.val(a).shape, b.val(bb).shape)
	if err != nil {
		return err
	}
	return b.gemm(n, a, bb, -1, y, g, 1, 0)
}

// matMulGeom is the geometry of numpy matmul of contiguous operands of
// shapes as and bs (1-D operands promoted, batch dims broadcast, batch
// strides in elements, 0 on broadcast axes).
func matMulGeom(n *graph.Node, as, bs tensor.Shape) (gemmGeom, error) {
	as, bs = as.Clone(), bs.Clone()
	if len(as) == 0 || len(bs) == 0 {
		return gemmGeom{}, errUnsupported(n, "MatMul of a scalar")
	}
	if len(as) == 1 {
		as = tensor.Shape{1, as[0]}
	}
	if len(bs) == 1 {
		bs = tensor.Shape{bs[0], 1}
	}
	g := gemmGeom{M: as[len(as)-2], K: as[len(as)-1], N: bs[len(bs)-1]}
	g.aRow, g.aK, g.bK, g.bCol = g.K, 1, g.N, 1
	q := max(len(as), len(bs)) - 2
	abs, bbs := as[:len(as)-2], bs[:len(bs)-2]
	ast, bst := strides(as), strides(bs)
	for d := 0; d < q; d++ {
		ia, ib := d-(q-len(abs)), d-(q-len(bbs))
		da, db := int64(1), int64(1)
		var sa, sb int64
		if ia >= 0 {
			da = abs[ia]
			if da != 1 {
				sa = ast[ia]
			}
		}
		if ib >= 0 {
			db = bbs[ib]
			if db != 1 {
				sb = bst[ib]
			}
		}
		g.batch = append(g.batch, max(da, db))
		g.aBatch, g.bBatch = append(g.aBatch, sa), append(g.bBatch, sb)
	}
	return g, nil
}

func lowerGemm(b *builder, n *graph.Node) error {
	a, bb, c, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	as, bs := b.val(a).shape, b.val(bb).shape
	ta, tb := n.Attrs.Int("transA", 0) != 0, n.Attrs.Int("transB", 0) != 0
	var g gemmGeom
	if ta {
		g.M, g.K, g.aRow, g.aK = as[1], as[0], 1, as[1]
	} else {
		g.M, g.K, g.aRow, g.aK = as[0], as[1], as[1], 1
	}
	if tb {
		g.N, g.bK, g.bCol = bs[0], 1, bs[1]
	} else {
		g.N, g.bK, g.bCol = bs[1], bs[1], 1
	}
	if c >= 0 {
		cs := b.val(c).shape
		g.hasC = true
		switch len(cs) {
		case 1:
			if cs[0] != 1 {
				g.cCol = 1
			}
		case 2:
			if cs[1] != 1 {
				g.cCol = 1
			}
			if cs[0] != 1 {
				g.cRow = cs[1]
			}
		}
	}
	return b.gemm(n, a, bb, c, y, g, n.Attrs.Float("alpha", 1), n.Attrs.Float("beta", 1))
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

// gemmRows is fused_gemm's MR for m rows on a 32-register CPU under the
// heuristics: 12 where that pads m less than 8 does, else 8.
func gemmRows(m int64) int {
	if ceilDiv(m, 12)*12 < ceilDiv(m, 8)*8 {
		return 12
	}
	return 8
}

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

// fusedGEMM emits out = post(alpha * A.B + bias) over g's batch as one
// launch of a variant of the gemm family (B's columns must be contiguous:
// g.bCol == 1): fused_gemm, register-blocked (a host A is packed), or
// fused_gemm_tiled, the local-memory tiled form. mode is the bias mode of
// gemm_fused.cl (0 none, 1 bias[row], 2 bias[column], 3 beta * C with g's C
// strides). The data is of out's type, f32 or f16 (the caller checks).
func (b *builder) fusedGEMM(n *graph.Node, a, bb, bias, out int, g gemmGeom, mode int64, alpha, beta float32) error {
	if g.bCol != 1 && g.N > 1 {
		return errUnsupported(n, "fused_gemm needs B with contiguous rows (column stride %d)", g.bCol)
	}
	pm, pf, res, err := b.postTables(n, out)
	if err != nil {
		return err
	}
	if g.M*g.N*prod(g.batch) == 0 {
		return nil
	}
	aForm := "rows"
	switch {
	case b.val(a).host != nil && !slices.ContainsFunc(g.aBatch, func(s int64) bool { return s != 0 }):
		aForm = "host"
	case g.aK != 1:
		aForm = "cols"
	}
	key := fmt.Sprintf("M=%d N=%d K=%d batch=%v a=%s mode=%d%s", g.M, g.N, g.K, g.batch, aForm, mode, b.halfDefine(out))
	op := gemmOp{a: a, b: bb, bias: bias, out: out, g: g, mode: mode, alpha: alpha, beta: beta, pm: pm, pf: pf, res: res}
	return b.choose(n, "gemm", key, true, func(kernels.Variant) string { return "" }, b.profile().gemm(g),
		func(v kernels.Variant) error { return b.emitGEMM(n, v, op) })
}

// gemmOp is one GEMM launch: operands, geometry, bias mode, scalars and
// post-op tables.
type gemmOp struct {
	a, b, bias, out int
	// aPacked: a is already laid out as A_PACKED's [batch][ceil(M/MR)][K][MR]
	// for the variant's MR (the Winograd weights).
	aPacked     bool
	g           gemmGeom
	mode        int64
	alpha, beta float32
	pm, pf, res slotArg
}

// emitGEMM emits op as variant v of the gemm family.
func (b *builder) emitGEMM(n *graph.Node, v kernels.Variant, op gemmOp) error {
	if op.aPacked && v.Algorithm == "tiled" {
		return n.Errorf("gemm variant %s cannot read an A operand packed for A_PACKED (the Winograd weights): choose a gemm/direct variant", v)
	}
	g := op.g
	q := int64(len(g.batch))
	ldo := g.N
	if g.oRow != 0 {
		ldo = g.oRow
	}
	m := []int64{g.M, g.N, g.K, g.aRow, g.aK, g.bK, ldo, op.mode, g.cRow, g.cCol, q}
	m = append(m, g.batch...)
	m = append(m, g.aBatch...)
	m = append(m, g.bBatch...)
	batch := int64(1)
	outStrides := make([]int64, q)
	for d := q - 1; d >= 0; d-- {
		outStrides[d] = batch * g.M * g.N
		batch *= g.batch[d]
	}
	if g.oBatch != nil {
		outStrides = g.oBatch
	}
	m = append(m, outStrides...)
	barg, _ := optArg(op.bias, op.b)
	half := b.halfDefine(op.out)
	aarg := slotArg(op.a)
	if v.Algorithm == "tiled" {
		local := kernels.TiledLocalSize(v)
		global := []int{int(ceilDiv(g.N, int64(v.Get("TS_N")))) * local[0], int(ceilDiv(g.M, int64(v.Get("TS_M")))) * local[1], int(batch)}
		return b.emitND(n, "fused_gemm_tiled", v.Defines()+half, global, local,
			aarg, slotArg(op.b), barg, op.res, slotArg(op.out), b.meta(m), op.alpha, op.beta, op.pm, op.pf)
	}
	vw, mr, nv := int64(v.Get("VW")), int64(v.Get("MR")), int64(v.Get("NV"))
	defines := v.Defines() + half + b.postDefines(op.pm)
	if op.aPacked {
		defines += " -DA_PACKED"
	} else if b.val(op.a).host != nil && !slices.ContainsFunc(g.aBatch, func(s int64) bool { return s != 0 }) {
		aarg = b.packRows(op.a, g.M, g.K, g.aRow, g.aK, mr)
		defines += " -DA_PACKED"
	}
	local := groupOf(v.Get("WG"), 3)
	global := roundGlobal([]int64{ceilDiv(g.M, mr), ceilDiv(g.N, nv*vw), batch}, local)
	return b.emitND(n, "fused_gemm", defines, global, local,
		aarg, slotArg(op.b), barg, op.res, slotArg(op.out), b.meta(m), op.alpha, op.beta, op.pm, op.pf)
}

// gemmLowerings are the GPU table entries (see lowering) of the matrix
// products.
func gemmLowerings() map[string]lowering {
	return map[string]lowering{
		"Einsum": {lower: lowerEinsum, half: true},
		"MatMul": {lower: lowerMatMul, half: true}, "Gemm": {lower: lowerGemm, half: true},
		graph.OpFullyConnected: {lower: lowerFullyConnected, half: true},
	}
}
