package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/tensor"
)

func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	ops := map[string]func(x, y float64) bool{
		"Equal":          func(x, y float64) bool { return x == y },
		"Greater":        func(x, y float64) bool { return x > y },
		"Less":           func(x, y float64) bool { return x < y },
		"GreaterOrEqual": func(x, y float64) bool { return x >= y },
		"LessOrEqual":    func(x, y float64) bool { return x <= y },
	}
	for op, f := range ops {
		for _, typ := range numericTypes {
			for _, c := range bcastCases {
				t.Run(fmt.Sprintf("%s/%v/%s", op, typ, c.name), func(t *testing.T) {
					// A small range so that equal values actually occur.
					av := randVals(rng, typ, c.a.NumElements(), 2)
					bv := randVals(rng, typ, c.b.NumElements(), 2)
					if typ.IsFloat() {
						for i := range av {
							av[i] = math.Round(av[i])
						}
						for i := range bv {
							bv[i] = math.Round(bv[i])
						}
					}
					y := run1(t, op, nil, tOf(typ, c.a, av), tOf(typ, c.b, bv))
					require.Equal(t, tensor.Bool, y.Type())
					require.Equal(t, c.out, y.Shape())
					want := refBroadcast(c.out, []tensor.Shape{c.a, c.b}, [][]float64{av, bv}, func(x []float64) float64 {
						if f(x[0], x[1]) {
							return 1
						}
						return 0
					})
					reftest.AssertClose(t, want, y, 0)
				})
			}
		}
	}
}

func TestCompareNaNAndBool(t *testing.T) {
	nan := float32(math.NaN())
	a := tF32(tensor.Shape{2}, nan, 1)
	b := tF32(tensor.Shape{2}, nan, 1)
	assert.Equal(t, []bool{false, true}, run1(t, "Equal", nil, a, b).Bool())
	assert.Equal(t, []bool{false, false}, run1(t, "Greater", nil, a, b).Bool())

	x := tBool(tensor.Shape{4}, false, false, true, true)
	y := tBool(tensor.Shape{4}, false, true, false, true)
	tests := []struct {
		op   string
		want []bool
	}{
		{"Equal", []bool{true, false, false, true}},
		{"And", []bool{false, false, false, true}},
		{"Or", []bool{false, true, true, true}},
		{"Xor", []bool{false, true, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			assert.Equal(t, tc.want, run1(t, tc.op, nil, x, y).Bool())
			// Broadcast a [2,1] against [1,2]: the same truth table.
			got := run1(t, tc.op, nil, tBool(tensor.Shape{2, 1}, false, true), tBool(tensor.Shape{1, 2}, false, true))
			assert.Equal(t, tensor.Shape{2, 2}, got.Shape())
			assert.Equal(t, tc.want, got.Bool())
		})
	}
	_, err := runOp("And", nil, 1, tF32(tensor.Shape{1}, 1), tF32(tensor.Shape{1}, 1))
	assert.ErrorIs(t, err, tensor.ErrType)
	_, err = runOp("Less", nil, 1, x, y)
	assert.Error(t, err, "Less is not defined on booleans")
	_, err = runOp("Equal", nil, 1, tF32(tensor.Shape{2}, 1, 2), tF32(tensor.Shape{3}, 1, 2, 3))
	assert.ErrorIs(t, err, tensor.ErrShape)
	assert.Contains(t, err.Error(), "node_Equal")
}
