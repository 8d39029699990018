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

func TestResizeKnownValues(t *testing.T) {
	x22 := reftest.F32s(tensor.Shape{1, 1, 2, 2}, 1, 2, 3, 4)
	x24 := reftest.F32s(tensor.Shape{1, 1, 2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)
	x44 := seq(1, 1, 4, 4)
	cases := []struct {
		name               string
		x                  *tensor.Tensor
		attrs              graph.Attrs
		roi, scales, sizes *tensor.Tensor
		shape              tensor.Shape
		want               []float32 // a prefix of the output when short
		tol                float64
	}{
		// Expected values are those of the ONNX backend tests of the same names.
		{name: "upsample_scales_nearest", x: x22, attrs: graph.Attrs{"mode": "nearest"}, scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 3),
			shape: tensor.Shape{1, 1, 4, 6}, want: []float32{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}},
		{name: "downsample_scales_nearest", x: x24, attrs: graph.Attrs{"mode": "nearest"}, scales: reftest.F32s(tensor.Shape{4}, 1, 1, 0.6, 0.6),
			shape: tensor.Shape{1, 1, 1, 2}, want: []float32{1, 3}},
		{name: "downsample_sizes_nearest", x: x24, attrs: graph.Attrs{"mode": "nearest"}, sizes: reftest.I64s(1, 1, 1, 3),
			shape: tensor.Shape{1, 1, 1, 3}, want: []float32{1, 2, 4}},
		{name: "upsample_scales_linear", x: x22, attrs: graph.Attrs{"mode": "linear"}, scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2),
			shape: tensor.Shape{1, 1, 4, 4}, want: []float32{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}},
		{name: "upsample_scales_linear_align_corners", x: x22, attrs: graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "align_corners"},
			scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2), shape: tensor.Shape{1, 1, 4, 4},
			want: []float32{1, 1.3333333, 1.6666667, 2, 1.6666666, 2, 2.3333333, 2.6666667, 2.3333333, 2.6666665, 3, 3.3333335, 3, 3.3333333, 3.6666667, 4}},
		{name: "downsample_scales_linear", x: x24, attrs: graph.Attrs{"mode": "linear"}, scales: reftest.F32s(tensor.Shape{4}, 1, 1, 0.6, 0.6),
			shape: tensor.Shape{1, 1, 1, 2}, want: []float32{2.6666665, 4.3333331}},
		{name: "downsample_scales_linear_align_corners", x: x24, attrs: graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "align_corners"},
			scales: reftest.F32s(tensor.Shape{4}, 1, 1, 0.6, 0.6), shape: tensor.Shape{1, 1, 1, 2}, want: []float32{1, 3.142857}},
		{name: "downsample_sizes_nearest_tf_half_pixel_for_nn", x: x44, attrs: graph.Attrs{"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
			sizes: reftest.I64s(1, 1, 3, 2), shape: tensor.Shape{1, 1, 3, 2}, want: []float32{6, 8, 10, 12, 14, 16}},
		{name: "downsample_scales_linear_asymmetric", x: x24, attrs: graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
			scales: reftest.F32s(tensor.Shape{4}, 1, 1, 0.6, 0.6), shape: tensor.Shape{1, 1, 1, 2}, want: []float32{1, 2.6666665}},
		{name: "upsample_scales_cubic", x: x44, attrs: graph.Attrs{"mode": "cubic"}, scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2),
			shape: tensor.Shape{1, 1, 8, 8}, want: []float32{0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375}},
		{name: "upsample_scales_cubic_align_corners", x: x44, attrs: graph.Attrs{"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
			scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2), shape: tensor.Shape{1, 1, 8, 8},
			want: []float32{1, 1.34110787, 1.80029155, 2.32944606, 2.67055394, 3.19970845, 3.65889213, 4}},
		{name: "upsample_scales_cubic_A_n0p5_exclude_outside", x: x44, attrs: graph.Attrs{"mode": "cubic", "cubic_coeff_a": float32(-0.5), "exclude_outside": int64(1)},
			scales: reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2), shape: tensor.Shape{1, 1, 8, 8},
			want: []float32{0.55882353, 0.81494204, 1.35698249, 1.89705882, 2.39705882, 2.93713516, 3.47917561, 3.73529412}},
		{name: "tf_crop_and_resize", x: x44, attrs: graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
			roi: reftest.F32s(tensor.Shape{8}, 0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8), sizes: reftest.I64s(1, 1, 3, 3), shape: tensor.Shape{1, 1, 3, 3},
			want: []float32{7.6000004, 7.9, 8.2, 8.8, 9.1, 9.400001, 10, 10.3, 10.6}},
		{name: "tf_crop_and_resize_extrapolation_value", x: x44, attrs: graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": float32(10)},
			roi: reftest.F32s(tensor.Shape{8}, 0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7), sizes: reftest.I64s(1, 1, 3, 3), shape: tensor.Shape{1, 1, 3, 3},
			want: []float32{7.6000004, 10, 10, 12.400001, 10, 10, 10, 10, 10}},
		{name: "upsample_sizes_nearest_not_larger", x: x22, attrs: graph.Attrs{"mode": "nearest", "axes": []int64{2, 3}, "keep_aspect_ratio_policy": "not_larger"},
			sizes: reftest.I64s(7, 8), shape: tensor.Shape{1, 1, 7, 7}, want: []float32{1, 1, 1, 1, 2, 2, 2}},
		{name: "upsample_sizes_nearest_ceil_half_pixel", x: x44, attrs: graph.Attrs{"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "half_pixel"},
			sizes: reftest.I64s(1, 1, 8, 8), shape: tensor.Shape{1, 1, 8, 8}, want: []float32{1, 2, 2, 3, 3, 4, 4, 4}},
		{name: "upsample_sizes_nearest_floor_align_corners", x: x44, attrs: graph.Attrs{"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "align_corners"},
			sizes: reftest.I64s(1, 1, 8, 8), shape: tensor.Shape{1, 1, 8, 8}, want: []float32{1, 1, 1, 2, 2, 3, 3, 4}},
		{name: "upsample_sizes_nearest_round_prefer_ceil_asymmetric", x: x44, attrs: graph.Attrs{"mode": "nearest", "nearest_mode": "round_prefer_ceil", "coordinate_transformation_mode": "asymmetric"},
			sizes: reftest.I64s(1, 1, 8, 8), shape: tensor.Shape{1, 1, 8, 8}, want: []float32{1, 2, 2, 3, 3, 4, 4, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := nnRun(t, "Resize", tc.attrs, 1, tc.x, tc.roi, tc.scales, tc.sizes)[0]
			require.Equal(t, tc.shape, got.Shape())
			nnClose(t, tc.want, got.F32()[:len(tc.want)], 1e-5)
		})
	}
}

// TestResizeBilinearNaive checks n-linear interpolation of random data on
// a 3-D resize against a direct trilinear formula (half_pixel).
func TestResizeBilinearNaive(t *testing.T) {
	x := reftest.RandF32(reftest.RNG(41), 1, 3, 4, 5)
	scales := reftest.F32s(tensor.Shape{4}, 1, 1.5, 1.75, 0.6)
	got := nnRun(t, "Resize", graph.Attrs{"mode": "linear"}, 1, x, nil, scales, nil)[0]
	xs := x.Shape()
	ys := tensor.Shape{1, 4, 7, 3}
	require.Equal(t, ys, got.Shape())
	sc := []float64{1, 1.5, 1.75, 0.6}
	reftest.ForIndex(ys, func(o []int64) {
		lo := make([]int64, 4)
		hi := make([]int64, 4)
		fr := make([]float64, 4)
		for d := 0; d < 4; d++ {
			c := (float64(o[d])+0.5)/sc[d] - 0.5
			c = math.Max(0, math.Min(c, float64(xs[d]-1)))
			f := math.Floor(c)
			lo[d], hi[d], fr[d] = int64(f), min(int64(f)+1, xs[d]-1), c-f
		}
		want := 0.0
		for corner := 0; corner < 16; corner++ {
			w := 1.0
			idx := make([]int64, 4)
			for d := 0; d < 4; d++ {
				if corner>>d&1 == 1 {
					idx[d], w = hi[d], w*fr[d]
				} else {
					idx[d], w = lo[d], w*(1-fr[d])
				}
			}
			want += w * float64(x.F32()[reftest.Flat(xs, idx)])
		}
		assert.InDelta(t, want, got.F32()[reftest.Flat(ys, o)], 1e-5)
	})
}

func TestResizeErrors(t *testing.T) {
	x := seq(1, 1, 2, 2)
	_, err := nnRunErr("Resize", nil, 1, x, nil, nil, nil)
	assert.ErrorContains(t, err, "scales and sizes")
	_, err = nnRunErr("Resize", graph.Attrs{"mode": "area"}, 1, x, nil, reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2), nil)
	assert.ErrorContains(t, err, "area")
	_, err = nnRunErr("Resize", graph.Attrs{"antialias": int64(1)}, 1, x, nil, reftest.F32s(tensor.Shape{4}, 1, 1, 2, 2), nil)
	assert.ErrorContains(t, err, "antialias")
}

// TestResizeIntegers checks Resize on integer tensors against hand-derived
// values: interpolated in f64 and truncated toward zero, as ONNX's
// reference (op_resize.py: the f64 result's astype(X.dtype)) does; nearest
// copies 64-bit values beyond f32's 2^24 exactly.
func TestResizeIntegers(t *testing.T) {
	const big = int64(1)<<53 - 1
	row := tensor.Shape{1, 1, 1, 2}
	x8 := func(v ...uint8) *tensor.Tensor { x, err := tensor.From(row, v); require.NoError(t, err); return x }
	x64 := func(v ...int64) *tensor.Tensor { x, err := tensor.From(row, v); require.NoError(t, err); return x }
	double := reftest.F32s(tensor.Shape{4}, 1, 1, 1, 2)
	cases := []struct {
		name string
		x    *tensor.Tensor
		mode string
		want any
	}{
		// half_pixel, scale 2: sources -0.25 (clamped to 0), 0.25, 0.75 and
		// 1.25 (clamped to 1); nearest rounds them to 0, 0, 1, 1.
		{name: "u8 nearest", x: x8(7, 250), mode: "nearest", want: []uint8{7, 7, 250, 250}},
		// 0, 255/4 = 63.75, 3*255/4 = 191.25, 255.
		{name: "u8 linear", x: x8(0, 255), mode: "linear", want: []uint8{0, 63, 191, 255}},
		{name: "i64 nearest beyond 2^24", x: x64(big, -big), mode: "nearest", want: []int64{big, big, -big, -big}},
		// -5 + 7/4 = -3.25 truncates to -3 (not floor's -4), -5 + 21/4 = 0.25 to 0.
		{name: "i64 linear negative", x: x64(-5, 2), mode: "linear", want: []int64{-5, -3, 0, 2}},
		// 2^40 + 4/4, 2^40 + 12/4: exact in f64, not in f32.
		{name: "i64 linear beyond 2^24", x: x64(1<<40, 1<<40+4), mode: "linear", want: []int64{1 << 40, 1<<40 + 1, 1<<40 + 3, 1<<40 + 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := nnRun(t, "Resize", graph.Attrs{"mode": tc.mode}, 1, tc.x, nil, double, nil)[0]
			require.Equal(t, tc.x.Type(), got.Type())
			require.Equal(t, tensor.Shape{1, 1, 1, 4}, got.Shape())
			switch w := tc.want.(type) {
			case []uint8:
				assert.Equal(t, w, got.U8())
			case []int64:
				assert.Equal(t, w, got.I64())
			}
		})
	}
}
