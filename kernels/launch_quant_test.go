package kernels_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/kernels"
)

// quantSpecs are the launch specs of the quantization kernels (quant*.cl),
// added to launchSpecs.
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
		// -DQV=4, 8, 16: that many elements per item (30: a short last
		// item), against the one-per-item form's bytes; to i8 with a zero
		// point, and a zero scale under -DDYNAMIC.
		x[5], x[6], x[7], x[8], x[9] = 1e30, -1e30, 127.5, 1.25, -0.75 // ties at scale 0.5: 2.5, -1.5
		for _, d := range []string{"-DHAS_ZP", "-DQT=char -DQMIN=-128 -DQMAX=127 -DHAS_ZP"} {
			zp := []byte{3}
			if d != "-DHAS_ZP" {
				zp = []byte{0xfd}
			}
			want := e.launch(t, k, d, global1D(30), nil, x, []float32{0.5}, zp, make([]byte, 30), uint64(30), []int32{0, 1, 1, 1, 1})
			for _, qv := range []int{4, 8, 16} {
				got := e.launch(t, k, fmt.Sprintf("%s -DQV=%d", d, qv), global1D((30+qv-1)/qv), nil, x, []float32{0.5}, zp, make([]byte, 30), uint64(30), []int32{0, 1, 1, 1, 1})
				assert.Equal(t, want[3], got[3], "-DQV=%d (%s) against one element per item", qv, d)
			}
		}
		out = e.launch(t, k, "-DHAS_ZP -DDYNAMIC -DQV=8", global1D(4), nil, x, []float32{0}, []byte{7}, make([]byte, 30), uint64(30), []int32{0, 1, 1, 1, 1})
		assert.Equal(t, make([]byte, 30), out[3], "a zero scale quantizes to 0")
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

// qconvRef is the exact integer convolution of a quant launch spec: x u8
// [1, C, H, W] minus xz, w i8 [OC, C, K, K] minus its per-channel zero
// points, stride s, pad p; and its requantization to u8 with mult, bias
// 0, ys and yz 5.
type qconvRef struct {
	C, H, W, OC, K, S, P, OH, OW int
	x                            []byte
	w                            []int8
	xz                           int
	wz                           []int
}

func newQconvRef(C, H, W, OC, K, S, P int) *qconvRef {
	r := &qconvRef{C: C, H: H, W: W, OC: OC, K: K, S: S, P: P}
	r.OH, r.OW = (H+2*P-K)/S+1, (W+2*P-K)/S+1
	r.x = bytesPattern(C * H * W)
	r.w = make([]int8, OC*C*K*K)
	for i := range r.w {
		r.w[i] = int8(i*37 + 5)
	}
	r.xz = 9
	for o := 0; o < OC; o++ {
		r.wz = append(r.wz, o%5-2)
	}
	return r
}

// acc is output (o, oh, ow)'s exact sum.
func (r *qconvRef) acc(o, oh, ow int) int32 {
	var s int32
	for c := 0; c < r.C; c++ {
		for kh := 0; kh < r.K; kh++ {
			for kw := 0; kw < r.K; kw++ {
				ih, iw := oh*r.S-r.P+kh, ow*r.S-r.P+kw
				if ih < 0 || ih >= r.H || iw < 0 || iw >= r.W {
					continue
				}
				s += int32(int(r.x[(c*r.H+ih)*r.W+iw])-r.xz) * int32(int(r.w[((o*r.C+c)*r.K+kh)*r.K+kw])-r.wz[o])
			}
		}
	}
	return s
}

// want is the u8 output of the spec's epilogue (x_scale 0.5, w_scale
// 0.25, no bias, y_scale 3, y zero point 5).
func (r *qconvRef) want() []byte {
	out := make([]byte, r.OC*r.OH*r.OW)
	for o := 0; o < r.OC; o++ {
		for oh := 0; oh < r.OH; oh++ {
			for ow := 0; ow < r.OW; ow++ {
				v := float32(r.acc(o, oh, ow))*float32(0.5*0.25) + 0
				q := math.RoundToEven(float64(v / 3))
				out[(o*r.OH+oh)*r.OW+ow] = byte(min(max(q+5, 0), 255))
			}
		}
	}
	return out
}

// packed returns the weights minus their zero points in qconv2d_blocked's
// f32 layout [ceil(OC/MR)][C][K][K][MR].
func (r *qconvRef) packed(mr int) []float32 {
	kk := r.C * r.K * r.K
	out := make([]float32, (r.OC+mr-1)/mr*kk*mr)
	for o := 0; o < r.OC; o++ {
		for i := 0; i < kk; i++ {
			out[((o/mr)*kk+i)*mr+o%mr] = float32(int(r.w[o*kk+i]) - r.wz[o])
		}
	}
	return out
}

// packed4 returns the raw weights packed four channels to a uint,
// [ceil(OC/MR)][ceil(C/4)][K][K][MR], and the (zero point, sum) pairs.
func (r *qconvRef) packed4(mr int) ([]uint32, []int32) {
	c4, kk := (r.C+3)/4, r.K*r.K
	out := make([]uint32, (r.OC+mr-1)/mr*c4*kk*mr)
	wq := make([]int32, 2*r.OC)
	for o := 0; o < r.OC; o++ {
		wq[2*o] = int32(r.wz[o])
		for c := 0; c < r.C; c++ {
			for k := 0; k < kk; k++ {
				q := r.w[(o*r.C+c)*kk+k]
				wq[2*o+1] += int32(q)
				out[(((o/mr)*c4+c/4)*kk+k)*mr+o%mr] |= uint32(uint8(q)) << (8 * (c % 4))
			}
		}
	}
	return out, wq
}

// qconvSpec launches qconv2d_blocked under variant v (and the build
// options extra) on r (stride S) and compares with r's exact result.
func qconvSpec(t *testing.T, e *clEnv, k kernels.Kernel, v kernels.Variant, extra string, r *qconvRef) {
	mr, vw := v.Get("MR"), v.Get("VW")
	defs := v.Defines() + extra + fmt.Sprintf(" -DQUANT -DWIN_H=%d -DWIN_W=%d -DSTR_H=%d -DSTR_W=%d", r.K, r.K, r.S, r.S)
	m := []int32{1, int32(r.C), int32(r.H), int32(r.W), int32(r.OC), int32(r.OH), int32(r.OW), int32(r.P), int32(r.P), 0, 0, int32(r.C * r.K * r.K), 1, 1}
	local := wgOnes(v.Get("WG"), 3)
	global := roundUp([]int{ceil(r.OC, mr), r.OH * ceil(r.OW, vw), 1}, local)
	tail := []any{[]float32{0.5}, []float32{0.25}, []float32{0}, []float32{0}, []float32{3}, []byte{5}, make([]byte, r.OC*r.OH*r.OW),
		m, []int32{0, 0}, []float32{0}}
	var out [][]byte
	if v.Algorithm == "dot4" {
		w, wq := r.packed4(mr)
		args := append([]any{r.x, w, []byte{byte(r.xz)}, wq}, tail...)
		out = e.launch(t, k, defs+" -DDOT4=us", global, local, args...)
	} else {
		var x any = r.x
		if strings.Contains(extra, "-DXQ") {
			// f32 data that quantizes (scale 0.5, zero point xz)
			// back to r.x.
			f := make([]float32, len(r.x))
			for i, q := range r.x {
				f[i] = float32(int(q)-r.xz) * 0.5
			}
			x = f
		}
		w := any(r.packed(mr))
		if v.Algorithm == "int" {
			p := r.packed(mr)
			wi := make([]int32, len(p))
			for i, f := range p {
				wi[i] = int32(f)
			}
			w = wi
		}
		args := append([]any{x, w, []byte{byte(r.xz)}}, tail...)
		out = e.launch(t, k, defs, global, local, args...)
	}
	assert.Equal(t, r.want(), out[len(out)-4], "%s against the exact integer convolution", v)
}

func init() {
	quantSpecs["qconv2d_blocked"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, alg := range []string{"fma", "int", "dot4"} {
			e.forVariants(t, "qconv", alg, func(t *testing.T, v kernels.Variant, full bool) {
				// 3x3 pad 1 over 6 channels (not a multiple of 4), 10
				// output channels; then stride 2 (full points only).
				qconvSpec(t, e, k, v, "", newQconvRef(6, 7, 9, 10, 3, 1, 1))
				if full {
					qconvSpec(t, e, k, v, "", newQconvRef(5, 9, 11, 3, 3, 2, 1))
				}
				if alg == "fma" {
					// All channels in one run (the planner's usual
					// form); runs of 4 channels (two, the last short).
					qconvSpec(t, e, k, v, " -DONE_RUN", newQconvRef(6, 7, 9, 10, 3, 1, 1))
					if full {
						qconvSpec(t, e, k, v, " -DCHUNK=4", newQconvRef(6, 7, 9, 10, 3, 1, 1))
						// f32 data quantized on load, stride 2.
						qconvSpec(t, e, k, v, " -DONE_RUN -DXQ -DXT=float -DZT=uchar", newQconvRef(5, 9, 11, 3, 3, 2, 1))
					}
				}
			})
		}
	}
	quantSpecs["qdwconv2d"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		e.forVariants(t, "qdwconv", "direct", func(t *testing.T, v kernels.Variant, full bool) {
			// 3 planes 7x9, 3x3 pad 1, f32 out with a relu.
			vw, rb := v.Get("VW"), v.Get("RB")
			local := wgOnes(v.Get("WG"), 3)
			global := roundUp([]int{ceil(9, vw), ceil(7, rb), 3}, local)
			m := []int32{1, 3, 7, 9, 3, 7, 9, 1, 1, 1, 1}
			e.launch(t, k, v.Defines(), global, local, bytesPattern(189), fill(27, -50, 50), []byte{100},
				[]float32{0.1}, []float32{0.2, 0.3, 0.4}, []float32{1, 2, 3}, []float32{0}, make([]float32, 189), m, []int32{1, 1, 0}, []float32{0, 0})
			if full { // f32 data quantized to i8 on load
				e.launch(t, k, v.Defines()+" -DXQ -DXT=float -DZT=char -DXQMIN=-128 -DXQMAX=127", global, local, fill(189, -20, 20), fill(27, -50, 50), []byte{0xfd},
					[]float32{0.1}, []float32{0.2, 0.3, 0.4}, []float32{1, 2, 3}, []float32{0}, make([]float32, 189), m, []int32{1, 1, 0}, []float32{0, 0})
			}
		})
	}
	quantSpecs["qfc_blocked"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		for _, alg := range []string{"fma", "int"} {
			e.forVariants(t, "qgemm", alg, func(t *testing.T, v kernels.Variant, _ bool) {
				// a [3, 40] u8 . w [40, 5] (padded to VW columns),
				// requantized to i8 with a sum (dense residual).
				vw := v.Get("VW")
				np := ceil(5, vw) * vw
				local := wgOnes(v.Get("WG"), 2)
				global := roundUp([]int{ceil(5, vw), 3}, local)
				var w any = fill(40*np, -100, 100)
				if alg == "int" {
					w = make([]int32, 40*np)
				}
				e.launch(t, k, v.Defines()+" -DQUANT -DYT=char -DQMIN=-128 -DQMAX=127", global, local, bytesPattern(120), w, []byte{7},
					[]float32{0.1}, []float32{0.2}, []float32{0}, fill(15, -1, 1), []float32{0.5}, []byte{0xfe}, make([]byte, 15),
					[]int32{3, 5, 40, 0, 0}, []int32{1, 0, -1}, []float32{0, 0})
			})
		}
	}
	conv := quantSpecs["conv_integer"]
	quantSpecs["conv_integer"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		conv(t, e, k)
		// FUSED (graph.OpQuantizedConv's generic form): dilation 2,
		// groups 2, f32 bias, a clip, requantized to u8.
		m := []int32{1, 2, 5, 5, 4, 1, 1, 3, 3, 1, 1, 0, 0, 2, 2, 2, 1, 1, 1}
		e.launch(t, k, "-DFUSED -DQUANT", global1D(4), nil, bytesPattern(50), bytesPattern(36), []byte{3}, []byte{1, 2, 3, 4},
			[]float32{1, 2, 3, 4}, []float32{0.5}, []float32{0.1, 0.2, 0.3, 0.4}, []float32{0}, []float32{2}, []byte{9},
			make([]byte, 4), uint64(4), m, []int32{1, 2, 0}, []float32{-1, 100})
	}
	for entry, spec := range quantSpecs {
		launchSpecs[entry] = spec
	}
}
