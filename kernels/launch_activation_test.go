package kernels_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of activation_softmax_rows.cl (launchSpecs), each
// checking its outputs.
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
