package kernels_test

import (
	"fmt"
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of signal_fft.cl (launchSpecs).
func init() {
	launchSpecs["fft_load"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 6 real signals [2, 5, 3, 1] along axis 1 padded to 8, and 4
		// windowed complex frames of a [2, 20, 2] signal with the chirp
		// (conjugated), f32 and f16.
		e.launch(t, k, "", global1D(48), nil, fill(30, -1, 1), []float32{0}, []float32{0}, make([]float32, 96),
			uint64(48), []int32{8, 3, 15, 1, 3, 5, 1, 0, 0, 0})
		e.launch(t, k, "-DHALF", global1D(48), nil, f16Pattern(30, false), []float32{0}, []float32{0}, make([]float32, 96),
			uint64(48), []int32{8, 3, 15, 1, 3, 5, 1, 0, 0, 0})
		e.launch(t, k, "", global1D(24), nil, fill(80, -1, 1), fill(6, 0, 1), fill(12, -1, 1), make([]float32, 48),
			uint64(24), []int32{6, 2, 20, 5, 1, 6, 2, 1, 1, 1})
	}
	launchSpecs["fft_stage"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 3 signals of 24 = powers of two (by RMAX) and 3, then of 35 (5 and
		// the generic radix 7), pass by pass.
		e.forVariants(t, "fft", "stockham", func(t *testing.T, v kernels.Variant, full bool) {
			var rs []int
			for n := 8; n > 1; {
				r := min(v.Get("RMAX"), n)
				rs, n = append(rs, r), n/r
			}
			lengths := [][]int{append(rs, 3)}
			if full {
				lengths = append(lengths, []int{5, 7})
			}
			for _, radices := range lengths {
				L := 1
				for _, r := range radices {
					L *= r
				}
				tw := make([]float32, 2*L)
				ns := 1
				for _, r := range radices {
					radix := r
					if r == 7 {
						radix = 0
					}
					n := 3 * L / r
					e.launch(t, k, fmt.Sprintf("-DRADIX=%d", radix), global1D(n), nil, fill(6*L, -1, 1), make([]float32, 6*L), tw,
						uint64(n), uint64(L), uint64(ns), int32(r))
					ns *= r
				}
			}
		})
	}
	launchSpecs["fft_pointmul"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(24), nil, fill(48, -1, 1), fill(16, -1, 1), uint64(24), uint64(8))
	}
	launchSpecs["fft_store"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 6 signals of 8 into a one-sided [2, 5, 3, 2] (axis 1), plain and
		// Bluestein with the inverse, f32 and f16.
		for _, bl := range []int32{0, 1} {
			e.launch(t, k, "", global1D(30), nil, fill(96, -1, 1), fill(10, -1, 1), make([]float32, 60),
				uint64(30), []int32{8, 5, 3, 15, 1, 3, bl, bl}, float32(0.2))
		}
		e.launch(t, k, "-DHALF", global1D(30), nil, fill(96, -1, 1), []float32{0}, make([]uint16, 60),
			uint64(30), []int32{8, 5, 3, 15, 1, 3, 0, 0}, float32(1))
	}
}
