package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// The launch spec of kernelfusion_se_block.cl (launchSpecs), checking its
// outputs against a float64 reference.
func init() {
	launchSpecs["se_block"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 2 images of C=41 channels of 53 elements, squeezed to CM=27
		// (at each VW the sums take both vector loops or one and a tail),
		// a group narrower and wider than C, one, three or twelve slices
		// per image (the last one short, with G=12 one empty), one group
		// past n; f16 at G=3.
		const N, C, HW, CM = 2, 41, 53, 27
		x := fill(N*C*HW, -1, 1)
		w1, b1 := fill(CM*C, -0.5, 0.5), fill(CM, -0.2, 0.2)
		w2, b2 := fill(C*CM, -0.6, 0.4), fill(C, -0.2, 0.2)
		for j := range w1 {
			w1[j] *= float32(1+(j*5)%3) / 2 // not periodic in the row
		}
		p := []float32{0, 0, 0.2, 0.5}
		// reference computes the block in float64: Relu, then HardSigmoid
		// (act2 3) or Sigmoid (2), x*gate or x + x*gate.
		reference := func(x, w1, b1, w2, b2 []float32, act2 int, residual bool) []float32 {
			y := make([]float32, len(x))
			for n := range N {
				pooled := make([]float64, C)
				for c := range C {
					for i := range HW {
						pooled[c] += float64(x[(n*C+c)*HW+i])
					}
					pooled[c] /= HW
				}
				mid := make([]float64, CM)
				for j := range CM {
					a := float64(b1[j])
					for c := range C {
						a += float64(w1[j*C+c]) * pooled[c]
					}
					mid[j] = math.Max(a, 0)
				}
				for c := range C {
					a := float64(b2[c])
					for j := range CM {
						a += float64(w2[c*CM+j]) * mid[j]
					}
					g := 1 / (1 + math.Exp(-a))
					if act2 == 3 {
						g = math.Max(0, math.Min(1, 0.2*a+0.5))
					}
					for i := range HW {
						v := float64(x[(n*C+c)*HW+i])
						out := v * g
						if residual {
							out += v
						}
						y[(n*C+c)*HW+i] = float32(out)
					}
				}
			}
			return y
		}
		args := func(y any, f16 bool, G, act2, residual int) []any {
			conv := func(v []float32) any {
				if f16 {
					return f16Bits(v)
				}
				return v
			}
			m := []int32{C, HW, CM, int32(G), 1, int32(act2), int32(residual)}
			return []any{conv(x), conv(w1), conv(b1), conv(w2), conv(b2), y, uint64(N * G), m, p}
		}
		for _, vw := range []int{4, 8, 16} {
			if e.lim.VectorFits(vw) != "" {
				continue // the device plans narrower vectors
			}
			defs := fmt.Sprintf("-DVW=%d", vw)
			for _, G := range []int{1, 3, 12} {
				for _, L := range []int{1, 16} {
					if e.lim.MaxWorkGroup > 0 && L > e.lim.MaxWorkGroup {
						continue
					}
					for _, form := range []struct{ act2, residual int }{{3, 0}, {2, 1}} {
						name := fmt.Sprintf("%s, G=%d, groups of %d, act2 %d, residual %d", defs, G, L, form.act2, form.residual)
						global := []int{(N*G + 1) * L}
						want := reference(x, w1, b1, w2, b2, form.act2, form.residual == 1)
						out := e.launch(t, k, defs, global, []int{L}, args(make([]float32, len(x)), false, G, form.act2, form.residual)...) // y is buffer 5
						assert.InDeltaSlice(t, want, f32s(out[5]), 1e-5, name)
						// -DHALF: every buffer as f16 bits, the reference on the rounded values.
						wantHalf := reference(f16Rounded(x), f16Rounded(w1), f16Rounded(b1), f16Rounded(w2), f16Rounded(b2), form.act2, form.residual == 1)
						out = e.launch(t, k, defs+" -DHALF", global, []int{L}, args(make([]uint16, len(x)), true, G, form.act2, form.residual)...)
						for i, w := range wantHalf {
							got := tensor.F16ToFloat32(binary.LittleEndian.Uint16(out[5][2*i:]))
							assert.InDelta(t, w, got, 1e-2+1e-2*math.Abs(float64(w)), "%s -DHALF, element %d", name, i)
						}
					}
				}
			}
		}
		// Channels wider than the local arrays: nothing runs, y is left alone.
		out := e.launch(t, k, "-DSW=4", []int{2 * N * 4}, []int{4}, args(make([]float32, len(x)), false, 2, 3, 0)...)
		assert.Equal(t, make([]float32, len(x)), f32s(out[5]), "a table over SW leaves y alone")
	}
}
