package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of pool_unpool.cl (launchSpecs).
func init() {
	launchSpecs["unpool_zero"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(50), nil, make([]uint32, 50), uint64(50))
		e.launch(t, k, "-DT=ushort", global1D(50), nil, make([]uint16, 50), uint64(50))
	}
	launchSpecs["unpool_scatter"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,2,2] into the default [1,2,4,4] and a padded [1,2,5,5],
		// one index out of range (-1) and one past the default (40).
		idx := []int64{0, 3, 9, 14, 16, 22, -1, 40}
		for _, o := range [][]int32{{4, 1, 2, 4, 4, 1, 2, 4, 4}, {4, 1, 2, 4, 4, 1, 2, 5, 5}} {
			e.launch(t, k, "", global1D(8), nil, fill(8, -1, 1), idx, make([]float32, int(o[6]*o[7]*o[8]*2)), uint64(8), o)
		}
		e.launch(t, k, "-DT=ulong", global1D(8), nil, make([]uint64, 8), idx, make([]uint64, 32), uint64(8), []int32{4, 1, 2, 4, 4, 1, 2, 4, 4})
	}
}
