package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
)

// hostBytes returns the bytes of a slice argument and true, or nil and
// false for a scalar.
func hostBytes(a any) ([]byte, bool) {
	switch v := a.(type) {
	case []byte:
		return append([]byte(nil), v...), true
	case []int8:
		return sliceBytes(v), true
	case []int16:
		return sliceBytes(v), true
	case []float32:
		return sliceBytes(v), true
	case []int32:
		return sliceBytes(v), true
	case []int64:
		return sliceBytes(v), true
	case []uint16:
		return sliceBytes(v), true
	case []uint32:
		return sliceBytes(v), true
	case []uint64:
		return sliceBytes(v), true
	case []float64:
		return sliceBytes(v), true
	}
	return nil, false
}

func sliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))...)
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// gemmCase is one SGEMM problem: A is stored [M, K] (or [K, M] when
// transA), B [K, N] (or [N, K] when transB), both after aOff/bOff padding
// elements; C is [M, ldc] after cOff.
type gemmCase struct {
	m, n, k          int
	transA, transB   bool
	aOff, bOff, cOff int
	ldcPad           int
	alpha, beta      float32
}

func (g gemmCase) String() string {
	return fmt.Sprintf("%dx%dx%d_tA%v_tB%v_off%d.%d.%d_ldc+%d_a%g_b%g", g.m, g.n, g.k, g.transA, g.transB, g.aOff, g.bOff, g.cOff, g.ldcPad, g.alpha, g.beta)
}

// strides returns the row and column strides of A and B.
func (g gemmCase) strides() (ars, acs, brs, bcs int64) {
	ars, acs = int64(g.k), 1
	if g.transA {
		ars, acs = 1, int64(g.m)
	}
	brs, bcs = int64(g.n), 1
	if g.transB {
		brs, bcs = 1, int64(g.k)
	}
	return
}

// run launches sgemm with tiling tl and returns C (the whole buffer) with
// the reference computed in float64.
func (g gemmCase) run(t *testing.T, e *clEnv, tl kernels.SGEMMTiling, seed uint32) (got, want []float32) {
	t.Helper()
	a := seeded.Float32s(seed, g.aOff+g.m*g.k, -1, 1)
	b := seeded.Float32s(seed+1, g.bOff+g.k*g.n, -1, 1)
	ldc := g.n + g.ldcPad
	c := seeded.Float32s(seed+2, g.cOff+g.m*ldc, -1, 1)
	ars, acs, brs, bcs := g.strides()
	want = append([]float32(nil), c...)
	for i := range g.m {
		for j := range g.n {
			var s float64
			for p := range g.k {
				s += float64(a[int64(g.aOff)+int64(i)*ars+int64(p)*acs]) * float64(b[int64(g.bOff)+int64(p)*brs+int64(j)*bcs])
			}
			o := g.cOff + i*ldc + j
			v := float64(g.alpha) * s
			if g.beta != 0 {
				v += float64(g.beta) * float64(c[o])
			}
			want[o] = float32(v)
		}
	}
	outs := e.launch(t, kernels.MustLookup("sgemm"), tl.Options(), tl.GlobalSize(g.m, g.n), tl.LocalSize(),
		int32(g.m), int32(g.n), int32(g.k), g.alpha,
		a, int64(g.aOff), ars, acs,
		b, int64(g.bOff), brs, bcs,
		g.beta, c, int64(g.cOff), int64(ldc))
	return f32s(outs[2]), want
}

// TestSGEMM checks gemm_sgemm.cl against a float64 reference on shapes that are
// and are not multiples of the tile, with transposes, offsets, a padded
// ldc and beta, for the default tiling and a small one; elements of C
// outside the M x N window must be left alone.
func TestSGEMM(t *testing.T) {
	e := newCLEnv(t)
	cases := []gemmCase{
		{m: 1, n: 1, k: 1, alpha: 1},
		{m: 64, n: 64, k: 64, alpha: 1},
		{m: 17, n: 33, k: 9, alpha: 1},
		{m: 130, n: 70, k: 100, alpha: 0.5, beta: 2, transA: true},
		{m: 65, n: 129, k: 31, alpha: 1, transB: true, aOff: 3, bOff: 5, cOff: 7, ldcPad: 3, beta: -1},
		{m: 3, n: 200, k: 257, alpha: 1, transA: true, transB: true},
	}
	tilings := map[string]kernels.SGEMMTiling{
		"default": kernels.DefaultSGEMMTiling,
		"small":   {TileM: 16, TileN: 8, TileK: 4, WorkM: 2, WorkN: 2},
		"vec4":    {TileM: 32, TileN: 64, TileK: 16, WorkM: 4, WorkN: 8, Vec: 4},
		"vec8":    {TileM: 64, TileN: 64, TileK: 16, WorkM: 4, WorkN: 8, Vec: 8},
	}
	for tname, tl := range tilings {
		require.NoError(t, tl.Validate())
		if why := tl.Fits(e.lim); why != "" {
			t.Logf("tiling %s not launched: the device's limits refuse it (%s)", tname, why)
			continue
		}
		for i, g := range cases {
			t.Run(tname+"/"+g.String(), func(t *testing.T) {
				got, want := g.run(t, e, tl, uint32(10*i+1))
				require.Len(t, got, len(want))
				tol := 1e-5 * float64(g.k+1)
				for j := range want {
					if !assert.InDelta(t, want[j], got[j], tol, "C element %d", j) {
						return
					}
				}
			})
		}
	}
}

func TestSGEMMTilingValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		tl   kernels.SGEMMTiling
		ok   bool
	}{
		{"default", kernels.DefaultSGEMMTiling, true},
		{"zero", kernels.SGEMMTiling{}, false},
		{"bad vec", kernels.SGEMMTiling{TileM: 64, TileN: 64, TileK: 16, WorkM: 4, WorkN: 4, Vec: 3}, false},
		{"vec above block", kernels.SGEMMTiling{TileM: 64, TileN: 64, TileK: 16, WorkM: 4, WorkN: 4, Vec: 8}, false},
		{"uneven block", kernels.SGEMMTiling{TileM: 64, TileN: 64, TileK: 16, WorkM: 3, WorkN: 4}, false},
		{"local too big for K tile", kernels.SGEMMTiling{TileM: 64, TileN: 64, TileK: 2, WorkM: 1, WorkN: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tl.Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
	assert.Equal(t, []int{16, 16}, kernels.DefaultSGEMMTiling.LocalSize())
	assert.Equal(t, []int{32, 16}, kernels.SGEMMTiling{TileM: 64, TileN: 64, TileK: 16, WorkM: 4, WorkN: 4}.GlobalSize(1, 65))
}
