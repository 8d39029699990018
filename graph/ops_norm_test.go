package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

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
