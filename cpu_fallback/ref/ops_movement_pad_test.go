package ref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestPad(t *testing.T) {
	x, _ := tensor.FromF32(tensor.Shape{3, 2}, []float32{1, 1.2, 2.3, 3.4, 4.5, 5.7})
	cases := []struct {
		name  string
		mode  string
		pads  []int64
		cval  *tensor.Tensor
		axes  []int64
		shape tensor.Shape
		want  []float32
	}{
		// The ONNX Pad operator examples.
		{name: "reflect", mode: "reflect", pads: []int64{0, 2, 0, 0}, shape: tensor.Shape{3, 4},
			want: []float32{1, 1.2, 1, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7}},
		{name: "edge", mode: "edge", pads: []int64{0, 2, 0, 0}, shape: tensor.Shape{3, 4},
			want: []float32{1, 1, 1, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7}},
		{name: "wrap", mode: "wrap", pads: []int64{2, 1, 1, 1}, shape: tensor.Shape{6, 4},
			want: []float32{3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1, 1.2, 1, 3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1, 1.2, 1}},
		{name: "constant", mode: "constant", pads: []int64{1, 0, 0, 1}, cval: tensor.Scalar(9), shape: tensor.Shape{4, 3},
			want: []float32{9, 9, 9, 1, 1.2, 9, 2.3, 3.4, 9, 4.5, 5.7, 9}},
		{name: "constant_default_zero_axes", mode: "constant", pads: []int64{1, 1}, axes: []int64{-1}, shape: tensor.Shape{3, 4},
			want: []float32{0, 1, 1.2, 0, 0, 2.3, 3.4, 0, 0, 4.5, 5.7, 0}},
		{name: "negative_crops", mode: "constant", pads: []int64{-1, 0, 0, -1}, shape: tensor.Shape{2, 1},
			want: []float32{2.3, 4.5}},
		{name: "reflect_rows", mode: "reflect", pads: []int64{2, 0, 2, 0}, shape: tensor.Shape{7, 2},
			want: []float32{4.5, 5.7, 2.3, 3.4, 1, 1.2, 2.3, 3.4, 4.5, 5.7, 2.3, 3.4, 1, 1.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pads, _ := tensor.FromI64(tensor.Shape{int64(len(tc.pads))}, tc.pads)
			in := []*tensor.Tensor{x, pads, tc.cval}
			if tc.axes != nil {
				axes, _ := tensor.FromI64(tensor.Shape{int64(len(tc.axes))}, tc.axes)
				in = append(in, axes)
			}
			got := nnRun(t, "Pad", graph.Attrs{"mode": tc.mode}, 1, in...)[0]
			require.Equal(t, tc.shape, got.Shape())
			nnClose(t, tc.want, got.F32(), 1e-7)
		})
	}
}

func TestPadIntegerAndErrors(t *testing.T) {
	x, _ := tensor.FromI64(tensor.Shape{2, 2}, []int64{1, 2, 3, 4})
	pads, _ := tensor.FromI64(tensor.Shape{4}, []int64{0, 1, 1, 0})
	cv, _ := tensor.FromI64(tensor.Shape{}, []int64{-7})
	got := nnRun(t, "Pad", nil, 1, x, pads, cv)[0]
	require.Equal(t, tensor.Shape{3, 3}, got.Shape())
	assert.Equal(t, []int64{-7, 1, 2, -7, 3, 4, -7, -7, -7}, got.I64())

	bad, _ := tensor.FromI64(tensor.Shape{3}, []int64{0, 1, 1})
	_, err := nnRunErr("Pad", nil, 1, x, bad)
	assert.ErrorContains(t, err, "pads")
	_, err = nnRunErr("Pad", graph.Attrs{"mode": "mirror"}, 1, x, pads)
	assert.ErrorContains(t, err, "mirror")
}
