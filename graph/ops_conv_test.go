package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/tensor"
)

func TestInferConv(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "basic", op: "Conv", inputs: ins(x(1, 3, 32, 32), x(8, 3, 3, 3)), want: []PartialShape{shp(1, 8, 30, 30)}},
		{name: "pads strides", op: "Conv", attrs: Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}},
			inputs: ins(x(1, 3, 32, 32), x(8, 3, 3, 3), x(8)), want: []PartialShape{shp(1, 8, 16, 16)}},
		{name: "asymmetric pads", op: "Conv", attrs: Attrs{"pads": []int64{0, 1, 2, 3}},
			inputs: ins(x(1, 3, 10, 10), x(4, 3, 3, 3)), want: []PartialShape{shp(1, 4, 10, 12)}},
		{name: "dilations", op: "Conv", attrs: Attrs{"dilations": []int64{2, 2}},
			inputs: ins(x(1, 3, 10, 10), x(4, 3, 3, 3)), want: []PartialShape{shp(1, 4, 6, 6)}},
		{name: "group depthwise", op: "Conv", attrs: Attrs{"group": int64(16)},
			inputs: ins(x(2, 16, 8, 8), x(16, 1, 3, 3)), want: []PartialShape{shp(2, 16, 6, 6)}},
		{name: "same upper stride 2", op: "Conv", attrs: Attrs{"auto_pad": "SAME_UPPER", "strides": []int64{2, 2}},
			inputs: ins(x(1, 3, 15, 16), x(8, 3, 3, 3)), want: []PartialShape{shp(1, 8, 8, 8)}},
		{name: "same lower", op: "Conv", attrs: Attrs{"auto_pad": "SAME_LOWER"},
			inputs: ins(x(1, 3, 15, 16), x(8, 3, 4, 4)), want: []PartialShape{shp(1, 8, 15, 16)}},
		{name: "valid", op: "Conv", attrs: Attrs{"auto_pad": "VALID", "strides": []int64{2, 2}},
			inputs: ins(x(1, 3, 15, 16), x(8, 3, 3, 3)), want: []PartialShape{shp(1, 8, 7, 7)}},
		{name: "conv1d", op: "Conv", inputs: ins(x(1, 2, 10), x(4, 2, 5)), want: []PartialShape{shp(1, 4, 6)}},
		{name: "conv3d", op: "Conv", inputs: ins(x(1, 2, 5, 6, 7), x(4, 2, 1, 2, 3)), want: []PartialShape{shp(1, 4, 5, 5, 5)}},
		{name: "kernel_shape attr", op: "Conv", attrs: Attrs{"kernel_shape": []int64{3, 3}}, inputs: ins(x(1, 3, 8, 8), x(4, 3, 3, 3)), want: []PartialShape{shp(1, 4, 6, 6)}},
		{name: "dynamic batch and spatial", op: "Conv", inputs: ins(x("N", 3, "H", 32), x(8, 3, 3, 3)), want: []PartialShape{shp("N", 8, -1, 30)}},
		{name: "unknown input rank", op: "Conv", inputs: ins(par(DynamicRank), x(8, 3, 3, 3)), want: []PartialShape{shp(-1, 8, -1, -1)}},
		{name: "both unknown", op: "Conv", inputs: ins(par(DynamicRank), par(DynamicRank)), want: []PartialShape{DynamicRank}},
		{name: "channel mismatch", op: "Conv", inputs: ins(x(1, 4, 8, 8), x(8, 3, 3, 3)), err: "input has 4 channels but weights [8,3,3,3] with group 1 expect 3"},
		{name: "rank mismatch", op: "Conv", inputs: ins(x(1, 3, 8, 8), x(8, 3, 3)), err: "differ in rank"},
		{name: "rank too small", op: "Conv", inputs: ins(x(3, 8), x(8, 3)), err: "rank 2, want >= 3"},
		{name: "bias shape", op: "Conv", inputs: ins(x(1, 3, 8, 8), x(8, 3, 3, 3), x(7)), err: "bias has shape [7]"},
		{name: "type mismatch", op: "Conv", inputs: ins(x(1, 3, 8, 8), parT(tensor.F16, shp(8, 3, 3, 3))), err: "element type f16"},
		{name: "bad auto_pad", op: "Conv", attrs: Attrs{"auto_pad": "SAME"}, inputs: ins(x(1, 3, 8, 8), x(8, 3, 3, 3)), err: `auto_pad "SAME"`},
		{name: "bad strides length", op: "Conv", attrs: Attrs{"strides": []int64{1}}, inputs: ins(x(1, 3, 8, 8), x(8, 3, 3, 3)), err: "strides [1] has 1 entries, want 2"},
		{name: "too small", op: "Conv", inputs: ins(x(1, 3, 2, 2), x(8, 3, 3, 3)), err: "too small"},
		{name: "group divisibility", op: "Conv", attrs: Attrs{"group": int64(2)}, inputs: ins(x(1, 4, 8, 8), x(3, 2, 3, 3)), err: "not divisible by group 2"},
	})
}

func TestInferConvTranspose(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "stride 2", op: "ConvTranspose", attrs: Attrs{"strides": []int64{2, 2}},
			inputs: ins(x(1, 8, 4, 4), x(8, 3, 3, 3)), want: []PartialShape{shp(1, 3, 9, 9)}},
		{name: "pads output_padding", op: "ConvTranspose", attrs: Attrs{"strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}, "output_padding": []int64{1, 1}},
			inputs: ins(x(1, 8, 4, 4), x(8, 3, 3, 3)), want: []PartialShape{shp(1, 3, 8, 8)}},
		{name: "group", op: "ConvTranspose", attrs: Attrs{"group": int64(2)},
			inputs: ins(x(1, 4, 5, 5), x(4, 3, 2, 2), x(6)), want: []PartialShape{shp(1, 6, 6, 6)}},
		{name: "dilations", op: "ConvTranspose", attrs: Attrs{"dilations": []int64{2, 2}},
			inputs: ins(x(1, 4, 5, 5), x(4, 1, 3, 3)), want: []PartialShape{shp(1, 1, 9, 9)}},
		{name: "same upper", op: "ConvTranspose", attrs: Attrs{"auto_pad": "SAME_UPPER", "strides": []int64{2, 2}},
			inputs: ins(x(1, 4, 5, 7), x(4, 1, 3, 3)), want: []PartialShape{shp(1, 1, 10, 14)}},
		{name: "output_shape", op: "ConvTranspose", attrs: Attrs{"output_shape": []int64{10, 11}, "strides": []int64{2, 2}},
			inputs: ins(x(1, 4, 5, 5), x(4, 1, 3, 3)), want: []PartialShape{shp(1, 1, 10, 11)}},
		{name: "dynamic", op: "ConvTranspose", inputs: ins(x("N", 4, "H", 5), x(4, 2, 3, 3)), want: []PartialShape{shp("N", 2, -1, 7)}},
		{name: "channel mismatch", op: "ConvTranspose", inputs: ins(x(1, 5, 5, 5), x(4, 2, 3, 3)), err: "input has 5 channels"},
		{name: "output_padding length", op: "ConvTranspose", attrs: Attrs{"output_padding": []int64{1}}, inputs: ins(x(1, 4, 5, 5), x(4, 2, 3, 3)), err: "output_padding [1]"},
	})
}

func TestAutoPads(t *testing.T) {
	// 15 with stride 2 and kernel 3: output 8 needs 2 total pad.
	assert.Equal(t, []int64{1, 1}, AutoPads("SAME_UPPER", []int64{15}, []int64{3}, []int64{2}, nil, nil))
	// 16 with stride 2 kernel 3: output 8, total 1: UPPER puts it at the end.
	assert.Equal(t, []int64{0, 1}, AutoPads("SAME_UPPER", []int64{16}, []int64{3}, []int64{2}, nil, nil))
	assert.Equal(t, []int64{1, 0}, AutoPads("SAME_LOWER", []int64{16}, []int64{3}, []int64{2}, nil, nil))
	assert.Equal(t, []int64{0, 0}, AutoPads("VALID", []int64{16}, []int64{3}, []int64{2}, nil, []int64{4, 4}))
	assert.Equal(t, []int64{4, 5}, AutoPads("NOTSET", []int64{16}, []int64{3}, []int64{2}, nil, []int64{4, 5}))
}
