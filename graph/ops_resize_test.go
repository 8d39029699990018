package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResizeCoordinate(t *testing.T) {
	cases := []struct {
		name         string
		ctm          string
		x            float64
		in, out      int64
		scale        float64
		roiS, roiE   float64
		want         float64
		wantOutside  bool
		wantErrMatch string
	}{
		{name: "half_pixel", ctm: "half_pixel", x: 1, in: 2, out: 4, scale: 2, want: 0.25},
		{name: "asymmetric", ctm: "asymmetric", x: 3, in: 2, out: 4, scale: 2, want: 1.5},
		{name: "align_corners", ctm: "align_corners", x: 3, in: 2, out: 4, scale: 2, want: 1},
		{name: "pytorch one output", ctm: "pytorch_half_pixel", x: 0, in: 4, out: 1, scale: 0.25, want: 0},
		{name: "crop inside", ctm: "tf_crop_and_resize", x: 1, in: 5, out: 3, scale: 0.6, roiS: 0, roiE: 1, want: 2},
		{name: "crop outside", ctm: "tf_crop_and_resize", x: 2, in: 5, out: 3, scale: 0.6, roiS: 0.5, roiE: 1.5, want: 6, wantOutside: true},
		{name: "unknown", ctm: "nope", in: 2, out: 4, scale: 2, wantErrMatch: `coordinate_transformation_mode "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, outside, err := ResizeCoordinate(c.ctm, c.x, c.in, c.out, c.scale, c.roiS, c.roiE)
			if c.wantErrMatch != "" {
				require.ErrorContains(t, err, c.wantErrMatch)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, c.want, got, 1e-12)
			assert.Equal(t, c.wantOutside, outside)
		})
	}
}

func TestResizeNearest(t *testing.T) {
	cases := []struct {
		mode string
		x    float64
		want float64
	}{
		{"round_prefer_floor", 1.5, 1},
		{"round_prefer_floor", 1.6, 2},
		{"round_prefer_ceil", 1.5, 2},
		{"round_prefer_ceil", 1.4, 1},
		{"floor", 1.9, 1},
		{"ceil", 1.1, 2},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			got, err := ResizeNearest(c.mode, c.x)
			require.NoError(t, err)
			assert.InDelta(t, c.want, got, 0)
		})
	}
	_, err := ResizeNearest("nearest", 1)
	assert.ErrorContains(t, err, `nearest_mode "nearest"`)
}

func TestResizeAxis(t *testing.T) {
	n := NewNode("Resize", "r", nil, Attrs{"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, 1)
	s, err := ResizeAxis(n, 2, 4, 2, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Taps)
	assert.Equal(t, []int64{0, 1, 0, 1, 1, 1, 1, 1}, s.Index)
	// Past the last index the coordinate is clamped to it and its two taps
	// (the same index) weigh 1/2 each, as in ONNX Runtime.
	assert.InDeltaSlice(t, []float32{1, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, s.Weight, 0)
	assert.Nil(t, s.Outside)

	c := ResizeCubicCoeffs(0, -0.75)
	assert.InDeltaSlice(t, []float64{0, 1, 0, 0}, c[:], 1e-12)

	bad := NewNode("Resize", "r", nil, Attrs{"mode": "area"}, 1)
	_, err = ResizeAxis(bad, 2, 4, 2, 0, 0)
	assert.ErrorContains(t, err, `mode "area"`)
}

func TestInferResize(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "scales", op: "Resize", inputs: ins(x(1, 3, 10, 15), Output{}, cf32(1, 1, 2, 0.5)), want: []PartialShape{shp(1, 3, 20, 7)}},
		{name: "scales dynamic batch", op: "Resize", inputs: ins(x("N", 3, 10, 10), Output{}, cf32(1, 1, 1.5, 1.5)), want: []PartialShape{shp("N", 3, 15, 15)}},
		{name: "sizes", op: "Resize", inputs: ins(x("N", 3, 10, 10), Output{}, Output{}, ci64(1, 3, 32, 48)), want: []PartialShape{shp(1, 3, 32, 48)}},
		{name: "empty scales old style", op: "Resize", inputs: ins(x(1, 3, 10, 10), cf32(), cf32(), ci64(1, 3, 5, 6)), want: []PartialShape{shp(1, 3, 5, 6)}},
		{name: "axes", op: "Resize", attrs: Attrs{"axes": []int64{-2, -1}}, inputs: ins(x("N", 3, 10, 10), Output{}, cf32(2, 3)), want: []PartialShape{shp("N", 3, 20, 30)}},
		{name: "not_larger", op: "Resize", attrs: Attrs{"axes": []int64{2, 3}, "keep_aspect_ratio_policy": "not_larger"},
			inputs: ins(x(1, 3, 10, 20), Output{}, Output{}, ci64(30, 30)), want: []PartialShape{shp(1, 3, 15, 30)}},
		{name: "not_smaller", op: "Resize", attrs: Attrs{"axes": []int64{2, 3}, "keep_aspect_ratio_policy": "not_smaller"},
			inputs: ins(x(1, 3, 10, 20), Output{}, Output{}, ci64(30, 30)), want: []PartialShape{shp(1, 3, 30, 60)}},
		{name: "runtime scales", op: "Resize", inputs: ins(x("N", 3, 10, 10), Output{}, x(4)), want: []PartialShape{shp(-1, -1, -1, -1)}},
		{name: "neither", op: "Resize", inputs: ins(x(1, 3, 10, 10)), err: "one of scales and sizes is required"},
		{name: "both", op: "Resize", inputs: ins(x(1, 3, 10, 10), Output{}, cf32(1, 1, 2, 2), ci64(1, 3, 5, 5)), err: "only one of scales and sizes"},
		{name: "scales count", op: "Resize", inputs: ins(x(1, 3, 10, 10), Output{}, cf32(2, 2)), err: "scales has 2 entries for 4 axes"},
		{name: "bad coordinate mode", op: "Resize", attrs: Attrs{"coordinate_transformation_mode": "corners"}, inputs: ins(x(1, 3, 10, 10), Output{}, cf32(1, 1, 2, 2)), err: `coordinate_transformation_mode "corners"`},
		{name: "bad nearest mode", op: "Resize", attrs: Attrs{"nearest_mode": "nearest"}, inputs: ins(x(1, 3, 10, 10), Output{}, cf32(1, 1, 2, 2)), err: `nearest_mode "nearest"`},
		{name: "bad policy", op: "Resize", attrs: Attrs{"keep_aspect_ratio_policy": "fit"}, inputs: ins(x(1, 3, 10, 10), Output{}, cf32(1, 1, 2, 2)), err: `keep_aspect_ratio_policy "fit"`},
		{name: "runtime sizes", op: "Resize", attrs: Attrs{"axes": []int64{2, 3}}, inputs: ins(x("N", 3, 10, 10), Output{}, Output{}, parT(tensor.I64, shp(2))), want: []PartialShape{shp("N", 3, -1, -1)}},
		{name: "tf_crop_and_resize roi", op: "Resize", attrs: Attrs{"coordinate_transformation_mode": "tf_crop_and_resize", "mode": "linear"},
			inputs: ins(x(1, 3, 10, 10), cf32(0, 0, 0, 0, 1, 1, 1, 1), cf32(1, 1, 0.5, 0.5)), want: []PartialShape{shp(1, 3, 5, 5)}},
		{name: "bad mode", op: "Resize", attrs: Attrs{"mode": "area"}, inputs: ins(x(1, 3, 10, 10), Output{}, cf32(1, 1, 2, 2)), err: `mode "area"`},
	})
}
