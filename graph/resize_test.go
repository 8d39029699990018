package graph

import (
	"testing"

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
	assert.InDeltaSlice(t, []float32{1, 0, 0.5, 0.5, 1, 0, 0.5, 0.5}, s.Weight, 0)
	assert.Nil(t, s.Outside)

	c := ResizeCubicCoeffs(0, -0.75)
	assert.InDeltaSlice(t, []float64{0, 1, 0, 0}, c[:], 1e-12)

	bad := NewNode("Resize", "r", nil, Attrs{"mode": "area"}, 1)
	_, err = ResizeAxis(bad, 2, 4, 2, 0, 0)
	assert.ErrorContains(t, err, `mode "area"`)
}
