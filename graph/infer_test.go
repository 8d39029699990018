package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

func TestInferOps(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	i64 := func(dims ...any) Output { return parT(tensor.I64, shp(dims...)) }
	I64, Bool := []tensor.ElementType{tensor.I64}, []tensor.ElementType{tensor.Bool}
	runInferCases(t, []inferCase{
		{name: "argmax keepdims", op: "ArgMax", attrs: Attrs{"axis": int64(1)}, inputs: ins(x("N", 3, 4)), want: []PartialShape{shp("N", 1, 4)}, types: I64},
		{name: "argmin drop axis", op: "ArgMin", attrs: Attrs{"axis": int64(-1), "keepdims": int64(0)}, inputs: ins(x(2, 3)), want: []PartialShape{shp(2)}, types: I64},
		{name: "argmax bad axis", op: "ArgMax", attrs: Attrs{"axis": int64(2)}, inputs: ins(x(2, 3)), err: "axis 2 is out of range"},
		{name: "reduce l2", op: "ReduceL2", inputs: ins(x(2, 3, 4), ci64(1)), want: []PartialShape{shp(2, 1, 4)}},
		{name: "size", op: "Size", inputs: ins(x("N", 3)), want: []PartialShape{shp()}, types: I64},
		{name: "gather elements", op: "GatherElements", attrs: Attrs{"axis": int64(1)}, inputs: ins(x(2, 5), i64(2, 3)), want: []PartialShape{shp(2, 3)}},
		{name: "gather elements rank", op: "GatherElements", inputs: ins(x(2, 5), i64(2)), err: "different ranks"},
		{name: "gather nd", op: "GatherND", inputs: ins(x(2, 3, 4), i64(5, 2)), want: []PartialShape{shp(5, 4)}},
		{name: "gather nd batch", op: "GatherND", attrs: Attrs{"batch_dims": int64(1)}, inputs: ins(x(2, 2, 2), i64(2, 1)), want: []PartialShape{shp(2, 2)}},
		{name: "scatter nd", op: "ScatterND", inputs: ins(x(8), i64(4, 1), x(4)), want: []PartialShape{shp(8)}},
		{name: "scatter elements bad reduction", op: "ScatterElements", attrs: Attrs{"reduction": "avg"}, inputs: ins(x(8), i64(4), x(4)), err: "reduction"},
		{name: "trilu", op: "Trilu", inputs: ins(x(2, 3, 3), ci64(1)), want: []PartialShape{shp(2, 3, 3)}},
		{name: "trilu rank 1", op: "Trilu", inputs: ins(x(3)), err: "rank 1"},
		{name: "mod ints", op: "Mod", inputs: ins(i64(2, 1), i64(3)), want: []PartialShape{shp(2, 3)}, types: I64},
		{name: "mod floats need fmod", op: "Mod", inputs: ins(x(2), x(2)), err: "fmod=1"},
		{name: "castlike", op: "CastLike", inputs: ins(x(2, 3), i64(1)), want: []PartialShape{shp(2, 3)}, types: I64},
		{name: "isinf", op: "IsInf", inputs: ins(x(4)), want: []PartialShape{shp(4)}, types: Bool},
		{name: "isnan ints", op: "IsNaN", inputs: ins(i64(4)), err: "floating-point"},
		{name: "acosh", op: "Acosh", inputs: ins(x(4)), want: []PartialShape{shp(4)}},
		{name: "cumsum", op: "CumSum", inputs: ins(x(2, 3), ci64(1)), want: []PartialShape{shp(2, 3)}},
		{name: "onehot", op: "OneHot", attrs: Attrs{"axis": int64(1)}, inputs: ins(i64(2, 3), ci64(5), x(2)), want: []PartialShape{shp(2, 5, 3)}, types: []tensor.ElementType{tensor.F32}},
		{name: "onehot runtime depth", op: "OneHot", inputs: ins(i64(2), i64(1), x(2)), want: []PartialShape{shp(2, -1)}, types: []tensor.ElementType{tensor.F32}},
		{name: "depth to space", op: "DepthToSpace", attrs: Attrs{"blocksize": int64(2)}, inputs: ins(x(1, 8, 2, 3)), want: []PartialShape{shp(1, 2, 4, 6)}},
		{name: "depth to space indivisible", op: "DepthToSpace", attrs: Attrs{"blocksize": int64(2)}, inputs: ins(x(1, 6, 2, 3)), err: "not divisible"},
		{name: "space to depth", op: "SpaceToDepth", attrs: Attrs{"blocksize": int64(2)}, inputs: ins(x("N", 3, 4, 6)), want: []PartialShape{shp("N", 12, 2, 3)}},
		{name: "topk", op: "TopK", outs: 2, attrs: Attrs{"axis": int64(1)}, inputs: ins(x(3, 4), ci64(2)), want: []PartialShape{shp(3, 2), shp(3, 2)},
			types: []tensor.ElementType{tensor.F32, tensor.I64}},
		{name: "topk k too big", op: "TopK", outs: 2, inputs: ins(x(3, 4), ci64(5)), err: "K=5"},
		{name: "eyelike dtype", op: "EyeLike", attrs: Attrs{"dtype": int64(tensor.I32)}, inputs: ins(x(2, 3)), want: []PartialShape{shp(2, 3)},
			types: []tensor.ElementType{tensor.I32}},
	})
}
