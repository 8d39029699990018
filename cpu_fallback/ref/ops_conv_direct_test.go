package ref

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// refPostOp applies one activation post-op in float64, written from the
// op definitions independently of compileRowOp.
func refPostOp(p graph.PostOp, v float64) float64 {
	a, b := float64(p.Alpha), float64(p.Beta)
	switch p.Kind {
	case graph.PostRelu:
		return math.Max(v, 0)
	case graph.PostClip:
		return math.Min(math.Max(v, a), b)
	case graph.PostHardSwish:
		return v * math.Max(0, math.Min(1, v/6+0.5))
	case graph.PostHardSigmoid:
		return math.Max(0, math.Min(1, a*v+b))
	case graph.PostSigmoid:
		return 1 / (1 + math.Exp(-v))
	case graph.PostSwish:
		return v / (1 + math.Exp(-a*v))
	case graph.PostLeakyRelu:
		if v < 0 {
			return a * v
		}
		return v
	case graph.PostTanh:
		return math.Tanh(v)
	case graph.PostLinear:
		return a*v + b
	}
	panic("refPostOp: no reference for " + p.Kind)
}

// refFusedConv is naiveConv followed by ops; residual is broadcast to the
// output numpy-style (right-aligned, size-1 dims repeat).
func refFusedConv(x, w, b *tensor.Tensor, p reftest.ConvParams, ops []graph.PostOp, residual *tensor.Tensor) []float32 {
	y := reftest.Conv(x, w, b, p)
	ys := y.Shape()
	Y := y.F32()
	out := make([]float32, len(Y))
	reftest.ForIndex(ys, func(o []int64) {
		i := reftest.Flat(ys, o)
		v := float64(Y[i])
		for _, op := range ops {
			if op.Kind != graph.PostSum {
				v = refPostOp(op, v)
				continue
			}
			rs := residual.Shape()
			ri := make([]int64, len(rs))
			for d := range rs {
				if rs[d] != 1 {
					ri[d] = o[len(o)-len(rs)+d]
				}
			}
			v += float64(residual.F32()[reftest.Flat(rs, ri)])
		}
		out[i] = float32(v)
	})
	return out
}

func TestConvDirectPaths(t *testing.T) {
	hswish := graph.PostOp{Kind: graph.PostHardSwish}
	relu := graph.PostOp{Kind: graph.PostRelu}
	sum := graph.PostOp{Kind: graph.PostSum}
	clip := graph.PostOp{Kind: graph.PostClip, Alpha: -0.5, Beta: 0.75}
	sig := graph.PostOp{Kind: graph.PostSigmoid}
	leaky := graph.PostOp{Kind: graph.PostLeakyRelu, Alpha: 0.1}
	lin := graph.PostOp{Kind: graph.PostLinear, Alpha: 1.5, Beta: -0.25}
	cases := []struct {
		name      string
		x, w      tensor.Shape
		group     int64
		stride    []int64
		dil       []int64
		pad       []int64 // begin pads; end pads are pad + padExtra
		padExtra  int64
		bias      bool
		ops       []graph.PostOp
		resBcast  bool // residual of shape [1, M, 1, 1] (not fused)
		wantPath  string
		wantError bool
	}{
		{name: "dw3x3_s1_p1_hswish", x: tensor.Shape{1, 8, 9, 7}, w: tensor.Shape{8, 1, 3, 3}, group: 8, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{hswish}, wantPath: "conv_depthwise_direct"},
		{name: "dw5x5_s2_p2_relu", x: tensor.Shape{2, 6, 11, 13}, w: tensor.Shape{6, 1, 5, 5}, group: 6, stride: []int64{2, 2}, pad: []int64{2, 2}, bias: true, ops: []graph.PostOp{relu}, wantPath: "conv_depthwise_direct"},
		{name: "dw3x3_dil2_asym_pad", x: tensor.Shape{1, 4, 10, 9}, w: tensor.Shape{4, 1, 3, 3}, group: 4, dil: []int64{2, 2}, pad: []int64{2, 1}, padExtra: 1, wantPath: "conv_depthwise_direct"},
		{name: "dw_stride_2x1_wide_rows", x: tensor.Shape{1, 3, 5, 67}, w: tensor.Shape{3, 1, 3, 3}, group: 3, stride: []int64{2, 1}, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{sum, clip}, wantPath: "conv_depthwise_direct"},
		{name: "dw_multiplier_odd", x: tensor.Shape{1, 3, 7, 5}, w: tensor.Shape{6, 1, 3, 2}, group: 3, stride: []int64{1, 2}, pad: []int64{0, 1}, bias: true, ops: []graph.PostOp{leaky, sum}, wantPath: "conv_depthwise_direct"},
		{name: "dw_kernel_wider_than_padded_row", x: tensor.Shape{1, 2, 4, 3}, w: tensor.Shape{2, 1, 3, 5}, group: 2, pad: []int64{1, 2}, ops: []graph.PostOp{sig}, wantPath: "conv_depthwise_direct"},
		{name: "dw_parallel_unit_stride", x: tensor.Shape{1, 16, 40, 50}, w: tensor.Shape{16, 1, 3, 3}, group: 16, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{hswish, sum}, wantPath: "conv_depthwise_direct"},
		{name: "dw_parallel_stride2_5x5", x: tensor.Shape{2, 24, 41, 37}, w: tensor.Shape{24, 1, 5, 5}, group: 24, stride: []int64{2, 2}, pad: []int64{2, 2}, bias: true, ops: []graph.PostOp{relu}, wantPath: "conv_depthwise_direct"},
		{name: "dw_bcast_residual", x: tensor.Shape{1, 4, 6, 6}, w: tensor.Shape{4, 1, 3, 3}, group: 4, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{relu, sum, hswish}, resBcast: true, wantPath: "conv_depthwise_direct"},
		{name: "pw_1x1_many_tiles_rowblocks", x: tensor.Shape{1, 70, 30, 37}, w: tensor.Shape{40, 70, 1, 1}, group: 1, bias: true, ops: []graph.PostOp{sum, relu}, wantPath: "conv_1x1_gemm"},
		{name: "pw_1x1_batch2_groups", x: tensor.Shape{2, 8, 5, 5}, w: tensor.Shape{12, 4, 1, 1}, group: 2, bias: true, ops: []graph.PostOp{lin}, wantPath: "conv_1x1_gemm"},
		{name: "pw_1x1_stride2", x: tensor.Shape{1, 9, 9, 11}, w: tensor.Shape{10, 9, 1, 1}, group: 1, stride: []int64{2, 2}, bias: true, ops: []graph.PostOp{hswish}, wantPath: "conv_1x1_strided_gemm"},
		{name: "pw_1x1_padded", x: tensor.Shape{1, 5, 4, 4}, w: tensor.Shape{3, 5, 1, 1}, group: 1, pad: []int64{1, 0}, padExtra: 1, wantPath: "conv_1x1_strided_gemm"},
		{name: "winograd_odd_out_pad1", x: tensor.Shape{1, 9, 7, 9}, w: tensor.Shape{10, 9, 3, 3}, group: 1, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{relu, sum}, wantPath: "conv_winograd_f2x2_3x3"},
		{name: "winograd_nopad_batch2_groups", x: tensor.Shape{2, 16, 10, 8}, w: tensor.Shape{16, 8, 3, 3}, group: 2, bias: true, ops: []graph.PostOp{hswish}, wantPath: "conv_winograd_f2x2_3x3"},
		{name: "winograd_asym_pad_many_blocks", x: tensor.Shape{1, 8, 25, 70}, w: tensor.Shape{8, 8, 3, 3}, group: 1, pad: []int64{0, 2}, padExtra: 1, ops: []graph.PostOp{sum, sig}, wantPath: "conv_winograd_f2x2_3x3"},
		{name: "winograd_bcast_residual", x: tensor.Shape{1, 12, 6, 5}, w: tensor.Shape{8, 12, 3, 3}, group: 1, pad: []int64{1, 1}, ops: []graph.PostOp{sum}, resBcast: true, wantPath: "conv_winograd_f2x2_3x3"},
		{name: "full3x3_s2_kblocks", x: tensor.Shape{1, 11, 13, 12}, w: tensor.Shape{20, 11, 3, 3}, group: 1, stride: []int64{2, 2}, pad: []int64{1, 1}, bias: true, ops: []graph.PostOp{hswish, sum}, wantPath: "conv_im2col_gemm"},
		{name: "grouped3x3_dil", x: tensor.Shape{2, 6, 9, 8}, w: tensor.Shape{9, 2, 3, 3}, group: 3, dil: []int64{2, 1}, pad: []int64{2, 1}, ops: []graph.PostOp{clip}, wantPath: "conv_im2col_gemm"},
		{name: "conv1d_depthwise", x: tensor.Shape{1, 4, 17}, w: tensor.Shape{4, 1, 3}, group: 4, stride: []int64{2}, pad: []int64{1}, bias: true, ops: []graph.PostOp{relu}, wantPath: "conv_depthwise_direct"},
		{name: "conv1d_windows_stft", x: tensor.Shape{2, 1, 70}, w: tensor.Shape{6, 1, 16}, group: 1, stride: []int64{8}, pad: []int64{3}, padExtra: 2, bias: true, wantPath: "conv_1d_windows"},
		{name: "conv1d_windows_grouped", x: tensor.Shape{1, 4, 40}, w: tensor.Shape{6, 2, 17}, group: 2, stride: []int64{3}, pad: []int64{5}, ops: []graph.PostOp{relu, sum}, wantPath: "conv_1d_windows"},
		{name: "conv1d_long_output_uses_gemm", x: tensor.Shape{1, 2, 300}, w: tensor.Shape{3, 2, 16}, group: 1, wantPath: "conv_im2col_gemm"},
	}
	fused := hostKernels()[graph.OpFusedConv]
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(700 + i))
			r := len(tc.x) - 2
			x, w := reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.w...)
			p := reftest.ConvParams{Group: tc.group, Stride: ones(r, 1), Dil: ones(r, 1), PadB: ones(r, 0), PadE: ones(r, 0)}
			attrs := graph.Attrs{"group": tc.group, "kernel_shape": []int64(tc.w[2:])}
			if tc.stride != nil {
				attrs["strides"], p.Stride = tc.stride, tc.stride
			}
			if tc.dil != nil {
				attrs["dilations"], p.Dil = tc.dil, tc.dil
			}
			if tc.pad != nil {
				p.PadB = tc.pad
				p.PadE = make([]int64, r)
				for d := range p.PadE {
					p.PadE[d] = tc.pad[d] + tc.padExtra
				}
				attrs["pads"] = append(append([]int64(nil), p.PadB...), p.PadE...)
			}
			var b *tensor.Tensor
			if tc.bias {
				b = reftest.RandF32(rng, tc.w[0])
			}
			want0 := reftest.Conv(x, w, b, p)
			var res *tensor.Tensor
			for _, op := range tc.ops {
				if op.Kind == graph.PostSum {
					if tc.resBcast {
						res = reftest.RandF32(rng, 1, tc.w[0], 1, 1)
					} else {
						res = reftest.RandF32(rng, want0.Shape()...)
					}
				}
			}
			n := graph.NewNode(graph.OpFusedConv, "conv_"+tc.name, make([]graph.Output, 4), attrs, 1)
			graph.SetPostOps(n, tc.ops)

			s, err := newConvShape(n, []*tensor.Tensor{x, w, b})
			require.NoError(t, err)
			assert.Equal(t, tc.wantPath, s.path())

			outs, err := fused(n, []*tensor.Tensor{x, w, b, res})
			require.NoError(t, err)
			require.Len(t, outs, 1)
			assert.Equal(t, want0.Shape(), outs[0].Shape())
			nnClose(t, refFusedConv(x, w, b, p, tc.ops, res), outs[0].F32(), 1e-4)

			// Plain Conv takes the same path without post-ops.
			plain := graph.NewNode("Conv", "plain_"+tc.name, make([]graph.Output, 3), attrs, 1)
			outs, err = convKernel(plain, []*tensor.Tensor{x, w, b})
			require.NoError(t, err)
			nnClose(t, want0.F32(), outs[0].F32(), 1e-4)
		})
	}
}

// TestConvDirectRandom compares every conv path with the naive reference
// on seeded random geometries, post-ops included.
func TestConvDirectRandom(t *testing.T) {
	rng := reftest.RNG(4242)
	kinds := []graph.PostOp{
		{Kind: graph.PostHardSwish}, {Kind: graph.PostRelu}, {Kind: graph.PostSum},
		{Kind: graph.PostClip, Alpha: 0, Beta: 6}, {Kind: graph.PostSigmoid},
	}
	fused := hostKernels()[graph.OpFusedConv]
	paths := map[string]int{}
	for i := 0; i < 60; i++ {
		C := int64(1 + rng.IntN(12))
		depthwise := rng.IntN(2) == 0
		group, M := int64(1), int64(1+rng.IntN(12))
		if depthwise {
			group = C
			M = C * int64(1+rng.IntN(2))
		}
		k := []int64{int64(1 + rng.IntN(5)), int64(1 + rng.IntN(5))}
		stride := []int64{int64(1 + rng.IntN(2)), int64(1 + rng.IntN(3))}
		dil := []int64{int64(1 + rng.IntN(2)), int64(1 + rng.IntN(2))}
		padB := []int64{int64(rng.IntN(3)), int64(rng.IntN(3))}
		padE := []int64{int64(rng.IntN(3)), int64(rng.IntN(3))}
		H := (k[0]-1)*dil[0] + 1 + int64(rng.IntN(9))
		W := (k[1]-1)*dil[1] + 1 + int64(rng.IntN(40))
		x := reftest.RandF32(rng, 1+int64(rng.IntN(2)), C, H, W)
		w := reftest.RandF32(rng, M, C/group, k[0], k[1])
		var b *tensor.Tensor
		if rng.IntN(2) == 0 {
			b = reftest.RandF32(rng, M)
		}
		var ops []graph.PostOp
		for j := rng.IntN(3); j > 0; j-- {
			op := kinds[rng.IntN(len(kinds))]
			if op.Kind == graph.PostSum {
				dup := false
				for _, o := range ops {
					dup = dup || o.Kind == graph.PostSum
				}
				if dup {
					continue
				}
			}
			ops = append(ops, op)
		}
		p := reftest.ConvParams{Group: group, Stride: stride, Dil: dil, PadB: padB, PadE: padE}
		attrs := graph.Attrs{"group": group, "strides": stride, "dilations": dil, "pads": append(append([]int64(nil), padB...), padE...)}
		name := fmt.Sprintf("case%d_x%v_w%v_g%d_s%v_d%v_p%v%v_%v", i, x.Shape(), w.Shape(), group, stride, dil, padB, padE, ops)
		t.Run(name, func(t *testing.T) {
			want0 := reftest.Conv(x, w, b, p)
			var res *tensor.Tensor
			for _, op := range ops {
				if op.Kind == graph.PostSum {
					res = reftest.RandF32(rng, want0.Shape()...)
				}
			}
			n := graph.NewNode(graph.OpFusedConv, "rand", make([]graph.Output, 4), attrs, 1)
			graph.SetPostOps(n, ops)
			s, err := newConvShape(n, []*tensor.Tensor{x, w, b})
			require.NoError(t, err)
			paths[s.path()]++
			outs, err := fused(n, []*tensor.Tensor{x, w, b, res})
			require.NoError(t, err)
			nnClose(t, refFusedConv(x, w, b, p, ops, res), outs[0].F32(), 1e-4)
		})
	}
	// The random geometries must reach the direct paths, not only im2col.
	assert.Positive(t, paths["conv_depthwise_direct"], "paths taken: %v", paths)
	assert.Positive(t, paths["conv_im2col_gemm"], "paths taken: %v", paths)
}

func TestCompileRowOpNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, p := range []graph.PostOp{
		{Kind: graph.PostRelu}, {Kind: graph.PostClip, Alpha: 0, Beta: 6},
		{Kind: graph.PostHardSwish}, {Kind: graph.PostLeakyRelu, Alpha: 0.1},
	} {
		t.Run(p.Kind, func(t *testing.T) {
			f, err := compileRowOp(graph.NewNode("FusedConv", "n", nil, nil, 1), p)
			require.NoError(t, err)
			row := []float32{nan, -3, 2.5}
			f(row)
			assert.True(t, math.IsNaN(float64(row[0])), "NaN must pass through %s, got %v", p.Kind, row[0])
			assert.InDelta(t, refPostOp(p, -3), row[1], 1e-6)
			assert.InDelta(t, refPostOp(p, 2.5), row[2], 1e-6)
		})
	}
}

func TestCompileRowOpUnknown(t *testing.T) {
	_, err := compileRowOp(graph.NewNode("FusedConv", "conv7", nil, nil, 1), graph.PostOp{Kind: "mystery"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mystery")
	assert.Contains(t, err.Error(), "conv7")
}

// BenchmarkConvPaths times each conv path on PP-OCR-shaped layers next to
// the generic tiled im2col GEMM on the same layer, in one run.
func BenchmarkConvPaths(b *testing.B) {
	for _, c := range []struct {
		x, w          tensor.Shape
		group, stride int64
		pad           int64
	}{
		{tensor.Shape{1, 96, 80, 80}, tensor.Shape{24, 96, 3, 3}, 1, 1, 1},
		{tensor.Shape{1, 192, 20, 20}, tensor.Shape{192, 1, 5, 5}, 192, 1, 2},
		{tensor.Shape{1, 32, 160, 160}, tensor.Shape{32, 1, 3, 3}, 32, 2, 1},
		{tensor.Shape{1, 16, 160, 160}, tensor.Shape{32, 16, 1, 1}, 1, 1, 0},
		{tensor.Shape{1, 384, 10, 10}, tensor.Shape{384, 384, 1, 1}, 1, 1, 0},
		{tensor.Shape{1, 3, 320, 320}, tensor.Shape{16, 3, 3, 3}, 1, 2, 1},
	} {
		rng := reftest.RNG(1)
		x, w := reftest.RandF32(rng, c.x...), reftest.RandF32(rng, c.w...)
		attrs := graph.Attrs{"group": c.group, "strides": []int64{c.stride, c.stride}, "pads": []int64{c.pad, c.pad, c.pad, c.pad}}
		n := graph.NewNode("Conv", "bench", make([]graph.Output, 2), attrs, 1)
		s0, err := newConvShape(n, []*tensor.Tensor{x, w})
		require.NoError(b, err)
		flops := 2 * float64(s0.N*s0.M*s0.Cg*s0.K*s0.P)
		name := fmt.Sprintf("N%d_C%d_H%d_W%d_M%d_K%d_G%d_S%d", c.x[0], c.x[1], c.x[2], c.x[3], c.w[0], c.w[2], c.group, c.stride)
		impls := []struct {
			name string
			run  func(*convShape)
		}{
			{s0.path(), func(s *convShape) { convRun(s, &epilogue{}, nil) }},
		}
		if s0.path() != "conv_im2col_gemm" && s0.path() != "conv_1x1_gemm" {
			impls = append(impls, struct {
				name string
				run  func(*convShape)
			}{"conv_im2col_gemm", func(s *convShape) { convGEMM(s, &epilogue{}, nil) }})
		}
		for _, impl := range impls {
			b.Run(name+"/"+impl.name, func(b *testing.B) {
				for b.Loop() {
					s, err := newConvShape(n, []*tensor.Tensor{x, w})
					if err != nil {
						b.Fatal(err)
					}
					impl.run(s)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

// TestConvDirectEmpty runs every path on an empty batch and on empty
// channel counts: no panic, outputs of the right (empty) shape.
func TestConvDirectEmpty(t *testing.T) {
	cases := []struct {
		name string
		x, w tensor.Shape
		grp  int64
		pads []int64
	}{
		{"depthwise_empty_batch", tensor.Shape{0, 4, 6, 6}, tensor.Shape{4, 1, 3, 3}, 4, []int64{1, 1, 1, 1}},
		{"winograd_empty_batch", tensor.Shape{0, 8, 6, 6}, tensor.Shape{8, 8, 3, 3}, 1, []int64{1, 1, 1, 1}},
		{"pointwise_empty_batch", tensor.Shape{0, 8, 6, 6}, tensor.Shape{8, 8, 1, 1}, 1, []int64{0, 0, 0, 0}},
		{"im2col_no_output_channels", tensor.Shape{1, 3, 6, 6}, tensor.Shape{0, 3, 3, 3}, 1, []int64{0, 0, 0, 0}},
		{"pointwise_no_input_channels", tensor.Shape{1, 0, 4, 4}, tensor.Shape{5, 0, 1, 1}, 1, []int64{0, 0, 0, 0}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(900 + i))
			x, w := reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.w...)
			n := graph.NewNode("Conv", tc.name, make([]graph.Output, 2), graph.Attrs{"group": tc.grp, "pads": tc.pads}, 1)
			outs, err := convKernel(n, []*tensor.Tensor{x, w})
			require.NoError(t, err)
			want := reftest.Conv(x, w, nil, reftest.ConvParams{Group: tc.grp, Stride: ones(2, 1), Dil: ones(2, 1), PadB: tc.pads[:2], PadE: tc.pads[2:]})
			assert.Equal(t, want.Shape(), outs[0].Shape())
			nnClose(t, want.F32(), outs[0].F32(), 1e-5)
		})
	}
}
