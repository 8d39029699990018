package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of loss.cl (launchSpecs).
func init() {
	launchSpecs["nll_loss"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// lp [2, 4, 3], targets [2, 3] with an ignored one (3) and one out
		// of range (-1, 9), weights; f32 long targets with the float sums,
		// f16 int targets without weights.
		tl := []int64{0, 3, 1, 2, -1, 9}
		e.launch(t, k, "-DIT=long -DSUMS", global1D(6), nil, fill(24, -3, 0), tl, fill(4, 0, 1), make([]float32, 6), make([]float32, 6),
			uint64(6), uint64(4), uint64(3), int64(3), int32(1), int32(1))
		e.launch(t, k, "-DIT=int -DHALF", global1D(6), nil, f16Pattern(24, false), []int32{0, 3, 1, 2, 1, 0}, f16Pattern(1, false),
			make([]uint16, 6), make([]float32, 6), uint64(6), uint64(4), uint64(3), int64(0), int32(0), int32(0))
	}
	launchSpecs["loss_reduce"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 150 losses (more than a group, fewer than two), mean and sum.
		e.launch(t, k, "-DWG=64", []int{64}, []int{64}, fill(150, 0, 2), fill(150, 0, 1), make([]float32, 1), uint64(150), int32(1))
		e.launch(t, k, "-DWG=64 -DHALF", []int{64}, []int{64}, fill(150, 0, 2), fill(150, 0, 1), make([]uint16, 1), uint64(150), int32(0))
	}
}
