package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of conv_col2im.cl (launchSpecs).
func init() {
	launchSpecs["col2im"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// m per axis (d, h, w): image, block, positions, stride, dilation,
		// begin pad. 2-D: x [2, 12, 12] into y [2, 2, 6, 5] (block 3x2,
		// strides 2x1, dilations 1x2, pads 1,0 | 0,1); 3-D: x [1, 16, 12]
		// into y [1, 2, 3, 5, 4] (block 2x2x2, strides 1x2x1); f16 2-D.
		m2 := []int32{1, 1, 1, 1, 1, 0, 6, 3, 3, 2, 1, 1, 5, 2, 4, 1, 2, 0}
		m3 := []int32{3, 2, 2, 1, 1, 0, 5, 2, 2, 2, 1, 0, 4, 2, 3, 1, 1, 0}
		e.launch(t, k, "", global1D(120), nil, fill(288, -1, 1), make([]float32, 120), uint64(120), m2)
		e.launch(t, k, "", global1D(120), nil, fill(192, -1, 1), make([]float32, 120), uint64(120), m3)
		e.launch(t, k, "-DHALF", global1D(120), nil, f16Pattern(288, false), make([]uint16, 120), uint64(120), m2)
		// i32 summed in wrapping 64 bits, booleans, f64.
		e.launch(t, k, "-DT=int -DACC=ulong", global1D(120), nil, make([]int32, 288), make([]int32, 120), uint64(120), m2)
		e.launch(t, k, "-DT=uchar -DACC=ulong -DIS_BOOL", global1D(120), nil, make([]byte, 288), make([]byte, 120), uint64(120), m2)
		if hasFP64(e) {
			e.launch(t, k, "-DT=double -DACC=double", global1D(120), nil, make([]float64, 192), make([]float64, 120), uint64(120), m3)
		}
	}
}
