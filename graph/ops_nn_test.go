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
		{name: "missing kernel", op: "MaxPool", inputs: ins(x(1, 3, 8, 8)), err: "kernel_shape is required"},
		{name: "rank mismatch", op: "MaxPool", attrs: Attrs{"kernel_shape": k2}, inputs: ins(x(1, 3, 8)), err: "needs rank 4"},
		{name: "global avg", op: "GlobalAveragePool", inputs: ins(x("N", 3, "H", "W")), want: []PartialShape{shp("N", 3, 1, 1)}},
		{name: "global max 3d", op: "GlobalMaxPool", inputs: ins(x(2, 3, 4, 5, 6)), want: []PartialShape{shp(2, 3, 1, 1, 1)}},
		{name: "global rank", op: "GlobalMaxPool", inputs: ins(x(2, 3)), err: "want rank >= 3"},
	})
}

func TestInferNorm(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "batchnorm", op: "BatchNormalization", inputs: ins(x("N", 3, 4, 4), x(3), x(3), x(3), x(3)), want: []PartialShape{shp("N", 3, 4, 4)}},
		{name: "batchnorm 2d", op: "BatchNormalization", inputs: ins(x(5, 3), x(3), x(3), x(3), x(3)), want: []PartialShape{shp(5, 3)}},
		{name: "batchnorm channels", op: "BatchNormalization", inputs: ins(x(1, 3, 4, 4), x(3), x(4), x(3), x(3)), err: "input 2 has shape [4], want [3]"},
		{name: "batchnorm training outputs", op: "BatchNormalization", outs: 3, inputs: ins(x(1, 3, 4, 4), x(3), x(3), x(3), x(3)), err: "has 3 outputs, want 1"},
		{name: "instancenorm", op: "InstanceNormalization", inputs: ins(x(2, 3, 5), x(3), x(3)), want: []PartialShape{shp(2, 3, 5)}},
		{name: "instancenorm channels", op: "InstanceNormalization", inputs: ins(x(2, 3, 5), x(2), x(3)), err: "input 1 has shape [2]"},
		{name: "layernorm", op: "LayerNormalization", inputs: ins(x("B", "S", 64), x(64), x(64)), want: []PartialShape{shp("B", "S", 64)}},
		{name: "layernorm stats", op: "LayerNormalization", outs: 3, attrs: Attrs{"axis": int64(1)}, inputs: ins(x("B", 8, 64), x(8, 64)),
			want: []PartialShape{shp("B", 8, 64), shp("B", 1, 1), shp("B", 1, 1)}, types: []tensor.ElementType{tensor.F32, tensor.F32, tensor.F32}},
		{name: "layernorm f16 stash", op: "LayerNormalization", outs: 2, inputs: ins(parT(tensor.F16, shp(2, 4)), parT(tensor.F16, shp(4))),
			want: []PartialShape{shp(2, 4), shp(2, 1)}, types: []tensor.ElementType{tensor.F16, tensor.F32}},
		{name: "layernorm bad scale", op: "LayerNormalization", inputs: ins(x(2, 4), x(5)), err: "scale/bias shape [5] cannot be broadcast to [4]"},
		{name: "layernorm axis", op: "LayerNormalization", attrs: Attrs{"axis": int64(3)}, inputs: ins(x(2, 4), x(4)), err: "axis 3 is out of range"},
	})
}

func TestInferMatMulGemm(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "2d", op: "MatMul", inputs: ins(x(2, 3), x(3, 4)), want: []PartialShape{shp(2, 4)}},
		{name: "batched broadcast", op: "MatMul", inputs: ins(x("B", 1, 5, 3), x(7, 3, 4)), want: []PartialShape{shp("B", 7, 5, 4)}},
		{name: "vec mat", op: "MatMul", inputs: ins(x(3), x(2, 3, 4)), want: []PartialShape{shp(2, 4)}},
		{name: "mat vec", op: "MatMul", inputs: ins(x(2, 5, 3), x(3)), want: []PartialShape{shp(2, 5)}},
		{name: "vec vec", op: "MatMul", inputs: ins(x(3), x(3)), want: []PartialShape{shp()}},
		{name: "dynamic k", op: "MatMul", inputs: ins(x("S", "K"), x(3, 4)), want: []PartialShape{shp("S", 4)}},
		{name: "unknown rank", op: "MatMul", inputs: ins(par(DynamicRank), x(3, 4)), want: []PartialShape{DynamicRank}},
		{name: "inner mismatch", op: "MatMul", inputs: ins(x(2, 3), x(4, 5)), err: "inner dimensions 3 and 4 differ"},
		{name: "batch mismatch", op: "MatMul", inputs: ins(x(2, 2, 3), x(5, 3, 5)), err: "batch dimensions"},
		{name: "scalar", op: "MatMul", inputs: ins(x(), x(3)), err: "rank >= 1"},
		{name: "types", op: "MatMul", inputs: ins(x(2, 3), parT(tensor.F16, shp(3, 4))), err: "element type f16"},
		{name: "gemm", op: "Gemm", inputs: ins(x(2, 3), x(3, 4), x(4)), want: []PartialShape{shp(2, 4)}},
		{name: "gemm transposes", op: "Gemm", attrs: Attrs{"transA": int64(1), "transB": int64(1)}, inputs: ins(x(3, "M"), x(4, 3)), want: []PartialShape{shp("M", 4)}},
		{name: "gemm no C", op: "Gemm", inputs: ins(x(2, 3), x(3, 4)), want: []PartialShape{shp(2, 4)}},
		{name: "gemm bad C", op: "Gemm", inputs: ins(x(2, 3), x(3, 4), x(3)), err: "C shape [3] cannot be broadcast to [2,4]"},
		{name: "gemm inner", op: "Gemm", attrs: Attrs{"transB": int64(1)}, inputs: ins(x(2, 3), x(3, 4)), err: "inner dimensions 3 and 4 differ"},
		{name: "gemm rank", op: "Gemm", inputs: ins(x(2, 3, 1), x(3, 4)), err: "want rank 2"},
	})
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

func TestInferReduce(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	var cases []inferCase
	for _, o := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"} {
		cases = append(cases,
			inferCase{name: o + "/axes keepdims", op: o, inputs: ins(x("N", 3, 4, 5), ci64(2, -1)), want: []PartialShape{shp("N", 3, 1, 1)}},
			inferCase{name: o + "/axes no keepdims", op: o, attrs: Attrs{"keepdims": int64(0)}, inputs: ins(x("N", 3, 4, 5), ci64(1)), want: []PartialShape{shp("N", 4, 5)}},
			inferCase{name: o + "/all", op: o, attrs: Attrs{"keepdims": int64(0)}, inputs: ins(x(2, 3)), want: []PartialShape{shp()}},
			inferCase{name: o + "/all keepdims", op: o, inputs: ins(x(2, 3)), want: []PartialShape{shp(1, 1)}},
			inferCase{name: o + "/noop", op: o, attrs: Attrs{"noop_with_empty_axes": int64(1)}, inputs: ins(x("N", 3), ci64()), want: []PartialShape{shp("N", 3)}},
			inferCase{name: o + "/runtime axes keepdims", op: o, inputs: ins(x(2, 3), parT(tensor.I64, shp(1))), want: []PartialShape{shp(-1, -1)}},
			inferCase{name: o + "/runtime axes", op: o, attrs: Attrs{"keepdims": int64(0)}, inputs: ins(x(2, 3), parT(tensor.I64, shp(1))), want: []PartialShape{DynamicRank}},
			inferCase{name: o + "/bad axis", op: o, inputs: ins(x(2, 3), ci64(2)), err: "axis 2 is out of range for rank 2"},
			inferCase{name: o + "/dup axis", op: o, inputs: ins(x(2, 3), ci64(1, -1)), err: "listed twice"},
		)
	}
	runInferCases(t, cases)
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
