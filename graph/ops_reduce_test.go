package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

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
