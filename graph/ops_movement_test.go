package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

func TestInferReshapeFamily(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	runInferCases(t, []inferCase{
		{name: "reshape static", op: "Reshape", inputs: ins(x(2, 3, 4), ci64(4, 6)), want: []PartialShape{shp(4, 6)}},
		{name: "reshape infer", op: "Reshape", inputs: ins(x(2, 3, 4), ci64(-1, 4)), want: []PartialShape{shp(6, 4)}},
		{name: "reshape zero copies", op: "Reshape", inputs: ins(x("N", 3, 4), ci64(0, -1)), want: []PartialShape{shp("N", 12)}},
		{name: "reshape zero copies static", op: "Reshape", inputs: ins(x(2, 3, 4), ci64(0, 0, 2, 2)), want: []PartialShape{shp(2, 3, 2, 2)}},
		{name: "reshape allowzero", op: "Reshape", attrs: Attrs{"allowzero": int64(1)}, inputs: ins(x(0, 3), ci64(3, 0)), want: []PartialShape{shp(3, 0)}},
		{name: "reshape dynamic -1", op: "Reshape", inputs: ins(x("N", 3, 4), ci64(-1, 4)), want: []PartialShape{shp(-1, 4)}},
		{name: "reshape runtime shape", op: "Reshape", inputs: ins(x(2, 3), parT(tensor.I64, shp(3))), want: []PartialShape{shp(-1, -1, -1)}},
		{name: "reshape runtime shape unknown len", op: "Reshape", inputs: ins(x(2, 3), parT(tensor.I64, shp(-1))), want: []PartialShape{DynamicRank}},
		{name: "reshape count mismatch", op: "Reshape", inputs: ins(x(2, 3), ci64(4, 2)), err: "cannot reshape [2,3] (6 elements) to [4,2]"},
		{name: "reshape indivisible", op: "Reshape", inputs: ins(x(2, 3), ci64(4, -1)), err: "cannot reshape [2,3]"},
		{name: "reshape two -1", op: "Reshape", inputs: ins(x(2, 3), ci64(-1, -1)), err: "more than one -1"},
		{name: "reshape copy past rank", op: "Reshape", inputs: ins(x(6), ci64(2, 0)), err: "copies dimension 1"},
		{name: "reshape float shape", op: "Reshape", inputs: ins(x(6), cf32(2, 3)), err: "shape input has element type f32"},
		{name: "flatten", op: "Flatten", inputs: ins(x(2, 3, 4, 5)), want: []PartialShape{shp(2, 60)}},
		{name: "flatten axis 0", op: "Flatten", attrs: Attrs{"axis": int64(0)}, inputs: ins(x(2, 3)), want: []PartialShape{shp(1, 6)}},
		{name: "flatten axis rank", op: "Flatten", attrs: Attrs{"axis": int64(2)}, inputs: ins(x(2, 3)), want: []PartialShape{shp(6, 1)}},
		{name: "flatten negative", op: "Flatten", attrs: Attrs{"axis": int64(-1)}, inputs: ins(x("N", 3, 4)), want: []PartialShape{shp(-1, 4)}},
		{name: "flatten keeps batch name", op: "Flatten", inputs: ins(x("N", 3, 4)), want: []PartialShape{shp("N", 12)}},
		{name: "flatten unknown", op: "Flatten", inputs: ins(par(DynamicRank)), want: []PartialShape{shp(-1, -1)}},
		{name: "flatten bad axis", op: "Flatten", attrs: Attrs{"axis": int64(3)}, inputs: ins(x(2, 3)), err: "axis 3 is out of range"},
		{name: "transpose default", op: "Transpose", inputs: ins(x("N", 3, 4)), want: []PartialShape{shp(4, 3, "N")}},
		{name: "transpose perm", op: "Transpose", attrs: Attrs{"perm": []int64{0, 2, 3, 1}}, inputs: ins(x("N", 3, "H", "W")), want: []PartialShape{shp("N", "H", "W", 3)}},
		{name: "transpose unknown rank", op: "Transpose", attrs: Attrs{"perm": []int64{1, 0}}, inputs: ins(par(DynamicRank)), want: []PartialShape{shp(-1, -1)}},
		{name: "transpose bad perm", op: "Transpose", attrs: Attrs{"perm": []int64{0, 0}}, inputs: ins(x(2, 3)), err: "not a permutation"},
		{name: "transpose perm length", op: "Transpose", attrs: Attrs{"perm": []int64{0}}, inputs: ins(x(2, 3)), err: "perm [0] has 1 entries for input rank 2"},
		{name: "squeeze axes", op: "Squeeze", inputs: ins(x("N", 1, 3, 1), ci64(1, -1)), want: []PartialShape{shp("N", 3)}},
		{name: "squeeze all", op: "Squeeze", inputs: ins(x(1, 3, 1)), want: []PartialShape{shp(3)}},
		{name: "squeeze all dynamic", op: "Squeeze", inputs: ins(x("N", 3, 1)), want: []PartialShape{DynamicRank}},
		{name: "squeeze dynamic axis", op: "Squeeze", inputs: ins(x("N", 3), ci64(0)), want: []PartialShape{shp(3)}},
		{name: "squeeze not one", op: "Squeeze", inputs: ins(x(2, 3), ci64(1)), err: "size is 3, not 1"},
		{name: "unsqueeze", op: "Unsqueeze", inputs: ins(x("N", 3), ci64(0, 3)), want: []PartialShape{shp(1, "N", 3, 1)}},
		{name: "unsqueeze negative", op: "Unsqueeze", inputs: ins(x(2, 3), ci64(-1)), want: []PartialShape{shp(2, 3, 1)}},
		{name: "unsqueeze scalar", op: "Unsqueeze", inputs: ins(x(), ci64(0)), want: []PartialShape{shp(1)}},
		{name: "unsqueeze runtime axes", op: "Unsqueeze", inputs: ins(x(2), parT(tensor.I64, shp(1))), want: []PartialShape{DynamicRank}},
		{name: "unsqueeze bad axis", op: "Unsqueeze", inputs: ins(x(2, 3), ci64(3)), err: "axis 3 is out of range for rank 3"},
		{name: "unsqueeze dup", op: "Unsqueeze", inputs: ins(x(2, 3), ci64(0, -4)), err: "listed twice"},
	})
}

func TestInferConcatSplit(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	ax := func(a int64) Attrs { return Attrs{"axis": a} }
	runInferCases(t, []inferCase{
		{name: "concat", op: "Concat", attrs: ax(1), inputs: ins(x("N", 2, 5), x("N", 3, 5), x(1, 4, 5)), want: []PartialShape{shp(1, 9, 5)}},
		{name: "concat negative axis", op: "Concat", attrs: ax(-1), inputs: ins(x("N", 2), x("N", 3)), want: []PartialShape{shp("N", 5)}},
		{name: "concat dynamic axis", op: "Concat", attrs: ax(0), inputs: ins(x("N", 2), x(3, 2)), want: []PartialShape{shp(-1, 2)}},
		{name: "concat one input keeps name", op: "Concat", attrs: ax(0), inputs: ins(x("N", 2)), want: []PartialShape{shp("N", 2)}},
		{name: "concat unknown rank input", op: "Concat", attrs: ax(0), inputs: ins(par(DynamicRank), x(3, 2)), want: []PartialShape{shp(-1, 2)}},
		{name: "concat mismatch", op: "Concat", attrs: ax(0), inputs: ins(x(2, 3), x(2, 4)), err: "input 1 has shape [2,4], which differs"},
		{name: "concat rank", op: "Concat", attrs: ax(0), inputs: ins(x(2, 3), x(2)), err: "rank"},
		{name: "concat types", op: "Concat", attrs: ax(0), inputs: ins(x(2), parT(tensor.I64, shp(2))), err: "element type i64"},
		{name: "concat no axis", op: "Concat", inputs: ins(x(2), x(2)), err: "axis is required"},
		{name: "split equal", op: "Split", outs: 3, attrs: ax(1), inputs: ins(x("N", 6)), want: []PartialShape{shp("N", 2), shp("N", 2), shp("N", 2)}},
		{name: "split num_outputs uneven", op: "Split", outs: 3, attrs: Attrs{"num_outputs": int64(3)}, inputs: ins(x(7, 2)), want: []PartialShape{shp(3, 2), shp(3, 2), shp(1, 2)}},
		{name: "split sizes", op: "Split", outs: 2, attrs: ax(-1), inputs: ins(x(2, 10), ci64(3, 7)), want: []PartialShape{shp(2, 3), shp(2, 7)}},
		{name: "split sizes dynamic axis", op: "Split", outs: 2, inputs: ins(x("N", 2), ci64(3, 7)), want: []PartialShape{shp(3, 2), shp(7, 2)}},
		{name: "split dynamic", op: "Split", outs: 2, inputs: ins(x("N", 2)), want: []PartialShape{shp(-1, 2), shp(-1, 2)}},
		{name: "split runtime sizes", op: "Split", outs: 2, inputs: ins(x(4, 2), parT(tensor.I64, shp(2))), want: []PartialShape{shp(-1, 2), shp(-1, 2)}},
		{name: "split sum", op: "Split", outs: 2, inputs: ins(x(4, 2), ci64(1, 2)), err: "sums to 3"},
		{name: "split uneven", op: "Split", outs: 3, inputs: ins(x(4, 2)), err: "cannot be split evenly"},
		{name: "split num_outputs mismatch", op: "Split", outs: 2, attrs: Attrs{"num_outputs": int64(3)}, inputs: ins(x(6)), err: "num_outputs is 3 but the node has 2 outputs"},
	})
}

func TestInferSliceGather(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	const big = int64(1) << 62
	runInferCases(t, []inferCase{
		{name: "slice basic", op: "Slice", inputs: ins(x(10, 20), ci64(1, 2), ci64(5, 20)), want: []PartialShape{shp(4, 18)}},
		{name: "slice axes steps", op: "Slice", inputs: ins(x(10, 20), ci64(0), ci64(20), ci64(-1), ci64(3)), want: []PartialShape{shp(10, 7)}},
		{name: "slice clamp", op: "Slice", inputs: ins(x(10), ci64(-100), ci64(100)), want: []PartialShape{shp(10)}},
		{name: "slice negative start", op: "Slice", inputs: ins(x(10), ci64(-3), ci64(big)), want: []PartialShape{shp(3)}},
		{name: "slice reverse", op: "Slice", inputs: ins(x(10), ci64(-1), ci64(-big), ci64(0), ci64(-1)), want: []PartialShape{shp(10)}},
		{name: "slice reverse stride", op: "Slice", inputs: ins(x(10), ci64(8), ci64(1), ci64(0), ci64(-3)), want: []PartialShape{shp(3)}},
		{name: "slice empty", op: "Slice", inputs: ins(x(10), ci64(5), ci64(2)), want: []PartialShape{shp(0)}},
		{name: "slice whole dynamic axis", op: "Slice", inputs: ins(x("N", 10), ci64(0, 2), ci64(big, 4)), want: []PartialShape{shp("N", 2)}},
		{name: "slice part dynamic axis", op: "Slice", inputs: ins(x("N", 10), ci64(1), ci64(big), ci64(0)), want: []PartialShape{shp(-1, 10)}},
		{name: "slice runtime starts with axes", op: "Slice", inputs: ins(x("N", 10), parT(tensor.I64, shp(1)), ci64(5), ci64(1)), want: []PartialShape{shp("N", -1)}},
		{name: "slice runtime everything", op: "Slice", inputs: ins(x("N", 10), parT(tensor.I64, shp(1)), ci64(5)), want: []PartialShape{shp(-1, -1)}},
		{name: "slice i32 params", op: "Slice", inputs: ins(x(10), parT(tensor.I32, shp(1)), parT(tensor.I32, shp(1))), want: []PartialShape{shp(-1)}},
		{name: "slice zero step", op: "Slice", inputs: ins(x(10), ci64(0), ci64(5), ci64(0), ci64(0)), err: "step on axis 0 is 0"},
		{name: "slice length mismatch", op: "Slice", inputs: ins(x(10, 2), ci64(0, 0), ci64(5)), err: "differ in length"},
		{name: "slice float starts", op: "Slice", inputs: ins(x(10), cf32(0), ci64(5)), err: "want i32 or i64"},
		{name: "gather axis 0", op: "Gather", inputs: ins(x(10, "D"), parT(tensor.I64, shp("B", "S"))), want: []PartialShape{shp("B", "S", "D")}},
		{name: "gather axis 1 scalar index", op: "Gather", attrs: Attrs{"axis": int64(1)}, inputs: ins(x("N", 5, 7), scalarI64(2)), want: []PartialShape{shp("N", 7)}},
		{name: "gather negative axis", op: "Gather", attrs: Attrs{"axis": int64(-1)}, inputs: ins(x(2, 5), ci64(0, 1, 2)), want: []PartialShape{shp(2, 3)}},
		{name: "gather bad indices", op: "Gather", inputs: ins(x(2, 5), cf32(0)), err: "indices have element type f32"},
		{name: "gather bad axis", op: "Gather", attrs: Attrs{"axis": int64(2)}, inputs: ins(x(2, 5), ci64(0)), err: "axis 2 is out of range"},
	})
}
