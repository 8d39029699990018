package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of norm_lrn.cl (launchSpecs).
func init() {
	launchSpecs["lrn"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [2, 5, 3], size 4 (1 channel before, 2 after), f32 and f16.
		p := []float32{1e-4 / 4, 0.75, 1}
		e.launch(t, k, "", global1D(30), nil, fill(30, -2, 2), make([]float32, 30), uint64(30), uint64(5), uint64(3), int32(1), int32(2), p)
		e.launch(t, k, "-DHALF", global1D(30), nil, f16Pattern(30, false), make([]uint16, 30), uint64(30), uint64(5), uint64(3), int32(1), int32(2), p)
	}
}
