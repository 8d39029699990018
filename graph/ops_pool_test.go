package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

func TestInferPool(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	k2 := []int64{2, 2}
	runInferCases(t, []inferCase{
		{name: "max 2x2", op: "MaxPool", attrs: Attrs{"kernel_shape": k2, "strides": k2}, inputs: ins(x(1, 3, 8, 8)), want: []PartialShape{shp(1, 3, 4, 4)}},
		{name: "max indices", op: "MaxPool", outs: 2, attrs: Attrs{"kernel_shape": k2, "strides": k2}, inputs: ins(x("N", 3, 8, 9)),
			want: []PartialShape{shp("N", 3, 4, 4), shp("N", 3, 4, 4)}, types: []tensor.ElementType{tensor.F32, tensor.I64}},
		{name: "ceil mode", op: "MaxPool", attrs: Attrs{"kernel_shape": k2, "strides": k2, "ceil_mode": int64(1)}, inputs: ins(x(1, 3, 9, 9)), want: []PartialShape{shp(1, 3, 5, 5)}},
		{name: "ceil mode last window in padding dropped", op: "MaxPool",
			attrs:  Attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "pads": []int64{1, 1}, "ceil_mode": int64(1)},
			inputs: ins(x(1, 1, 5)), want: []PartialShape{shp(1, 1, 3)}},
		{name: "ceil mode window in begin padding kept", op: "MaxPool",
			attrs:  Attrs{"kernel_shape": []int64{3}, "strides": []int64{2}, "pads": []int64{1, 1}, "ceil_mode": int64(1)},
			inputs: ins(x(1, 1, 4)), want: []PartialShape{shp(1, 1, 3)}},
		{name: "pads dilations", op: "MaxPool", attrs: Attrs{"kernel_shape": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}, "dilations": []int64{2, 2}}, inputs: ins(x(1, 3, 8, 8)), want: []PartialShape{shp(1, 3, 6, 6)}},
		{name: "same upper", op: "MaxPool", attrs: Attrs{"kernel_shape": []int64{3, 3}, "strides": k2, "auto_pad": "SAME_UPPER"}, inputs: ins(x(1, 3, 7, 8)), want: []PartialShape{shp(1, 3, 4, 4)}},
		{name: "avg", op: "AveragePool", attrs: Attrs{"kernel_shape": []int64{3, 3}, "count_include_pad": int64(1), "pads": []int64{1, 1, 1, 1}}, inputs: ins(x(1, 3, 8, 8)), want: []PartialShape{shp(1, 3, 8, 8)}},
		{name: "avg 1d", op: "AveragePool", attrs: Attrs{"kernel_shape": []int64{2}}, inputs: ins(x(1, 3, 8)), want: []PartialShape{shp(1, 3, 7)}},
		{name: "unknown rank", op: "AveragePool", attrs: Attrs{"kernel_shape": k2}, inputs: ins(par(DynamicRank)), want: []PartialShape{shp(-1, -1, -1, -1)}},
		{name: "avg two outputs", op: "AveragePool", outs: 2, attrs: Attrs{"kernel_shape": k2}, inputs: ins(x(1, 3, 8, 8)), err: "has 2 outputs"},
		{name: "pad as large as the window", op: "AveragePool", attrs: Attrs{"kernel_shape": k2, "pads": []int64{0, 0, 2, 0}}, inputs: ins(x(1, 3, 8, 8)),
			err: "each pad must be smaller than kernel_shape"},
		{name: "max pad past the window", op: "MaxPool", attrs: Attrs{"kernel_shape": []int64{3}, "pads": []int64{3, 0}}, inputs: ins(x(1, 3, 8)),
			err: "each pad must be smaller than kernel_shape"},
		{name: "missing kernel", op: "MaxPool", inputs: ins(x(1, 3, 8, 8)), err: "kernel_shape is required"},
		{name: "rank mismatch", op: "MaxPool", attrs: Attrs{"kernel_shape": k2}, inputs: ins(x(1, 3, 8)), err: "needs rank 4"},
		{name: "global avg", op: "GlobalAveragePool", inputs: ins(x("N", 3, "H", "W")), want: []PartialShape{shp("N", 3, 1, 1)}},
		{name: "global max 3d", op: "GlobalMaxPool", inputs: ins(x(2, 3, 4, 5, 6)), want: []PartialShape{shp(2, 3, 1, 1, 1)}},
		{name: "global rank", op: "GlobalMaxPool", inputs: ins(x(2, 3)), err: "want rank >= 3"},
	})
}
