package kernels_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// quantSpecs are the launch specs of the quantization kernels (quant*.cl),
// looked up after launchSpecs.
var quantSpecs = map[string]func(t *testing.T, e *clEnv, k kernels.Kernel){
	"quantize_linear": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [2,3,5]: per tensor (a NaN, ties, saturation), per axis 1 to
		// i8, blocked (axis 2, block 2: 3 blocks) to u4 from f16, i32 to i16.
		x := fill(30, -300, 300)
		x[1], x[2], x[3] = float32(math.NaN()), 2.5, -3.5
		out := e.launch(t, k, "-DHAS_ZP", global1D(30), nil, x, []float32{1}, []byte{3}, make([]byte, 30), uint64(30), []int32{0, 1, 1, 1, 1})
		assert.Equal(t, []byte{0, 3, 5, 0}, out[3][:4], "saturated, NaN to the zero point, 2.5+3 -> 5, -3.5+3 -> -1 -> 0")
		e.launch(t, k, "-DQT=char -DQMIN=-128 -DQMAX=127 -DHAS_ZP", global1D(30), nil, x, []float32{1, 2, 4}, []byte{0, 1, 0xff},
			make([]byte, 30), uint64(30), []int32{1, 5, 3, 1, 3})
		e.launch(t, k, "-DQT=uchar -DQMIN=0 -DQMAX=15 -DX_HALF -DS_HALF", global1D(30), nil, f16Pattern(30, false), f16Pattern(18, true),
			make([]byte, 30), uint64(30), []int32{2, 1, 5, 2, 3})
		e.launch(t, k, "-DQT=short -DQMIN=-32768 -DQMAX=32767 -DX_INT -DS_BF16 -DDYNAMIC", global1D(30), nil, make([]int32, 30), []uint16{0x3f80},
			make([]uint16, 30), uint64(30), []int32{0, 1, 1, 1, 1})
	},
	"dequantize_linear": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		out := e.launch(t, k, "-DHAS_ZP", global1D(6), nil, []byte{0, 1, 128, 255, 7, 9}, []float32{0.5, 2}, []byte{128, 0},
			make([]float32, 6), uint64(6), []int32{1, 3, 2, 1, 2})
		assert.Equal(t, float32(-64), math.Float32frombits(uint32(out[3][0])|uint32(out[3][1])<<8|uint32(out[3][2])<<16|uint32(out[3][3])<<24))
		e.launch(t, k, "-DQT=short -DQMIN=-32768 -DQMAX=32767 -DS_HALF", global1D(6), nil, []uint16{1, 2, 3, 4, 5, 6}, f16Pattern(6, true),
			make([]uint16, 6), uint64(6), []int32{2, 1, 6, 1, 6})
		e.launch(t, k, "-DQT=int -DQMIN=0 -DQMAX=0 -DS_BF16", global1D(6), nil, []int32{1, -2, 3, -4, 5, 1 << 30}, []uint16{0x3f00},
			make([]uint16, 6), uint64(6), []int32{0, 1, 1, 1, 1})
	},
	"quant_minmax": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 37 elements folded by 5 items (the range rounded up to 16).
		out := e.launch(t, k, "", global1D(5), nil, fill(37, -2, 3), make([]float32, 10), uint64(37), uint64(5))
		assert.Len(t, out[1], 40)
	},
	"quant_dynamic_params": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.launch(t, k, "", global1D(1), nil, []float32{-1, 2, -0.5, 1}, make([]float32, 1), make([]byte, 1), uint64(2))
		e.launch(t, k, "", global1D(1), nil, []float32{0, 0}, make([]float32, 1), make([]byte, 1), uint64(1))
	},
	"conv_integer": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,5] u8, w [4,1,3,3] i8, groups 2, stride 2, pad 1 ->
		// [1,4,3,3]; per-channel weight zero points; then requantized
		// with an i32 bias and per-channel scales.
		m := []int32{1, 2, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0, 1, 0}
		x, w := bytesPattern(50), bytesPattern(36)
		e.launch(t, k, "", global1D(36), nil, x, w, []byte{7}, []byte{1, 2, 3, 0xff}, make([]int32, 36), uint64(36), m)
		mq := []int32{1, 2, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1, 1}
		e.launch(t, k, "-DREQUANT -DXT=char -DYT=char -DQMIN=-128 -DQMAX=127", global1D(36), nil, x, w, []byte{0xfe}, []byte{1, 2, 3, 0xff},
			[]int32{10, -20, 30, 1 << 20}, []float32{0.5}, []float32{0.1, 0.2, 0.3, 0.4}, []float32{0.25}, []byte{3}, make([]byte, 36), uint64(36), mq)
	},
	"matmul_integer": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3,4] u8 (per-row zero points) . b [4,5] i8 (per-column) ->
		// [2,3,5]; then requantized with per-row and per-column scales.
		m := []int32{3, 5, 4, 1, 2, 1, 0, 1, 1, 0, 0}
		a, b := bytesPattern(24), bytesPattern(20)
		e.launch(t, k, "", global1D(30), nil, a, b, []byte{1, 2, 3}, []byte{1, 2, 3, 4, 5}, make([]int32, 30), uint64(30), m)
		mq := []int32{3, 5, 4, 1, 2, 1, 0, 0, 0, 1, 1}
		e.launch(t, k, "-DREQUANT -DAT=char -DBT=uchar", global1D(30), nil, a, b, []byte{0xff}, []byte{9}, []float32{0.5, 0.25, 1}, fill(5, 0.1, 0.2),
			[]float32{0.3}, []byte{128}, make([]byte, 30), uint64(30), mq)
	},
}

// bytesPattern returns n bytes that cover the range of u8 and i8.
func bytesPattern(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i*73 + 11)
	}
	return out
}
