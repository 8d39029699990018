package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of gemm_det.cl (launchSpecs).
func init() {
	launchSpecs["det"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 3 matrices of 4 x 4 (the second singular), in float, double
		// compute, f16 and f64 buffers.
		x := fill(48, -2, 2)
		for i := 16; i < 20; i++ {
			x[i+4] = x[i] // two equal rows
		}
		e.launch(t, k, "", global1D(3), nil, x, make([]float32, 3), make([]float32, 48), uint64(3), uint64(4))
		e.launch(t, k, "-DCT=double", global1D(3), nil, x, make([]float32, 3), make([]float64, 48), uint64(3), uint64(4))
		e.launch(t, k, "-DHALF", global1D(3), nil, f16Pattern(48, false), make([]uint16, 3), make([]float32, 48), uint64(3), uint64(4))
		e.launch(t, k, "-DDOUBLE", global1D(3), nil, make([]float64, 48), make([]float64, 3), make([]float64, 48), uint64(3), uint64(4))
	}
}
