package ref

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func ones(n int, v int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestConv(t *testing.T) {
	cases := []struct {
		name    string
		x, w    tensor.Shape
		group   int64
		stride  []int64
		dil     []int64
		padB    []int64
		padE    []int64
		autoPad string
		bias    bool
	}{
		{name: "2d_plain", x: tensor.Shape{2, 3, 7, 6}, w: tensor.Shape{4, 3, 3, 3}, group: 1},
		{name: "2d_pad_stride_bias", x: tensor.Shape{1, 3, 9, 8}, w: tensor.Shape{5, 3, 3, 2}, group: 1, stride: []int64{2, 3}, padB: []int64{1, 0}, padE: []int64{2, 1}, bias: true},
		{name: "2d_dilation", x: tensor.Shape{1, 2, 10, 9}, w: tensor.Shape{3, 2, 3, 3}, group: 1, dil: []int64{2, 3}, padB: []int64{2, 1}, padE: []int64{1, 2}},
		{name: "2d_groups", x: tensor.Shape{2, 6, 6, 6}, w: tensor.Shape{4, 3, 3, 3}, group: 2, padB: []int64{1, 1}, padE: []int64{1, 1}, bias: true},
		{name: "2d_depthwise", x: tensor.Shape{1, 8, 7, 7}, w: tensor.Shape{8, 1, 3, 3}, group: 8, stride: []int64{2, 2}, padB: []int64{1, 1}, padE: []int64{1, 1}},
		{name: "2d_depthwise_multiplier", x: tensor.Shape{1, 4, 5, 5}, w: tensor.Shape{8, 1, 3, 3}, group: 4, dil: []int64{2, 2}},
		{name: "2d_1x1_direct", x: tensor.Shape{2, 5, 4, 3}, w: tensor.Shape{6, 5, 1, 1}, group: 1, bias: true},
		{name: "2d_1x1_strided", x: tensor.Shape{1, 5, 5, 5}, w: tensor.Shape{6, 5, 1, 1}, group: 1, stride: []int64{2, 2}},
		{name: "2d_same_upper", x: tensor.Shape{1, 2, 7, 8}, w: tensor.Shape{3, 2, 4, 3}, group: 1, stride: []int64{2, 3}, autoPad: "SAME_UPPER"},
		{name: "2d_same_lower", x: tensor.Shape{1, 2, 7, 8}, w: tensor.Shape{3, 2, 4, 3}, group: 1, stride: []int64{2, 3}, autoPad: "SAME_LOWER"},
		{name: "2d_same_upper_dilated", x: tensor.Shape{1, 2, 6, 6}, w: tensor.Shape{2, 2, 3, 3}, group: 1, dil: []int64{2, 2}, autoPad: "SAME_UPPER"},
		{name: "2d_valid", x: tensor.Shape{1, 2, 7, 8}, w: tensor.Shape{3, 2, 3, 3}, group: 1, stride: []int64{2, 2}, autoPad: "VALID"},
		{name: "1d", x: tensor.Shape{2, 3, 11}, w: tensor.Shape{4, 3, 3}, group: 1, stride: []int64{2}, padB: []int64{1}, padE: []int64{2}, bias: true},
		{name: "1d_groups_dilated", x: tensor.Shape{1, 4, 12}, w: tensor.Shape{6, 2, 3}, group: 2, dil: []int64{3}},
		{name: "3d", x: tensor.Shape{1, 2, 5, 6, 4}, w: tensor.Shape{3, 2, 3, 2, 3}, group: 1, stride: []int64{1, 2, 1}, padB: []int64{1, 0, 1}, padE: []int64{1, 1, 0}, bias: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(100 + i))
			r := len(tc.x) - 2
			x, w := reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.w...)
			attrs := graph.Attrs{"group": tc.group}
			p := reftest.ConvParams{Group: tc.group, Stride: ones(r, 1), Dil: ones(r, 1), PadB: ones(r, 0), PadE: ones(r, 0)}
			if tc.stride != nil {
				attrs["strides"], p.Stride = tc.stride, tc.stride
			}
			if tc.dil != nil {
				attrs["dilations"], p.Dil = tc.dil, tc.dil
			}
			if tc.padB != nil {
				attrs["pads"] = append(append([]int64(nil), tc.padB...), tc.padE...)
				p.PadB, p.PadE = tc.padB, tc.padE
			}
			if tc.autoPad != "" {
				attrs["auto_pad"] = tc.autoPad
				for d := 0; d < r; d++ {
					in, k := tc.x[d+2], (tc.w[d+2]-1)*p.Dil[d]+1
					if tc.autoPad == "VALID" {
						continue
					}
					out := (in + p.Stride[d] - 1) / p.Stride[d]
					total := max(0, (out-1)*p.Stride[d]+k-in)
					small, big := total/2, total-total/2
					if tc.autoPad == "SAME_UPPER" {
						p.PadB[d], p.PadE[d] = small, big
					} else {
						p.PadB[d], p.PadE[d] = big, small
					}
				}
			}
			in := []*tensor.Tensor{x, w}
			var b *tensor.Tensor
			if tc.bias {
				b = reftest.RandF32(rng, tc.w[0])
				in = append(in, b)
			}
			want := reftest.Conv(x, w, b, p)
			got := nnRun(t, "Conv", attrs, 1, in...)[0]
			require.Equal(t, want.Shape(), got.Shape())
			nnClose(t, want.F32(), got.F32(), 1e-5)
		})
	}
}

func TestConvF16AndF64(t *testing.T) {
	rng := reftest.RNG(7)
	x, w := reftest.RandF32(rng, 1, 2, 5, 5), reftest.RandF32(rng, 3, 2, 3, 3)
	want := reftest.Conv(x, w, nil, reftest.ConvParams{Group: 1, Stride: ones(2, 1), Dil: ones(2, 1), PadB: ones(2, 0), PadE: ones(2, 0)})
	for _, typ := range []tensor.ElementType{tensor.F16, tensor.F64} {
		t.Run(typ.String(), func(t *testing.T) {
			xc, err := x.Convert(typ)
			require.NoError(t, err)
			wc, err := w.Convert(typ)
			require.NoError(t, err)
			got := nnRun(t, "Conv", nil, 1, xc, wc)[0]
			assert.Equal(t, typ, got.Type())
			g32, err := got.Convert(tensor.F32)
			require.NoError(t, err)
			tol := 1e-5
			if typ == tensor.F16 {
				tol = 1e-2
			}
			nnClose(t, want.F32(), g32.F32(), tol)
		})
	}
}

func TestConvErrors(t *testing.T) {
	rng := reftest.RNG(8)
	cases := []struct {
		name  string
		attrs graph.Attrs
		x, w  tensor.Shape
	}{
		{"channels_mismatch", nil, tensor.Shape{1, 3, 5, 5}, tensor.Shape{2, 2, 3, 3}},
		{"group_mismatch", graph.Attrs{"group": int64(2)}, tensor.Shape{1, 3, 5, 5}, tensor.Shape{2, 3, 3, 3}},
		{"kernel_too_big", nil, tensor.Shape{1, 1, 2, 2}, tensor.Shape{1, 1, 3, 3}},
		{"bad_auto_pad", graph.Attrs{"auto_pad": "SAME"}, tensor.Shape{1, 1, 5, 5}, tensor.Shape{1, 1, 3, 3}},
		{"bad_strides", graph.Attrs{"strides": []int64{1}}, tensor.Shape{1, 1, 5, 5}, tensor.Shape{1, 1, 3, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nnRunErr("Conv", tc.attrs, 1, reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.w...))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "test_Conv")
		})
	}
}

func TestConvTranspose(t *testing.T) {
	cases := []struct {
		name              string
		x, w              tensor.Shape
		group             int64
		stride, dil, pads []int64
		outPad, outShape  []int64
		autoPad           string
		bias              bool
		wantSpatial       []int64
		wantPadB          []int64
	}{
		{name: "2d_plain", x: tensor.Shape{1, 2, 3, 3}, w: tensor.Shape{2, 3, 3, 3}, group: 1, wantSpatial: []int64{5, 5}, wantPadB: []int64{0, 0}},
		{name: "2d_stride_pad_bias", x: tensor.Shape{2, 3, 4, 3}, w: tensor.Shape{3, 2, 3, 2}, group: 1, stride: []int64{2, 3}, pads: []int64{1, 0, 1, 1}, bias: true,
			wantSpatial: []int64{2*3 + 3 - 2, 3*2 + 2 - 1}, wantPadB: []int64{1, 0}},
		{name: "2d_output_padding", x: tensor.Shape{1, 1, 3, 3}, w: tensor.Shape{1, 2, 3, 3}, group: 1, stride: []int64{3, 2}, outPad: []int64{1, 1},
			wantSpatial: []int64{3*2 + 3 + 1, 2*2 + 3 + 1}, wantPadB: []int64{0, 0}},
		{name: "2d_dilation_groups", x: tensor.Shape{1, 4, 3, 4}, w: tensor.Shape{4, 2, 2, 3}, group: 2, dil: []int64{2, 2}, bias: true,
			wantSpatial: []int64{3 - 1 + 2 + 1, 4 - 1 + 4 + 1}, wantPadB: []int64{0, 0}},
		{name: "2d_output_shape", x: tensor.Shape{1, 1, 3, 3}, w: tensor.Shape{1, 2, 3, 3}, group: 1, stride: []int64{3, 2}, outShape: []int64{10, 8},
			// full sizes 9 and 7; totals -1: begin = total - floor(total/2) = 0.
			wantSpatial: []int64{10, 8}, wantPadB: []int64{0, 0}},
		{name: "2d_same_upper", x: tensor.Shape{1, 1, 3, 3}, w: tensor.Shape{1, 1, 3, 3}, group: 1, stride: []int64{2, 2}, autoPad: "SAME_UPPER",
			// full 7, out 6, total 1: begin 0.
			wantSpatial: []int64{6, 6}, wantPadB: []int64{0, 0}},
		{name: "2d_same_lower", x: tensor.Shape{1, 1, 3, 3}, w: tensor.Shape{1, 1, 3, 3}, group: 1, stride: []int64{2, 2}, autoPad: "SAME_LOWER",
			wantSpatial: []int64{6, 6}, wantPadB: []int64{1, 1}},
		{name: "1d", x: tensor.Shape{1, 2, 5}, w: tensor.Shape{2, 3, 3}, group: 1, stride: []int64{2}, wantSpatial: []int64{11}, wantPadB: []int64{0}},
		{name: "3d", x: tensor.Shape{1, 2, 2, 3, 2}, w: tensor.Shape{2, 2, 2, 2, 2}, group: 1, stride: []int64{2, 1, 2},
			wantSpatial: []int64{4, 4, 4}, wantPadB: []int64{0, 0, 0}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(200 + i))
			r := len(tc.x) - 2
			x, w := reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.w...)
			attrs := graph.Attrs{"group": tc.group}
			stride, dil := ones(r, 1), ones(r, 1)
			if tc.stride != nil {
				attrs["strides"], stride = tc.stride, tc.stride
			}
			if tc.dil != nil {
				attrs["dilations"], dil = tc.dil, tc.dil
			}
			if tc.pads != nil {
				attrs["pads"] = tc.pads
			}
			if tc.outPad != nil {
				attrs["output_padding"] = tc.outPad
			}
			if tc.outShape != nil {
				attrs["output_shape"] = tc.outShape
			}
			if tc.autoPad != "" {
				attrs["auto_pad"] = tc.autoPad
			}
			in := []*tensor.Tensor{x, w}
			var b *tensor.Tensor
			if tc.bias {
				b = reftest.RandF32(rng, tc.w[1]*tc.group)
				in = append(in, b)
			}
			got := nnRun(t, "ConvTranspose", attrs, 1, in...)[0]
			want := reftest.ConvTranspose(x, w, b, tc.group, stride, dil, tc.wantPadB, tc.wantSpatial)
			require.Equal(t, want.Shape(), got.Shape())
			nnClose(t, want.F32(), got.F32(), 1e-5)
		})
	}
}

func TestConvTransposeKnownValues(t *testing.T) {
	// ONNX backend test convtranspose_1d: X=[[[0,1,2]]], W=ones(1,2,3).
	x, _ := tensor.FromF32(tensor.Shape{1, 1, 3}, []float32{0, 1, 2})
	w, _ := tensor.FromF32(tensor.Shape{1, 2, 3}, []float32{1, 1, 1, 1, 1, 1})
	got := nnRun(t, "ConvTranspose", nil, 1, x, w)[0]
	assert.Equal(t, tensor.Shape{1, 2, 5}, got.Shape())
	nnClose(t, []float32{0, 1, 3, 3, 2, 0, 1, 3, 3, 2}, got.F32(), 1e-6)
}

func TestConvTransposeOutputShapeKnownValues(t *testing.T) {
	// ONNX backend test convtranspose_output_shape (first row and the
	// zero last row and column).
	x, _ := tensor.FromF32(tensor.Shape{1, 1, 3, 3}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8})
	w := tensor.MustNew(tensor.F32, tensor.Shape{1, 2, 3, 3})
	for i := range w.F32() {
		w.F32()[i] = 1
	}
	got := nnRun(t, "ConvTranspose", graph.Attrs{"strides": []int64{3, 2}, "output_shape": []int64{10, 8}}, 1, x, w)[0]
	require.Equal(t, tensor.Shape{1, 2, 10, 8}, got.Shape())
	y := got.F32()
	nnClose(t, []float32{0, 0, 1, 1, 3, 2, 2, 0}, y[0:8], 1e-6)
	nnClose(t, []float32{3, 3, 7, 4, 9, 5, 5, 0}, y[24:32], 1e-6)
	nnClose(t, make([]float32, 8), y[72:80], 1e-6)
}

func BenchmarkConv(b *testing.B) {
	for _, sz := range []struct{ n, c, h, m, k int64 }{
		{1, 16, 56, 32, 3},
		{1, 64, 28, 64, 3},
		{1, 64, 28, 128, 1},
	} {
		b.Run(fmt.Sprintf("N%d_C%d_H%d_M%d_K%d", sz.n, sz.c, sz.h, sz.m, sz.k), func(b *testing.B) {
			rng := reftest.RNG(1)
			x, w := reftest.RandF32(rng, sz.n, sz.c, sz.h, sz.h), reftest.RandF32(rng, sz.m, sz.c, sz.k, sz.k)
			pad := (sz.k - 1) / 2
			attrs := graph.Attrs{"pads": []int64{pad, pad, pad, pad}}
			flops := 2 * float64(sz.n*sz.m*sz.h*sz.h*sz.c*sz.k*sz.k)
			for b.Loop() {
				if _, err := nnRunErr("Conv", attrs, 1, x, w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
