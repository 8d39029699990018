package ref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestMoreUnaryMath(t *testing.T) {
	x := []float64{-0.9, -0.3, 0, 0.4, 0.8}
	pos := []float64{1, 1.5, 2, 3.5, 10}
	cases := []struct {
		op string
		in []float64
		f  func(float64) float64
	}{
		{"Tan", x, math.Tan}, {"Acos", x, math.Acos}, {"Asin", x, math.Asin}, {"Atan", x, math.Atan},
		{"Sinh", x, math.Sinh}, {"Cosh", x, math.Cosh}, {"Asinh", x, math.Asinh}, {"Acosh", pos, math.Acosh}, {"Atanh", x, math.Atanh},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			want := make([]float64, len(tc.in))
			for i, v := range tc.in {
				want[i] = tc.f(v)
			}
			got := run1(t, tc.op, nil, tOf(tensor.F32, tensor.Shape{5}, tc.in))
			reftest.AssertClose(t, want, got, 1e-6)
		})
	}
}

func TestIsNaNIsInfShrink(t *testing.T) {
	inf := float32(math.Inf(1))
	x := tF32(tensor.Shape{4}, float32(math.NaN()), inf, -inf, 1)
	assert.Equal(t, []bool{true, false, false, false}, run1(t, "IsNaN", nil, x).Bool())
	assert.Equal(t, []bool{false, true, true, false}, run1(t, "IsInf", nil, x).Bool())
	assert.Equal(t, []bool{false, false, true, false}, run1(t, "IsInf", graph.Attrs{"detect_positive": int64(0)}, x).Bool())
	assert.Equal(t, []bool{false, true, false, false}, run1(t, "IsInf", graph.Attrs{"detect_negative": int64(0)}, x).Bool())
	s := run1(t, "Shrink", graph.Attrs{"lambd": float32(1.5), "bias": float32(0.5)}, tF32(tensor.Shape{5}, -2, -1, 0, 1, 2))
	assert.Equal(t, []float32{-1.5, 0, 0, 0, 1.5}, s.F32())
}

func TestMod(t *testing.T) {
	a, b := tI64(tensor.Shape{4}, -4, 7, 5, -9), tI64(tensor.Shape{4}, 3, -3, 2, -4)
	assert.Equal(t, []int64{2, -2, 1, -1}, run1(t, "Mod", nil, a, b).I64(), "fmod=0 takes the divisor's sign")
	assert.Equal(t, []int64{-1, 1, 1, -1}, run1(t, "Mod", graph.Attrs{"fmod": int64(1)}, a, b).I64(), "fmod=1 takes the dividend's sign")
	f := run1(t, "Mod", graph.Attrs{"fmod": int64(1)}, tF32(tensor.Shape{2, 1}, -4.5, 7), tF32(tensor.Shape{2}, 2, -3))
	require.Equal(t, tensor.Shape{2, 2}, f.Shape())
	assert.InDeltaSlice(t, []float32{-0.5, -1.5, 1, 1}, f.F32(), 1e-6)
	_, err := runOp("Mod", nil, 1, tF32(tensor.Shape{1}, 1), tF32(tensor.Shape{1}, 2))
	assert.ErrorContains(t, err, "fmod=1")
	_, err = runOp("Mod", nil, 1, a, tI64(tensor.Shape{1}, 0))
	assert.ErrorContains(t, err, "by zero")
}

func TestCastLikeTriluEyeLike(t *testing.T) {
	c := run1(t, "CastLike", nil, tF32(tensor.Shape{3}, 1.7, -2.2, 3), tI64(tensor.Shape{1}, 0))
	assert.Equal(t, []int64{1, -2, 3}, c.I64())

	m := tI64(tensor.Shape{3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	assert.Equal(t, []int64{1, 2, 3, 0, 5, 6, 0, 0, 9}, run1(t, "Trilu", nil, m).I64())
	assert.Equal(t, []int64{0, 2, 3, 0, 0, 6, 0, 0, 0}, run1(t, "Trilu", nil, m, tI64(tensor.Shape{}, 1)).I64())
	assert.Equal(t, []int64{0, 0, 0, 4, 0, 0, 7, 8, 0}, run1(t, "Trilu", graph.Attrs{"upper": int64(0)}, m, tI64(tensor.Shape{}, -1)).I64())

	e := run1(t, "EyeLike", graph.Attrs{"k": int64(1), "dtype": int64(tensor.I32)}, tF32(tensor.Shape{2, 3}, 0, 0, 0, 0, 0, 0))
	assert.Equal(t, tensor.I32, e.Type())
	assert.Equal(t, []int32{0, 1, 0, 0, 0, 1}, e.I32())
}

func TestCumSum(t *testing.T) {
	x := tF32(tensor.Shape{5}, 1, 2, 3, 4, 5)
	axis := tI64(tensor.Shape{}, 0)
	assert.Equal(t, []float32{1, 3, 6, 10, 15}, run1(t, "CumSum", nil, x, axis).F32())
	assert.Equal(t, []float32{14, 12, 9, 5, 0}, run1(t, "CumSum", graph.Attrs{"exclusive": int64(1), "reverse": int64(1)}, x, axis).F32())
	m := tI64(tensor.Shape{2, 3}, 1, 2, 3, 4, 5, 6)
	assert.Equal(t, []int64{1, 3, 6, 4, 9, 15}, run1(t, "CumSum", nil, m, tI64(tensor.Shape{1}, -1)).I64())
	assert.Equal(t, []int64{1, 2, 3, 5, 7, 9}, run1(t, "CumSum", nil, m, tI64(tensor.Shape{}, 0)).I64())
}

func TestOneHot(t *testing.T) {
	y := run1(t, "OneHot", nil, tI64(tensor.Shape{3}, 0, -1, 3), tI64(tensor.Shape{}, 3), tF32(tensor.Shape{2}, 2, 5))
	require.Equal(t, tensor.Shape{3, 3}, y.Shape())
	assert.Equal(t, []float32{5, 2, 2, 2, 2, 5, 2, 2, 2}, y.F32())
	y = run1(t, "OneHot", graph.Attrs{"axis": int64(0)}, tI64(tensor.Shape{2}, 1, 0), tF32(tensor.Shape{1}, 2), tI64(tensor.Shape{2}, 0, 1))
	require.Equal(t, tensor.Shape{2, 2}, y.Shape())
	assert.Equal(t, []int64{0, 1, 1, 0}, y.I64())
}

func TestGatherScatter(t *testing.T) {
	t.Run("GatherElements", func(t *testing.T) {
		y := run1(t, "GatherElements", graph.Attrs{"axis": int64(1)}, tF32(tensor.Shape{2, 2}, 1, 2, 3, 4), tI64(tensor.Shape{2, 2}, 0, 0, 1, 0))
		assert.Equal(t, []float32{1, 1, 4, 3}, y.F32())
		y = run1(t, "GatherElements", nil, tI64(tensor.Shape{3, 2}, 1, 2, 3, 4, 5, 6), tI64(tensor.Shape{2, 2}, -1, 0, 1, 2))
		assert.Equal(t, []int64{5, 2, 3, 6}, y.I64())
		_, err := runOp("GatherElements", nil, 1, tF32(tensor.Shape{2}, 1, 2), tI64(tensor.Shape{1}, 2))
		assert.ErrorContains(t, err, "out of range")
	})
	t.Run("GatherND", func(t *testing.T) {
		y := run1(t, "GatherND", nil, tI64(tensor.Shape{2, 2}, 0, 1, 2, 3), tI64(tensor.Shape{2, 2}, 0, 0, 1, 1))
		assert.Equal(t, []int64{0, 3}, y.I64())
		y = run1(t, "GatherND", nil, tI64(tensor.Shape{2, 2}, 0, 1, 2, 3), tI64(tensor.Shape{2, 1}, 1, 0))
		require.Equal(t, tensor.Shape{2, 2}, y.Shape())
		assert.Equal(t, []int64{2, 3, 0, 1}, y.I64())
		y = run1(t, "GatherND", graph.Attrs{"batch_dims": int64(1)}, tI64(tensor.Shape{2, 2, 2}, 0, 1, 2, 3, 4, 5, 6, 7), tI64(tensor.Shape{2, 1}, 1, 0))
		require.Equal(t, tensor.Shape{2, 2}, y.Shape())
		assert.Equal(t, []int64{2, 3, 4, 5}, y.I64())
	})
	t.Run("ScatterElements", func(t *testing.T) {
		data := tF32(tensor.Shape{1, 5}, 1, 2, 3, 4, 5)
		ind, upd := tI64(tensor.Shape{1, 2}, 1, 3), tF32(tensor.Shape{1, 2}, 1.5, 2.5)
		assert.Equal(t, []float32{1, 1.5, 3, 2.5, 5}, run1(t, "ScatterElements", graph.Attrs{"axis": int64(1)}, data, ind, upd).F32())
		dup := tI64(tensor.Shape{1, 2}, 1, 1)
		assert.Equal(t, []float32{1, 6, 3, 4, 5}, run1(t, "ScatterElements", graph.Attrs{"axis": int64(1), "reduction": "add"}, data, dup, upd).F32())
		assert.Equal(t, []float32{1, 7.5, 3, 4, 5}, run1(t, "ScatterElements", graph.Attrs{"axis": int64(1), "reduction": "mul"}, data, dup, upd).F32())
		assert.Equal(t, []float32{1, 2.5, 3, 4, 5}, run1(t, "ScatterElements", graph.Attrs{"axis": int64(1), "reduction": "max"}, data, dup, upd).F32())
		assert.Equal(t, []float32{1, 1.5, 3, 4, 5}, run1(t, "ScatterElements", graph.Attrs{"axis": int64(1), "reduction": "min"}, data, dup, upd).F32())
		assert.Equal(t, []float32{1, 2, 3, 4, 5}, data.F32(), "input not modified")
	})
	t.Run("ScatterND", func(t *testing.T) {
		data := tI64(tensor.Shape{8}, 1, 2, 3, 4, 5, 6, 7, 8)
		y := run1(t, "ScatterND", nil, data, tI64(tensor.Shape{4, 1}, 4, 3, 1, 7), tI64(tensor.Shape{4}, 9, 10, 11, 12))
		assert.Equal(t, []int64{1, 11, 3, 10, 9, 6, 7, 12}, y.I64())
		m := tI64(tensor.Shape{2, 2}, 1, 2, 3, 4)
		y = run1(t, "ScatterND", graph.Attrs{"reduction": "add"}, m, tI64(tensor.Shape{1, 1}, 1), tI64(tensor.Shape{1, 2}, 10, 20))
		assert.Equal(t, []int64{1, 2, 13, 24}, y.I64())
	})
}

func TestDepthSpace(t *testing.T) {
	// ONNX's DepthToSpace example shapes: [1,8,2,3] -> [1,2,4,6].
	x := tensor.MustNew(tensor.F32, tensor.Shape{1, 8, 2, 3})
	for i := range x.F32() {
		x.F32()[i] = float32(i)
	}
	dcr := run1(t, "DepthToSpace", graph.Attrs{"blocksize": int64(2)}, x)
	require.Equal(t, tensor.Shape{1, 2, 4, 6}, dcr.Shape())
	assert.Equal(t, []float32{0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38}, dcr.F32()[:12])
	crd := run1(t, "DepthToSpace", graph.Attrs{"blocksize": int64(2), "mode": "CRD"}, x)
	assert.Equal(t, []float32{0, 6, 1, 7, 2, 8, 12, 18, 13, 19, 14, 20}, crd.F32()[:12])
	back := run1(t, "SpaceToDepth", graph.Attrs{"blocksize": int64(2)}, dcr)
	assert.Equal(t, x.Shape(), back.Shape())
	assert.Equal(t, x.F32(), back.F32(), "SpaceToDepth inverts DCR DepthToSpace")
}

func TestTopK(t *testing.T) {
	x := tF32(tensor.Shape{2, 5}, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3)
	outs, err := runOp("TopK", nil, 2, x, tI64(tensor.Shape{1}, 3))
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 4, 3, 9, 6, 5}, outs[0].F32())
	assert.Equal(t, []int64{4, 2, 0, 0, 2, 3}, outs[1].I64())
	outs, err = runOp("TopK", graph.Attrs{"largest": int64(0), "axis": int64(0)}, 2, x, tI64(tensor.Shape{1}, 1))
	require.NoError(t, err)
	assert.Equal(t, []float32{3, 1, 4, 1, 3}, outs[0].F32())
	assert.Equal(t, []int64{0, 0, 0, 0, 1}, outs[1].I64())
	_, err = runOp("TopK", nil, 2, x, tI64(tensor.Shape{1}, 6))
	assert.ErrorContains(t, err, "K=6")
}

func TestHardmax(t *testing.T) {
	x := reftest.F32s(tensor.Shape{2, 3}, 1, 3, 3, -1, -5, -2)
	y := nnRun(t, "Hardmax", nil, 1, x)[0]
	assert.Equal(t, []float32{0, 1, 0, 1, 0, 0}, y.F32(), "first maximum wins")
	y = nnRun(t, "Hardmax", graph.Attrs{"axis": int64(0)}, 1, x)[0]
	assert.Equal(t, []float32{1, 1, 1, 0, 0, 0}, y.F32())
}
