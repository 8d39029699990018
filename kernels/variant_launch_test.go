package kernels_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of the kernels whose variants the tables declare
// (kernels.Families): each runs every declared point of the algorithms
// it serves that fits the device (clEnv.lim), as a subtest named by the
// variant, with the variant's build options and the geometry its
// parameters give. TestCatalogueKernels fails when a declared variant
// that fits the device ran nowhere, and TestKernelsUnderOclgrind when a
// declared variant did not pass under oclgrind (which takes them all).

// ranVariants records the variants the launch specs ran (String form).
var ranVariants sync.Map

// forVariants runs fn for every declared variant of family fam's
// algorithm alg that fits the device's limits (e.lim: what the GPU
// device's planner would launch there; under oclgrind every declared
// variant), each as subtest v.String(), with v as the environment's
// current variant (launch checks it against the device again); the
// others are not run. full is set for the algorithm's first
// point that runs: a spec runs all its cases (f16, other windows) there
// and its base case on the others, so that each variant runs without
// building every program of the algorithm several times over.
func (e *clEnv) forVariants(t *testing.T, fam, alg string, fn func(t *testing.T, v kernels.Variant, full bool)) {
	t.Helper()
	f, ok := kernels.LookupFamily(fam)
	require.True(t, ok, "no family %s", fam)
	vs := f.AlgorithmVariants(alg, kernels.Limits{})
	require.NotEmpty(t, vs, "%s/%s declares no variant", fam, alg)
	full := true
	for _, v := range vs {
		if v.Fits(e.lim) != "" {
			continue // TestCatalogueKernels lists them
		}
		first := full
		full = false
		t.Run(v.String(), func(t *testing.T) {
			e.variant = &v
			defer func() { e.variant = nil }()
			fn(t, v, first)
			if !t.Failed() {
				ranVariants.Store(v.String(), true)
			}
		})
	}
}

// firstOf reports whether k is the first catalogue entry of its entry
// point: the variants of entries that differ only in their operation
// (eltwise_binary's ops, reduce's) run on the first; the others run the
// default point.
func firstOf(k kernels.Kernel) bool {
	for _, o := range kernels.All() {
		if o.Entry == k.Entry && o.File == k.File {
			return o.Name == k.Name
		}
	}
	return false
}

// ones is a work group of one item per dimension (the WG=1 policy), nil
// for the driver's choice.
func wgOnes(wg, dims int) []int {
	if wg != 1 {
		return nil
	}
	l := make([]int, dims)
	for i := range l {
		l[i] = 1
	}
	return l
}

// roundUp rounds each global size to a multiple of local (nil: unchanged).
func roundUp(global, local []int) []int {
	out := append([]int(nil), global...)
	for i := range out {
		if local != nil {
			out[i] = (out[i] + local[i] - 1) / local[i] * local[i]
		}
	}
	return out
}

func ceil(a, b int) int { return (a + b - 1) / b }

// group1D is the 1-D launch of n items in groups of wg (0: the driver's
// choice), at least one item past n.
func group1D(n, wg int) ([]int, []int) {
	if wg == 0 {
		return global1D(n + 1), nil
	}
	return []int{ceil(n+1, wg) * wg}, []int{wg}
}

// geometry returns the NDRange of a launch over n elements whose innermost
// axis has inner of them.
type geometry func(n, inner int) (global, local []int)

// runsGeometry is the geometry of a variant of the families of
// element-wise runs (eltwise, se, copy): runs of EPT in a 1-D range
// (flat) or along the innermost axis by rows (rows), in groups of WG, at
// least one item past the end on each axis.
func runsGeometry(v kernels.Variant) geometry {
	return func(n, inner int) ([]int, []int) {
		ept, wg := v.Get("EPT"), v.Get("WG")
		if v.Algorithm != "rows" {
			return group1D(ceil(n, ept), wg)
		}
		var local []int
		if wg > 0 {
			local = []int{wg, 1}
		}
		return roundUp([]int{ceil(inner, ept) + 1, n/inner + 1}, local), local
	}
}

// variantSpecs are the launch specs of the variant kernels, by entry.
var variantSpecs = map[string]func(t *testing.T, e *clEnv, k kernels.Kernel){
	"fused_gemm": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 2 batches of [5,3] . [3,11]: partial row and column blocks,
		// items past the range. Packed A shared by the batches, row
		// bias, dense residual sum and relu; then strided A with a batch
		// stride, beta * C and a broadcast residual [11] with hardswish;
		// both on f32 and on f16 tensors. The Winograd GEMMs are the
		// same kernel.
		run := func(t *testing.T, v kernels.Variant, full bool) {
			mr, nr := v.Get("MR"), v.Get("NV")*v.Get("VW")
			local := wgOnes(v.Get("WG"), 3)
			global := []int{ceil(5, mr) + 1, ceil(11, nr) + 1, 3}
			packed := ceil(5, mr) * 3 * mr
			m1 := []int32{5, 11, 3, 0, 0, 11, 11, 1, 0, 0, 1, 2, 0, 33, 55}
			m2 := []int32{5, 11, 3, 3, 1, 11, 11, 3, 11, 1, 1, 2, 15, 33, 55}
			pm1, pm2 := []int32{2, 0, 1, -1}, []int32{2, 0, 3, 3, 2, 5, 11, 0, 0, 1}
			pf := []float32{0, 0, 0, 0}
			e.launch(t, k, v.Defines()+" -DA_PACKED", global, local, fill(packed, -1, 1), fill(66, -1, 1),
				fill(5, -1, 1), fill(110, -1, 1), make([]float32, 110), m1, float32(1.5), float32(0), pm1, pf)
			if !full {
				return
			}
			e.launch(t, k, v.Defines(), global, local, fill(30, -1, 1), fill(66, -1, 1),
				fill(55, -1, 1), fill(11, -1, 1), make([]float32, 110), m2, float32(1), float32(0.5), pm2, pf)
			m1[7] = 2 // column bias with the packed A on f16
			// The f16 launches with the post-ops fixed at build time
			// (post_ops.clh's POST_N, POST_K0..: the GPU's own lowering).
			e.launch(t, k, v.Defines()+" -DA_PACKED -DHALF -DPOST_N=2 -DPOST_K0=0 -DPOST_K1=1", global, local, f16Pattern(packed, false), f16Pattern(66, false),
				f16Pattern(11, false), f16Pattern(110, false), make([]uint16, 110), m1, float32(1.5), float32(0), pm1, pf)
			e.launch(t, k, v.Defines()+" -DHALF -DPOST_N=2 -DPOST_K0=0 -DPOST_K1=3", global, local, f16Pattern(30, false), f16Pattern(66, false),
				f16Pattern(55, false), f16Pattern(11, false), make([]uint16, 110), m2, float32(1), float32(0.5), pm2, pf)
		}
		e.forVariants(t, "gemm", "direct", run)
		e.forVariants(t, "conv", "winograd_2x2_3x3", run)
	},
	"fused_gemm_tiled": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		if k.Name == "conv2d_implicit_gemm" {
			// x [2,3,7,9]: 3x3 pad 1 -> [2,5,7,9] (row bias, clip),
			// 3x3 stride 2 pad 1 -> [2,5,4,5] and 3x3 dilation 2 pad 1
			// -> [2,5,5,7]: M = 5, K = 27, N = OH*OW per image (the
			// batch).
			e.forVariants(t, "conv", "implicit_gemm", func(t *testing.T, v kernels.Variant, full bool) {
				for ci, c := range []struct {
					s, oh, ow, d int
				}{{1, 7, 9, 1}, {2, 4, 5, 1}, {1, 5, 7, 2}} {
					if ci > 0 && !full {
						break
					}
					n := c.oh * c.ow
					m := []int32{5, int32(n), 27, 27, 1, 0, int32(n), 1, 0, 0, 1, 2, 0, 189, int32(5 * n), 3, 7, 9, int32(c.ow), 1, 1, int32(c.d), int32(c.d)}
					local := kernels.TiledLocalSize(v)
					global := []int{ceil(n, v.Get("TS_N")) * local[0], ceil(5, v.Get("TS_M")) * local[1], 2}
					defs := fmt.Sprintf("%s -DSTR_H=%d -DSTR_W=%d", v.Defines(), c.s, c.s)
					if c.d != 1 {
						defs += " -DDIL_RT"
					}
					pm, pf := []int32{1, 2, 0}, []float32{-1, 1}
					e.launch(t, k, defs, global, local, fill(135, -1, 1), fill(378, -1, 1), fill(5, -1, 1), fill(1, 0, 1),
						make([]float32, 10*n), m, float32(1), float32(0), pm, pf)
					if !full {
						continue
					}
					e.launch(t, k, defs+" -DHALF", global, local, f16Pattern(135, false), f16Pattern(378, false), f16Pattern(5, false),
						f16Pattern(1, false), make([]uint16, 10*n), m, float32(1), float32(0), pm, pf)
				}
			})
			return
		}
		// 2 batches of [35,17] . [17,33] (partial tiles): a strided A
		// with a batch stride, beta * C and a broadcast residual with
		// hardswish; then a transposed A (column stride) with a column
		// bias, on f16.
		e.forVariants(t, "gemm", "tiled", func(t *testing.T, v kernels.Variant, full bool) {
			local := kernels.TiledLocalSize(v)
			global := []int{ceil(33, v.Get("TS_N")) * local[0], ceil(35, v.Get("TS_M")) * local[1], 2}
			m := []int32{35, 33, 17, 17, 1, 33, 33, 3, 33, 1, 1, 2, 595, 561, 1155}
			pm := []int32{2, 0, 3, 3, 2, 35, 33, 0, 0, 1}
			pf := []float32{0, 0, 0, 0}
			e.launch(t, k, v.Defines(), global, local, fill(1190, -1, 1), fill(1122, -1, 1), fill(1155, -1, 1),
				fill(33, -1, 1), make([]float32, 2310), m, float32(1), float32(0.5), pm, pf)
			if !full {
				return
			}
			mt := []int32{35, 33, 17, 1, 35, 33, 33, 2, 0, 0, 1, 2, 0, 561, 1155}
			e.launch(t, k, v.Defines()+" -DHALF", global, local, f16Pattern(595, false), f16Pattern(1122, false), f16Pattern(33, false),
				f16Pattern(33, false), make([]uint16, 2310), mt, float32(1), float32(0), []int32{1, 1, 0}, []float32{0, 0})
		})
	},
	"winograd_input_2x2_3x3": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,2,5,7], pad 1 -> 3 x 4 tiles: v [16][2][12] (rows
		// padded to 13, planes to 27); with dilation 2 (out [3,5]) 2 x
		// 4 tiles: v [16][2][8] (dense).
		m := []int32{1, 2, 5, 7, 3, 4, 1, 1, 1, 1, 27, 13}
		e.launch(t, k, "", []int{13, 3}, nil, fill(70, -1, 1), make([]float32, 432), m)
		e.launch(t, k, "-DHALF", []int{13, 3}, nil, f16Pattern(70, false), make([]uint16, 432), m)
		e.launch(t, k, "-DDIL_RT", []int{9, 3}, nil, fill(70, -1, 1), make([]float32, 256), []int32{1, 2, 5, 7, 2, 4, 1, 1, 2, 2, 16, 8})
	},
	"winograd_output_2x2_3x3": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// mt [16][3][12] (rows padded to 13, planes to 39) -> out
		// [1,3,5,7] (the last tiles cut), bias, dense residual sum and
		// clip; with dilation 2, mt [16][3][8] -> out [1,3,3,5].
		m := []int32{1, 3, 5, 7, 3, 4, 1, 1, 1, 39, 13}
		pm, pf := []int32{2, 0, 2, -1}, []float32{0, 0, -1, 1}
		e.launch(t, k, "", []int{13, 4}, nil, fill(624, -1, 1), fill(3, -1, 1), fill(105, -1, 1), make([]float32, 105), m, pm, pf)
		e.launch(t, k, "-DHALF", []int{13, 4}, nil, f16Pattern(624, false), f16Pattern(3, false), f16Pattern(105, false), make([]uint16, 105), m, pm, pf)
		e.launch(t, k, "-DDIL_RT", []int{9, 4}, nil, fill(384, -1, 1), fill(3, -1, 1), fill(45, -1, 1), make([]float32, 45),
			[]int32{1, 3, 3, 5, 2, 4, 1, 2, 2, 24, 8}, pm, pf)
	},
	"fused_conv2d_blocked": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// direct: launchConvWindows with 2 input channels, OC 5 in one
		// block of MR (weights packed [1][18][MR]).
		e.forVariants(t, "conv", "direct", func(t *testing.T, v kernels.Variant, full bool) {
			launchConvWindows(t, e, k, v, full, 2, v.Get("MR"), v.Get("NV")*v.Get("VW"), wgOnes(v.Get("WG"), 3), true)
		})
		pm, pf := []int32{2, 0, 2, -1}, []float32{0, 0, -1, 1}
		// grouped: x [1,37,3,5], 3x3, pad 1 -> [1,11,3,5]: two chunks of
		// input channels under CK 32 (the last partial), one under 64;
		// 11 output channels in fewer blocks of MR than OCG (weights
		// packed [ceil(11/MR)][333][MR]), items past each axis.
		e.forVariants(t, "conv", "grouped", func(t *testing.T, v kernels.Variant, full bool) {
			mr := v.Get("MR")
			wn := ceil(11, mr) * 333 * mr
			m := []int32{1, 37, 3, 5, 11, 3, 5, 1, 1, 1, 1, 1}
			global, local := []int{4, 2, 2}, []int{1, 1, 1}
			e.launch(t, k, v.Defines(), global, local, fill(555, -1, 1), fill(wn, -1, 1), fill(11, -1, 1), fill(165, -1, 1), make([]float32, 165), m, pm, pf)
			if full {
				e.launch(t, k, v.Defines()+" -DHALF", global, local, f16Pattern(555, false), f16Pattern(wn, false), f16Pattern(11, false),
					f16Pattern(165, false), make([]uint16, 165), m, pm, pf)
			}
		})
	},
	"fused_conv2d_bcast": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// launchConvWindows with 19 input channels, OC 5 in blocks of
		// OB*VW (weights packed [ceil(5/(OB*VW))][171][OB*VW]): two
		// chunks (the last partial) where TL > 1, tiles past the row's
		// end.
		e.forVariants(t, "conv", "broadcast", func(t *testing.T, v kernels.Variant, full bool) {
			launchConvWindows(t, e, k, v, full, 19, v.Get("OB")*v.Get("VW"), v.Get("NP")*v.Get("TL"), []int{1, 1, 1}, true)
		})
	},
	"fused_deconv2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// x [1,3,4,9], 2x2 kernel and stride -> [1,5,8,18], OC 5 in
		// blocks of MR (weights packed [blocks][3][2][MR][VW]). Bias,
		// dense residual sum and clip; f32 and f16.
		m := []int32{1, 3, 4, 9, 5, 8, 18, 1}
		pm, pf := []int32{2, 0, 2, -1}, []float32{0, 0, -1, 1}
		e.forVariants(t, "deconv", "direct", func(t *testing.T, v kernels.Variant, full bool) {
			vw, mr := v.Get("VW"), v.Get("MR")
			blocks := ceil(5, mr)
			wn := blocks * 3 * 2 * mr * vw
			local := wgOnes(v.Get("WG"), 3)
			global := []int{blocks + 1, 8*ceil(18, vw) + 1, 2}
			defs := v.Defines() + " -DSTR_H=2 -DSTR_W=2"
			e.launch(t, k, defs, global, local, fill(108, -1, 1), fill(wn, -1, 1), fill(5, -1, 1), fill(720, -1, 1), make([]float32, 720), m, pm, pf)
			if !full {
				return
			}
			e.launch(t, k, defs+" -DHALF -DPOST_N=2 -DPOST_K0=0 -DPOST_K1=2", global, local, f16Pattern(108, false), f16Pattern(wn, false), f16Pattern(5, false),
				f16Pattern(720, false), make([]uint16, 720), m, pm, pf)
		})
	},
	"fused_dwconv2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		dwCases(t, e, k, "direct", func(v kernels.Variant, oh, ow, planes int) ([]int, []int) {
			local := wgOnes(v.Get("WG"), 3)
			return []int{ceil(ow, v.Get("VW")) + 1, ceil(oh, v.Get("RB")) + 1, planes + 1}, local
		})
	},
	"fused_dwconv2d_local": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		dwCases(t, e, k, "local", func(v kernels.Variant, oh, ow, planes int) ([]int, []int) {
			tx, ty := v.Get("TX"), v.Get("TY")
			return []int{ceil(ow, tx) * tx, ceil(oh, ty) * ty, planes}, []int{tx, ty, 1}
		})
	},
	"resize_nearest": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,1,2,2] -> [2,1,4,3] (3-D range 3x4x2, rounded up to the
		// work group), the last H coordinate outside the crop.
		m := []int32{4, 2, 1, 4, 3, 4, 4, 2, 1, 1, 1, 1, 1, 21, 23, 24, 28, 0, 2, 3, 7,
			0, 1, 0, 0, 0, 1, -1, 0, 1, 1}
		e.forVariants(t, "resize", "gather", func(t *testing.T, v kernels.Variant, full bool) {
			var local []int
			if v.Get("WX") > 0 {
				local = []int{v.Get("WX"), v.Get("WY"), 1}
			}
			global := roundUp([]int{4, 4, 2}, local)
			e.launch(t, k, "", global, local, fill(8, -1, 1), make([]float32, 24), uint64(24), m, fill(10, 1, 1), float32(10))
			if full {
				e.launch(t, k, "-DHALF", global, local, f16Pattern(8, false), make([]uint16, 24), uint64(24), m, fill(10, 1, 1), float32(10))
				// f64 data (f64 tensors and the integers the device widens).
				e.launch(t, k, "-DDOUBLE", global, local, make([]float64, 8), make([]float64, 24), uint64(24), m, fill(10, 1, 1), float32(10))
			}
		})
	},
	"resize_linear2d": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 6 planes of [4,5] -> [7,9]: clamped edge taps (index pairs
		// within the input), rows ending in partial runs.
		u := []int32{4, 5, 7, 9, 6, 0}
		var w []float32
		for _, ax := range []struct{ in, out int }{{4, 7}, {5, 9}} {
			for c := 0; c < ax.out; c++ {
				i := c * ax.in / ax.out
				u = append(u, int32(i), int32(min(i+1, ax.in-1)))
				w = append(w, 0.75, 0.25)
			}
		}
		// up2: 2 planes of [3,13] -> [5,26], columns a 2x upsampling's
		// (x reads (x-1)/2 and (x+1)/2, clamped at the ends): vector runs
		// inside the row, the scalar loop at its ends.
		u2 := []int32{3, 13, 5, 26, 2, 1}
		var w2 []float32
		for y := 0; y < 5; y++ {
			u2 = append(u2, int32(y*3/5), int32(min(y*3/5+1, 2)))
			w2 = append(w2, 0.5, 0.5)
		}
		for x := 0; x < 26; x++ {
			u2 = append(u2, int32(max(x-1, 0)/2), int32(min((x+1)/2, 12)))
			w2 = append(w2, float32(1+x%2)/4, float32(3-x%2)/4)
		}
		e.forVariants(t, "resize", "linear2d", func(t *testing.T, v kernels.Variant, full bool) {
			var local []int
			if v.Get("WG") > 0 {
				local = []int{v.Get("WG"), 1, 1}
			}
			global := roundUp([]int{ceil(9, v.Get("VW")) + 1, 8, 7}, local)
			e.launch(t, k, v.Defines(), global, local, fill(120, -1, 1), make([]float32, 378), u, w)
			global = roundUp([]int{ceil(26, v.Get("VW")) + 1, 6, 3}, local)
			e.launch(t, k, v.Defines(), global, local, fill(78, -1, 1), make([]float32, 260), u2, w2)
			if full {
				e.launch(t, k, v.Defines()+" -DHALF", global, local, f16Pattern(78, false), make([]uint16, 260), u2, w2)
				global = roundUp([]int{ceil(9, v.Get("VW")) + 1, 8, 7}, local)
				e.launch(t, k, v.Defines()+" -DHALF", global, local, f16Pattern(120, false), make([]uint16, 378), u, w)
			}
		})
	},
	"resize_upsample": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4,5] -> [2,3,8,15]: factors 2 and 3, 6 planes.
		e.forVariants(t, "resize", "upsample", func(t *testing.T, v kernels.Variant, full bool) {
			var local []int
			if v.Get("WG") > 0 {
				local = []int{v.Get("WG"), 1, 1}
			}
			global := roundUp([]int{ceil(15, v.Get("VW")) + 1, 9, 7}, local)
			defs := v.Defines() + " -DSH=2 -DSW=3"
			e.launch(t, k, defs, global, local, fill(120, -1, 1), make([]float32, 720), []int32{4, 5, 6})
			if full {
				e.launch(t, k, defs+" -DHALF", global, local, f16Pattern(120, false), make([]uint16, 720), []int32{4, 5, 6})
			}
			// The splat paths: [6 planes,4,5] -> [6,4,20] (SW=4) and
			// [6,4,40] (SW=8), each output row ending in a partial run.
			for _, sw := range []int{4, 8} {
				g := roundUp([]int{ceil(5*sw, v.Get("VW")) + 1, 5, 7}, local)
				d := v.Defines() + fmt.Sprintf(" -DSH=1 -DSW=%d", sw)
				e.launch(t, k, d, g, local, fill(120, -1, 1), make([]float32, 120*sw), []int32{4, 5, 6})
				if full {
					e.launch(t, k, d+" -DHALF", g, local, f16Pattern(120, false), make([]uint16, 120*sw), []int32{4, 5, 6})
				}
			}
		})
	},
	"resize": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [1,1,2,2] -> [1,1,4,3]: 2 taps along H (the first coordinate
		// outside the crop), 4 (cubic) along W.
		m := []int32{4, 1, 1, 4, 3, 4, 4, 2, 1, 1, 1, 2, 4, 21, 22, 23, 31, 0, 1, 2, 10,
			0, 0, -1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1}
		w := []float32{1, 1, 0.5, 0.5, 0.75, 0.25, 0.25, 0.75, 1, 0,
			-0.1, 0.6, 0.6, -0.1, 0, 1, 0, 0, -0.05, 0.3, 0.8, -0.05}
		e.forVariants(t, "resize", "taps", func(t *testing.T, v kernels.Variant, full bool) {
			global, local := group1D(12, v.Get("WG"))
			e.launch(t, k, "", global, local, fill(4, -1, 1), make([]float32, 12), uint64(12), m, w, float32(10))
			if full { // f16 data; the weights stay f32.
				e.launch(t, k, "-DHALF", global, local, f16Pattern(4, false), make([]uint16, 12), uint64(12), m, w, float32(10))
				// f64 data computed in double; the weights stay f32.
				e.launch(t, k, "-DDOUBLE", global, local, []float64{-1, 0.5, 2, -3}, make([]float64, 12), uint64(12), m, w, float32(10))
			}
		})
	},
	"eltwise_binary": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// a [2,3] with b [3] broadcast over rows; a [3,5,7] with b
		// [5,1] (runs of EPT cross the rows).
		run := func(t *testing.T, extra string, geo geometry) {
			m := []int32{2, 2, 3, 3, 1, 0, 1}
			g, l := geo(6, 3)
			e.launch(t, k, extra, g, l, fill(6, 0.5, 3), fill(3, 0.5, 2), make([]float32, 6), uint64(6), m)
			switch k.Name {
			case "max":
				// f16 storage computed in float: 0x3c00 is 1, 0xc000 is -2.
				e.launch(t, k, extra+" -DT=float -DIS_FLOAT -DHALF_IN -DHALF_OUT", g, l, []uint16{0x3c00, 0xc000, 0, 0x3c00, 0x4000, 0xc000},
					[]uint16{0, 0x3c00, 0xc000}, make([]uint16, 6), uint64(6), m)
			case "mod":
				// Truncated (fmod=1) integer remainder, with a zero divisor.
				e.launch(t, k, extra+" -DT=long -DINT_FMOD", g, l, []int64{7, -7, 5, -5, 3, 0}, []int64{3, -2, 0}, make([]int64, 6), uint64(6), m)
			}
			m = []int32{3, 3, 5, 7, 35, 7, 1, 0, 1, 0}
			g, l = geo(105, 7)
			e.launch(t, k, extra, g, l, fill(105, 0.5, 3), fill(5, 0.5, 2), make([]float32, 105), uint64(105), m)
		}
		if !firstOf(k) {
			run(t, "", func(n, _ int) ([]int, []int) { return global1D(n + 1), nil })
			return
		}
		for _, alg := range []string{"flat", "rows"} {
			e.forVariants(t, "eltwise", alg, func(t *testing.T, v kernels.Variant, full bool) { run(t, v.Defines(), runsGeometry(v)) })
		}
	},
	"strided_copy": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// Transpose [2,3] -> [3,2]; a [2,3,4] block into the middle of
		// a [2,5,4] (Concat's copies: destination offset 4).
		run := func(t *testing.T, extra string, geo geometry) {
			m := []int32{2, 3, 2, 1, 3, 2, 1, 0, 0}
			g, l := geo(6, 2)
			e.launch(t, k, extra, g, l, []uint32{1, 2, 3, 4, 5, 6}, make([]uint32, 6), uint64(6), m)
			m = []int32{2, 2, 12, 12, 1, 20, 1, 0, 4}
			g, l = geo(24, 12)
			src := make([]uint32, 24)
			for i := range src {
				src[i] = uint32(i)
			}
			e.launch(t, k, extra, g, l, src, make([]uint32, 40), uint64(24), m)
		}
		for _, alg := range []string{"flat", "rows"} {
			e.forVariants(t, "copy", alg, func(t *testing.T, v kernels.Variant, full bool) { run(t, v.Defines(), runsGeometry(v)) })
		}
	},
	"reduce": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] reduced over axis 1.
		m := []int32{2, 2, 4, 12, 1, 1, 3, 4, 3}
		run := func(t *testing.T, global, local []int) {
			e.launch(t, k, "", global, local, fill(24, -1, 1), make([]float32, 8), uint64(8), m)
			e.launch(t, k, "-DHALF", global, local, f16Pattern(24, false), make([]uint16, 8), uint64(8), m)
			if fp64, err := e.dev.HasFP64(); err == nil && fp64 {
				d := make([]float64, 24)
				for i := range d {
					d[i] = float64(i%5) - 2
				}
				e.launch(t, k, "-DT=double", global, local, d, make([]float64, 8), uint64(8), m)
			}
			reduceInts(t, e, k, "", global, local, m)
		}
		if !firstOf(k) {
			run(t, global1D(8), nil)
			return
		}
		e.forVariants(t, "reduce", "serial", func(t *testing.T, v kernels.Variant, full bool) {
			global, local := group1D(8, v.Get("WG"))
			run(t, global, local)
		})
	},
	"reduce_wg": func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// [2,3,4] reduced over axis 1, and [2,150] over axis 1 (more
		// elements than items): one group per output.
		m1 := []int32{2, 2, 4, 12, 1, 1, 3, 4, 3}
		m2 := []int32{1, 2, 150, 1, 150, 1, 150}
		run := func(t *testing.T, extra string, wg int) {
			e.launch(t, k, extra, []int{8 * wg}, []int{wg}, fill(24, -1, 1), make([]float32, 8), uint64(8), m1)
			e.launch(t, k, extra+" -DHALF", []int{8 * wg}, []int{wg}, f16Pattern(24, false), make([]uint16, 8), uint64(8), m1)
			e.launch(t, k, extra, []int{2 * wg}, []int{wg}, fill(300, -1, 1), make([]float32, 2), uint64(2), m2)
			reduceInts(t, e, k, extra, []int{8 * wg}, []int{wg}, m1)
		}
		if !firstOf(k) {
			run(t, "", 64)
			return
		}
		e.forVariants(t, "reduce", "workgroup", func(t *testing.T, v kernels.Variant, full bool) { run(t, v.Defines(), v.Get("WG")) })
	},
}

// reduceInts launches reduction k (all but LogSumExp, which has no
// integer form) on integers, [2,3,4] over axis 1 (m): i16 and u64, with
// the type's extremes (products and sums wrap, MAX and MIN start from them).
func reduceInts(t *testing.T, e *clEnv, k kernels.Kernel, extra string, global, local []int, m []int32) {
	if k.Name == "reduce_log_sum_exp" || k.Name == "reduce_wg_log_sum_exp" {
		return
	}
	i16 := make([]int16, 24)
	u64 := make([]uint64, 24)
	for i := range i16 {
		i16[i] = int16(i*2731 - 30000)
		u64[i] = uint64(i) * 0x0fff_ffff_ffff_fff1
	}
	e.launch(t, k, extra+" -DIS_INT -DT=short", global, local, i16, make([]int16, 8), uint64(8), m)
	e.launch(t, k, extra+" -DIS_INT -DT=ulong", global, local, u64, make([]uint64, 8), uint64(8), m)
}

// dwCases runs the depthwise cases for every variant of algorithm alg:
// x [2,3,6,13], 5x5, pad 2 -> [2,3,6,13]; x [1,2,9,19], 3x3, stride 2,
// pad 1 -> [1,2,5,10]. Bias, dense residual sum and clip; f32 and f16.
func dwCases(t *testing.T, e *clEnv, k kernels.Kernel, alg string, geometry func(v kernels.Variant, oh, ow, planes int) ([]int, []int)) {
	pm, pf := []int32{2, 0, 2, -1}, []float32{0, 0, -1, 1}
	e.forVariants(t, "dwconv", alg, func(t *testing.T, v kernels.Variant, full bool) {
		for _, c := range []struct {
			extra         string
			n, c, h, w, p int32
			oh, ow, kk    int
		}{
			{"-DWIN_H=5 -DWIN_W=5", 2, 3, 6, 13, 2, 6, 13, 25}, {"-DSTR_H=2 -DSTR_W=2", 1, 2, 9, 19, 1, 5, 10, 9},
		} {
			if c.p == 1 && !full {
				break
			}
			m := []int32{c.n, c.c, c.h, c.w, int32(c.oh), int32(c.ow), c.p, c.p, 1}
			planes := int(c.n * c.c)
			out := planes * c.oh * c.ow
			global, local := geometry(v, c.oh, c.ow, planes)
			defs := v.Defines() + " " + c.extra
			e.launch(t, k, defs, global, local, fill(planes*int(c.h*c.w), -1, 1), fill(int(c.c)*c.kk, -1, 1), fill(int(c.c), -1, 1),
				fill(out, -1, 1), make([]float32, out), m, pm, pf)
			if !full {
				continue
			}
			// f16 with the post-ops fixed at build time (post_ops.clh's
			// POST_N, POST_K0..: the GPU's own lowering).
			e.launch(t, k, defs+" -DHALF -DPOST_N=2 -DPOST_K0=0 -DPOST_K1=2", global, local, f16Pattern(planes*int(c.h*c.w), false), f16Pattern(int(c.c)*c.kk, false),
				f16Pattern(int(c.c), false), f16Pattern(out, false), make([]uint16, out), m, pm, pf)
		}
	})
}

// launchConvWindows launches k, a direct convolution entry of the conv
// family (x, packed weights, bias, res, out, m, pm, pf), as variant v on
// three 3x3 windows of ch input channels and 5 output channels: x
// [1,ch,5,11], pad 1 -> [1,5,5,11]; x [1,ch,9,19], stride 2, pad 1 ->
// [1,5,5,10]; x [1,ch,9,13], dilations 2 x 3, pad 1 -> [1,5,7,9]. The
// weights are packed [ceil(5/rows)][ch*9][rows] (two blocks where rows is
// 4: broadcast with one vector of 4), an item takes tile pixels of a row
// (one more item past each axis); bias, dense residual sum and clip; the
// strided and dilated windows and f16 only when full. pixelsFirst: the
// kernel takes the pixels along the first dimension and the blocks along
// the second (broadcast).
func launchConvWindows(t *testing.T, e *clEnv, k kernels.Kernel, v kernels.Variant, full bool, ch int32, rows, tile int, local []int, pixelsFirst bool) {
	pm, pf := []int32{2, 0, 2, -1}, []float32{0, 0, -1, 1}
	blocks := ceil(5, rows)
	wn := blocks * int(ch) * 9 * rows
	for _, c := range []struct {
		extra   string
		h, w    int32
		oh, ow  int
		dh, dw  int32
		strided bool
	}{{"", 5, 11, 5, 11, 1, 1, false}, {"-DSTR_H=2 -DSTR_W=2", 9, 19, 5, 10, 1, 1, true}, {"-DDIL_RT", 9, 13, 7, 9, 2, 3, true}} {
		if c.strided && !full {
			break
		}
		m := []int32{1, ch, c.h, c.w, 5, int32(c.oh), int32(c.ow), 1, 1, 1, c.dh, c.dw}
		in, out := int(ch*c.h*c.w), 5*c.oh*c.ow
		global := []int{blocks + 1, c.oh*ceil(c.ow, tile) + 1, 2}
		if pixelsFirst {
			global[0], global[1] = global[1], global[0]
		}
		defs := v.Defines() + " " + c.extra
		e.launch(t, k, defs, global, local, fill(in, -1, 1), fill(wn, -1, 1), fill(5, -1, 1), fill(out, -1, 1), make([]float32, out), m, pm, pf)
		if !full {
			continue
		}
		e.launch(t, k, defs+" -DHALF", global, local, f16Pattern(in, false), f16Pattern(wn, false), f16Pattern(5, false),
			f16Pattern(out, false), make([]uint16, out), m, pm, pf)
	}
}
