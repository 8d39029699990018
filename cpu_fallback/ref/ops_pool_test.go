package ref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func seq(shape ...int64) *tensor.Tensor {
	x := tensor.MustNew(tensor.F32, shape)
	for i := range x.F32() {
		x.F32()[i] = float32(i + 1)
	}
	return x
}

// naivePool2D pools an NCHW tensor with explicit geometry; out is given.
func naivePool2D(x *tensor.Tensor, k, s, d, padB, out []int64, avg, includePad bool, padE []int64) []float32 {
	xs := x.Shape()
	X := x.F32()
	var res []float32
	for nc := int64(0); nc < xs[0]*xs[1]; nc++ {
		for oh := int64(0); oh < out[0]; oh++ {
			for ow := int64(0); ow < out[1]; ow++ {
				best, sum, cnt := math.Inf(-1), 0.0, 0
				for kh := int64(0); kh < k[0]; kh++ {
					for kw := int64(0); kw < k[1]; kw++ {
						h, w := oh*s[0]-padB[0]+kh*d[0], ow*s[1]-padB[1]+kw*d[1]
						in := h >= 0 && h < xs[2] && w >= 0 && w < xs[3]
						if in {
							v := float64(X[nc*xs[2]*xs[3]+h*xs[3]+w])
							best = math.Max(best, v)
							sum += v
							cnt++
						} else if includePad && h >= -padB[0] && h < xs[2]+padE[0] && w >= -padB[1] && w < xs[3]+padE[1] {
							cnt++
						}
					}
				}
				if avg {
					res = append(res, float32(sum/float64(cnt)))
				} else {
					res = append(res, float32(best))
				}
			}
		}
	}
	return res
}

func TestPoolNaive(t *testing.T) {
	cases := []struct {
		name             string
		x                tensor.Shape
		k, s, d, pb, pe  []int64
		out              []int64
		includePad, ceil bool
	}{
		{name: "plain", x: tensor.Shape{2, 3, 6, 7}, k: []int64{2, 3}, s: []int64{1, 1}, d: []int64{1, 1}, pb: []int64{0, 0}, pe: []int64{0, 0}, out: []int64{5, 5}},
		{name: "strided_padded", x: tensor.Shape{1, 2, 7, 7}, k: []int64{3, 3}, s: []int64{2, 2}, d: []int64{1, 1}, pb: []int64{1, 1}, pe: []int64{1, 1}, out: []int64{4, 4}},
		{name: "include_pad", x: tensor.Shape{1, 2, 5, 6}, k: []int64{3, 2}, s: []int64{2, 1}, d: []int64{1, 1}, pb: []int64{1, 0}, pe: []int64{2, 1}, out: []int64{3, 6}, includePad: true},
		{name: "dilated", x: tensor.Shape{1, 1, 8, 8}, k: []int64{2, 2}, s: []int64{1, 2}, d: []int64{3, 2}, pb: []int64{0, 1}, pe: []int64{0, 0}, out: []int64{5, 4}},
		{name: "ceil", x: tensor.Shape{1, 2, 6, 6}, k: []int64{3, 3}, s: []int64{2, 2}, d: []int64{1, 1}, pb: []int64{0, 0}, pe: []int64{0, 0}, out: []int64{3, 3}, ceil: true},
	}
	for i, tc := range cases {
		for _, op := range []string{"MaxPool", "AveragePool"} {
			t.Run(tc.name+"_"+op, func(t *testing.T) {
				x := reftest.RandF32(reftest.RNG(uint64(500+i)), tc.x...)
				attrs := graph.Attrs{"kernel_shape": tc.k, "strides": tc.s, "dilations": tc.d,
					"pads": append(append([]int64(nil), tc.pb...), tc.pe...), "count_include_pad": b2i(tc.includePad), "ceil_mode": b2i(tc.ceil)}
				got := nnRun(t, op, attrs, 1, x)[0]
				require.Equal(t, tensor.Shape{tc.x[0], tc.x[1], tc.out[0], tc.out[1]}, got.Shape())
				want := naivePool2D(x, tc.k, tc.s, tc.d, tc.pb, tc.out, op == "AveragePool", tc.includePad, tc.pe)
				nnClose(t, want, got.F32(), 1e-6)
			})
		}
	}
}

func TestPoolKnownValues(t *testing.T) {
	x5 := seq(1, 1, 5, 5)
	cases := []struct {
		name    string
		op      string
		x       *tensor.Tensor
		attrs   graph.Attrs
		shape   tensor.Shape
		want    []float32
		indices []int64
	}{
		// The ONNX backend tests of the same names.
		{name: "maxpool_2d_ceil", op: "MaxPool", x: seq(1, 1, 4, 4), attrs: graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "ceil_mode": int64(1)},
			shape: tensor.Shape{1, 1, 2, 2}, want: []float32{11, 12, 15, 16}},
		{name: "maxpool_2d_same_upper", op: "MaxPool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "auto_pad": "SAME_UPPER"},
			shape: tensor.Shape{1, 1, 3, 3}, want: []float32{7, 9, 10, 17, 19, 20, 22, 24, 25}},
		{name: "maxpool_2x2_same_lower", op: "MaxPool", x: seq(1, 1, 3, 3), attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "auto_pad": "SAME_LOWER"},
			shape: tensor.Shape{1, 1, 3, 3}, want: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "maxpool_2x2_same_upper", op: "MaxPool", x: seq(1, 1, 3, 3), attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "auto_pad": "SAME_UPPER"},
			shape: tensor.Shape{1, 1, 3, 3}, want: []float32{5, 6, 6, 8, 9, 9, 8, 9, 9}},
		{name: "maxpool_with_argmax_2d_precomputed_pads", op: "MaxPool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{5, 5}, "pads": []int64{2, 2, 2, 2}},
			shape:   tensor.Shape{1, 1, 5, 5},
			want:    []float32{13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25},
			indices: []int64{12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24}},
		{name: "maxpool_with_argmax_2d_precomputed_strides", op: "MaxPool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}, "storage_order": int64(1)},
			shape: tensor.Shape{1, 1, 2, 2}, want: []float32{7, 9, 17, 19}, indices: []int64{6, 16, 8, 18}},
		{name: "averagepool_2d_precomputed_same_upper", op: "AveragePool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "auto_pad": "SAME_UPPER"},
			shape: tensor.Shape{1, 1, 3, 3}, want: []float32{4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22}},
		{name: "averagepool_2d_ceil", op: "AveragePool", x: seq(1, 1, 4, 4), attrs: graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "ceil_mode": int64(1)},
			shape: tensor.Shape{1, 1, 2, 2}, want: []float32{6, 7.5, 12, 13.5}},
		// ceil_mode windows ending in the end padding, and a last window
		// that would start past the input dropped, with onnxruntime 1.30's
		// outputs (CPU, opsets 11, 19 and 22 alike).
		{name: "averagepool_ceil_end_pad", op: "AveragePool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{4, 4},
			"pads": []int64{0, 0, 1, 1}, "ceil_mode": int64(1)}, shape: tensor.Shape{1, 1, 2, 2}, want: []float32{4, 7.5, 21.5, 25}},
		{name: "averagepool_ceil_end_pad_count_include_pad", op: "AveragePool", x: x5, attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{4, 4},
			"pads": []int64{0, 0, 1, 1}, "ceil_mode": int64(1), "count_include_pad": int64(1)}, shape: tensor.Shape{1, 1, 2, 2}, want: []float32{4, 3.75, 10.75, 6.25}},
		{name: "averagepool_ceil_last_window_dropped", op: "AveragePool", x: seq(1, 1, 3, 3), attrs: graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{4, 4},
			"pads": []int64{1, 1, 0, 0}, "ceil_mode": int64(1), "count_include_pad": int64(1)}, shape: tensor.Shape{1, 1, 1, 1}, want: []float32{0.25}},
		{name: "averagepool_ceil_stride_past_input", op: "AveragePool", x: seq(1, 1, 2, 5), attrs: graph.Attrs{"kernel_shape": []int64{1, 1}, "strides": []int64{3, 3},
			"ceil_mode": int64(1)}, shape: tensor.Shape{1, 1, 1, 2}, want: []float32{1, 4}},
		{name: "maxpool_1d", op: "MaxPool", x: seq(1, 2, 5), attrs: graph.Attrs{"kernel_shape": []int64{2}},
			shape: tensor.Shape{1, 2, 4}, want: []float32{2, 3, 4, 5, 7, 8, 9, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outs := 1
			if tc.indices != nil {
				outs = 2
			}
			got := nnRun(t, tc.op, tc.attrs, outs, tc.x)
			require.Equal(t, tc.shape, got[0].Shape())
			nnClose(t, tc.want, got[0].F32(), 1e-6)
			if tc.indices != nil {
				require.Equal(t, tensor.I64, got[1].Type())
				assert.Equal(t, tc.indices, got[1].I64())
			}
		})
	}
}

func TestMaxPoolIndicesBatch(t *testing.T) {
	// Indices are flat over the whole tensor, batch and channel included.
	x := seq(2, 3, 2, 2)
	got := nnRun(t, "MaxPool", graph.Attrs{"kernel_shape": []int64{2, 2}}, 2, x)
	assert.Equal(t, []int64{3, 7, 11, 15, 19, 23}, got[1].I64())
}

func TestGlobalPools(t *testing.T) {
	x := reftest.RandF32(reftest.RNG(11), 2, 3, 4, 5)
	avg := nnRun(t, "GlobalAveragePool", nil, 1, x)[0]
	mx := nnRun(t, "GlobalMaxPool", nil, 1, x)[0]
	require.Equal(t, tensor.Shape{2, 3, 1, 1}, avg.Shape())
	require.Equal(t, tensor.Shape{2, 3, 1, 1}, mx.Shape())
	X := x.F32()
	for p := 0; p < 6; p++ {
		s, m := 0.0, math.Inf(-1)
		for _, v := range X[p*20 : (p+1)*20] {
			s += float64(v)
			m = math.Max(m, float64(v))
		}
		assert.InDelta(t, s/20, avg.F32()[p], 1e-6)
		assert.InDelta(t, m, mx.F32()[p], 0)
	}
}

func TestMaxPool8BitIntegers(t *testing.T) {
	for _, typ := range []tensor.ElementType{tensor.U8, tensor.I8} {
		t.Run(typ.String(), func(t *testing.T) {
			vals := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			if typ == tensor.I8 {
				for i := range vals {
					vals[i] -= 8 // negative values too
				}
			}
			x, err := tensor.FromFloat64s(typ, tensor.Shape{1, 1, 4, 4}, vals)
			require.NoError(t, err)
			outs := nnRun(t, "MaxPool", graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}, 2, x)
			require.Equal(t, typ, outs[0].Type())
			require.Equal(t, tensor.Shape{1, 1, 2, 2}, outs[0].Shape())
			want := []float64{6, 8, 14, 16}
			if typ == tensor.I8 {
				want = []float64{-2, 0, 6, 8}
			}
			assert.Equal(t, want, outs[0].Float64s())
			assert.Equal(t, []int64{5, 7, 13, 15}, outs[1].I64())
		})
	}
}
