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

// refReduce is a naive reduction: it groups the input elements by output
// coordinate and applies f to each group.
func refReduce(x []float64, shape tensor.Shape, mask []bool, f func([]float64) float64) []float64 {
	kept := shape.Clone()
	for i, m := range mask {
		if m {
			kept[i] = 1
		}
	}
	groups := make([][]float64, kept.NumElements())
	for i, v := range x {
		c := unravel(int64(i), shape)
		o := int64(0)
		for d := range c {
			if mask[d] {
				c[d] = 0
			}
			o = o*kept[d] + c[d]
		}
		groups[o] = append(groups[o], v)
	}
	out := make([]float64, len(groups))
	for i, g := range groups {
		out[i] = f(g)
	}
	return out
}

var reduceRefs = map[string]func([]float64) float64{
	"ReduceSum": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += v
		}
		return s
	},
	"ReduceMean": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += v
		}
		return s / float64(len(g))
	},
	"ReduceMax": func(g []float64) float64 {
		m := math.Inf(-1)
		for _, v := range g {
			m = math.Max(m, v)
		}
		return m
	},
	"ReduceMin": func(g []float64) float64 {
		m := math.Inf(1)
		for _, v := range g {
			m = math.Min(m, v)
		}
		return m
	},
	"ReduceProd": func(g []float64) float64 {
		p := 1.0
		for _, v := range g {
			p *= v
		}
		return p
	},
	"ReduceL1": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += math.Abs(v)
		}
		return s
	},
	"ReduceL2": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += v * v
		}
		return math.Sqrt(s)
	},
	"ReduceSumSquare": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += v * v
		}
		return s
	},
	"ReduceLogSumExp": func(g []float64) float64 {
		s := 0.0
		for _, v := range g {
			s += math.Exp(v)
		}
		return math.Log(s)
	},
}

func TestReduce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shape := tensor.Shape{2, 3, 4}
	axesCases := [][]int64{nil, {0}, {1}, {2}, {-1}, {0, 2}, {-3, 1}, {0, 1, 2}}
	for op, ref := range reduceRefs {
		for _, typ := range []tensor.ElementType{tensor.F32, tensor.F64, tensor.F16, tensor.I32} {
			for _, axes := range axesCases {
				for _, keep := range []int64{1, 0} {
					t.Run(fmt.Sprintf("%s/%v/axes%v/keep%d", op, typ, axes, keep), func(t *testing.T) {
						v := randVals(rng, typ, shape.NumElements(), 3)
						if op == "ReduceProd" && typ.IsFloat() {
							for i := range v {
								v[i] = 0.5 + math.Abs(v[i])/3 // keep the product moderate
							}
							v = tOf(typ, shape, v).Float64s()
						}
						in := []*tensor.Tensor{tOf(typ, shape, v)}
						if axes != nil {
							in = append(in, tI64(tensor.Shape{int64(len(axes))}, axes...))
						}
						y := run1(t, op, graph.Attrs{"keepdims": keep}, in...)
						require.Equal(t, typ, y.Type())
						mask := make([]bool, 3)
						for i := range mask {
							mask[i] = axes == nil
						}
						for _, a := range axes {
							mask[(a+3)%3] = true
						}
						want := refReduce(v, shape, mask, ref)
						wantShape := tensor.Shape{}
						for i, d := range shape {
							switch {
							case !mask[i]:
								wantShape = append(wantShape, d)
							case keep == 1:
								wantShape = append(wantShape, 1)
							}
						}
						assert.Equal(t, wantShape, y.Shape())
						if typ.IsInteger() {
							for i := range want {
								want[i] = wrapTo(typ, math.Trunc(want[i]))
							}
						}
						tol := tolFor(typ)
						if typ == tensor.F16 {
							tol = 4e-3
						}
						reftest.AssertClose(t, want, y, tol)
					})
				}
			}
		}
	}
}

func TestReduceSpecialCases(t *testing.T) {
	t.Run("noop_with_empty_axes", func(t *testing.T) {
		x := tF32(tensor.Shape{2, 2}, 1, -2, 3, -4)
		y := run1(t, "ReduceSum", graph.Attrs{"noop_with_empty_axes": int64(1)}, x)
		assert.Equal(t, x.Shape(), y.Shape())
		assert.Equal(t, x.F32(), y.F32())
		y = run1(t, "ReduceL1", graph.Attrs{"noop_with_empty_axes": int64(1)}, x, tI64(tensor.Shape{0}))
		assert.Equal(t, []float32{1, 2, 3, 4}, y.F32())
	})
	t.Run("axes_attribute", func(t *testing.T) {
		y := run1(t, "ReduceMean", graph.Attrs{"axes": []int64{1}, "keepdims": int64(0)}, tF32(tensor.Shape{2, 2}, 1, 3, 5, 9))
		assert.Equal(t, []float32{2, 7}, y.F32())
	})
	t.Run("axes_i32", func(t *testing.T) {
		y := run1(t, "ReduceMax", nil, tF32(tensor.Shape{2, 2}, 1, 3, 5, 0), tI32(tensor.Shape{1}, 0))
		assert.Equal(t, tensor.Shape{1, 2}, y.Shape())
		assert.Equal(t, []float32{5, 3}, y.F32())
	})
	t.Run("empty_reduction", func(t *testing.T) {
		x := tensor.MustNew(tensor.F32, tensor.Shape{2, 0})
		ax := tI64(tensor.Shape{1}, 1)
		want := map[string]float64{"ReduceSum": 0, "ReduceProd": 1, "ReduceMax": math.Inf(-1), "ReduceMin": math.Inf(1), "ReduceLogSumExp": math.Inf(-1), "ReduceMean": math.NaN()}
		for op, w := range want {
			y := run1(t, op, nil, x, ax)
			assert.Equal(t, tensor.Shape{2, 1}, y.Shape(), op)
			reftest.AssertClose(t, []float64{w, w}, y, 0, op)
		}
		y := run1(t, "ReduceMax", nil, tensor.MustNew(tensor.I32, tensor.Shape{0}), tI64(tensor.Shape{1}, 0))
		assert.Equal(t, []int32{math.MinInt32}, y.I32())
	})
	t.Run("integers_wrap", func(t *testing.T) {
		// numpy: sums and products wrap in the type; u64 order is
		// unsigned above 2^63; the mean truncates toward zero.
		u, err := tensor.From(tensor.Shape{3}, []uint64{1 << 63, 1<<63 + 5, 7})
		require.NoError(t, err)
		ax := tI64(tensor.Shape{1}, 0)
		y, err := tensor.Data[uint64](run1(t, "ReduceSum", nil, u, ax))
		require.NoError(t, err)
		assert.Equal(t, []uint64{12}, y)
		y, err = tensor.Data[uint64](run1(t, "ReduceMax", nil, u, ax))
		require.NoError(t, err)
		assert.Equal(t, []uint64{1<<63 + 5}, y)
		y, err = tensor.Data[uint64](run1(t, "ReduceMin", nil, u, ax))
		require.NoError(t, err)
		assert.Equal(t, []uint64{7}, y)
		i8, err := tensor.From(tensor.Shape{3}, []int8{100, 100, -7})
		require.NoError(t, err)
		p, err := tensor.Data[int8](run1(t, "ReduceProd", nil, i8, ax))
		require.NoError(t, err)
		assert.Equal(t, []int8{int8(-70000 % 256)}, p)
		m, err := tensor.Data[int8](run1(t, "ReduceMean", nil, i8, ax))
		require.NoError(t, err)
		assert.Equal(t, []int8{64}, m, "(100+100-7)/3 in 64 bits, truncated")
		neg, err := tensor.From(tensor.Shape{3}, []int8{-7, -1, 0})
		require.NoError(t, err)
		m, err = tensor.Data[int8](run1(t, "ReduceMean", nil, neg, ax))
		require.NoError(t, err)
		assert.Equal(t, []int8{-2}, m, "-8/3 truncates toward zero, as ONNX Runtime 1.30 gives")
	})
	t.Run("empty_kept_axis", func(t *testing.T) {
		y := run1(t, "ReduceSum", nil, tensor.MustNew(tensor.F32, tensor.Shape{0, 3}), tI64(tensor.Shape{1}, 1))
		assert.Equal(t, tensor.Shape{0, 1}, y.Shape())
	})
	t.Run("i64_exact", func(t *testing.T) {
		big := int64(1) << 60
		y := run1(t, "ReduceSum", graph.Attrs{"keepdims": int64(0)}, tI64(tensor.Shape{3}, big, 1, 1))
		assert.Equal(t, []int64{big + 2}, y.I64())
	})
	t.Run("f32_accumulates_in_f64", func(t *testing.T) {
		v := make([]float32, 1<<20)
		for i := range v {
			v[i] = 0.1
		}
		y := run1(t, "ReduceSum", graph.Attrs{"keepdims": int64(0)}, tF32(tensor.Shape{int64(len(v))}, v...))
		assert.InDelta(t, float64(float32(0.1))*float64(len(v)), float64(y.F32()[0]), 1e-2)
	})
	t.Run("logsumexp_large", func(t *testing.T) {
		y := run1(t, "ReduceLogSumExp", nil, tF32(tensor.Shape{2}, 1000, 1000))
		assert.InDelta(t, 1000+math.Ln2, float64(y.F32()[0]), 1e-3)
	})
	t.Run("nan_max", func(t *testing.T) {
		y := run1(t, "ReduceMax", nil, tF32(tensor.Shape{3}, 1, float32(math.NaN()), 2))
		assert.True(t, math.IsNaN(float64(y.F32()[0])))
	})
	t.Run("errors", func(t *testing.T) {
		x := tF32(tensor.Shape{2, 2}, 1, 2, 3, 4)
		_, err := runOp("ReduceSum", nil, 1, x, tI64(tensor.Shape{2}, 1, -1))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "node_ReduceSum")
		_, err = runOp("ReduceSum", nil, 1, x, tI64(tensor.Shape{1}, 2))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		_, err = runOp("ReduceSum", nil, 1, x, tF32(tensor.Shape{1}, 0))
		assert.ErrorIs(t, err, tensor.ErrType)
	})
}

func TestArgMaxMin(t *testing.T) {
	x := tF32(tensor.Shape{2, 3}, 1, 5, 5, 7, 0, 7)
	tests := []struct {
		op    string
		attrs graph.Attrs
		shape tensor.Shape
		want  []int64
	}{
		{"ArgMax", nil, tensor.Shape{1, 3}, []int64{1, 0, 1}},
		{"ArgMax", graph.Attrs{"axis": int64(1)}, tensor.Shape{2, 1}, []int64{1, 0}},
		{"ArgMax", graph.Attrs{"axis": int64(-1), "select_last_index": int64(1), "keepdims": int64(0)}, tensor.Shape{2}, []int64{2, 2}},
		{"ArgMin", graph.Attrs{"axis": int64(1), "keepdims": int64(0)}, tensor.Shape{2}, []int64{0, 1}},
		{"ArgMin", graph.Attrs{"axis": int64(0), "keepdims": int64(0)}, tensor.Shape{3}, []int64{0, 1, 0}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s%v", tc.op, tc.attrs), func(t *testing.T) {
			for _, typ := range []tensor.ElementType{tensor.F32, tensor.F16, tensor.I64, tensor.U8} {
				y := run1(t, tc.op, tc.attrs, tOf(typ, x.Shape(), x.Float64s()))
				require.Equal(t, tensor.I64, y.Type())
				assert.Equal(t, tc.shape, y.Shape(), "%v", typ)
				assert.Equal(t, tc.want, y.I64(), "%v", typ)
			}
		})
	}
	_, err := runOp("ArgMax", graph.Attrs{"axis": int64(2)}, 1, x)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

func BenchmarkReduceMeanLastAxis(b *testing.B) {
	x := tensor.MustNew(tensor.F32, tensor.Shape{128, 768})
	ax := tI64(tensor.Shape{1}, -1)
	k := hostKernels()["ReduceMean"]
	n := graph.NewNode("ReduceMean", "bench", nil, nil, 1)
	for b.Loop() {
		if _, err := k(n, []*tensor.Tensor{x, ax}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(x.ByteSize())
}
