package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of norm_stats.cl (launchSpecs).
func init() {
	// x [2, 3, 4] against statistics [1, 3, 1] (MVN's default axes on NCW).
	bm := []int32{3, 2, 3, 4, 12, 4, 1, 0, 1, 0}
	launchSpecs["mvn_apply"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(24), nil, fill(24, -1, 1), fill(3, -0.1, 0.1), fill(3, 3, 4), make([]float32, 24), uint64(24), bm, float32(0.125))
	}
	launchSpecs["lp_norm_apply"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(24), nil, fill(24, -1, 1), []float32{0, 2, 3}, make([]float32, 24), uint64(24), bm)
		if hasFP64(e) {
			e.launch(t, k, "-DT=double", global1D(24), nil, make([]float64, 24), []float64{0, 2, 3}, make([]float64, 24), uint64(24), bm)
		}
	}
	launchSpecs["bn_train_apply"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(24), nil, fill(24, -1, 1), fill(3, -0.1, 0.1), fill(3, 3, 4), fill(3, 0.5, 1), fill(3, -1, 1),
			make([]float32, 24), uint64(24), uint64(3), uint64(4), float32(0.125), float32(1e-5))
	}
	launchSpecs["bn_train_stats"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(3), nil, fill(3, -0.1, 0.1), fill(3, 3, 4), fill(3, -1, 1), fill(3, 0.5, 1), make([]float32, 3), make([]float32, 3),
			uint64(3), float32(0.125), float32(0.9))
	}
}
