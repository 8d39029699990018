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

// nmsSpecs are the launch specs of detection_nms.cl: 2 batches x 3
// classes of 5 boxes (P = 8), at most 2 kept per class.
func init() {
	boxes := fill(40, 0, 4)
	scores := fill(30, 0, 1)
	m := []int32{5, 8, 3, 2, 0, 1} // N, P, C, maxk, center, use_th
	launchSpecs["nms_serial"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.forVariants(t, "nms", "serial", func(t *testing.T, v kernels.Variant, full bool) {
			for _, center := range []int32{0, 1} {
				m := append([]int32(nil), m...)
				m[4] = center
				e.launch(t, k, "", global1D(6), wgOnes(v.Get("WG"), 1), boxes, scores, make([]int32, 48), make([]int32, 12),
					make([]int32, 6), uint64(6), m, float32(0.2), float32(0.5))
			}
		})
	}
	launchSpecs["nms_init"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(48), nil, scores, make([]int32, 48), uint64(48), m, float32(0.2))
	}
	launchSpecs["nms_sort_step"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		order := []int32{0, 1, 2, 3, 4, 5, 5, 5}
		order = append(append(order, order...), append(order, order...)...)
		order = append(order, order[:16]...)
		e.launch(t, k, "", global1D(24), nil, scores, order, uint64(24), m, uint64(2), uint64(4))
	}
	launchSpecs["nms_select_group"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		order := make([]int32, 48)
		for i := range order {
			order[i] = int32(min(i%8, 5))
		}
		e.forVariants(t, "nms", "bitonic", func(t *testing.T, v kernels.Variant, full bool) {
			wg := v.Get("WG")
			e.launch(t, k, v.Defines(), []int{7 * wg}, []int{wg}, boxes, order, make([]int32, 12), make([]int32, 6),
				uint64(6), m, float32(0.5))
		})
	}
	launchSpecs["nms_scatter"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(12), nil, []int32{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}, []int32{2, 1, 0, 2, 2, 1},
			[]int32{0, 2, 3, 3, 5, 7}, make([]int64, 24), uint64(12), uint64(3), uint64(2))
	}
}
