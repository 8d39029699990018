package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

func init() {
	launchSpecs["nv12_to_rgb"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// Two planes of a 2x[4,6] image (luma 48, chroma 24), as u8, f32
		// and BGR; one plane of a 1x[4,6] image (36 values) as f16.
		y := make([]uint8, 48)
		uv := make([]uint8, 24)
		for i := range y {
			y[i] = uint8(16 + 4*i)
		}
		for i := range uv {
			uv[i] = uint8(60 + 7*i)
		}
		a := []any{uint64(48), uint64(4), uint64(6), uint64(24), uint64(12), uint64(0), uint64(6)}
		e.launch(t, k, "-DT=uchar -DU8", global1D(48), nil, append([]any{y, uv, make([]uint8, 144)}, a...)...)
		e.launch(t, k, "-DT=uchar -DU8 -DBGR", global1D(48), nil, append([]any{y, uv, make([]uint8, 144)}, a...)...)
		e.launch(t, k, "-DT=float", global1D(48), nil, append([]any{fill(48, 0, 255), fill(24, 0, 255), make([]float32, 144)}, a...)...)
		plane := f16Pattern(36, true)
		e.launch(t, k, "-DHALF", global1D(24), nil, plane, plane, make([]uint16, 72),
			uint64(24), uint64(4), uint64(6), uint64(36), uint64(36), uint64(24), uint64(6))
	}
}
