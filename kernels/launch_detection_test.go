package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of detection_*.cl (launchSpecs).
func init() {
	launchSpecs["roi_align"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// X [2, 5, 6, 7], 3 rois (one partly outside, one with a batch
		// index out of range) into 2 x 3 bins, avg and max, both
		// coordinate modes, every CPI.
		rois := []float32{0, 0, 4, 5, 2.5, 1, 9, 8, 1, 1, 2, 2}
		e.forVariants(t, "roi_align", "channels", func(t *testing.T, v kernels.Variant, full bool) {
			cpi := v.Get("CPI")
			cnt := 3 * 6 * ((5 + cpi - 1) / cpi)
			for mode := range int32(2) {
				m := []int32{2, 5, 6, 7, 2, 3, 0, mode, 1 - mode}
				e.launch(t, k, v.Defines(), global1D(cnt), nil, fill(420, -1, 1), rois, []int64{1, 0, 2}, make([]float32, 90),
					uint64(cnt), m, float32(0.8))
				if full {
					m[6] = 2
					e.launch(t, k, v.Defines()+" -DHALF -DIDX=int", global1D(cnt), nil, f16Pattern(420, false), rois, []int32{0, 1, 1},
						make([]uint16, 90), uint64(cnt), m, float32(1))
				}
			}
		})
	}
}
