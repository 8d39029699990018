package ref

import (
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

func TestFloatUnary(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	relu := func(x float64) float64 { return math.Max(x, 0) }
	tests := []struct {
		op    string
		attrs graph.Attrs
		lo    float64 // inputs drawn from [lo, lo+span)
		span  float64
		f     func(float64) float64
	}{
		{"Sqrt", nil, 0, 10, math.Sqrt},
		{"Exp", nil, -5, 10, math.Exp},
		{"Log", nil, 0.01, 10, math.Log},
		{"Erf", nil, -3, 6, math.Erf},
		{"Tanh", nil, -4, 8, math.Tanh},
		{"Sin", nil, -4, 8, math.Sin},
		{"Cos", nil, -4, 8, math.Cos},
		{"Floor", nil, -5, 10, math.Floor},
		{"Ceil", nil, -5, 10, math.Ceil},
		{"Reciprocal", nil, 0.5, 5, func(x float64) float64 { return 1 / x }},
		{"Neg", nil, -5, 10, func(x float64) float64 { return -x }},
		{"Abs", nil, -5, 10, math.Abs},
		{"Relu", nil, -5, 10, relu},
		{"Sigmoid", nil, -8, 16, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"Softplus", nil, -8, 16, func(x float64) float64 { return math.Log(math.Exp(x) + 1) }},
		{"Softsign", nil, -8, 16, func(x float64) float64 { return x / (1 + math.Abs(x)) }},
		{"Mish", nil, -5, 10, func(x float64) float64 { return x * math.Tanh(math.Log(1+math.Exp(x))) }},
		{"HardSwish", nil, -5, 10, func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }},
		{"LeakyRelu", nil, -5, 10, func(x float64) float64 { return map[bool]float64{true: x, false: float64(float32(0.01)) * x}[x >= 0] }},
		{"LeakyRelu", graph.Attrs{"alpha": float32(0.25)}, -5, 10, func(x float64) float64 { return map[bool]float64{true: x, false: 0.25 * x}[x >= 0] }},
		{"HardSigmoid", nil, -5, 10, func(x float64) float64 { return math.Max(0, math.Min(1, float64(float32(0.2))*x+0.5)) }},
		{"HardSigmoid", graph.Attrs{"alpha": float32(0.5), "beta": float32(0.25)}, -5, 10, func(x float64) float64 { return math.Max(0, math.Min(1, 0.5*x+0.25)) }},
		{"Elu", graph.Attrs{"alpha": float32(2)}, -5, 10, func(x float64) float64 { return map[bool]float64{true: x, false: 2 * (math.Exp(x) - 1)}[x >= 0] }},
		{"Selu", nil, -5, 10, func(x float64) float64 {
			if x > 0 {
				return float64(float32(1.0507009873554805)) * x
			}
			return float64(float32(1.0507009873554805)) * float64(float32(1.6732632423543772)) * (math.Exp(x) - 1)
		}},
		{"Celu", graph.Attrs{"alpha": float32(2)}, -5, 10, func(x float64) float64 {
			return math.Max(0, x) + math.Min(0, 2*(math.Exp(x/2)-1))
		}},
		{"ThresholdedRelu", graph.Attrs{"alpha": float32(0.5)}, -5, 10, func(x float64) float64 { return map[bool]float64{true: x, false: 0}[x > 0.5] }},
		{"Gelu", nil, -5, 10, func(x float64) float64 { return x / 2 * (1 + math.Erf(x/math.Sqrt2)) }},
		{"Gelu", graph.Attrs{"approximate": "tanh"}, -5, 10, func(x float64) float64 {
			return x / 2 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}},
	}
	for _, tc := range tests {
		for _, typ := range []tensor.ElementType{tensor.F32, tensor.F64, tensor.F16} {
			t.Run(fmt.Sprintf("%s%v/%v", tc.op, tc.attrs, typ), func(t *testing.T) {
				shape := tensor.Shape{3, 7}
				v := randVals(rng, typ, shape.NumElements(), 1)
				for i := range v {
					v[i] = tc.lo + (v[i]+1)/2*tc.span // [-1,1) -> [lo, lo+span)
				}
				x := tOf(typ, shape, v)
				v = x.Float64s() // the values actually representable in typ
				y := run1(t, tc.op, tc.attrs, x)
				require.Equal(t, typ, y.Type())
				require.Equal(t, shape, y.Shape())
				want := make([]float64, len(v))
				for i := range v {
					want[i] = tc.f(v[i])
				}
				tol := tolFor(typ)
				if typ == tensor.F64 {
					tol = 1e-9 // reference formulas differ from the stable ones
				}
				reftest.AssertClose(t, want, y, tol)
			})
		}
	}
}

func TestUnaryEdgeValues(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		op   string
		in   []float32
		want []float64
	}{
		{"Round", []float32{0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6}, []float64{0, 2, 2, 0, -2, 2, -3}},
		{"Sign", []float32{-3, 0, 2, nan}, []float64{-1, 0, 1, math.NaN()}},
		{"Sigmoid", []float32{-1000, 1000}, []float64{0, 1}},
		{"Softplus", []float32{-1000, 1000}, []float64{0, 1000}},
		{"Relu", []float32{-inf, inf, nan}, []float64{0, math.Inf(1), math.NaN()}},
		{"Sqrt", []float32{-1}, []float64{math.NaN()}},
		{"Reciprocal", []float32{0}, []float64{math.Inf(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			y := run1(t, tc.op, nil, tF32(tensor.Shape{int64(len(tc.in))}, tc.in...))
			reftest.AssertClose(t, tc.want, y, 1e-6)
		})
	}
}

func TestIntegerUnary(t *testing.T) {
	tests := []struct {
		op   string
		typ  tensor.ElementType
		in   []float64
		want []float64
	}{
		{"Neg", tensor.I32, []float64{-3, 0, 7}, []float64{3, 0, -7}},
		{"Neg", tensor.I8, []float64{-128, 5}, []float64{-128, -5}}, // wraps like C
		{"Abs", tensor.I64, []float64{-3, 0, 7}, []float64{3, 0, 7}},
		{"Abs", tensor.U8, []float64{3, 200}, []float64{3, 200}},
		{"Relu", tensor.I16, []float64{-3, 0, 7}, []float64{0, 0, 7}},
		{"Sign", tensor.I8, []float64{-3, 0, 7}, []float64{-1, 0, 1}},
		{"Sign", tensor.U8, []float64{0, 9}, []float64{0, 1}},
		{"Abs", tensor.BF16, []float64{-2.5, 3}, []float64{2.5, 3}},
		{"Erf", tensor.I32, []float64{-3, 0, 2}, []float64{0, 0, 0}}, // erf in (-1, 1) truncates to 0
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%v", tc.op, tc.typ), func(t *testing.T) {
			y := run1(t, tc.op, nil, tOf(tc.typ, tensor.Shape{int64(len(tc.in))}, tc.in))
			require.Equal(t, tc.typ, y.Type())
			reftest.AssertClose(t, tc.want, y, 0)
		})
	}
	_, err := runOp("Exp", nil, 1, tI32(tensor.Shape{1}, 1))
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), "node_Exp")
	_, err = runOp("Gelu", graph.Attrs{"approximate": "fast"}, 1, tF32(tensor.Shape{1}, 1))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

func TestClip(t *testing.T) {
	x := []float64{-5, -1, 0, 2, 9}
	tests := []struct {
		name   string
		typ    tensor.ElementType
		lo, hi *float64
		want   []float64
	}{
		{"both", tensor.F32, ptr(-1.5), ptr(3), []float64{-1.5, -1, 0, 2, 3}},
		{"min_only", tensor.F32, ptr(0), nil, []float64{0, 0, 0, 2, 9}},
		{"max_only", tensor.F64, nil, ptr(1), []float64{-5, -1, 0, 1, 1}},
		{"none", tensor.F16, nil, nil, x},
		{"i32", tensor.I32, ptr(-2), ptr(4), []float64{-2, -1, 0, 2, 4}},
		{"i8_min_only", tensor.I8, ptr(1), nil, []float64{1, 1, 1, 2, 9}},
		{"i64_max_only", tensor.I64, nil, ptr(0), []float64{-5, -1, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := []*tensor.Tensor{tOf(tc.typ, tensor.Shape{5}, x), nil, nil}
			if tc.lo != nil {
				in[1] = tOf(tc.typ, tensor.Shape{}, []float64{*tc.lo})
			}
			if tc.hi != nil {
				in[2] = tOf(tc.typ, tensor.Shape{}, []float64{*tc.hi})
			}
			y := run1(t, "Clip", nil, in...)
			require.Equal(t, tc.typ, y.Type())
			reftest.AssertClose(t, tc.want, y, 0)
		})
	}
	t.Run("nan_passes", func(t *testing.T) {
		y := run1(t, "Clip", nil, tF32(tensor.Shape{1}, float32(math.NaN())), tF32(tensor.Shape{}, 0), tF32(tensor.Shape{}, 1))
		assert.True(t, math.IsNaN(float64(y.F32()[0])))
	})
	t.Run("bound_type_mismatch", func(t *testing.T) {
		_, err := runOp("Clip", nil, 1, tF32(tensor.Shape{1}, 1), tI64(tensor.Shape{}, 0))
		assert.ErrorIs(t, err, tensor.ErrType)
	})
}

func ptr(v float64) *float64 { return &v }

func TestCast(t *testing.T) {
	tests := []struct {
		name string
		in   *tensor.Tensor
		to   tensor.ElementType
		want []float64
	}{
		{"f32_to_i32_truncates", tF32(tensor.Shape{4}, 1.9, -1.9, 0.5, 100), tensor.I32, []float64{1, -1, 0, 100}},
		{"i64_to_f16", tI64(tensor.Shape{2}, 3, -2048), tensor.F16, []float64{3, -2048}},
		{"f32_to_bool", tF32(tensor.Shape{3}, 0, 0.1, -2), tensor.Bool, []float64{0, 1, 1}},
		{"same_type_copy", tF32(tensor.Shape{1}, 7), tensor.F32, []float64{7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := run1(t, "Cast", graph.Attrs{"to": int64(tc.to)}, tc.in)
			require.Equal(t, tc.to, y.Type())
			reftest.AssertClose(t, tc.want, y, 0)
		})
	}
	x := tF32(tensor.Shape{1}, 7)
	y := run1(t, "Cast", graph.Attrs{"to": int64(tensor.F32)}, x)
	y.F32()[0] = 1
	assert.Equal(t, float32(7), x.F32()[0], "Cast must not alias its input")
	_, err := runOp("Cast", nil, 1, x)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

func TestIdentityDropoutNot(t *testing.T) {
	x := tF32(tensor.Shape{2, 2}, 1, 2, 3, 4)
	y := run1(t, "Identity", nil, x)
	assert.Equal(t, x.F32(), y.F32())
	y.F32()[0] = 9
	assert.Equal(t, float32(1), x.F32()[0], "Identity must not alias")

	out, err := runOp("Dropout", nil, 2, x, tF32(tensor.Shape{}, 0.5))
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Equal(t, x.F32(), out[0].F32())
	assert.Equal(t, []bool{true, true, true, true}, out[1].Bool())
	out, err = runOp("Dropout", nil, 1, x)
	require.NoError(t, err)
	assert.Len(t, out, 1)
	out, err = runOp("Dropout", graph.Attrs{"seed": int64(1)}, 2, x, tF32(tensor.Shape{}, 0.75), tBool(tensor.Shape{}, true))
	require.NoError(t, err, "training mode drops at random")
	for i, v := range out[0].F32() {
		assert.True(t, out[1].Bool()[i] == (v != 0), "element %d: mask and value agree", i)
		assert.True(t, v == 0 || v == 4*x.F32()[i], "element %d: 0 or x/(1-ratio)", i)
	}

	n := run1(t, "Not", nil, tBool(tensor.Shape{3}, true, false, true))
	assert.Equal(t, []bool{false, true, false}, n.Bool())
	_, err = runOp("Not", nil, 1, x)
	assert.ErrorIs(t, err, tensor.ErrType)
}

func BenchmarkUnaryF32(b *testing.B) {
	for _, op := range []string{"Relu", "Sigmoid", "Gelu"} {
		b.Run(op+"_1x64x56x56", func(b *testing.B) {
			x := tensor.MustNew(tensor.F32, tensor.Shape{1, 64, 56, 56})
			k := hostKernels()[op]
			n := graph.NewNode(op, "bench", nil, nil, 1)
			for b.Loop() {
				if _, err := k(n, []*tensor.Tensor{x}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(x.ByteSize())
		})
	}
}
