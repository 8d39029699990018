package graph

import (
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

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
