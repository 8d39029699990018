package kernels_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of activation_softmax_rows.cl and pool_avg2d.cl
// (launchSpecs), each checking its outputs.
func init() {
	launchSpecs["softmax_rows"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 3 rows of 37 (whole vectors and a partial last chunk at every
		// width), a group past the rows; one item per row and groups of 4.
		const rows, n = 3, 37
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(i%11)*0.7 - 3 + float32(i/n)
		}
		logSoftmax := strings.Contains(k.Options, "LOG_SOFTMAX")
		want := make([]float32, len(x))
		for r := 0; r < rows; r++ {
			row := x[r*n : (r+1)*n]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, float64(v))
			}
			sum := 0.0
			for _, v := range row {
				sum += math.Exp(float64(v) - mx)
			}
			for c, v := range row {
				if logSoftmax {
					want[r*n+c] = float32(float64(v) - mx - math.Log(sum))
				} else {
					want[r*n+c] = float32(math.Exp(float64(v)-mx) / sum)
				}
			}
		}
		for _, g := range rowsGeometries(e, rows) {
			got := f32s(e.launch(t, k, g.defs, g.global, g.local, x, make([]float32, len(x)), uint64(rows), int32(n))[1])
			assert.InDeltaSlice(t, want, got, 1e-5, g.defs+", groups of %d", g.local[0])
			e.launch(t, k, g.defs+" -DHALF", g.global, g.local, f16Pattern(rows*n, false), make([]uint16, rows*n), uint64(rows), int32(n))
		}
	}
	launchSpecs["avg_pool2d"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,7]: 3x3 stride 2 pads 1 (ends 1 and 2) -> [1,2,3,4],
		// without and with count_include_pad; runs of 8 and 3, items past
		// both axes.
		x := fill(70, -1, 1)
		for _, inc := range []int32{0, 1} {
			m := []int32{5, 7, 3, 4, 3, 3, 2, 2, 1, 1, 6, inc, 6, 9}
			want := make([]float32, 24)
			for r := 0; r < 6; r++ {
				for o := 0; o < 4; o++ {
					hs, ws := (r%3)*2-1, o*2-1
					sum, cnt := float32(0), 0
					for h := hs; h < hs+3; h++ {
						for w := ws; w < ws+3; w++ {
							if inc == 1 && h < 6 && w < 9 {
								cnt++
							}
							if h >= 0 && h < 5 && w >= 0 && w < 7 {
								sum += x[(r/3)*35+h*7+w]
								if inc == 0 {
									cnt++
								}
							}
						}
					}
					want[r*4+o] = sum / float32(cnt)
				}
			}
			for _, run := range []int{8, 3} {
				global := []int{(4+run-1)/run + 1, 7}
				defs := fmt.Sprintf("-DRUN=%d", run)
				got := f32s(e.launch(t, k, defs, global, nil, x, make([]float32, 24), m)[1])
				assert.InDeltaSlice(t, want, got, 1e-6, "count_include_pad %d, runs of %d", inc, run)
				e.launch(t, k, defs+" -DHALF", global, nil, f16Pattern(70, false), make([]uint16, 24), m)
			}
		}
	}
}

// rowsGeometry is one launch of a kernel of one work group per row (rows.clh).
type rowsGeometry struct {
	defs          string
	global, local []int
}

// rowsGeometries are the launches a spec of a rows.clh kernel makes over
// rows rows: every vector width VW the device plans, groups of 1 and 4
// items, one group past the rows.
func rowsGeometries(e *clEnv, rows int) []rowsGeometry {
	var out []rowsGeometry
	for _, vw := range []int{16, 8, 4} {
		if e.lim.VectorFits(vw) != "" {
			continue // the device plans narrower vectors
		}
		for _, group := range []int{1, 4} {
			out = append(out, rowsGeometry{fmt.Sprintf("-DVW=%d", vw), []int{(rows + 1) * group}, []int{group}})
		}
	}
	return out
}
