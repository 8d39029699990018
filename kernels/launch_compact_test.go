package kernels_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// i32s decodes int32 values a launch read back.
func i32sOf(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// The launch specs of compact_*.cl (launchSpecs).
func init() {
	launchSpecs["scan_blocks"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 1000 flags: 4 blocks of 64*4, or 1 of 256*4 (a partial one).
		flags := make([]int32, 1000)
		for i := range flags {
			flags[i] = int32(i % 3 % 2)
		}
		e.forVariants(t, "scan", "blocks", func(t *testing.T, v kernels.Variant, full bool) {
			wg := v.Get("WG")
			nb := (1000 + 4*wg - 1) / (4 * wg)
			out := e.launch(t, k, v.Defines(), []int{nb * wg}, []int{wg}, flags, make([]int32, 1000), make([]int32, nb), uint64(1000))
			offs := i32sOf(out[1])
			assert.Equal(t, int32(0), offs[0])
			assert.Equal(t, flags[0]+flags[1]+flags[2], offs[3], "within a block, the offsets are the exclusive sums")
		})
	}
	launchSpecs["scan_add"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(600), nil, make([]int32, 600), []int32{0, 100, 200}, uint64(600))
	}
	launchSpecs["nonzero_flags"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(20), nil, fill(20, -1, 1), make([]int32, 20), uint64(20))
		e.launch(t, k, "-DT=ushort -DMASK=0x7fff", global1D(20), nil, f16Pattern(20, false), make([]int32, 20), uint64(20))
		e.launch(t, k, "-DT=long", global1D(5), nil, []int64{0, 3, 0, -1, 9}, make([]int32, 5), uint64(5))
	}
	launchSpecs["nonzero_scatter"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2, 3] with 3 kept elements: coordinates [2, 3].
		e.launch(t, k, "", global1D(6), nil, []int32{1, 0, 1, 0, 0, 1}, []int32{0, 1, 1, 2, 2, 2}, make([]int64, 6),
			uint64(6), []int32{2, 2, 3, 3, 1}, uint64(3))
	}
	launchSpecs["compress_flags"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(7), nil, []byte{1, 0, 1, 1, 0}, make([]int32, 7), uint64(7), uint64(5))
	}
	launchSpecs["compress_scatter"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2, 4, 3] keeping slices 1 and 3 of axis 1.
		e.launch(t, k, "-DT=uint", global1D(24), nil, make([]uint32, 24), []int32{0, 1, 0, 1}, []int32{0, 0, 1, 1},
			make([]uint32, 12), uint64(24), uint64(4), uint64(3), uint64(2))
	}
	m := []int32{2, 5, 3} // x [2, 5, 3]: 5 items along axis 1, P = 8
	x := []int32{1, 2, 1, 0, 0, 0, 1, 2, 1, 3, 3, 3, 0, 0, 0, 1, 1, 1, 2, 2, 2, 1, 1, 1, 3, 3, 3, 2, 2, 2}
	launchSpecs["unique_init"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(8), nil, make([]int32, 8), uint64(8))
	}
	launchSpecs["unique_sort_step"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		order := []int32{0, 1, 2, 3, 4, 5, 6, 7}
		for kk := uint64(2); kk <= 8; kk *= 2 {
			for j := kk / 2; j > 0; j /= 2 {
				out := e.launch(t, k, "-DT=int", global1D(4), nil, x, order, uint64(4), m, j, kk)
				order = i32sOf(out[1])
			}
		}
		assert.Equal(t, []int32{1, 4, 0, 2, 3}, order[:5], "slices sorted, ties by index, padding last")
		e.launch(t, k, "-DT=float -DIS_FLOAT", global1D(4), nil, fill(30, -1, 1), order, uint64(4), m, uint64(2), uint64(8))
	}
	launchSpecs["unique_flags"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "-DT=int", global1D(5), nil, x, []int32{1, 0, 2, 4, 3, 5, 6, 7}, make([]int32, 5), uint64(5), m)
		// f16 and bf16 storage compared by value (NaNs equal).
		h := f16Pattern(30, false)
		h[4] = 0x7e00
		e.launch(t, k, "-DT=ushort -DKEY_HALF -DIS_FLOAT", global1D(5), nil, h, []int32{1, 0, 2, 4, 3, 5, 6, 7}, make([]int32, 5), uint64(5), m)
		e.launch(t, k, "-DT=ushort -DKEY_BF16 -DIS_FLOAT", global1D(5), nil, h, []int32{1, 0, 2, 4, 3, 5, 6, 7}, make([]int32, 5), uint64(5), m)
	}
	launchSpecs["unique_groups"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(5), nil, []int32{1, 0, 2, 4, 3}, []int32{1, 1, 0, 1, 1}, []int32{0, 1, 2, 2, 3},
			make([]int32, 4), make([]int32, 4), make([]int64, 5), make([]int32, 5), uint64(5))
	}
	launchSpecs["unique_outputs"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, sorted := range []int32{1, 0} {
			e.launch(t, k, "-DT=int", global1D(24), nil, x, []int32{1, 0, 4, 3}, []int32{0, 1, 3, 4}, []int32{0, 1, 2, 2, 3},
				make([]int32, 24), make([]int64, 4), make([]int64, 4), uint64(24), m, uint64(4), sorted)
		}
	}
	launchSpecs["unique_remap"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(5), nil, []int64{1, 0, 1, 3, 2}, []int32{1, 0, 4, 3}, []int32{0, 1, 2, 2, 3}, uint64(5))
	}
}
