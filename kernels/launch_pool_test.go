package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
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

// maxPool2dSpec launches max_pool2d and checks its outputs.
func maxPool2dSpec(t *testing.T, e *clEnv, k kernels.Kernel) {
	// x [1,2,5,7]: 2x2 stride 2 with ceil_mode (end pad 1) -> [1,2,3,4];
	// 3x2 window, strides (2,1), pads (1,0) -> [1,2,3,6]; runs of
	// 8 and 3 (a partial last run), items past both axes. x [1,2,5,37]
	// 2x2 stride 2 with ceil_mode -> [1,2,3,19], the one case of
	// max_pool2d_2x2 (-DWIN2): at RUN 8 two whole runs inside the first
	// two output rows (vectors), the last row and the partial run through
	// the loop; at RUN 16 an item's two 8-output parts as vectors, then a
	// run of 3 through the loop; at RUN 32 (what a CPU device builds) one
	// partial run, its two whole 8-output parts as vectors and the rest
	// through the loop; at RUN 3 (not a multiple of 8) every run through
	// the loop; with vectors of PV 8 and 16 (a CPU device's width, where
	// the device's limits take it) at RUN 16 and 32 whole parts of 16
	// outputs as vectors, the rest through the loop, and at RUN 8 with PV
	// 16 (not a multiple of its 16-output part) every run through the
	// loop; a NaN in a whole run and one in the loop's part propagate.
	wide := fill(370, -1, 1)
	wide[3*37+5] = float32(math.NaN())
	wide[37+36] = float32(math.NaN())
	for _, c := range []struct {
		m    []int32
		x    []float32
		out  int
		win2 bool
	}{
		{[]int32{5, 7, 3, 4, 2, 2, 2, 2, 0, 0, 6}, fill(70, -1, 1), 24, false},
		{[]int32{5, 7, 3, 6, 3, 2, 2, 1, 1, 0, 6}, fill(70, -1, 1), 36, false},
		{[]int32{5, 37, 3, 19, 2, 2, 2, 2, 0, 0, 6}, wide, 114, true},
	} {
		want := maxPoolRef(c.x, c.m)
		wantHalf := maxPoolRef(f16Rounded(c.x), c.m)
		if strings.Contains(k.Options, "-DWIN2") && !c.win2 {
			continue // max_pool2d_2x2 takes 2x2 windows of stride 2 only
		}
		for _, rv := range [][2]int{{8, 4}, {16, 4}, {32, 4}, {3, 4}, {16, 8}, {32, 8}, {16, 16}, {32, 16}, {8, 16}} {
			run := rv[0]
			if e.lim.VectorFits(rv[1]) != "" {
				continue // the device plans narrower vectors
			}
			global := []int{(int(c.m[3])+run-1)/run + 1, int(c.m[10]) + 1}
			defs := fmt.Sprintf("-DRUN=%d -DPV=%d", run, rv[1])
			got := f32s(e.launch(t, k, defs, global, nil, c.x, make([]float32, c.out), c.m)[1])
			assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "%s on %v", defs, c.m)
			hb := e.launch(t, k, defs+" -DHALF", global, nil, f16Bits(c.x), make([]uint16, c.out), c.m)[1]
			gotHalf := make([]float32, c.out)
			for i := range gotHalf {
				gotHalf[i] = tensor.F16ToFloat32(binary.LittleEndian.Uint16(hb[2*i:]))
			}
			assert.Equal(t, fmt.Sprint(wantHalf), fmt.Sprint(gotHalf), "%s -DHALF on %v", defs, c.m)
		}
	}
}

// maxPoolRef is max_pool2d's result over x for table m (H, W, OH, OW,
// KH, KW, strides, pads, rows): the maximum of each window's taps inside
// x, NaN where one is NaN.
func maxPoolRef(x []float32, m []int32) []float32 {
	H, W, OH, OW, KH, KW, SH, SW, PH, PW, rows := int(m[0]), int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(m[7]), int(m[8]), int(m[9]), int(m[10])
	out := make([]float32, rows*OW)
	for r := range rows {
		plane := x[(r/OH)*H*W:]
		for o := range OW {
			acc := float32(math.Inf(-1))
			for h := (r%OH)*SH - PH; h < (r%OH)*SH-PH+KH; h++ {
				for w := o*SW - PW; w < o*SW-PW+KW; w++ {
					if h >= 0 && h < H && w >= 0 && w < W {
						v := plane[h*W+w]
						if v > acc || v != v {
							acc = v
						}
						if acc != acc {
							break
						}
					}
				}
				if acc != acc {
					break
				}
			}
			out[r*OW+o] = acc
		}
	}
	return out
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
