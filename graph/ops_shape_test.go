package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func TestInferMisc(t *testing.T) {
	x := func(dims ...any) Output { return par(shp(dims...)) }
	i64 := []tensor.ElementType{tensor.I64}
	val, err := tensor.FromI64(tensor.Shape{1}, []int64{7})
	require.NoError(t, err)
	runInferCases(t, []inferCase{
		{name: "shape", op: "Shape", inputs: ins(x("N", 3, 4)), want: []PartialShape{shp(3)}, types: i64},
		{name: "shape start end", op: "Shape", attrs: Attrs{"start": int64(1), "end": int64(-1)}, inputs: ins(x("N", 3, 4, 5)), want: []PartialShape{shp(2)}, types: i64},
		{name: "shape clamped", op: "Shape", attrs: Attrs{"start": int64(-10), "end": int64(10)}, inputs: ins(x(2, 3)), want: []PartialShape{shp(2)}, types: i64},
		{name: "shape unknown rank", op: "Shape", inputs: ins(par(DynamicRank)), want: []PartialShape{shp(-1)}, types: i64},
		{name: "cast", op: "Cast", attrs: Attrs{"to": int64(tensor.F16)}, inputs: ins(x("N", 3)), want: []PartialShape{shp("N", 3)}, types: []tensor.ElementType{tensor.F16}},
		{name: "cast bad to", op: "Cast", attrs: Attrs{"to": int64(99)}, inputs: ins(x(3)), err: "to=99"},
		{name: "cast missing to", op: "Cast", inputs: ins(x(3)), err: "to is required"},
		{name: "constantofshape default", op: "ConstantOfShape", inputs: ins(ci64(2, 3)), want: []PartialShape{shp(2, 3)}, types: []tensor.ElementType{tensor.F32}},
		{name: "constantofshape value", op: "ConstantOfShape", attrs: Attrs{"value": val}, inputs: ins(ci64(4)), want: []PartialShape{shp(4)}, types: i64},
		{name: "constantofshape runtime", op: "ConstantOfShape", inputs: ins(parT(tensor.I64, shp(3))), want: []PartialShape{shp(-1, -1, -1)}, types: []tensor.ElementType{tensor.F32}},
		{name: "constantofshape negative", op: "ConstantOfShape", inputs: ins(ci64(-2)), err: "negative"},
		{name: "expand", op: "Expand", inputs: ins(x(3, 1), ci64(2, 1, 6)), want: []PartialShape{shp(2, 3, 6)}},
		{name: "expand bidirectional", op: "Expand", inputs: ins(x("N", 4), ci64(1, 1)), want: []PartialShape{shp("N", 4)}},
		{name: "expand runtime", op: "Expand", inputs: ins(x(3, 1), parT(tensor.I64, shp(3))), want: []PartialShape{shp(-1, 3, -1)}},
		{name: "expand mismatch", op: "Expand", inputs: ins(x(3, 2), ci64(4, 4)), err: "cannot be broadcast"},
		{name: "tile", op: "Tile", inputs: ins(x(2, "N", 3), ci64(2, 1, 3)), want: []PartialShape{shp(4, "N", 9)}},
		{name: "tile runtime", op: "Tile", inputs: ins(x(2, 3), parT(tensor.I64, shp(2))), want: []PartialShape{shp(-1, -1)}},
		{name: "tile length", op: "Tile", inputs: ins(x(2, 3), ci64(2)), err: "repeats [2] has 1 entries for input rank 2"},
		{name: "pad", op: "Pad", inputs: ins(x(1, 3, 4, 4), ci64(0, 0, 1, 2, 0, 0, 3, 4)), want: []PartialShape{shp(1, 3, 8, 10)}},
		{name: "pad axes", op: "Pad", attrs: Attrs{"mode": "reflect"}, inputs: ins(x("N", 3, 4, 4), ci64(1, 1, 1, 1), Output{}, ci64(-2, -1)), want: []PartialShape{shp("N", 3, 6, 6)}},
		{name: "pad negative", op: "Pad", inputs: ins(x(5), ci64(-1, -2)), want: []PartialShape{shp(2)}},
		{name: "pad constant value", op: "Pad", attrs: Attrs{"mode": "constant"}, inputs: ins(x(5), ci64(1, 1), cf32(0)), want: []PartialShape{shp(7)}},
		{name: "pad runtime", op: "Pad", inputs: ins(x("N", 5), parT(tensor.I64, shp(4))), want: []PartialShape{shp(-1, -1)}},
		{name: "pad length", op: "Pad", inputs: ins(x(5, 5), ci64(1, 1)), err: "pads [1 1] has 2 entries, want 4"},
		{name: "pad mode", op: "Pad", attrs: Attrs{"mode": "mirror"}, inputs: ins(x(5), ci64(1, 1)), err: `mode "mirror"`},
		{name: "pad value type", op: "Pad", inputs: ins(x(5), ci64(1, 1), ci64(0)), err: "constant_value has element type i64"},
		{name: "range", op: "Range", inputs: ins(scalarI64(1), scalarI64(10), scalarI64(3)), want: []PartialShape{shp(3)}},
		{name: "range negative delta", op: "Range", inputs: ins(scalarI64(10), scalarI64(1), scalarI64(-4)), want: []PartialShape{shp(3)}},
		{name: "range empty", op: "Range", inputs: ins(scalarI64(10), scalarI64(1), scalarI64(1)), want: []PartialShape{shp(0)}},
		{name: "range runtime", op: "Range", inputs: ins(scalarI64(0), parT(tensor.I64, shp()), scalarI64(1)), want: []PartialShape{shp(-1)}},
		{name: "range zero delta", op: "Range", inputs: ins(scalarI64(0), scalarI64(3), scalarI64(0)), err: "delta is 0"},
		{name: "range types", op: "Range", inputs: ins(scalarI64(0), par(shp()), scalarI64(1)), err: "element type f32"},
		{name: "range shape", op: "Range", inputs: ins(ci64(0, 1), scalarI64(3), scalarI64(1)), err: "want a scalar"},
	})
}

func TestRangeFloat(t *testing.T) {
	mk := func(v float32) Output {
		c := NewConstant("f", tensor.Scalar(v))
		return c.Out(0)
	}
	n := op(t, "Range", nil, 1, mk(0), mk(1), mk(0.3))
	assert.Equal(t, "[4]", n.Outputs[0].Shape.String())
	assert.Equal(t, tensor.F32, n.Outputs[0].Type)
}

func TestEvalFromShapes(t *testing.T) {
	for _, c := range []struct {
		op    string
		attrs Attrs
		in    tensor.Shape
		want  []int64
		shape tensor.Shape
		err   string
	}{
		{op: "Shape", in: tensor.Shape{2, 3, 4}, want: []int64{2, 3, 4}, shape: tensor.Shape{3}},
		{op: "Shape", attrs: Attrs{"start": int64(1), "end": int64(-1)}, in: tensor.Shape{2, 3, 4}, want: []int64{3}, shape: tensor.Shape{1}},
		{op: "Size", in: tensor.Shape{2, 3, 4}, want: []int64{24}, shape: tensor.Shape{}},
		{op: "Relu", in: tensor.Shape{2}, err: "does not fold from 1 input shapes"},
	} {
		t.Run(c.op, func(t *testing.T) {
			got, err := EvalFromShapes(NewNode(c.op, "n", nil, c.attrs, 1), []tensor.Shape{c.in})
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.shape, got.Shape())
			assert.Equal(t, c.want, got.I64())
		})
	}
}
