package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of random.cl (launchSpecs): every kernel with the
// request's seed and with a node's own key, on each buffer type.
func init() {
	seed := []uint64{42}
	launchSpecs["random_uniform"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(37), nil, make([]float32, 37), uint64(37), seed, uint64(7), uint64(3), int32(0), float32(-1), float32(2))
		e.launch(t, k, "-DHALF", global1D(37), nil, make([]uint16, 37), uint64(37), seed, uint64(7), uint64(0), int32(1), float32(0), float32(1))
		e.launch(t, k, "-DDOUBLE", global1D(37), nil, make([]float64, 37), uint64(37), seed, uint64(7), uint64(0), int32(1), float32(0), float32(1))
	}
	launchSpecs["random_normal"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(21), nil, make([]float32, 21), uint64(21), seed, uint64(1), uint64(5), int32(0), float32(1), float32(2))
		e.launch(t, k, "-DDOUBLE", global1D(21), nil, make([]float64, 21), uint64(21), seed, uint64(1), uint64(5), int32(1), float32(0), float32(1))
	}
	launchSpecs["bernoulli"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "-DOT=uchar", global1D(30), nil, fill(30, 0, 1), make([]uint8, 30), uint64(30), seed, uint64(1), uint64(2), int32(0))
		e.launch(t, k, "-DHALF -DOT=ushort -DOUT_HALF", global1D(30), nil, f16Pattern(30, false), make([]uint16, 30), uint64(30), seed, uint64(1), uint64(2), int32(1))
		e.launch(t, k, "-DDOUBLE -DOT=double", global1D(30), nil, make([]float64, 30), make([]float64, 30), uint64(30), seed, uint64(1), uint64(2), int32(1))
	}
	launchSpecs["multinomial"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [3, 5], 4 samples per row.
		e.launch(t, k, "-DOT=int", global1D(12), nil, fill(15, -2, 2), make([]int32, 12), uint64(12), uint64(5), uint64(4), seed, uint64(9), uint64(1), int32(0))
		e.launch(t, k, "-DOT=long -DEXP_DOUBLE", global1D(12), nil, fill(15, -2, 2), make([]int64, 12), uint64(12), uint64(5), uint64(4), seed, uint64(9), uint64(1), int32(1))
	}
	launchSpecs["dropout_train"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, train := range []uint8{0, 1} {
			e.launch(t, k, "", global1D(25), nil, fill(25, -1, 1), []float32{0.3}, []uint8{train}, make([]float32, 25), make([]uint8, 25),
				uint64(25), seed, uint64(0), uint64(8), int32(0))
		}
		e.launch(t, k, "-DHALF", global1D(25), nil, f16Pattern(25, false), f16Pattern(1, false), []uint8{1}, make([]uint16, 25), make([]uint8, 25),
			uint64(25), seed, uint64(3), uint64(0), int32(1))
	}
}
