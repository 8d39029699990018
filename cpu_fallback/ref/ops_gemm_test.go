package ref

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// naiveMatMul implements numpy matmul semantics with explicit loops.
func naiveMatMul(a, b *tensor.Tensor) *tensor.Tensor {
	as, bs := a.Shape().Clone(), b.Shape().Clone()
	aVec, bVec := len(as) == 1, len(bs) == 1
	if aVec {
		as = tensor.Shape{1, as[0]}
	}
	if bVec {
		bs = tensor.Shape{bs[0], 1}
	}
	M, K, N := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	ab, bb := as[:len(as)-2], bs[:len(bs)-2]
	r := max(len(ab), len(bb))
	batch := make(tensor.Shape, r)
	get := func(s tensor.Shape, i int) int64 {
		if j := i - (r - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for i := 0; i < r; i++ {
		batch[i] = max(get(ab, i), get(bb, i))
	}
	pick := func(s tensor.Shape, idx []int64) int64 {
		o := int64(0)
		for d := range s {
			v := idx[d+r-len(s)]
			if s[d] == 1 {
				v = 0
			}
			o = o*s[d] + v
		}
		return o
	}
	ys := append(tensor.Shape(nil), batch...)
	if !aVec {
		ys = append(ys, M)
	}
	if !bVec {
		ys = append(ys, N)
	}
	y := tensor.MustNew(tensor.F32, ys)
	A, B, Y := a.F32(), b.F32(), y.F32()
	bi := int64(0)
	reftest.ForIndex(batch, func(idx []int64) {
		ao, bo := pick(ab, idx)*M*K, pick(bb, idx)*K*N
		for i := int64(0); i < M; i++ {
			for j := int64(0); j < N; j++ {
				s := 0.0
				for k := int64(0); k < K; k++ {
					s += float64(A[ao+i*K+k]) * float64(B[bo+k*N+j])
				}
				Y[bi*M*N+i*N+j] = float32(s)
			}
		}
		bi++
	})
	return y
}

func TestMatMul(t *testing.T) {
	cases := []struct {
		name string
		a, b tensor.Shape
		want tensor.Shape
	}{
		{"2d", tensor.Shape{3, 4}, tensor.Shape{4, 5}, tensor.Shape{3, 5}},
		{"batched", tensor.Shape{2, 3, 4}, tensor.Shape{2, 4, 5}, tensor.Shape{2, 3, 5}},
		{"broadcast_b", tensor.Shape{2, 3, 3, 4}, tensor.Shape{4, 5}, tensor.Shape{2, 3, 3, 5}},
		{"broadcast_both", tensor.Shape{2, 1, 3, 4}, tensor.Shape{1, 3, 4, 2}, tensor.Shape{2, 3, 3, 2}},
		{"vec_mat", tensor.Shape{4}, tensor.Shape{2, 4, 3}, tensor.Shape{2, 3}},
		{"mat_vec", tensor.Shape{2, 3, 4}, tensor.Shape{4}, tensor.Shape{2, 3}},
		{"vec_vec", tensor.Shape{4}, tensor.Shape{4}, tensor.Shape{}},
		{"empty_k", tensor.Shape{2, 0}, tensor.Shape{0, 3}, tensor.Shape{2, 3}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(300 + i))
			a, b := reftest.RandF32(rng, tc.a...), reftest.RandF32(rng, tc.b...)
			got := nnRun(t, "MatMul", nil, 1, a, b)[0]
			require.True(t, tc.want.Equal(got.Shape()), "shape %v, want %v", got.Shape(), tc.want)
			nnClose(t, naiveMatMul(a, b).F32(), got.F32(), 1e-5)
		})
	}
}

func TestMatMulTypes(t *testing.T) {
	rng := reftest.RNG(9)
	a, b := reftest.RandF32(rng, 2, 3, 4), reftest.RandF32(rng, 4, 5)
	want := naiveMatMul(a, b)
	for _, typ := range []tensor.ElementType{tensor.F64, tensor.F16} {
		t.Run(typ.String(), func(t *testing.T) {
			ac, _ := a.Convert(typ)
			bc, _ := b.Convert(typ)
			got := nnRun(t, "MatMul", nil, 1, ac, bc)[0]
			require.Equal(t, typ, got.Type())
			g, _ := got.Convert(tensor.F32)
			tol := 1e-6
			if typ == tensor.F16 {
				tol = 1e-2
			}
			nnClose(t, want.F32(), g.F32(), tol)
		})
	}
	t.Run("i32", func(t *testing.T) {
		ai, _ := tensor.FromI32(tensor.Shape{2, 2}, []int32{1, 2, 3, 4})
		bi, _ := tensor.FromI32(tensor.Shape{2, 2}, []int32{5, 6, 7, 8})
		got := nnRun(t, "MatMul", nil, 1, ai, bi)[0]
		require.Equal(t, tensor.I32, got.Type())
		assert.Equal(t, []int32{19, 22, 43, 50}, got.I32())
	})
	t.Run("i8_wraps", func(t *testing.T) {
		// numpy: 100*100 + 100*100 = 20000 wraps to 32 in int8.
		ai, _ := tensor.From(tensor.Shape{1, 2}, []int8{100, 100})
		bi, _ := tensor.From(tensor.Shape{2, 1}, []int8{100, 100})
		got, err := tensor.Data[int8](nnRun(t, "MatMul", nil, 1, ai, bi)[0])
		require.NoError(t, err)
		assert.Equal(t, []int8{32}, got)
	})
	t.Run("gemm_u64_wraps", func(t *testing.T) {
		// alpha 2, beta 3 as integers: 2*(2^63 * 1) + 3*5 wraps to 15.
		ai, _ := tensor.From(tensor.Shape{1, 1}, []uint64{1 << 63})
		bi, _ := tensor.From(tensor.Shape{1, 1}, []uint64{1})
		ci, _ := tensor.From(tensor.Shape{1}, []uint64{5})
		got, err := tensor.Data[uint64](nnRun(t, "Gemm", graph.Attrs{"alpha": float32(2), "beta": float32(3)}, 1, ai, bi, ci)[0])
		require.NoError(t, err)
		assert.Equal(t, []uint64{15}, got)
		// alpha 0.5 in f64, truncated: 0.5 * 7 + 1 * 2 = 5.5 -> 5.
		ai, _ = tensor.From(tensor.Shape{1, 1}, []int32{7})
		bi, _ = tensor.From(tensor.Shape{1, 1}, []int32{1})
		ci, _ = tensor.From(tensor.Shape{1}, []int32{2})
		g32, err := tensor.Data[int32](nnRun(t, "Gemm", graph.Attrs{"alpha": float32(0.5)}, 1, ai, bi, ci)[0])
		require.NoError(t, err)
		assert.Equal(t, []int32{5}, g32)
	})
	t.Run("mismatch", func(t *testing.T) {
		_, err := nnRunErr("MatMul", nil, 1, reftest.RandF32(rng, 2, 3), reftest.RandF32(rng, 4, 2))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "test_MatMul")
	})
}

func TestGemm(t *testing.T) {
	cases := []struct {
		name        string
		tA, tB      bool
		alpha, beta float32
		c           tensor.Shape // nil: no C
		M, K, N     int64
	}{
		{name: "plain", M: 3, K: 4, N: 5, alpha: 1, beta: 1, c: tensor.Shape{3, 5}},
		{name: "transA", tA: true, M: 3, K: 4, N: 5, alpha: 0.5, beta: 1, c: tensor.Shape{5}},
		{name: "transB", tB: true, M: 3, K: 4, N: 5, alpha: 1, beta: 2, c: tensor.Shape{3, 1}},
		{name: "both_scalar_c", tA: true, tB: true, M: 2, K: 6, N: 3, alpha: 2, beta: 0.25, c: tensor.Shape{}},
		{name: "no_c", M: 4, K: 3, N: 2, alpha: 1.5, beta: 1},
		{name: "row_c", M: 4, K: 3, N: 2, alpha: 1, beta: 1, c: tensor.Shape{1, 2}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(400 + i))
			as, bs := tensor.Shape{tc.M, tc.K}, tensor.Shape{tc.K, tc.N}
			if tc.tA {
				as = tensor.Shape{tc.K, tc.M}
			}
			if tc.tB {
				bs = tensor.Shape{tc.N, tc.K}
			}
			a, b := reftest.RandF32(rng, as...), reftest.RandF32(rng, bs...)
			in := []*tensor.Tensor{a, b}
			var c *tensor.Tensor
			if tc.c != nil {
				c = reftest.RandF32(rng, tc.c...)
				in = append(in, c)
			}
			attrs := graph.Attrs{"alpha": tc.alpha, "beta": tc.beta, "transA": b2i(tc.tA), "transB": b2i(tc.tB)}
			got := nnRun(t, "Gemm", attrs, 1, in...)[0]
			require.Equal(t, tensor.Shape{tc.M, tc.N}, got.Shape())
			want := make([]float32, tc.M*tc.N)
			A, B := a.F32(), b.F32()
			for i := int64(0); i < tc.M; i++ {
				for j := int64(0); j < tc.N; j++ {
					s := 0.0
					for k := int64(0); k < tc.K; k++ {
						av, bv := A[i*tc.K+k], B[k*tc.N+j]
						if tc.tA {
							av = A[k*tc.M+i]
						}
						if tc.tB {
							bv = B[j*tc.K+k]
						}
						s += float64(av) * float64(bv)
					}
					s *= float64(tc.alpha)
					if c != nil {
						cs := c.Shape()
						ci, cj := i, j
						cm, cn := int64(1), int64(1)
						if len(cs) == 2 {
							cm, cn = cs[0], cs[1]
						} else if len(cs) == 1 {
							cn = cs[0]
						}
						if cm == 1 {
							ci = 0
						}
						if cn == 1 {
							cj = 0
						}
						s += float64(tc.beta) * float64(c.F32()[ci*cn+cj])
					}
					want[i*tc.N+j] = float32(s)
				}
			}
			nnClose(t, want, got.F32(), 1e-5)
		})
	}
	t.Run("bad_c", func(t *testing.T) {
		rng := reftest.RNG(1)
		_, err := nnRunErr("Gemm", nil, 1, reftest.RandF32(rng, 2, 3), reftest.RandF32(rng, 3, 4), reftest.RandF32(rng, 3))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "does not broadcast")
	})
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func BenchmarkMatMul(b *testing.B) {
	for _, sz := range []struct{ batch, m, k, n int64 }{
		{1, 256, 256, 256},
		{1, 512, 512, 512},
		{8, 128, 64, 128},
	} {
		b.Run(fmt.Sprintf("B%d_M%d_K%d_N%d", sz.batch, sz.m, sz.k, sz.n), func(b *testing.B) {
			rng := reftest.RNG(2)
			x, w := reftest.RandF32(rng, sz.batch, sz.m, sz.k), reftest.RandF32(rng, sz.k, sz.n)
			flops := 2 * float64(sz.batch*sz.m*sz.k*sz.n)
			for b.Loop() {
				if _, err := nnRunErr("MatMul", nil, 1, x, w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
