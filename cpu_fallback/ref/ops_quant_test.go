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

// ints returns the elements of an integer tensor as int64.
func ints(t *testing.T, x *tensor.Tensor) []int64 {
	t.Helper()
	v, ok := x.Int64s()
	require.True(t, ok, "%v is not an integer tensor", x)
	return v
}

func TestQuantizeLinearRoundingAndSaturation(t *testing.T) {
	x := tF32(tensor.Shape{12}, 0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000, -1000, float32(math.NaN()), float32(math.Inf(1)), 0.49999997)
	cases := []struct {
		typ  tensor.ElementType
		zp   float64
		want []int64
	}{
		// round half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2; NaN -> zero point.
		{tensor.I8, 0, []int64{0, 0, 2, 2, 0, -2, -2, 127, -128, 0, 127, 0}},
		{tensor.U8, 10, []int64{10, 10, 12, 12, 10, 8, 8, 255, 0, 10, 255, 10}},
		{tensor.I16, -3, []int64{-3, -3, -1, -1, -3, -5, -5, 997, -1003, -3, 32767, -3}},
		{tensor.U16, 0, []int64{0, 0, 2, 2, 0, 0, 0, 1000, 0, 0, 65535, 0}},
		{tensor.I4, 1, []int64{1, 1, 3, 3, 1, -1, -1, 7, -8, 1, 7, 1}},
		{tensor.U4, 2, []int64{2, 2, 4, 4, 2, 0, 0, 15, 0, 2, 15, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			y := run1(t, "QuantizeLinear", nil, x, tF32(tensor.Shape{}, 1), tOf(tc.typ, tensor.Shape{}, []float64{tc.zp}))
			assert.Equal(t, tc.typ, y.Type())
			assert.Equal(t, tc.want, ints(t, y))
		})
	}
	t.Run("no zero point is u8, or output_type", func(t *testing.T) {
		y := run1(t, "QuantizeLinear", nil, tF32(tensor.Shape{2}, -3, 300), tF32(tensor.Shape{}, 1))
		assert.Equal(t, tensor.U8, y.Type())
		assert.Equal(t, []int64{0, 255}, ints(t, y))
		y = run1(t, "QuantizeLinear", graph.Attrs{graph.AttrOutputType: int64(tensor.I4)}, tF32(tensor.Shape{2}, -30, 3), tF32(tensor.Shape{}, 1))
		assert.Equal(t, tensor.I4, y.Type())
		assert.Equal(t, []int64{-8, 3}, ints(t, y))
	})
	t.Run("i32 input, f16 data", func(t *testing.T) {
		y := run1(t, "QuantizeLinear", nil, tI32(tensor.Shape{3}, 5, -7, 1<<20), tF32(tensor.Shape{}, 2), tOf(tensor.I16, tensor.Shape{}, []float64{0}))
		assert.Equal(t, []int64{2, -4, 32767}, ints(t, y), "5/2 = 2.5 rounds to 2, -7/2 to -4")
		h := tOf(tensor.F16, tensor.Shape{2}, []float64{3, -1})
		y = run1(t, "QuantizeLinear", nil, h, tOf(tensor.F16, tensor.Shape{}, []float64{2}), tOf(tensor.I8, tensor.Shape{}, []float64{0}))
		assert.Equal(t, []int64{2, -0}, ints(t, y))
	})
}

func TestQuantizeGeometries(t *testing.T) {
	x := tF32(tensor.Shape{2, 3, 5}, []float32{
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15}...)
	t.Run("per_axis", func(t *testing.T) {
		s := tF32(tensor.Shape{3}, 1, 2, 4)
		z := tOf(tensor.I8, tensor.Shape{3}, []float64{0, 1, -1})
		y := run1(t, "QuantizeLinear", graph.Attrs{"axis": int64(1)}, x, s, z)
		want := []int64{1, 2, 3, 4, 5, 4, 5, 5, 5, 6, 2, 2, 2, 3, 3,
			-1, -2, -3, -4, -5, -2, -3, -3, -3, -4, -4, -4, -4, -5, -5}
		assert.Equal(t, want, ints(t, y))
		back := run1(t, "DequantizeLinear", graph.Attrs{"axis": int64(1)}, y, s, z)
		assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 8, 8, 8, 10, 12, 12, 12, 16, 16}, back.F32()[:15])
	})
	t.Run("blocked, last block short", func(t *testing.T) {
		// axis -1, block 2: the 5 columns are blocks {0,1}, {2,3}, {4}.
		sv := make([]float32, 2*3*3)
		for i := range sv {
			sv[i] = float32(1 + i%3)
		}
		s := tF32(tensor.Shape{2, 3, 3}, sv...)
		y := run1(t, "QuantizeLinear", graph.Attrs{"axis": int64(-1), "block_size": int64(2)}, x, s, tOf(tensor.I8, tensor.Shape{2, 3, 3}, make([]float64, 18)))
		row0 := ints(t, y)[:5] // 1,2 /1; 3,4 /2; 5 /3
		assert.Equal(t, []int64{1, 2, 2, 2, 2}, row0)
		back := run1(t, "DequantizeLinear", graph.Attrs{"axis": int64(-1), "block_size": int64(2)}, y, s)
		assert.Equal(t, []float32{1, 2, 4, 4, 6}, back.F32()[:5])
	})
	t.Run("bad scale shapes", func(t *testing.T) {
		_, err := runOp("QuantizeLinear", graph.Attrs{"axis": int64(1)}, 1, x, tF32(tensor.Shape{4}, 1, 1, 1, 1))
		assert.ErrorContains(t, err, "want a scalar or a vector of 3 elements")
		_, err = runOp("QuantizeLinear", graph.Attrs{"axis": int64(2), "block_size": int64(2)}, 1, x, tF32(tensor.Shape{2, 3, 2}, make([]float32, 12)...))
		assert.ErrorContains(t, err, "want 3 on axis 2")
		_, err = runOp("DequantizeLinear", nil, 1, tOf(tensor.U8, tensor.Shape{2}, []float64{1, 2}), tF32(tensor.Shape{}, 1), tOf(tensor.I8, tensor.Shape{}, []float64{0}))
		assert.ErrorIs(t, err, tensor.ErrType, "zero point of another type than x")
	})
}

func TestDequantizeLinearTypes(t *testing.T) {
	cases := []struct {
		typ    tensor.ElementType
		x      []float64
		zp     float64
		scale  tensor.ElementType
		expect []float64
	}{
		{tensor.U8, []float64{0, 128, 255}, 128, tensor.F32, []float64{-64, 0, 63.5}},
		{tensor.I8, []float64{-128, 0, 127}, -1, tensor.F16, []float64{-63.5, 0.5, 64}},
		{tensor.U16, []float64{0, 65535}, 32768, tensor.F32, []float64{-16384, 16383.5}},
		{tensor.I16, []float64{-32768, 32767}, 0, tensor.BF16, []float64{-16384, 16384}}, // 16383.5 rounds to bf16 16384
		{tensor.I4, []float64{-8, 7}, 0, tensor.F32, []float64{-4, 3.5}},
		{tensor.U4, []float64{0, 15}, 8, tensor.F32, []float64{-4, 3.5}},
		{tensor.I32, []float64{-1000000, 3}, 0, tensor.F32, []float64{-500000, 1.5}},
	}
	for _, tc := range cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			x := tOf(tc.typ, tensor.Shape{int64(len(tc.x))}, tc.x)
			in := []*tensor.Tensor{x, tOf(tc.scale, tensor.Shape{}, []float64{0.5})}
			if tc.typ != tensor.I32 {
				in = append(in, tOf(tc.typ, tensor.Shape{}, []float64{tc.zp}))
			}
			y := run1(t, "DequantizeLinear", nil, in...)
			assert.Equal(t, tc.scale, y.Type())
			assert.Equal(t, tc.expect, y.Float64s())
		})
	}
}

func TestDynamicQuantizeLinear(t *testing.T) {
	cases := []struct {
		name  string
		x     []float32
		scale float32
		zp    int64
		y     []int64
	}{
		{"mixed", []float32{-1, 0, 2, 1.5}, 3.0 / 255, 85, []int64{0, 85, 255, 213}},
		// 2 / f32(4/255) is just below 127.5 in f32: 127.
		{"positive: min is 0", []float32{1, 2, 4}, 4.0 / 255, 0, []int64{64, 127, 255}},
		{"negative: max is 0", []float32{-2, -1}, 2.0 / 255, 255, []int64{0, 128}},
		{"all zero", []float32{0, 0}, 0, 0, []int64{0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := nnRun(t, "DynamicQuantizeLinear", nil, 3, tF32(tensor.Shape{int64(len(tc.x))}, tc.x...))
			assert.Equal(t, tensor.U8, out[0].Type())
			assert.Equal(t, tc.scale, out[1].F32()[0])
			assert.Equal(t, []int64{tc.zp}, ints(t, out[2]))
			assert.Equal(t, tc.y, ints(t, out[0]))
		})
	}
}

// convShifted returns the float Conv of x - xz and w - wz (exact for the
// small integers the test uses) as int64.
func convShifted(t *testing.T, x, w *tensor.Tensor, xz float64, wz []float64, p reftest.ConvParams) []int64 {
	xs := x.Float64s()
	for i := range xs {
		xs[i] -= xz
	}
	ws := w.Float64s()
	per := len(ws) / len(wz)
	for i := range ws {
		ws[i] -= wz[i/per%len(wz)]
	}
	y := reftest.Conv(tOf(tensor.F32, x.Shape(), xs), tOf(tensor.F32, w.Shape(), ws), nil, p)
	out := make([]int64, y.NumElements())
	for i, v := range y.Float64s() {
		out[i] = int64(math.Round(v))
	}
	return out
}

func TestConvIntegerMatchesShiftedConv(t *testing.T) {
	cases := []struct {
		name   string
		x, w   tensor.Shape
		xt, wt tensor.ElementType
		group  int64
		stride []int64
		dil    []int64
		pad    []int64
		perCh  bool
	}{
		{"u8xi8_padded", tensor.Shape{2, 3, 7, 6}, tensor.Shape{4, 3, 3, 3}, tensor.U8, tensor.I8, 1, []int64{1, 1}, []int64{1, 1}, []int64{1, 1, 1, 1}, true},
		{"i8xu8_stride_dil_groups", tensor.Shape{1, 4, 9, 8}, tensor.Shape{6, 2, 3, 2}, tensor.I8, tensor.U8, 2, []int64{2, 1}, []int64{2, 2}, []int64{1, 0, 2, 1}, false},
		{"depthwise", tensor.Shape{1, 5, 6, 6}, tensor.Shape{5, 1, 3, 3}, tensor.U8, tensor.U8, 5, []int64{2, 2}, []int64{1, 1}, []int64{1, 1, 1, 1}, true},
		{"1d", tensor.Shape{2, 3, 11}, tensor.Shape{4, 3, 3}, tensor.U8, tensor.I8, 1, []int64{2}, []int64{1}, []int64{1, 2}, true},
		{"3d", tensor.Shape{1, 2, 4, 5, 3}, tensor.Shape{3, 2, 2, 3, 2}, tensor.I8, tensor.I8, 1, []int64{1, 2, 1}, []int64{1, 1, 1}, []int64{1, 0, 1, 0, 1, 1}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(300 + i))
			x := tOf(tc.xt, tc.x, randVals(rng, tc.xt, tc.x.NumElements(), 100))
			w := tOf(tc.wt, tc.w, randVals(rng, tc.wt, tc.w.NumElements(), 100))
			xz := randVals(rng, tc.xt, 1, 20)
			wz := randVals(rng, tc.wt, 1, 20)
			if tc.perCh {
				wz = randVals(rng, tc.wt, tc.w[0], 20)
			}
			wzT := tOf(tc.wt, tensor.Shape{int64(len(wz))}, wz)
			if !tc.perCh {
				wzT = tOf(tc.wt, tensor.Shape{}, wz)
			}
			r := len(tc.x) - 2
			attrs := graph.Attrs{"group": tc.group, "strides": tc.stride, "dilations": tc.dil, "pads": tc.pad}
			p := reftest.ConvParams{Group: tc.group, Stride: tc.stride, Dil: tc.dil, PadB: tc.pad[:r], PadE: tc.pad[r:]}
			y := run1(t, "ConvInteger", attrs, x, w, tOf(tc.xt, tensor.Shape{}, xz), wzT)
			assert.Equal(t, tensor.I32, y.Type())
			assert.Equal(t, convShifted(t, x, w, xz[0], wz, p), ints(t, y), "padding contributes 0 after the zero point")
		})
	}
}

func TestIntegerAccumulatorWraps(t *testing.T) {
	// 40000 products of 255 * -255 sum to -2601000000, below int32's
	// minimum: the i32 accumulator wraps (two's complement).
	const k = 40000
	a := tOf(tensor.U8, tensor.Shape{1, k}, filled(k, 255))
	b := tOf(tensor.I8, tensor.Shape{k, 1}, filled(k, -128))
	y := run1(t, "MatMulInteger", nil, a, b, tOf(tensor.U8, tensor.Shape{}, []float64{0}), tOf(tensor.I8, tensor.Shape{}, []float64{127}))
	assert.Equal(t, []int64{int64(int32(int64(-2601000000) & 0xffffffff))}, ints(t, y))
}

func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestMatMulIntegerZeroPoints(t *testing.T) {
	a := tOf(tensor.U8, tensor.Shape{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	b := tOf(tensor.I8, tensor.Shape{3, 2}, []float64{1, -1, 2, 0, -3, 5})
	// per-row a zero points [1, 4], per-column b zero points [0, 1]:
	// A' = [[0 1 2] [0 1 2]], B' = [[1 -2] [2 -1] [-3 4]].
	y := run1(t, "MatMulInteger", nil, a, b, tOf(tensor.U8, tensor.Shape{2}, []float64{1, 4}), tOf(tensor.I8, tensor.Shape{2}, []float64{0, 1}))
	assert.Equal(t, []int64{-4, 7, -4, 7}, ints(t, y))
	// Broadcast batches: A [2,1,2,3] x B [3,3,2] -> [2,3,2,2].
	a4 := tOf(tensor.I8, tensor.Shape{2, 1, 2, 3}, randVals(reftest.RNG(7), tensor.I8, 12, 50))
	b3 := tOf(tensor.I8, tensor.Shape{3, 3, 2}, randVals(reftest.RNG(8), tensor.I8, 18, 50))
	y = run1(t, "MatMulInteger", nil, a4, b3)
	assert.Equal(t, tensor.Shape{2, 3, 2, 2}, y.Shape())
	f := run1(t, "MatMul", nil, tOf(tensor.F32, a4.Shape(), a4.Float64s()), tOf(tensor.F32, b3.Shape(), b3.Float64s()))
	assert.Equal(t, f.Float64s(), y.Float64s())
}

func TestQLinearOpsRequantize(t *testing.T) {
	t.Run("matmul per-column scales", func(t *testing.T) {
		a := tOf(tensor.U8, tensor.Shape{1, 2}, []float64{10, 20})
		b := tOf(tensor.I8, tensor.Shape{2, 2}, []float64{1, 2, 3, 4})
		// acc = [10+60, 20+80] = [70, 100]; multipliers 0.5*[0.1, 0.05]/0.5.
		y := run1(t, "QLinearMatMul", nil, a, tF32(tensor.Shape{}, 0.5), tOf(tensor.U8, tensor.Shape{}, []float64{0}),
			b, tF32(tensor.Shape{2}, 0.1, 0.05), tOf(tensor.I8, tensor.Shape{2}, []float64{0, 0}),
			tF32(tensor.Shape{}, 0.5), tOf(tensor.I8, tensor.Shape{}, []float64{-3}))
		assert.Equal(t, tensor.I8, y.Type())
		m0, m1 := requantMultiplier(0.5, 0.1, 0.5), requantMultiplier(0.5, 0.05, 0.5)
		assert.Equal(t, []int64{roundSat(70*m0, -3, -128, 127), roundSat(100*m1, -3, -128, 127)}, ints(t, y))
	})
	t.Run("conv bias and saturation", func(t *testing.T) {
		x := tOf(tensor.U8, tensor.Shape{1, 1, 2, 2}, []float64{1, 2, 3, 4})
		w := tOf(tensor.I8, tensor.Shape{2, 1, 1, 1}, []float64{100, -100})
		y := run1(t, "QLinearConv", nil, x, tF32(tensor.Shape{}, 1), tOf(tensor.U8, tensor.Shape{}, []float64{0}),
			w, tF32(tensor.Shape{}, 1), tOf(tensor.I8, tensor.Shape{}, []float64{0}),
			tF32(tensor.Shape{}, 2), tOf(tensor.U8, tensor.Shape{}, []float64{5}), tI32(tensor.Shape{2}, 1, 0))
		// channel 0: (100*x+1)/2 + 5 saturates at 255 from x=3; channel 1 is negative: 0.
		assert.Equal(t, []int64{55, 105, 155, 205, 0, 0, 0, 0}, ints(t, y), "50.5 rounds to 50, 100.5 to 100")
	})
}

func TestQuantizedConvEpilogue(t *testing.T) {
	rng := reftest.RNG(77)
	x := tOf(tensor.U8, tensor.Shape{1, 3, 5, 6}, randVals(rng, tensor.U8, 90, 250))
	w := tOf(tensor.I8, tensor.Shape{4, 3, 3, 3}, randVals(rng, tensor.I8, 108, 120))
	xz := tOf(tensor.U8, tensor.Shape{}, []float64{17})
	wz := tOf(tensor.I8, tensor.Shape{4}, []float64{0, 1, -2, 3})
	attrs := graph.Attrs{"pads": []int64{1, 1, 1, 1}}
	acc := ints(t, run1(t, "ConvInteger", attrs, x, w, xz, wz))
	xs, ws := float32(0.02), []float32{0.01, 0.03, 0.002, 0.05}
	bias := []float32{0.5, -1, 2, 0}
	res := randVals(rng, tensor.F32, 4*5*6, 3)
	qattrs := graph.Attrs{"pads": []int64{1, 1, 1, 1}}
	in := []*tensor.Tensor{x, w, tF32(tensor.Shape{4}, bias...), tOf(tensor.F32, tensor.Shape{1, 4, 5, 6}, res),
		tF32(tensor.Shape{}, xs), xz, tF32(tensor.Shape{4}, ws...), wz}
	node := graph.NewNode(graph.OpQuantizedConv, "q", nil, qattrs, 1)
	graph.SetPostOps(node, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostRelu}})
	k, _ := Lookup(graph.OpQuantizedConv)
	out, err := k(node, in)
	require.NoError(t, err)
	got := out[0].F32()
	for i, a := range acc {
		c := i / 30
		v := float32(float32(a)*float32(xs*ws[c])) + bias[c]
		v += float32(res[i])
		if v < 0 {
			v = 0
		}
		require.Equal(t, v, got[i], "element %d", i)
	}
	// Requantized to i8 (y_scale 0.1, zero point -5).
	out, err = k(node, append(in, tF32(tensor.Shape{}, 0.1), tOf(tensor.I8, tensor.Shape{}, []float64{-5})))
	require.NoError(t, err)
	require.Equal(t, tensor.I8, out[0].Type())
	q := ints(t, out[0])
	for i, v := range got {
		assert.Equal(t, specQuantize(v, 0.1, -5, -128, 127), q[i], "element %d", i)
	}
}

// specQuantize is saturate(rne(v / s) + zp), written out.
func specQuantize(v, s float32, zp, lo, hi int64) int64 {
	q := v / s
	if q != q {
		return zp
	}
	return int64(math.Max(math.Min(math.RoundToEven(float64(q))+float64(zp), float64(hi)), float64(lo)))
}

func TestQuantizedFullyConnected(t *testing.T) {
	rng := reftest.RNG(78)
	a := tOf(tensor.U8, tensor.Shape{2, 3, 7}, randVals(rng, tensor.U8, 42, 250))
	w := tOf(tensor.I8, tensor.Shape{7, 5}, randVals(rng, tensor.I8, 35, 120))
	acc := ints(t, run1(t, "MatMulInteger", nil, a, w, tOf(tensor.U8, tensor.Shape{}, []float64{9}), tOf(tensor.I8, tensor.Shape{5}, []float64{1, 2, 3, 4, 5})))
	ws := []float32{0.1, 0.2, 0.3, 0.4, 0.5}
	y := run1(t, graph.OpQuantizedFullyConnected, nil, a, w, tF32(tensor.Shape{5}, 1, 2, 3, 4, 5), nil,
		tF32(tensor.Shape{}, 0.01), tOf(tensor.U8, tensor.Shape{}, []float64{9}), tF32(tensor.Shape{5}, ws...),
		tOf(tensor.I8, tensor.Shape{5}, []float64{1, 2, 3, 4, 5}))
	assert.Equal(t, tensor.Shape{2, 3, 5}, y.Shape())
	for i, v := range y.F32() {
		c := i % 5
		assert.Equal(t, float32(float32(acc[i])*float32(0.01*ws[c]))+float32(c+1), v, "element %d", i)
	}
}
