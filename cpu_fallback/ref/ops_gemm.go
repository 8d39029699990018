package ref

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// nnGemmFunc is nnSgemm or nnDgemm.
type nnGemmFunc[T float32 | float64] func(tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

// gemmNumeric runs an f32/f64 implementation of a GEMM-shaped op on any
// numeric type: f32 and f64 natively, f16/bf16 through f32; MatMul and
// Gemm on integers exactly (intGemm), other ops on integers through f64.
func gemmNumeric(f32 func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error),
	f64 func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error)) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return nil, n.Errorf("missing input 0")
		}
		t := in[0].Type()
		switch t {
		case tensor.F32:
			return f32(n, in)
		case tensor.F64:
			return f64(n, in)
		case tensor.Bool:
			return nil, n.Errorf("input 0 has element type %v, want a numeric type", t)
		}
		if t.IsInteger() && (n.OpType == "MatMul" || n.OpType == "Gemm") {
			return intGemm(n, in)
		}
		via := tensor.F64
		impl := f64
		if t == tensor.F16 || t == tensor.BF16 {
			via, impl = tensor.F32, f32
		}
		conv := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			if x == nil {
				continue
			}
			c, err := x.Convert(via)
			if err != nil {
				return nil, n.Errorf("input %d: %w", i, err)
			}
			conv[i] = c
		}
		outs, err := impl(n, conv)
		if err != nil {
			return nil, err
		}
		for i, o := range outs {
			c, err := o.Convert(t)
			if err != nil {
				return nil, n.Errorf("output %d: %w", i, err)
			}
			outs[i] = c
		}
		return outs, nil
	}
}

var (
	matMulKernel = gemmNumeric(nnMatMul[float32](nnSgemm, tensor.F32), nnMatMul[float64](nnDgemm, tensor.F64))
	gemmKernel   = gemmNumeric(nnGemm[float32](nnSgemm, tensor.F32), nnGemm[float64](nnDgemm, tensor.F64))
)

// gemmFloats returns the typed elements of an f32 or f64 tensor.
func gemmFloats[T float32 | float64](x *tensor.Tensor) []T {
	var zero T
	switch any(zero).(type) {
	case float32:
		return any(x.F32()).([]T)
	default:
		return any(x.F64()).([]T)
	}
}

// gemmBroadcast computes the numpy-broadcast shape of two batch shapes.
func gemmBroadcast(n *graph.Node, a, b []int64) ([]int64, error) {
	r := max(len(a), len(b))
	out := make([]int64, r)
	for i := 0; i < r; i++ {
		da, db := int64(1), int64(1)
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, n.Errorf("batch dims %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}

// gemmOffsets returns, for every index of the broadcast batch shape
// out, the matching flat batch index of an operand with batch shape s.
func gemmOffsets(s, out []int64) []int {
	total := int(nnProd(out))
	offs := make([]int, total)
	str := tensor.ContiguousStrides(s)
	idx := make([]int64, len(out))
	shift := len(out) - len(s)
	for i := 0; i < total; i++ {
		o := int64(0)
		for d := range s {
			if s[d] != 1 {
				o += idx[d+shift] * str[d]
			}
		}
		offs[i] = int(o)
		for d := len(out) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < out[d] {
				break
			}
			idx[d] = 0
		}
	}
	return offs
}

// matMulGeom is the geometry of a numpy matmul: M, K, N, the output
// shape (1-D operands promoted, the added dim removed) and, per matrix of
// the broadcast batch, the matrix index in A and in B.
type matMulGeom struct {
	m, k, n    int64
	yShape     tensor.Shape
	aOff, bOff []int
}

// newMatMulGeom checks A and B's shapes as and bs and returns their
// product's geometry.
func newMatMulGeom(n *graph.Node, as, bs tensor.Shape) (*matMulGeom, error) {
	if len(as) == 0 || len(bs) == 0 {
		return nil, n.Errorf("A %v and B %v must have rank >= 1", as, bs)
	}
	a0, b0 := as, bs
	aVec, bVec := len(as) == 1, len(bs) == 1
	if aVec {
		as = tensor.Shape{1, as[0]}
	}
	if bVec {
		bs = tensor.Shape{bs[0], 1}
	}
	g := &matMulGeom{m: as[len(as)-2], k: as[len(as)-1], n: bs[len(bs)-1]}
	if k2 := bs[len(bs)-2]; g.k != k2 {
		return nil, n.Errorf("A %v and B %v: inner dims %d and %d differ", a0, b0, g.k, k2)
	}
	batch, err := gemmBroadcast(n, as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	g.yShape = append(tensor.Shape(nil), batch...)
	if !aVec {
		g.yShape = append(g.yShape, g.m)
	}
	if !bVec {
		g.yShape = append(g.yShape, g.n)
	}
	g.aOff = gemmOffsets(as[:len(as)-2], batch)
	g.bOff = gemmOffsets(bs[:len(bs)-2], batch)
	return g, nil
}

// run calls gemm on every batch matrix (in parallel when there are
// several) with its operands' and output's offsets in elements.
func (g *matMulGeom) run(f func(i, aOff, bOff, yOff int)) {
	mk, kn, mn := int(g.m*g.k), int(g.k*g.n), int(g.m*g.n)
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i, g.aOff[i]*mk, g.bOff[i]*kn, i*mn)
		}
	}
	if len(g.aOff) > 1 {
		nnParallel(len(g.aOff), run)
	} else {
		run(0, len(g.aOff))
	}
}

// nnMatMul is ONNX MatMul (numpy matmul): 1-D operands are promoted and the
// added dim removed afterwards; batch dims broadcast; each batch matrix is
// one gonum GEMM.
func nnMatMul[T float32 | float64](gemm nnGemmFunc[T], et tensor.ElementType) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) < 2 || in[0] == nil || in[1] == nil {
			return nil, n.Errorf("needs inputs A and B")
		}
		a, b := in[0], in[1]
		if a.Type() != b.Type() {
			return nil, n.Errorf("A is %v but B is %v", a.Type(), b.Type())
		}
		g, err := newMatMulGeom(n, a.Shape(), b.Shape())
		if err != nil {
			return nil, err
		}
		y, err := tensor.New(et, g.yShape)
		if err != nil {
			return nil, n.Errorf("output shape %v: %w", g.yShape, err)
		}
		A, B, Y := gemmFloats[T](a), gemmFloats[T](b), gemmFloats[T](y)
		M, N, K := int(g.m), int(g.n), int(g.k)
		g.run(func(_, ao, bo, yo int) {
			gemm(false, false, M, N, K, 1, A[ao:ao+M*K], K, B[bo:bo+K*N], N, 0, Y[yo:yo+M*N], N)
		})
		return []*tensor.Tensor{y}, nil
	}
}

// nnGemm is ONNX Gemm: Y = alpha*op(A)*op(B) + beta*C with C broadcast to
// [M, N] (unidirectionally) and optional.
func nnGemm[T float32 | float64](gemm nnGemmFunc[T], et tensor.ElementType) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) < 2 || in[0] == nil || in[1] == nil {
			return nil, n.Errorf("needs inputs A and B")
		}
		a, b := in[0], in[1]
		if a.Rank() != 2 || b.Rank() != 2 {
			return nil, n.Errorf("A %v and B %v must be matrices", a.Shape(), b.Shape())
		}
		tA, tB := n.Attrs.Int("transA", 0) != 0, n.Attrs.Int("transB", 0) != 0
		alpha, beta := T(n.Attrs.Float("alpha", 1)), T(n.Attrs.Float("beta", 1))
		M, K := a.Shape()[0], a.Shape()[1]
		if tA {
			M, K = K, M
		}
		K2, N := b.Shape()[0], b.Shape()[1]
		if tB {
			K2, N = N, K2
		}
		if K != K2 {
			return nil, n.Errorf("op(A) is %dx%d but op(B) is %dx%d", M, K, K2, N)
		}
		y, err := tensor.New(et, tensor.Shape{M, N})
		if err != nil {
			return nil, n.Errorf("output shape [%d,%d]: %w", M, N, err)
		}
		Y := gemmFloats[T](y)
		useC := len(in) > 2 && in[2] != nil && beta != 0
		if useC {
			c := in[2]
			cs := c.Shape()
			if len(cs) > 2 {
				return nil, n.Errorf("C %v must have rank <= 2", cs)
			}
			cm, cn := int64(1), int64(1)
			if len(cs) == 2 {
				cm, cn = cs[0], cs[1]
			} else if len(cs) == 1 {
				cn = cs[0]
			}
			if (cm != 1 && cm != M) || (cn != 1 && cn != N) {
				return nil, n.Errorf("C %v does not broadcast to [%d,%d]", cs, M, N)
			}
			C := gemmFloats[T](c)
			for i := int64(0); i < M; i++ {
				for j := int64(0); j < N; j++ {
					ci, cj := i, j
					if cm == 1 {
						ci = 0
					}
					if cn == 1 {
						cj = 0
					}
					Y[i*N+j] = C[ci*cn+cj]
				}
			}
		} else {
			beta = 0
		}
		lda, ldb := int(K), int(N)
		if tA {
			lda = int(M)
		}
		if tB {
			ldb = int(K)
		}
		gemm(tA, tB, int(M), int(N), int(K), alpha, gemmFloats[T](a), lda, gemmFloats[T](b), ldb, beta, Y, int(N))
		return []*tensor.Tensor{y}, nil
	}
}

// fullyConnectedKernel is MatMul(A, W) + B followed by the post-ops.
func fullyConnectedKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return nil, err
	}
	w, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if w.Rank() != 2 {
		return nil, n.Errorf("weights %v must be a [K, N] matrix", w.Shape())
	}
	outs, err := nnMatMul[float32](nnSgemm, tensor.F32)(n, in[:2])
	if err != nil {
		return nil, err
	}
	y := outs[0]
	if b := opt(in, 2); b != nil {
		N := w.Shape()[1]
		if b.NumElements() != N {
			return nil, n.Errorf("bias %v: want %d elements", b.Shape(), N)
		}
		bias, Y := b.F32(), y.F32()
		for r := 0; r+int(N) <= len(Y); r += int(N) {
			row := Y[r : r+int(N)]
			for j := range row {
				row[j] += bias[j]
			}
		}
	}
	y, err = applyPostOps(n, ops, y, opt(in, 3))
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// gemmKernels are the matrix products, FullyConnected with its post-ops
// included.
func gemmKernels() map[string]Kernel {
	return map[string]Kernel{
		"MatMul":               matMulKernel,
		"Gemm":                 gemmKernel,
		graph.OpFullyConnected: nnFloatKernel(fullyConnectedKernel),
		"Einsum":               einsumKernel,
	}
}

// gemmImpls name the implementations of the matrix products (see Impl).
var gemmImpls = map[string]string{"MatMul": "ref_matmul_gonum", "Gemm": "ref_gemm_gonum"}

// nnSgemm is C = alpha*op(A)*op(B) + beta*C on row-major matrices, tolerating
// empty operands (gonum rejects zero leading dimensions).
func nnSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	blasGemm(nnBLAS.Sgemm, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnDgemm is nnSgemm for float64.
func nnDgemm(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	blasGemm(nnBLAS.Dgemm, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// blasGemm runs gonum's gemm for one float type on row-major data,
// handling the empty products gonum rejects (k = 0 scales C by beta).
func blasGemm[T float32 | float64](gemm func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int),
	tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnBLAS is gonum's pure-Go BLAS; GEMM-shaped work goes through it.
var nnBLAS gonum.Implementation

// intGemm is MatMul and Gemm on integer tensors, as numpy computes them:
// the products summed in 64 bits that wrap, stored modulo 2^bits of the
// type; Gemm's alpha * sum + beta * C in wrapping 64-bit integers when
// alpha and beta are whole numbers, else in f64 converted to the type as
// Cast does (truncating toward zero, saturating).
func intGemm(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) < 2 || in[0] == nil || in[1] == nil {
		return nil, n.Errorf("needs inputs A and B")
	}
	t := in[0].Type()
	for i, x := range in {
		if x != nil && x.Type() != t {
			return nil, n.Errorf("input %d is %v but input 0 is %v", i, x.Type(), t)
		}
	}
	a, b := toI64s(in[0]), toI64s(in[1])
	dot := func(ao, as, bo, bs, k int) uint64 {
		var s uint64
		for j := 0; j < k; j++ {
			s += uint64(a[ao+j*as]) * uint64(b[bo+j*bs])
		}
		return s
	}
	if n.OpType == "MatMul" {
		g, err := newMatMulGeom(n, in[0].Shape(), in[1].Shape())
		if err != nil {
			return nil, err
		}
		y, err := newOut(n, t, g.yShape)
		if err != nil {
			return nil, err
		}
		Y := make([]int64, y.NumElements())
		M, N, K := int(g.m), int(g.n), int(g.k)
		g.run(func(_, ao, bo, yo int) {
			for i := 0; i < M; i++ {
				for j := 0; j < N; j++ {
					Y[yo+i*N+j] = int64(dot(ao+i*K, 1, bo+j, N, K))
				}
			}
		})
		storeI64(y, Y)
		return one(y), nil
	}
	as, bs := in[0].Shape(), in[1].Shape()
	if len(as) != 2 || len(bs) != 2 {
		return nil, n.Errorf("A %v and B %v must be matrices", as, bs)
	}
	tA, tB := n.Attrs.Int("transA", 0) != 0, n.Attrs.Int("transB", 0) != 0
	M, K, aRow, aK := int(as[0]), int(as[1]), int(as[1]), 1
	if tA {
		M, K, aRow, aK = int(as[1]), int(as[0]), 1, int(as[1])
	}
	K2, N, bK, bCol := int(bs[0]), int(bs[1]), int(bs[1]), 1
	if tB {
		K2, N, bK, bCol = int(bs[1]), int(bs[0]), 1, int(bs[1])
	}
	if K != K2 {
		return nil, n.Errorf("op(A) is %dx%d but op(B) is %dx%d", M, K, K2, N)
	}
	alpha, beta := float64(n.Attrs.Float("alpha", 1)), float64(n.Attrs.Float("beta", 1))
	var c []int64
	cm, cn := 1, 1
	if x := opt(in, 2); x != nil && beta != 0 {
		cs := x.Shape()
		switch len(cs) {
		case 2:
			cm, cn = int(cs[0]), int(cs[1])
		case 1:
			cn = int(cs[0])
		case 0:
		default:
			return nil, n.Errorf("C %v must have rank <= 2", cs)
		}
		if (cm != 1 && cm != M) || (cn != 1 && cn != N) {
			return nil, n.Errorf("C %v does not broadcast to [%d,%d]", cs, M, N)
		}
		c = toI64s(x)
	}
	whole := func(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < 1<<62 }
	exact := whole(alpha) && whole(beta)
	Y := make([]int64, M*N)
	F := make([]float64, M*N)
	signed := t.IsSigned()
	float := func(v uint64) float64 {
		if signed {
			return float64(int64(v))
		}
		return float64(v)
	}
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			s := dot(i*aRow, aK, j*bCol, bK, K)
			var cv uint64
			if c != nil {
				cv = uint64(c[(i%cm)*cn+j%cn])
			}
			if exact {
				Y[i*N+j] = int64(uint64(int64(alpha))*s + uint64(int64(beta))*cv)
			} else {
				F[i*N+j] = alpha*float(s) + beta*float(cv)
			}
		}
	}
	if !exact {
		f, err := tensor.FromF64(tensor.Shape{int64(M), int64(N)}, F)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		y, err := f.Convert(t)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		return one(y), nil
	}
	y, err := newOut(n, t, tensor.Shape{int64(M), int64(N)})
	if err != nil {
		return nil, err
	}
	storeI64(y, Y)
	return one(y), nil
}
