package ref

// The 1-D convolution paths of streaming audio models (Silero VAD's STFT
// and encoders): a few output steps per call, where im2col and a GEMM
// cost more than they compute.

// as2D views a 1-D window geometry as 2-D with a unit first axis, so the
// 2-D paths run 1-D convolutions.
func (g *windowGeom) as2D() *windowGeom {
	one := func(v []int64, first int64) []int64 { return append([]int64{first}, v...) }
	return &windowGeom{in: one(g.in, 1), k: one(g.k, 1), stride: one(g.stride, 1), dil: one(g.dil, 1),
		padB: one(g.padB, 0), padE: one(g.padE, 0), out: one(g.out, 1)}
}

// conv1DWindows computes a 1-D convolution with long windows (an STFT's
// basis, K >= 16, dilation 1) directly: every output is the sum over the
// group's input channels of one SIMD dot product of a weight row with a
// contiguous window of the zero-padded input, with no column matrix.
func conv1DWindows(s *convShape, e *epilogue, res []float32) {
	g := s.g
	W, OW, K := int(g.in[0]), int(g.out[0]), int(g.k[0])
	st, pb := int(g.stride[0]), int(g.padB[0])
	if OW == 0 || s.Mg == 0 {
		return
	}
	Wp := (OW-1)*st + K
	held, xp := scratchF32(s.Cg * Wp)
	defer convScratch.Put(held)
	for bi := 0; bi < s.N; bi++ {
		for gi := 0; gi < s.group; gi++ {
			clear(xp)
			for c := 0; c < s.Cg; c++ {
				plane := s.X[(bi*s.C+gi*s.Cg+c)*s.inPlane : (bi*s.C+gi*s.Cg+c+1)*s.inPlane]
				lo, hi := max(0, -pb), min(W, Wp-pb)
				if lo < hi {
					copy(xp[c*Wp+lo+pb:c*Wp+hi+pb], plane[lo:hi])
				}
			}
			chBase := bi*s.M + gi*s.Mg
			convParallel(s.Mg, s.Mg*s.Cg*K*OW, func(m0, m1 int) {
				for m := m0; m < m1; m++ {
					wm := s.W[(gi*s.Mg+m)*s.Cg*K : (gi*s.Mg+m+1)*s.Cg*K]
					yr := s.Y[(chBase+m)*OW : (chBase+m+1)*OW]
					clear(yr)
					var part [64]float32
					for c := 0; c < s.Cg; c++ {
						for n0 := 0; n0 < OW; n0 += len(part) {
							p := part[:min(len(part), OW-n0)]
							dotRows(wm[c*K:(c+1)*K], xp[c*Wp+n0*st:], st, p)
							for i, v := range p {
								yr[n0+i] += v
							}
						}
					}
					if !e.empty() {
						var rr []float32
						if res != nil {
							rr = res[(chBase+m)*OW : (chBase+m+1)*OW]
						}
						e.apply(yr, gi*s.Mg+m, rr)
					}
				}
			})
		}
	}
}

// windowsOK reports whether conv1DWindows runs s: 1-D, long windows,
// dilation 1, and at most a few outputs per input channel and window
// element (where it beats the column matrix).
func windowsOK(s *convShape) bool {
	return len(s.g.in) == 1 && s.K >= 16 && s.g.dil[0] == 1 && s.P <= 4*s.K
}

// matMulBT computes c[m x n] = a[m x k] b[n x k]^T (row-major, contiguous)
// with one SIMD dot product per element on the calling goroutine: the
// small products of a recurrent step, where a parallel GEMM's setup costs
// more than the product.
func matMulBT(a, b, c []float32, m, n, k int) {
	if m*n*k >= 1<<20 {
		nnSgemm(false, true, m, n, k, 1, a, k, b, k, 0, c, n)
		return
	}
	for i := 0; i < m; i++ {
		dotRows(a[i*k:(i+1)*k], b, k, c[i*n:(i+1)*n])
	}
}

// dotRows sets out[j] to the dot product of a with b[j*ldb:j*ldb+len(a)]
// for j < len(out), four rows of b at a time (dot4): the rows may overlap
// (a strided convolution's windows).
func dotRows(a, b []float32, ldb int, out []float32) {
	k := len(a)
	j := 0
	for ; j+4 <= len(out); j += 4 {
		o := j * ldb
		out[j], out[j+1], out[j+2], out[j+3] = dot4(a, b[o:o+k], b[o+ldb:o+ldb+k], b[o+2*ldb:o+2*ldb+k], b[o+3*ldb:o+3*ldb+k])
	}
	for ; j < len(out); j++ {
		out[j] = nnBLAS.Sdot(k, a, 1, b[j*ldb:j*ldb+k], 1)
	}
}

// dot4 returns the dot products of a with b0..b3 (each at least len(a)
// long): with AVX2 and FMA, eight lanes at a time over the multiple of 8
// and the rest in Go; otherwise four SIMD dot products.
func dot4(a, b0, b1, b2, b3 []float32) (s0, s1, s2, s3 float32) {
	k := len(a)
	if !hasDot4 || k < 8 {
		return nnBLAS.Sdot(k, a, 1, b0, 1), nnBLAS.Sdot(k, a, 1, b1, 1), nnBLAS.Sdot(k, a, 1, b2, 1), nnBLAS.Sdot(k, a, 1, b3, 1)
	}
	k8 := k &^ 7
	_, _, _, _ = b0[k-1], b1[k-1], b2[k-1], b3[k-1]
	s0, s1, s2, s3 = dot4AVX2(&a[0], &b0[0], &b1[0], &b2[0], &b3[0], k8)
	for i := k8; i < k; i++ {
		s0 += a[i] * b0[i]
		s1 += a[i] * b1[i]
		s2 += a[i] * b2[i]
		s3 += a[i] * b3[i]
	}
	return s0, s1, s2, s3
}
