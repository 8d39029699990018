package kernels_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// The launch spec of kernelfusion_dense_chain.cl (launchSpecs), checking
// its outputs against a float64 reference.
func init() {
	launchSpecs["dense_chain"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 2 rows of 37 through three layers: 37 -> 21 with LayerNorm and
		// Relu, 21 -> 5 with Sigmoid, 5 -> 19 with LayerNorm alone (whole
		// vectors and partial chunks at every width); the fourth slot is
		// absent; one group past the rows.
		const rows, K0 = 2, 37
		type layer struct {
			K, C      int
			norm, act int32
		}
		layers := []layer{{K0, 21, 1, 1}, {21, 5, 0, 2}, {5, 19, 1, 0}}
		x := fill(rows*K0, -1, 1)
		eps := []float32{1e-5, 0, 1e-3}
		m := []int32{int32(len(layers))}
		var bufs [][]float32 // w, b, scale, shift per layer
		for i, l := range layers {
			m = append(m, int32(l.K), int32(l.C), l.norm, l.act)
			w := fill(l.K*l.C, -0.5, 0.5)
			for j := range w {
				w[j] *= float32(1+(j*7+i)%5) / 3 // not periodic in the row
			}
			bufs = append(bufs, w, fill(l.C, -0.2, 0.2), fill(l.C, 0.5, 1.5), fill(l.C, -0.3, 0.3))
		}
		// reference runs the chain in float64 over x and bufs.
		reference := func(x []float32, bufs [][]float32) []float32 {
			want := make([]float32, rows*19)
			for r := range rows {
				v := make([]float64, K0)
				for k := range v {
					v[k] = float64(x[r*K0+k])
				}
				for i, l := range layers {
					w, b, s, sh := bufs[4*i], bufs[4*i+1], bufs[4*i+2], bufs[4*i+3]
					u := make([]float64, l.C)
					for c := range u {
						u[c] = float64(b[c])
						for k := range l.K {
							u[c] += v[k] * float64(w[k*l.C+c])
						}
					}
					if l.norm == 1 {
						mean, sq := 0.0, 0.0
						for _, a := range u {
							mean += a
						}
						mean /= float64(l.C)
						for _, a := range u {
							sq += (a - mean) * (a - mean)
						}
						inv := 1 / math.Sqrt(sq/float64(l.C)+float64(eps[i]))
						for c := range u {
							u[c] = (u[c]-mean)*inv*float64(s[c]) + float64(sh[c])
						}
					}
					for c := range u {
						switch l.act {
						case 1:
							u[c] = math.Max(u[c], 0)
						case 2:
							u[c] = 1 / (1 + math.Exp(-u[c]))
						}
					}
					v = u
				}
				for c, a := range v {
					want[r*19+c] = float32(a)
				}
			}
			return want
		}
		want := reference(x, bufs)
		// -DHALF: every buffer as f16 bits; its reference takes the
		// rounded values (the kernel rounds between layers too).
		var roundedBufs [][]float32
		for _, b := range bufs {
			roundedBufs = append(roundedBufs, f16Rounded(b))
		}
		wantHalf := reference(f16Rounded(x), roundedBufs)
		args := func(y any, f16 bool) []any {
			conv := func(v []float32) any {
				if f16 {
					return f16Bits(v)
				}
				return v
			}
			out := []any{conv(x)}
			for _, b := range bufs {
				out = append(out, conv(b))
			}
			out = append(out, conv(x), conv(x), conv(x), conv(x)) // the absent fourth layer
			return append(out, y, uint64(rows), m, eps)
		}
		for _, g := range rowsGeometries(e, rows) {
			out := e.launch(t, k, g.defs, g.global, g.local, args(make([]float32, len(want)), false)...) // y is buffer 17
			assert.InDeltaSlice(t, want, f32s(out[17]), 1e-4, g.defs+", groups of %d", g.local[0])
			out = e.launch(t, k, g.defs+" -DHALF", g.global, g.local, args(make([]uint16, len(want)), true)...)
			for i, w := range wantHalf {
				got := tensor.F16ToFloat32(binary.LittleEndian.Uint16(out[17][2*i:]))
				assert.InDelta(t, w, got, 2e-2+2e-2*math.Abs(float64(w)), "%s -DHALF, groups of %d, element %d", g.defs, g.local[0], i)
			}
			// Rows wider than the local halves: nothing runs, y is left alone.
			out = e.launch(t, k, g.defs+" -DDW=16", g.global, g.local, args(make([]float32, len(want)), false)...)
			assert.Equal(t, make([]float32, len(want)), f32s(out[17]), "a table over DW leaves y alone")
		}
	}
}
