package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of resize_affine_grid.cl (launchSpecs).
func init() {
	launchSpecs["affine_grid"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 2-D: theta [2, 2, 3], grid [2, 3, 5, 2]; 3-D: theta [1, 3, 4],
		// grid [1, 2, 3, 4, 3] with align_corners; f16 2-D.
		e.launch(t, k, "", global1D(30), nil, fill(12, -1, 1), make([]float32, 60), uint64(30), int32(2), int64(1), int64(3), int64(5), int32(0))
		e.launch(t, k, "", global1D(24), nil, fill(12, -1, 1), make([]float32, 72), uint64(24), int32(3), int64(2), int64(3), int64(4), int32(1))
		e.launch(t, k, "-DHALF", global1D(30), nil, f16Pattern(12, false), make([]uint16, 60), uint64(30), int32(2), int64(1), int64(3), int64(5), int32(0))
	}
}
