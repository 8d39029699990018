package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

var bcastCases = []struct {
	name string
	a, b tensor.Shape
	out  tensor.Shape
}{
	{"same", tensor.Shape{2, 3}, tensor.Shape{2, 3}, tensor.Shape{2, 3}},
	{"scalar_right", tensor.Shape{2, 3}, tensor.Shape{}, tensor.Shape{2, 3}},
	{"scalar_left", tensor.Shape{}, tensor.Shape{4}, tensor.Shape{4}},
	{"col_row", tensor.Shape{3, 1}, tensor.Shape{1, 4}, tensor.Shape{3, 4}},
	{"rank_mismatch", tensor.Shape{2, 3, 4}, tensor.Shape{4}, tensor.Shape{2, 3, 4}},
	{"middle", tensor.Shape{2, 1, 4}, tensor.Shape{3, 1}, tensor.Shape{2, 3, 4}},
	{"channel", tensor.Shape{2, 3, 2, 2}, tensor.Shape{1, 3, 1, 1}, tensor.Shape{2, 3, 2, 2}},
	{"one_elem", tensor.Shape{1}, tensor.Shape{5}, tensor.Shape{5}},
	{"empty", tensor.Shape{0, 3}, tensor.Shape{1, 3}, tensor.Shape{0, 3}},
}

var numericTypes = []tensor.ElementType{tensor.F32, tensor.F64, tensor.F16, tensor.BF16, tensor.I8, tensor.U8, tensor.I16, tensor.I32, tensor.I64}

func TestBinaryArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := map[string]func(x, y float64) float64{
		"Add": func(x, y float64) float64 { return x + y },
		"Sub": func(x, y float64) float64 { return x - y },
		"Mul": func(x, y float64) float64 { return x * y },
		"Div": func(x, y float64) float64 { return x / y },
		"Max": math.Max,
		"Min": math.Min,
	}
	for opName, f := range ops {
		for _, typ := range numericTypes {
			for _, c := range bcastCases {
				t.Run(fmt.Sprintf("%s/%v/%s", opName, typ, c.name), func(t *testing.T) {
					av := randVals(rng, typ, c.a.NumElements(), 10)
					bv := randVals(rng, typ, c.b.NumElements(), 10)
					for i := range bv {
						if bv[i] == 0 {
							bv[i] = 3 // no division by zero
						}
					}
					y := run1(t, opName, nil, tOf(typ, c.a, av), tOf(typ, c.b, bv))
					require.Equal(t, typ, y.Type())
					require.Equal(t, c.out, y.Shape())
					want := refBroadcast(c.out, []tensor.Shape{c.a, c.b}, [][]float64{av, bv}, func(x []float64) float64 {
						r := f(x[0], x[1])
						if typ.IsInteger() {
							r = wrapTo(typ, math.Trunc(r))
						}
						return r
					})
					reftest.AssertClose(t, want, y, tolFor(typ))
				})
			}
		}
	}
}

func TestBinaryErrors(t *testing.T) {
	tests := []struct {
		name string
		op   string
		a, b *tensor.Tensor
		is   error
	}{
		{"incompatible", "Add", tF32(tensor.Shape{2, 3}, 1, 2, 3, 4, 5, 6), tF32(tensor.Shape{2}, 1, 2), tensor.ErrShape},
		{"types", "Mul", tF32(tensor.Shape{1}, 1), tI64(tensor.Shape{1}, 1), tensor.ErrType},
		{"int_div_zero", "Div", tI32(tensor.Shape{2}, 4, 5), tI32(tensor.Shape{2}, 1, 0), driver.ErrInvalidArgument},
		{"bool", "Add", tBool(tensor.Shape{1}, true), tBool(tensor.Shape{1}, false), driver.ErrUnsupported},
		{"prelu_not_unidirectional", "PRelu", tF32(tensor.Shape{3}, 1, 2, 3), tF32(tensor.Shape{2, 3}, 1, 2, 3, 4, 5, 6), tensor.ErrShape},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runOp(tc.op, nil, 1, tc.a, tc.b)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.is), "%v", err)
			assert.Contains(t, err.Error(), "node_"+tc.op)
			var ne *graph.NodeError
			assert.True(t, errors.As(err, &ne))
		})
	}
	_, err := runOp("Add", nil, 1, tF32(tensor.Shape{1}, 1))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "missing input")
}

func TestIntegerDivTruncatesTowardZero(t *testing.T) {
	y := run1(t, "Div", nil, tI32(tensor.Shape{4}, -7, 7, -7, 7), tI32(tensor.Shape{4}, 2, -2, -2, 2))
	assert.Equal(t, []int32{-3, -3, 3, 3}, y.I32())
	y = run1(t, "Div", nil, tI64(tensor.Shape{1}, math.MinInt64), tI64(tensor.Shape{1}, -1))
	assert.Equal(t, []int64{math.MinInt64}, y.I64(), "overflow wraps like C, no panic")
}

func TestMaxMinPropagateNaN(t *testing.T) {
	nan := float32(math.NaN())
	a := tF32(tensor.Shape{3}, nan, 1, 2)
	b := tF32(tensor.Shape{3}, 0, nan, 1)
	for _, op := range []string{"Max", "Min"} {
		y := run1(t, op, nil, a, b)
		for i, v := range y.F32() {
			assert.True(t, i == 2 || math.IsNaN(float64(v)), "%s element %d = %v", op, i, v)
		}
	}
}

func TestVariadic(t *testing.T) {
	a := tF32(tensor.Shape{2, 1}, 1, 2)
	b := tF32(tensor.Shape{3}, 10, 20, 30)
	c := tF32(tensor.Shape{}, 100)
	tests := []struct {
		op   string
		in   []*tensor.Tensor
		want []float32
	}{
		{"Sum", []*tensor.Tensor{a, b, c}, []float32{111, 121, 131, 112, 122, 132}},
		{"Mean", []*tensor.Tensor{a, b, c}, []float32{37, 121.0 / 3, 131.0 / 3, 112.0 / 3, 122.0 / 3, 44}},
		{"Max", []*tensor.Tensor{a, b, tF32(tensor.Shape{}, 15)}, []float32{15, 20, 30, 15, 20, 30}},
		{"Min", []*tensor.Tensor{a, b, tF32(tensor.Shape{}, 1.5)}, []float32{1, 1, 1, 1.5, 1.5, 1.5}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			y := run1(t, tc.op, nil, tc.in...)
			require.Equal(t, tensor.Shape{2, 3}, y.Shape())
			assert.InDeltaSlice(t, tc.want, y.F32(), 1e-5)
		})
	}
	t.Run("single_input_is_a_copy", func(t *testing.T) {
		for _, op := range []string{"Sum", "Mean", "Max", "Min"} {
			y := run1(t, op, nil, a)
			assert.Equal(t, []float32{1, 2}, y.F32())
			y.F32()[0] = 42
			assert.Equal(t, float32(1), a.F32()[0], "%s must not alias its input", op)
		}
	})
	t.Run("mean_i32", func(t *testing.T) {
		y := run1(t, "Mean", nil, tI32(tensor.Shape{2}, 3, -3), tI32(tensor.Shape{2}, 4, -4))
		assert.Equal(t, []int32{3, -3}, y.I32())
	})
}

func TestPRelu(t *testing.T) {
	x := tF32(tensor.Shape{2, 3}, -1, 2, -3, 4, -5, 6)
	tests := []struct {
		name  string
		slope *tensor.Tensor
		want  []float32
	}{
		{"per_channel", tF32(tensor.Shape{3}, 0.1, 0.2, 0.3), []float32{-0.1, 2, -0.9, 4, -1, 6}},
		{"scalar", tF32(tensor.Shape{1}, 0.5), []float32{-0.5, 2, -1.5, 4, -2.5, 6}},
		{"full", tF32(tensor.Shape{2, 3}, 1, 1, 1, 2, 2, 2), []float32{-1, 2, -3, 4, -10, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := run1(t, "PRelu", nil, x, tc.slope)
			assert.InDeltaSlice(t, tc.want, y.F32(), 1e-6)
		})
	}
	y := run1(t, "PRelu", nil, tI32(tensor.Shape{3}, -2, 0, 5), tI32(tensor.Shape{}, 3))
	assert.Equal(t, []int32{-6, 0, 5}, y.I32())
}

func TestPow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := make([]float32, 12)
	for i := range base {
		base[i] = float32(rng.Float64()*4 + 0.1)
	}
	x := tF32(tensor.Shape{3, 4}, base...)
	for _, e := range []float32{2, 0.5, 3, -1.5} {
		t.Run(fmt.Sprintf("f32_scalar_%v", e), func(t *testing.T) {
			y := run1(t, "Pow", nil, x, tF32(tensor.Shape{}, e))
			want := make([]float64, len(base))
			for i, b := range base {
				want[i] = math.Pow(float64(b), float64(e))
			}
			reftest.AssertClose(t, want, y, 2e-6)
		})
	}
	tests := []struct {
		name string
		a, b *tensor.Tensor
		typ  tensor.ElementType
		want []float64
	}{
		{"f32_by_i64", tF32(tensor.Shape{3}, 2, 3, -2), tI64(tensor.Shape{1}, 3), tensor.F32, []float64{8, 27, -8}},
		{"i32_by_i32", tI32(tensor.Shape{4}, 2, -3, 5, 7), tI32(tensor.Shape{4}, 10, 3, 0, -1), tensor.I32, []float64{1024, -27, 1, 0}},
		{"i64_exact", tI64(tensor.Shape{1}, 3), tI64(tensor.Shape{1}, 39), tensor.I64, []float64{4052555153018976267}},
		{"i64_by_f32", tI64(tensor.Shape{2}, 4, 10), tF32(tensor.Shape{2}, 0.5, 1.5), tensor.I64, []float64{2, 31}},
		{"broadcast", tF32(tensor.Shape{2, 1}, 2, 3), tF32(tensor.Shape{3}, 0, 1, 2), tensor.F32, []float64{1, 2, 4, 1, 3, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := run1(t, "Pow", nil, tc.a, tc.b)
			require.Equal(t, tc.typ, y.Type())
			if tc.typ == tensor.I64 {
				want := make([]int64, len(tc.want))
				for i, w := range tc.want {
					want[i] = int64(w)
				}
				if tc.name == "i64_exact" {
					want[0] = 4052555153018976267 // 3^39, beyond float64's exact range
				}
				assert.Equal(t, want, y.I64())
				return
			}
			reftest.AssertClose(t, tc.want, y, 1e-6)
		})
	}
}

func TestWhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		c, x, y, out tensor.Shape
	}{
		{tensor.Shape{2, 3}, tensor.Shape{2, 3}, tensor.Shape{2, 3}, tensor.Shape{2, 3}},
		{tensor.Shape{2, 1}, tensor.Shape{1, 3}, tensor.Shape{}, tensor.Shape{2, 3}},
		{tensor.Shape{4}, tensor.Shape{3, 1}, tensor.Shape{2, 1, 1}, tensor.Shape{2, 3, 4}},
		{tensor.Shape{0, 2}, tensor.Shape{2}, tensor.Shape{1}, tensor.Shape{0, 2}},
	}
	for _, typ := range []tensor.ElementType{tensor.F32, tensor.F16, tensor.I64, tensor.U8, tensor.F64} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%v_%v_%v", typ, c.c, c.x, c.y), func(t *testing.T) {
				cv := make([]bool, c.c.NumElements())
				cf := make([]float64, len(cv))
				for i := range cv {
					cv[i] = rng.IntN(2) == 1
					if cv[i] {
						cf[i] = 1
					}
				}
				xv := randVals(rng, typ, c.x.NumElements(), 50)
				yv := randVals(rng, typ, c.y.NumElements(), 50)
				out := run1(t, "Where", nil, tBool(c.c, cv...), tOf(typ, c.x, xv), tOf(typ, c.y, yv))
				require.Equal(t, c.out, out.Shape())
				require.Equal(t, typ, out.Type())
				want := refBroadcast(c.out, []tensor.Shape{c.c, c.x, c.y}, [][]float64{cf, xv, yv}, func(a []float64) float64 {
					if a[0] != 0 {
						return a[1]
					}
					return a[2]
				})
				reftest.AssertClose(t, want, out, 0)
			})
		}
	}
	t.Run("bool_values", func(t *testing.T) {
		out := run1(t, "Where", nil, tBool(tensor.Shape{2}, true, false), tBool(tensor.Shape{1}, true), tBool(tensor.Shape{2}, false, false))
		assert.Equal(t, []bool{true, false}, out.Bool())
	})
	t.Run("cond_not_bool", func(t *testing.T) {
		_, err := runOp("Where", nil, 1, tF32(tensor.Shape{1}, 1), tF32(tensor.Shape{1}, 1), tF32(tensor.Shape{1}, 1))
		assert.ErrorIs(t, err, tensor.ErrType)
	})
}

func BenchmarkAddF32(b *testing.B) {
	for _, c := range []struct {
		name string
		a, b tensor.Shape
	}{
		{"same_1x64x56x56", tensor.Shape{1, 64, 56, 56}, tensor.Shape{1, 64, 56, 56}},
		{"bias_1x64x56x56", tensor.Shape{1, 64, 56, 56}, tensor.Shape{1, 64, 1, 1}},
		{"scalar_1x64x56x56", tensor.Shape{1, 64, 56, 56}, tensor.Shape{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			x := tensor.MustNew(tensor.F32, c.a)
			y := tensor.MustNew(tensor.F32, c.b)
			k := hostKernels()["Add"]
			n := graph.NewNode("Add", "bench", nil, nil, 1)
			for b.Loop() {
				if _, err := k(n, []*tensor.Tensor{x, y}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(x.ByteSize())
		})
	}
}
