package ref

import (
	"runtime"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// convShape is a validated f32 convolution: the operands, the window
// geometry and the derived sizes every path needs.
type convShape struct {
	X, W, Y   []float32
	bias      []float32
	g         *windowGeom
	N, C, M   int
	group     int
	Cg, Mg    int
	K         int // window elements
	P         int // output plane elements
	inPlane   int
	y         *tensor.Tensor
	isDirect1 bool // 1x1, stride 1, no padding: the input is the column matrix
}

// newConvShape checks the inputs of a Conv (X, W, optional B) and allocates
// the output.
func newConvShape(n *graph.Node, in []*tensor.Tensor) (*convShape, error) {
	x, w, group, err := convInputs(n, in)
	if err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	N, C, M := xs[0], xs[1], ws[0]
	if group < 1 || C%group != 0 || M%group != 0 || ws[1] != C/group {
		return nil, n.Errorf("input %v, weights %v and group %d do not fit (want W[1] = C/group, M divisible by group)", xs, ws, group)
	}
	if ks := n.Attrs.Ints("kernel_shape", nil); ks != nil && !tensor.Shape(ks).Equal(ws[2:]) {
		return nil, n.Errorf("kernel_shape %v differs from weights %v", ks, ws)
	}
	s := &convShape{}
	if len(in) > 2 && in[2] != nil {
		if in[2].NumElements() != M {
			return nil, n.Errorf("bias %v: want %d elements", in[2].Shape(), M)
		}
		s.bias = in[2].F32()
	}
	g, err := windowGeometry(n, xs[2:], ws[2:], false)
	if err != nil {
		return nil, err
	}
	yShape := append(tensor.Shape{N, M}, g.out...)
	y, err := nnNewF32(n, yShape)
	if err != nil {
		return nil, err
	}
	s.X, s.W, s.Y, s.y, s.g = x.F32(), w.F32(), y.F32(), y, g
	s.N, s.C, s.M, s.group = int(N), int(C), int(M), int(group)
	s.Cg, s.Mg = int(C/group), int(M/group)
	s.K, s.P, s.inPlane = int(nnProd(g.k)), int(nnProd(g.out)), int(nnProd(g.in))
	s.isDirect1 = s.K == 1
	for d := range g.in {
		s.isDirect1 = s.isDirect1 && g.stride[d] == 1 && g.padB[d] == 0 && g.padE[d] == 0
	}
	return s, nil
}

// path names the implementation a convolution of this shape runs.
func (s *convShape) path() string {
	switch {
	case windowsOK(s):
		return "conv_1d_windows"
	case s.Cg == 1 && (len(s.g.in) == 2 || len(s.g.in) == 1):
		return "conv_depthwise_direct"
	case winogradOK(s):
		return "conv_winograd_f2x2_3x3"
	case s.isDirect1:
		return "conv_1x1_gemm"
	case s.K == 1:
		return "conv_1x1_strided_gemm"
	}
	return "conv_im2col_gemm"
}

// convRun computes the convolution s with the epilogue e fused into the
// output pass; res is the y-shaped residual for a fused "sum", or nil.
func convRun(s *convShape, e *epilogue, res []float32) {
	switch s.path() {
	case "conv_depthwise_direct":
		if len(s.g.in) == 1 {
			s.g = s.g.as2D()
		}
		convDepthwise2D(s, e, res)
	case "conv_1d_windows":
		conv1DWindows(s, e, res)
	case "conv_winograd_f2x2_3x3":
		convWinograd3x3(s, e, res)
	default:
		convGEMM(s, e, res)
	}
}

// convDepthwise2D is a 2-D convolution whose groups each read one input
// channel (depthwise, with any channel multiplier). Each input plane is
// copied into a zero-padded plane of row pitch Wp, so taps need no bounds
// checks: with stride 1 the output is computed at the same pitch and every
// tap is one long SIMD axpy over the whole plane at a constant offset
// (columns past the output width are scratch, never copied out); with
// other strides every (output row, tap) is one strided axpy. The epilogue
// runs on each output row as soon as it is complete.
func convDepthwise2D(s *convShape, e *epilogue, res []float32) {
	g := s.g
	H, W := int(g.in[0]), int(g.in[1])
	OH, OW := int(g.out[0]), int(g.out[1])
	KH, KW := int(g.k[0]), int(g.k[1])
	sh, sw := int(g.stride[0]), int(g.stride[1])
	dh, dw := int(g.dil[0]), int(g.dil[1])
	ph, pw := int(g.padB[0]), int(g.padB[1])
	if OH == 0 || OW == 0 {
		return
	}
	unit := sh == 1 && sw == 1
	Hp := (OH-1)*sh + (KH-1)*dh + 1
	Wp := max((OW-1)*sw+(KW-1)*dw+1, pw+W)
	// Input rows and columns that land in the padded plane (an end pad
	// that the last window does not reach crops).
	ih1 := min(H, Hp-ph)
	iw1 := min(W, Wp-pw)
	n := (OH-1)*Wp + OW // unit stride: span of the output at pitch Wp
	convParallel(s.N*s.M, s.N*s.M*s.K*s.P, func(a, b int) {
		heldX, xp := scratchF32(Hp * Wp)
		defer convScratch.Put(heldX)
		var yp []float32
		if unit {
			heldY, y := scratchF32(n)
			defer convScratch.Put(heldY)
			yp = y
		}
		lastIn := -1
		for t := a; t < b; t++ {
			bi, m := t/s.M, t%s.M
			if in := bi*s.C + m/s.Mg; in != lastIn {
				clear(xp)
				xpl := s.X[in*s.inPlane : (in+1)*s.inPlane]
				for ih := 0; ih < ih1; ih++ {
					copy(xp[(ih+ph)*Wp+pw:(ih+ph)*Wp+pw+iw1], xpl[ih*W:ih*W+iw1])
				}
				lastIn = in
			}
			wk := s.W[m*s.K : (m+1)*s.K]
			yPlane := s.Y[t*s.P : (t+1)*s.P]
			if unit {
				clear(yp)
				for kh := 0; kh < KH; kh++ {
					for kw := 0; kw < KW; kw++ {
						off := kh*dh*Wp + kw*dw
						nnBLAS.Saxpy(n, wk[kh*KW+kw], xp[off:off+n], 1, yp, 1)
					}
				}
			}
			for oh := 0; oh < OH; oh++ {
				yr := yPlane[oh*OW : (oh+1)*OW]
				if unit {
					copy(yr, yp[oh*Wp:oh*Wp+OW])
				} else {
					for kh := 0; kh < KH; kh++ {
						row := (oh*sh + kh*dh) * Wp
						for kw := 0; kw < KW; kw++ {
							off := row + kw*dw
							nnBLAS.Saxpy(OW, wk[kh*KW+kw], xp[off:off+(OW-1)*sw+1], sw, yr, 1)
						}
					}
				}
				if !e.empty() {
					var rr []float32
					if res != nil {
						rr = res[t*s.P+oh*OW : t*s.P+(oh+1)*OW]
					}
					e.apply(yr, m, rr)
				}
			}
		}
	})
}

// convMinParallel is the multiply-add count below which a conv runs on
// the calling goroutine: waking workers costs more than such small layers.
const convMinParallel = 1 << 18

// convParallel is nnParallel over n tasks for a conv of work
// multiply-adds, or a plain call for small work.
func convParallel(n, work int, f func(lo, hi int)) {
	if work < convMinParallel {
		if n > 0 {
			f(0, n)
		}
		return
	}
	nnParallel(n, f)
}

// convScratch recycles the conv paths' scratch buffers (column blocks,
// padded planes, Winograd transforms) between calls instead of allocating
// them per call.
var convScratch = sync.Pool{New: func() any { return new([]float32) }}

// scratchF32 returns a pooled buffer of n floats (contents undefined) and
// the function that gives it back.
func scratchF32(n int) (*[]float32, []float32) {
	p := convScratch.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	return p, (*p)[:n]
}

// convGEMM computes each (batch, group) as Y_g = W_g * col(X_g), where the
// column matrix is the input itself for unpadded stride-1 1x1
// convolutions and an im2col (a strided gather for 1x1) otherwise. The
// GEMM is tiled over output columns and row blocks and run on at most
// GOMAXPROCS goroutines; 2-D convolutions build their column matrix one
// cache-sized block per tile instead of whole, and every finished tile of
// a row gets the epilogue while it is in cache.
func convGEMM(s *convShape, e *epilogue, res []float32) {
	if s.P == 0 || s.Mg == 0 {
		return // the output is empty
	}
	Kd := s.Cg * s.K
	var tabs [][]int64
	if !s.isDirect1 {
		tabs = s.g.taps()
	}
	tiled2D := !s.isDirect1 && len(s.g.in) == 2
	var col []float32
	if !s.isDirect1 && !tiled2D {
		held, c := scratchF32(Kd * s.P)
		defer convScratch.Put(held)
		col = c
	}
	// Column tiles long enough for the SIMD axpy to pay off; gemmTile
	// blocks the inner dimension so a block of the column matrix stays in
	// L2 while the tile's rows are updated.
	tile := min(s.P, 512)
	tiles := (s.P + tile - 1) / max(tile, 1)
	workers := runtime.GOMAXPROCS(0)
	rowBlock := s.Mg
	if tiles < 4*workers && s.Mg > 8 {
		want := (4*workers + tiles - 1) / tiles
		rowBlock = max(8, (s.Mg+want-1)/want)
	}
	rowBlocks := (s.Mg + rowBlock - 1) / rowBlock
	for bi := 0; bi < s.N; bi++ {
		for gi := 0; gi < s.group; gi++ {
			xg := s.X[(bi*s.C+gi*s.Cg)*s.inPlane : (bi*s.C+(gi+1)*s.Cg)*s.inPlane]
			src := xg
			if col != nil {
				// As parallel as the GEMM it feeds: a small layer's
				// columns are made on the calling goroutine too.
				convParallel(s.Cg, s.Mg*Kd*s.P, func(lo, hi int) {
					im2col(s.g, tabs, xg[lo*s.inPlane:hi*s.inPlane], hi-lo, col[lo*s.K*s.P:hi*s.K*s.P])
				})
				src = col
			}
			chBase := bi*s.M + gi*s.Mg
			yg := s.Y[chBase*s.P : (chBase+s.Mg)*s.P]
			wg := s.W[gi*s.Mg*Kd : (gi+1)*s.Mg*Kd]
			convParallel(tiles*rowBlocks, s.Mg*Kd*s.P, func(lo, hi int) {
				var blk []float32
				if tiled2D {
					held, b := scratchF32(gemmKBlock * tile)
					defer convScratch.Put(held)
					blk = b
				}
				for t := lo; t < hi; t++ {
					j0 := (t % tiles) * tile
					j1 := min(j0+tile, s.P)
					r0 := (t / tiles) * rowBlock
					r1 := min(r0+rowBlock, s.Mg)
					if tiled2D {
						n := j1 - j0
						for l0 := 0; l0 < Kd; l0 += gemmKBlock {
							l1 := min(l0+gemmKBlock, Kd)
							im2colBlock2D(s, tabs, xg, l0, l1, j0, j1, blk)
							gemmTile(wg[r0*Kd+l0:], Kd, blk, n, yg[r0*s.P+j0:], s.P, r1-r0, n, l1-l0)
						}
					} else {
						gemmTile(wg[r0*Kd:r1*Kd], Kd, src[j0:], s.P, yg[r0*s.P+j0:], s.P, r1-r0, j1-j0, Kd)
					}
					if e.empty() {
						continue
					}
					for m := r0; m < r1; m++ {
						var rr []float32
						if res != nil {
							rr = res[(chBase+m)*s.P+j0 : (chBase+m)*s.P+j1]
						}
						e.apply(yg[m*s.P+j0:m*s.P+j1], gi*s.Mg+m, rr)
					}
				}
			})
		}
	}
}

// im2colBlock2D writes rows [r0, r1) and columns [j0, j1) of the column
// matrix of the 2-D group input xg into dst, densely (leading dimension
// j1-j0). Row r is input channel r/K at window offset r%K; column j is
// output pixel j.
func im2colBlock2D(s *convShape, tabs [][]int64, xg []float32, r0, r1, j0, j1 int, dst []float32) {
	W := int(s.g.in[1])
	OH, OW := int(s.g.out[0]), int(s.g.out[1])
	KW := int(s.g.k[1])
	ld := j1 - j0
	for r := r0; r < r1; r++ {
		c, ki := r/s.K, r%s.K
		kh, kw := ki/KW, ki%KW
		plane := xg[c*s.inPlane : (c+1)*s.inPlane]
		row := dst[(r-r0)*ld : (r-r0+1)*ld]
		tabH := tabs[0][kh*OH : (kh+1)*OH]
		tabW := tabs[1][kw*OW : (kw+1)*OW]
		for j := j0; j < j1; {
			oh, ow0 := j/OW, j%OW
			ow1 := min(OW, ow0+j1-j)
			out := row[j-j0 : j-j0+ow1-ow0]
			if ih := tabH[oh]; ih < 0 {
				clear(out)
			} else {
				in := plane[int(ih)*W : (int(ih)+1)*W]
				for q, iw := range tabW[ow0:ow1] {
					if iw < 0 {
						out[q] = 0
					} else {
						out[q] = in[iw]
					}
				}
			}
			j += ow1 - ow0
		}
	}
}

// gemmKBlock is how many rows of B gemmTile streams per pass over C.
const gemmKBlock = 64

// narrowGEMM is the widest C gemmTile computes by dot products instead of
// axpys (when its inner dimension is at least four times that): an axpy of
// a few elements costs more than it computes (a streaming model's 1-D
// convolutions have outputs of 1 to a few dozen steps).
const narrowGEMM = 64

// gemmNarrow is gemmTile for n <= narrowGEMM: B's columns are copied to
// contiguous rows, then each element of C is one SIMD dot product of a row
// of A with one of them.
func gemmNarrow(a []float32, lda int, b []float32, ldb int, c []float32, ldc int, m, n, k int) {
	held, bt := scratchF32(n * k)
	defer convScratch.Put(held)
	for l := 0; l < k; l++ {
		row := b[l*ldb : l*ldb+n]
		for j, v := range row {
			bt[j*k+l] = v
		}
	}
	var part [narrowGEMM]float32
	for i := 0; i < m; i++ {
		p := part[:n]
		dotRows(a[i*lda:i*lda+k], bt, k, p)
		ci := c[i*ldc : i*ldc+n]
		for j, v := range p {
			ci[j] += v
		}
	}
}

// gemmTile computes C[m x n] += A[m x k] * B[k x n] (row-major, leading
// dimensions lda, ldb, ldc) serially; the conv paths pass a freshly
// zeroed C. Each row of C is a sum of scaled rows of B, which gonum's SIMD
// axpy does, in blocks of gemmKBlock rows of B so the block is reused from
// cache by all m rows. Zero weights are skipped, as gonum's Sgemm does.
func gemmTile(a []float32, lda int, b []float32, ldb int, c []float32, ldc int, m, n, k int) {
	if n <= narrowGEMM && k >= 4*n {
		gemmNarrow(a, lda, b, ldb, c, ldc, m, n, k)
		return
	}
	for l0 := 0; l0 < k; l0 += gemmKBlock {
		l1 := min(l0+gemmKBlock, k)
		for i := 0; i < m; i++ {
			ci := c[i*ldc : i*ldc+n]
			ai := a[i*lda+l0 : i*lda+l1]
			for l, av := range ai {
				if av == 0 {
					continue
				}
				nnBLAS.Saxpy(n, av, b[(l0+l)*ldb:(l0+l)*ldb+n], 1, ci, 1)
			}
		}
	}
}

// convFused is a Conv (inputs X, W, optional B) followed by post-ops; the
// bias and the post-ops run in the conv's output pass. residual is the
// operand of a "sum" post-op.
func convFused(n *graph.Node, in []*tensor.Tensor, ops []graph.PostOp, residual *tensor.Tensor) (*tensor.Tensor, error) {
	s, err := newConvShape(n, in)
	if err != nil {
		return nil, err
	}
	same := residual != nil && residual.Type() == tensor.F32 && residual.Shape().Equal(s.y.Shape())
	e, rest, err := newEpilogue(n, s.bias, ops, same)
	if err != nil {
		return nil, err
	}
	var res []float32
	if same {
		for _, p := range ops {
			if p.Kind == graph.PostSum {
				res = residual.Contiguous().F32()
			}
		}
	}
	convRun(s, e, res)
	if len(rest) == 0 {
		return s.y, nil
	}
	return applyPostOps(n, rest, s.y, residual)
}
