package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The integer convolutions and products accumulate exactly through gonum's
// GEMM: the operands (x - zero_point) are integers of at most 9 bits, so
// every product and partial sum is an exact integer while it is below
// 2^53 (f64), and wrapping the exact sum to int32 gives what an int32
// accumulator gives (modular arithmetic does not care for the order). The
// convolutions go faster in f32: their reduction runs in chunks short
// enough that every partial sum stays below 2^24 (exact in f32), and the
// chunks add up in f64.

// wrap32 is an exact integer-valued float64 wrapped to int32.
func wrap32(v float64) int32 { return int32(int64(v)) }

// shifted returns x - zp as float64, zp a scalar or, when per > 0, one
// zero point per run of per elements cycling through the zero points
// (per-row or per-channel).
func shifted(x *tensor.Tensor, zp *tensor.Tensor, per int64) []float64 {
	v := toI64s(x)
	out := make([]float64, len(v))
	var z []int64
	if zp != nil {
		z = toI64s(zp)
	}
	for i, q := range v {
		var o int64
		switch {
		case len(z) == 1:
			o = z[0]
		case len(z) > 1:
			o = z[(int64(i)/per)%int64(len(z))]
		}
		out[i] = float64(q - o)
	}
	return out
}

// checkZeroPoint checks that zero point zp (nil: none) is a scalar or a
// vector of n elements.
func checkZeroPoint(nd *graph.Node, zp *tensor.Tensor, n int64, what string) error {
	if zp == nil || zp.NumElements() == 1 && zp.Rank() <= 1 {
		return nil
	}
	if zp.Rank() != 1 || zp.NumElements() != n {
		return nd.Errorf("%w: %s zero point %v: want a scalar or %d values", tensor.ErrShape, what, zp.Shape(), n)
	}
	return nil
}

// intConv is the geometry and the shifted operands of an integer
// convolution: x [N, C, spatial...] and w [M, C/group, window...].
type intConv struct {
	g            *windowGeom
	nImg, c, m   int64
	group        int64
	x, w         []float32
	chunk        int64 // reduction length whose partial sums stay exact in f32
	inPlane, out int64 // input and output pixels per channel
}

// shifted32 is shifted in f32 (exact: the values have at most 9 bits),
// with the largest magnitude.
func shifted32(x, zp *tensor.Tensor, per int64) ([]float32, float64) {
	v := shifted(x, zp, per)
	out := make([]float32, len(v))
	m := 0.0
	for i, f := range v {
		out[i] = float32(f)
		m = max(m, f, -f)
	}
	return out, m
}

// newIntConv reads x (input xi), w (input wi) and their zero points (xz,
// wz; -1: none) of an integer convolution.
func newIntConv(n *graph.Node, in []*tensor.Tensor, xi, wi, xz, wz int) (*intConv, error) {
	x, err := nnInput(n, in, xi, 3)
	if err != nil {
		return nil, err
	}
	w, err := nnInput(n, in, wi, 3)
	if err != nil {
		return nil, err
	}
	if w.Rank() != x.Rank() {
		return nil, n.Errorf("weights %v and input %v differ in rank", w.Shape(), x.Shape())
	}
	xs, ws := x.Shape(), w.Shape()
	s := &intConv{nImg: xs[0], c: xs[1], m: ws[0], group: n.Attrs.Int("group", 1)}
	if s.group < 1 || s.c%s.group != 0 || s.m%s.group != 0 || ws[1]*s.group != s.c {
		return nil, n.Errorf("group %d does not fit input %v and weights %v", s.group, xs, ws)
	}
	if s.g, err = windowGeometry(n, xs[2:], ws[2:], false); err != nil {
		return nil, err
	}
	xzp, wzp := opt(in, xz), opt(in, wz)
	if err := checkZeroPoint(n, xzp, 1, "input"); err != nil {
		return nil, err
	}
	if err := checkZeroPoint(n, wzp, s.m, "weight"); err != nil {
		return nil, err
	}
	s.inPlane, s.out = nnProd(xs[2:]), nnProd(s.g.out)
	var mx, mw float64
	s.x, mx = shifted32(x, xzp, 1)
	s.w, mw = shifted32(w, wzp, ws.NumElements()/s.m)
	s.chunk = max(1, int64(float64(1<<24-1)/max(mx*mw, 1)))
	return s, nil
}

// outShape is the convolution's output shape.
func (s *intConv) outShape() tensor.Shape {
	return append(tensor.Shape{s.nImg, s.m}, s.g.out...)
}

// run computes the convolution block by block and hands each block of
// accumulators to sink: image img, output channels m0.., output pixels
// j0..j0+cols, acc holding rows x cols exact sums (row-major).
func (s *intConv) run(sink func(img, m0, rows, j0, cols int64, acc []float64)) {
	kg := s.c / s.group
	mg := s.m / s.group
	win := nnProd(s.g.k)
	kk := kg * win
	tabs := s.g.taps()
	const block = 1024
	for img := int64(0); img < s.nImg; img++ {
		for gi := int64(0); gi < s.group; gi++ {
			xg := s.x[(img*s.c+gi*kg)*s.inPlane:]
			wg := s.w[gi*mg*kk : (gi+1)*mg*kk]
			nBlocks := (s.out + block - 1) / block
			nnParallel(int(nBlocks), func(lo, hi int) {
				col := make([]float32, kk*block)
				part := make([]float32, mg*block)
				acc := make([]float64, mg*block)
				for b := int64(lo); b < int64(hi); b++ {
					j0 := b * block
					cols := min(block, s.out-j0)
					s.im2col(tabs, xg, kg, j0, cols, col[:kk*cols])
					clear(acc)
					for k0 := int64(0); k0 < kk; k0 += s.chunk {
						k1 := min(kk, k0+s.chunk)
						blasGemm(nnBLAS.Sgemm, false, false, int(mg), int(cols), int(k1-k0), 1, wg[k0:], int(kk),
							col[k0*cols:], int(cols), 0, part, int(cols))
						for i, v := range part[:mg*cols] {
							acc[i] += float64(v)
						}
					}
					sink(img, gi*mg, mg, j0, cols, acc[:mg*cols])
				}
			})
		}
	}
}

// im2col writes the columns j0..j0+cols of the column matrix [channels *
// window, pixels] of xg (channels planes of s.inPlane values; taps from
// windowGeom.taps, -1 in the padding, which contributes 0).
func (s *intConv) im2col(tabs [][]int64, xg []float32, channels, j0, cols int64, dst []float32) {
	r := len(s.g.in)
	if r == 2 {
		s.im2col2D(tabs, xg, channels, j0, cols, dst)
		return
	}
	inStr := tensor.ContiguousStrides(s.g.in)
	win := nnProd(s.g.k)
	oidx := make([]int64, r)
	kidx := make([]int64, r)
	for j := int64(0); j < cols; j++ {
		rem := j0 + j
		for d := r - 1; d >= 0; d-- {
			oidx[d] = rem % s.g.out[d]
			rem /= s.g.out[d]
		}
		for k := int64(0); k < win; k++ {
			rem := k
			off := int64(0)
			for d := r - 1; d >= 0; d-- {
				kidx[d] = rem % s.g.k[d]
				rem /= s.g.k[d]
			}
			for d := 0; d < r && off >= 0; d++ {
				t := tabs[d][kidx[d]*s.g.out[d]+oidx[d]]
				if t < 0 {
					off = -1
					break
				}
				off += t * inStr[d]
			}
			for c := int64(0); c < channels; c++ {
				var v float32
				if off >= 0 {
					v = xg[c*s.inPlane+off]
				}
				dst[(c*win+k)*cols+j] = v
			}
		}
	}
}

// im2col2D is im2col for 2-D windows, row by row of the output.
func (s *intConv) im2col2D(tabs [][]int64, xg []float32, channels, j0, cols int64, dst []float32) {
	oh, ow := s.g.out[0], s.g.out[1]
	kh, kw := s.g.k[0], s.g.k[1]
	w := s.g.in[1]
	for c := int64(0); c < channels; c++ {
		plane := xg[c*s.inPlane:]
		for ky := int64(0); ky < kh; ky++ {
			for kx := int64(0); kx < kw; kx++ {
				row := dst[((c*kh+ky)*kw+kx)*cols:][:cols]
				ty, tx := tabs[0][ky*oh:], tabs[1][kx*ow:]
				for j := int64(0); j < cols; {
					p := j0 + j
					y, x := p/ow, p%ow
					n := min(cols-j, ow-x) // the rest of this output row
					iy := ty[y]
					seg := row[j : j+n]
					if iy < 0 {
						clear(seg)
					} else {
						src := plane[iy*w:]
						for i := range seg {
							if ix := tx[x+int64(i)]; ix >= 0 {
								seg[i] = src[ix]
							} else {
								seg[i] = 0
							}
						}
					}
					j += n
				}
			}
		}
	}
}

// convIntegerKernel is ConvInteger(x, w, x_zero_point?, w_zero_point?):
// the i32 convolution of the shifted operands (padding contributes 0).
func convIntegerKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := newIntConv(n, in, 0, 1, 2, 3)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, tensor.I32, s.outShape())
	if err != nil {
		return nil, err
	}
	out := y.I32()
	s.run(func(img, m0, rows, j0, cols int64, acc []float64) {
		for r := int64(0); r < rows; r++ {
			dst := out[(img*s.m+m0+r)*s.out+j0:]
			for j, v := range acc[r*cols : (r+1)*cols] {
				dst[j] = wrap32(v)
			}
		}
	})
	return one(y), nil
}

// requant is a requantization to an output type: per-channel multipliers
// (one, or one per output channel) and the output's zero point and range.
type requant struct {
	mult     []float32
	zp       int64
	lo, hi   int64
	out      tensor.ElementType
	biasInts []int64 // QLinearConv's i32 bias, nil: none
}

// newRequant reads the scales xs (input xsi), ws (wsi, scalar or per
// channel of m), ys (ysi) and the output zero point (yzi) of a
// QLinearConv or QLinearMatMul.
func newRequant(n *graph.Node, in []*tensor.Tensor, xsi, wsi, ysi, yzi int, m int64) (*requant, error) {
	var sc [3][]float32
	for i, idx := range []int{xsi, wsi, ysi} {
		t, err := need(n, in, idx)
		if err != nil {
			return nil, err
		}
		if !t.Type().IsFloat() {
			return nil, n.Errorf("%w: scale (input %d) is %v, want a float type", tensor.ErrType, idx, t.Type())
		}
		sc[i] = toF32(t)
	}
	if len(sc[0]) != 1 || len(sc[2]) != 1 {
		return nil, n.Errorf("%w: input and output scales must be scalars", tensor.ErrShape)
	}
	if len(sc[1]) != 1 && int64(len(sc[1])) != m {
		return nil, n.Errorf("%w: weight scale has %d values, want 1 or %d", tensor.ErrShape, len(sc[1]), m)
	}
	yz, err := need(n, in, yzi)
	if err != nil {
		return nil, err
	}
	r := &requant{out: yz.Type(), zp: toI64s(yz)[0]}
	var ok bool
	if r.lo, r.hi, ok = r.out.IntRange(); !ok {
		return nil, n.Errorf("%w: output type %v", driver.ErrUnsupported, r.out)
	}
	for _, w := range sc[1] {
		r.mult = append(r.mult, requantMultiplier(sc[0][0], w, sc[2][0]))
	}
	return r, nil
}

// at requantizes accumulator acc of output channel ch.
func (r *requant) at(acc int32, ch int64) int64 {
	m := r.mult[0]
	if len(r.mult) > 1 {
		m = r.mult[ch]
	}
	return roundSat(float32(acc)*m, r.zp, r.lo, r.hi)
}

// qlinearConvKernel is QLinearConv(x, x_scale, x_zero_point, w, w_scale,
// w_zero_point, y_scale, y_zero_point, B?): the i32 convolution plus the
// i32 bias, requantized per output channel.
func qlinearConvKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := newIntConv(n, in, 0, 3, 2, 5)
	if err != nil {
		return nil, err
	}
	r, err := newRequant(n, in, 1, 4, 6, 7, s.m)
	if err != nil {
		return nil, err
	}
	if b := opt(in, 8); b != nil {
		if b.Type() != tensor.I32 || b.NumElements() != s.m {
			return nil, n.Errorf("%w: bias %v: want i32[%d]", tensor.ErrShape, b, s.m)
		}
		r.biasInts = toI64s(b)
	}
	q := make([]int64, s.nImg*s.m*s.out)
	s.run(func(img, m0, rows, j0, cols int64, acc []float64) {
		for i := int64(0); i < rows; i++ {
			ch := m0 + i
			var bias int32
			if r.biasInts != nil {
				bias = int32(r.biasInts[ch])
			}
			dst := q[(img*s.m+ch)*s.out+j0:]
			for j, v := range acc[i*cols : (i+1)*cols] {
				dst[j] = r.at(wrap32(v)+bias, ch)
			}
		}
	})
	y, err := newOut(n, r.out, s.outShape())
	if err != nil {
		return nil, err
	}
	storeI64(y, q)
	return one(y), nil
}

// intMatMul is an integer matrix product's geometry over broadcast
// batches and its shifted operands.
type intMatMul struct {
	*matMulGeom
	a, b []float64
}

// newIntMatMul reads A (input ai), B (bi) and their zero points (az, bz:
// a scalar, or per row of A [M] and per column of B [N]).
func newIntMatMul(n *graph.Node, in []*tensor.Tensor, ai, bi, az, bz int) (*intMatMul, error) {
	a, err := need(n, in, ai)
	if err != nil {
		return nil, err
	}
	b, err := need(n, in, bi)
	if err != nil {
		return nil, err
	}
	g, err := newMatMulGeom(n, a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	azp, bzp := opt(in, az), opt(in, bz)
	if err := checkZeroPoint(n, azp, g.m, "A"); err != nil {
		return nil, err
	}
	if err := checkZeroPoint(n, bzp, g.n, "B"); err != nil {
		return nil, err
	}
	// Per row: runs of K elements; per column: cycling through N.
	return &intMatMul{matMulGeom: g, a: shifted(a, azp, g.k), b: shifted(b, bzp, 1)}, nil
}

// run computes each batch's exact product and hands it to sink with the
// batch's index (row-major M x N in acc).
func (p *intMatMul) run(sink func(bi int, acc []float64)) {
	M, N, K := int(p.m), int(p.n), int(p.k)
	p.matMulGeom.run(func(i, ao, bo, _ int) {
		acc := make([]float64, M*N)
		blasGemm(nnBLAS.Dgemm, false, false, M, N, K, 1, p.a[ao:ao+M*K], K, p.b[bo:bo+K*N], N, 0, acc, N)
		sink(i, acc)
	})
}

// matMulIntegerKernel is MatMulInteger(A, B, a_zero_point?,
// b_zero_point?): the i32 product of the shifted operands.
func matMulIntegerKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p, err := newIntMatMul(n, in, 0, 1, 2, 3)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, tensor.I32, p.yShape)
	if err != nil {
		return nil, err
	}
	out := y.I32()
	mn := int(p.m * p.n)
	p.run(func(bi int, acc []float64) {
		for j, v := range acc {
			out[bi*mn+j] = wrap32(v)
		}
	})
	return one(y), nil
}

// qlinearMatMulKernel is QLinearMatMul(a, a_scale, a_zero_point, b,
// b_scale, b_zero_point, y_scale, y_zero_point): the i32 product
// requantized with the multiplier of its row's a_scale (scalar or per row)
// and its column's b_scale (scalar or per column).
func qlinearMatMulKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p, err := newIntMatMul(n, in, 0, 3, 2, 5)
	if err != nil {
		return nil, err
	}
	var sc [3][]float32
	for i, idx := range []int{1, 4, 6} {
		t, err := need(n, in, idx)
		if err != nil {
			return nil, err
		}
		sc[i] = toF32(t)
	}
	if (len(sc[0]) != 1 && int64(len(sc[0])) != p.m) || (len(sc[1]) != 1 && int64(len(sc[1])) != p.n) || len(sc[2]) != 1 {
		return nil, n.Errorf("%w: scales of %d, %d and %d values: want a_scale 1 or %d (rows), b_scale 1 or %d (columns), y_scale 1",
			tensor.ErrShape, len(sc[0]), len(sc[1]), len(sc[2]), p.m, p.n)
	}
	yz, err := need(n, in, 7)
	if err != nil {
		return nil, err
	}
	zp := toI64s(yz)[0]
	lo, hi, ok := yz.Type().IntRange()
	if !ok {
		return nil, n.Errorf("%w: output type %v", driver.ErrUnsupported, yz.Type())
	}
	pick := func(v []float32, i int64) float32 {
		if len(v) == 1 {
			return v[0]
		}
		return v[i]
	}
	q := make([]int64, p.yShape.NumElements())
	mn := int(p.m * p.n)
	p.run(func(bi int, acc []float64) {
		for r := int64(0); r < p.m; r++ {
			for c := int64(0); c < p.n; c++ {
				m := requantMultiplier(pick(sc[0], r), pick(sc[1], c), sc[2][0])
				q[bi*mn+int(r*p.n+c)] = roundSat(float32(wrap32(acc[r*p.n+c]))*m, zp, lo, hi)
			}
		}
	})
	y, err := newOut(n, yz.Type(), p.yShape)
	if err != nil {
		return nil, err
	}
	storeI64(y, q)
	return one(y), nil
}
