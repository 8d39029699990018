package kernels_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of pool_unpool.cl and pool_rows.cl (launchSpecs).
func init() {
	launchSpecs["pool_rows"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		if strings.Contains(k.Options, "-DPOOL_MAX") {
			maxPool2dSpec(t, e, k)
		} else {
			avgPool2dSpec(t, e, k)
		}
	}
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

// maxPool2dSpec launches max_pool2d.
func maxPool2dSpec(t *testing.T, e *clEnv, k kernels.Kernel) {
	// x [1,2,5,7]: 2x2 stride 2 with ceil_mode (end pad 1) -> [1,2,3,4];
	// 3x2 window, strides (2,1), pads (1,0) -> [1,2,3,6]; runs of
	// 8 and 3 (a partial last run), items past both axes.
	for _, c := range []struct {
		m   []int32
		out int
	}{
		{[]int32{5, 7, 3, 4, 2, 2, 2, 2, 0, 0, 6}, 24},
		{[]int32{5, 7, 3, 6, 3, 2, 2, 1, 1, 0, 6}, 36},
	} {
		for _, run := range []int{8, 3} {
			global := []int{(int(c.m[3])+run-1)/run + 1, int(c.m[10]) + 1}
			defs := fmt.Sprintf("-DRUN=%d", run)
			e.launch(t, k, defs, global, nil, fill(70, -1, 1), make([]float32, c.out), c.m)
			e.launch(t, k, defs+" -DHALF", global, nil, f16Pattern(70, false), make([]uint16, c.out), c.m)
		}
	}
}

// avgPool2dSpec launches avg_pool2d and checks its outputs.
func avgPool2dSpec(t *testing.T, e *clEnv, k kernels.Kernel) {
	// x [1,2,5,7]: 3x3 stride 2 pads 1 (ends 1 and 2) -> [1,2,3,4],
	// without and with count_include_pad; runs of 8 and 3, items past
	// both axes.
	x := fill(70, -1, 1)
	for _, inc := range []int32{0, 1} {
		m := []int32{5, 7, 3, 4, 3, 3, 2, 2, 1, 1, 6, inc, 6, 9}
		want := make([]float32, 24)
		for r := 0; r < 6; r++ {
			for o := 0; o < 4; o++ {
				hs, ws := (r%3)*2-1, o*2-1
				sum, cnt := float32(0), 0
				for h := hs; h < hs+3; h++ {
					for w := ws; w < ws+3; w++ {
						if inc == 1 && h < 6 && w < 9 {
							cnt++
						}
						if h >= 0 && h < 5 && w >= 0 && w < 7 {
							sum += x[(r/3)*35+h*7+w]
							if inc == 0 {
								cnt++
							}
						}
					}
				}
				want[r*4+o] = sum / float32(cnt)
			}
		}
		for _, run := range []int{8, 3} {
			global := []int{(4+run-1)/run + 1, 7}
			defs := fmt.Sprintf("-DRUN=%d", run)
			got := f32s(e.launch(t, k, defs, global, nil, x, make([]float32, 24), m)[1])
			assert.InDeltaSlice(t, want, got, 1e-6, "count_include_pad %d, runs of %d", inc, run)
			e.launch(t, k, defs+" -DHALF", global, nil, f16Pattern(70, false), make([]uint16, 24), m)
		}
	}
}
