package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of resize_grid_sample.cl (launchSpecs).
func init() {
	launchSpecs["grid_sample"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// X [2, 5, 4, 6] at grid [2, 3, 2, 2] (points inside and outside
		// [-1, 1]) in every mode and padding, then X [1, 3, 2, 3, 4] at
		// [1, 2, 2, 1, 3] (3 axes, linear reflection), every CPI.
		grid := fill(24, -1.6, 1.6)
		e.forVariants(t, "grid_sample", "channels", func(t *testing.T, v kernels.Variant, full bool) {
			cpi := v.Get("CPI")
			cnt := 2 * 6 * ((5 + cpi - 1) / cpi)
			for mode := range int32(3) {
				for pad := range int32(3) {
					e.launch(t, k, v.Defines(), global1D(cnt), nil, fill(240, -1, 1), grid, make([]float32, 60),
						uint64(cnt), []int32{2, 5, 6, 4, 6}, mode, pad, int32(pad%2))
					if !full {
						break
					}
				}
			}
			cnt3 := 4 * ((3 + cpi - 1) / cpi)
			e.launch(t, k, v.Defines(), global1D(cnt3), nil, fill(72, -1, 1), fill(12, -1.3, 1.3), make([]float32, 12),
				uint64(cnt3), []int32{3, 3, 4, 2, 3, 4}, int32(1), int32(2), int32(1))
			if full {
				e.launch(t, k, v.Defines()+" -DHALF", global1D(cnt), nil, f16Pattern(240, false), grid, make([]uint16, 60),
					uint64(cnt), []int32{2, 5, 6, 4, 6}, int32(2), int32(2), int32(0))
			}
		})
	}
}
