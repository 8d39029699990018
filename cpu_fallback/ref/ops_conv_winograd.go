package ref

// Winograd F(2x2, 3x3) for 3x3, stride-1, undilated 2-D convolutions: each
// 2x2 output tile is A^T [ (G g G^T) .* (B^T d B) ] A for the 4x4 input
// patch d, so the channel reduction becomes 16 GEMMs of (Mg x Cg) by
// (Cg x tiles) with 16 multiplies per tile instead of 36.
//
//	B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//	G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//	A^T = [1 1 1 0; 0 1 -1 -1]

// winogradOK reports whether s can run as Winograd F(2x2, 3x3): 2-D,
// 3x3, stride 1, dilation 1, and enough channels for the transforms to
// pay off.
func winogradOK(s *convShape) bool {
	g := s.g
	if len(g.in) != 2 || g.k[0] != 3 || g.k[1] != 3 {
		return false
	}
	for d := 0; d < 2; d++ {
		if g.stride[d] != 1 || g.dil[d] != 1 {
			return false
		}
	}
	return s.Cg >= 8 && s.Mg >= 8 && g.out[0] >= 2 && g.out[1] >= 2
}

// winogradWeights writes U[xi][m][c] = (G g G^T)[xi] for the Mg x Cg
// kernels of one group (w holds them as [Mg][Cg][3][3]).
func winogradWeights(w []float32, Mg, Cg int, u []float32) {
	for m := 0; m < Mg; m++ {
		for c := 0; c < Cg; c++ {
			g := w[(m*Cg+c)*9 : (m*Cg+c)*9+9]
			var gg [4][3]float32
			for j := 0; j < 3; j++ {
				g0, g1, g2 := g[j], g[3+j], g[6+j]
				gg[0][j] = g0
				gg[1][j] = (g0 + g1 + g2) / 2
				gg[2][j] = (g0 - g1 + g2) / 2
				gg[3][j] = g2
			}
			for r := 0; r < 4; r++ {
				a0, a1, a2 := gg[r][0], gg[r][1], gg[r][2]
				v := [4]float32{a0, (a0 + a1 + a2) / 2, (a0 - a1 + a2) / 2, a2}
				for q := 0; q < 4; q++ {
					u[((r*4+q)*Mg+m)*Cg+c] = v[q]
				}
			}
		}
	}
}

// convWinograd3x3 computes s (see winogradOK) per (batch, group) in blocks
// of whole tile rows, so each block covers complete output rows and gets
// the epilogue right after its output transform.
func convWinograd3x3(s *convShape, e *epilogue, res []float32) {
	g := s.g
	H, W := int(g.in[0]), int(g.in[1])
	OH, OW := int(g.out[0]), int(g.out[1])
	ph, pw := int(g.padB[0]), int(g.padB[1])
	TH, TW := (OH+1)/2, (OW+1)/2
	rowsPerBlock := max(1, 256/TW)
	blocks := (TH + rowsPerBlock - 1) / rowsPerBlock
	heldU, U := scratchF32(16 * s.Mg * s.Cg)
	defer convScratch.Put(heldU)
	for bi := 0; bi < s.N; bi++ {
		for gi := 0; gi < s.group; gi++ {
			winogradWeights(s.W[gi*s.Mg*s.Cg*9:(gi+1)*s.Mg*s.Cg*9], s.Mg, s.Cg, U)
			xg := s.X[(bi*s.C+gi*s.Cg)*s.inPlane : (bi*s.C+(gi+1)*s.Cg)*s.inPlane]
			chBase := bi*s.M + gi*s.Mg
			convParallel(blocks, s.Mg*s.Cg*9*s.P, func(lo, hi int) {
				nbMax := rowsPerBlock * TW
				heldV, V := scratchF32(16 * s.Cg * nbMax)
				defer convScratch.Put(heldV)
				heldM, Mx := scratchF32(16 * s.Mg * nbMax)
				defer convScratch.Put(heldM)
				var rows, trows [4][]float32
				for i := range rows {
					rows[i] = make([]float32, 2*TW+2)
					trows[i] = make([]float32, 2*TW+2)
				}
				for blk := lo; blk < hi; blk++ {
					th0 := blk * rowsPerBlock
					th1 := min(th0+rowsPerBlock, TH)
					nb := (th1 - th0) * TW
					// Input transform V[xi][c][tile] = (B^T d B)[xi], a tile
					// row at a time: the column part of B^T d is computed on
					// whole zero-padded input rows, then B is applied per tile
					// with contiguous writes along the tile row.
					for c := 0; c < s.Cg; c++ {
						plane := xg[c*s.inPlane : (c+1)*s.inPlane]
						for th := th0; th < th1; th++ {
							for i := 0; i < 4; i++ {
								ri := rows[i]
								clear(ri)
								if ih := 2*th - ph + i; ih >= 0 && ih < H {
									lo, hi := max(0, pw), min(len(ri), W+pw)
									if lo < hi {
										copy(ri[lo:hi], plane[ih*W+lo-pw:ih*W+hi-pw])
									}
								}
							}
							r0, r1, r2, r3 := rows[0], rows[1], rows[2], rows[3][:len(rows[0])]
							t0, t1, t2, t3 := trows[0], trows[1], trows[2], trows[3][:len(trows[0])]
							r1, r2 = r1[:len(r0)], r2[:len(r0)]
							t1, t2 = t1[:len(t0)], t2[:len(t0)]
							for j := range t0 {
								t0[j] = r0[j] - r2[j]
								t1[j] = r1[j] + r2[j]
								t2[j] = r2[j] - r1[j]
								t3[j] = r1[j] - r3[j]
							}
							base := (th - th0) * TW
							for r := 0; r < 4; r++ {
								tr := trows[r]
								v0 := V[((r*4+0)*s.Cg+c)*nb+base : ((r*4+0)*s.Cg+c)*nb+base+TW]
								v1 := V[((r*4+1)*s.Cg+c)*nb+base : ((r*4+1)*s.Cg+c)*nb+base+TW]
								v2 := V[((r*4+2)*s.Cg+c)*nb+base : ((r*4+2)*s.Cg+c)*nb+base+TW]
								v3 := V[((r*4+3)*s.Cg+c)*nb+base : ((r*4+3)*s.Cg+c)*nb+base+TW]
								for tw := range v0 {
									q := tr[2*tw : 2*tw+4]
									v0[tw] = q[0] - q[2]
									v1[tw] = q[1] + q[2]
									v2[tw] = q[2] - q[1]
									v3[tw] = q[1] - q[3]
								}
							}
						}
					}
					// 16 GEMMs: Mx[xi] = U[xi] * V[xi].
					clear(Mx[:16*s.Mg*nb])
					for xi := 0; xi < 16; xi++ {
						gemmTile(U[xi*s.Mg*s.Cg:], s.Cg, V[xi*s.Cg*nb:], nb, Mx[xi*s.Mg*nb:], nb, s.Mg, nb, s.Cg)
					}
					// Output transform and epilogue, one channel at a time.
					oh0, oh1 := 2*th0, min(2*th1, OH)
					for m := 0; m < s.Mg; m++ {
						ch := chBase + m
						yPlane := s.Y[ch*s.P : (ch+1)*s.P]
						for th := th0; th < th1; th++ {
							base := (th - th0) * TW
							var ms [16][]float32
							for xi := range ms {
								ms[xi] = Mx[(xi*s.Mg+m)*nb+base : (xi*s.Mg+m)*nb+base+TW]
							}
							for i := 0; i < 2 && 2*th+i < OH; i++ {
								yr := yPlane[(2*th+i)*OW : (2*th+i+1)*OW]
								// Row i of A^T M, then A on the columns.
								var c0, c1, c2, c3 []float32
								if i == 0 {
									c0, c1, c2, c3 = ms[0], ms[1], ms[2], ms[3]
								} else {
									c0, c1, c2, c3 = ms[4], ms[5], ms[6], ms[7]
								}
								for tw := 0; tw < TW; tw++ {
									var sr [4]float32
									if i == 0 {
										sr = [4]float32{c0[tw] + ms[4][tw] + ms[8][tw], c1[tw] + ms[5][tw] + ms[9][tw], c2[tw] + ms[6][tw] + ms[10][tw], c3[tw] + ms[7][tw] + ms[11][tw]}
									} else {
										sr = [4]float32{c0[tw] - ms[8][tw] - ms[12][tw], c1[tw] - ms[9][tw] - ms[13][tw], c2[tw] - ms[10][tw] - ms[14][tw], c3[tw] - ms[11][tw] - ms[15][tw]}
									}
									ow := 2 * tw
									yr[ow] = sr[0] + sr[1] + sr[2]
									if ow+1 < OW {
										yr[ow+1] = sr[1] - sr[2] - sr[3]
									}
								}
							}
						}
						if e.empty() {
							continue
						}
						for oh := oh0; oh < oh1; oh++ {
							var rr []float32
							if res != nil {
								rr = res[ch*s.P+oh*OW : ch*s.P+(oh+1)*OW]
							}
							e.apply(yPlane[oh*OW:(oh+1)*OW], gi*s.Mg+m, rr)
						}
					}
				}
			})
		}
	}
}
