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

// iotaF returns 0..n-1 as float64 (exact in every numeric type for small n).
func iotaF(n int64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)
	}
	return v
}

// movementTypes have every element size a movement kernel must handle.
var movementTypes = []tensor.ElementType{tensor.F32, tensor.F16, tensor.I64, tensor.U8, tensor.I16}

func TestConcat(t *testing.T) {
	for _, typ := range movementTypes {
		a := tOf(typ, tensor.Shape{2, 2}, []float64{1, 2, 3, 4})
		b := tOf(typ, tensor.Shape{2, 1}, []float64{5, 6})
		e := tOf(typ, tensor.Shape{2, 0}, nil)
		tests := []struct {
			name  string
			axis  int64
			in    []*tensor.Tensor
			shape tensor.Shape
			want  []float64
		}{
			{"axis0", 0, []*tensor.Tensor{a, a}, tensor.Shape{4, 2}, []float64{1, 2, 3, 4, 1, 2, 3, 4}},
			{"axis1", 1, []*tensor.Tensor{a, b}, tensor.Shape{2, 3}, []float64{1, 2, 5, 3, 4, 6}},
			{"neg_axis_with_empty", -1, []*tensor.Tensor{b, e, a}, tensor.Shape{2, 3}, []float64{5, 1, 2, 6, 3, 4}},
			{"single", 0, []*tensor.Tensor{b}, tensor.Shape{2, 1}, []float64{5, 6}},
		}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%v/%s", typ, tc.name), func(t *testing.T) {
				y := run1(t, "Concat", graph.Attrs{"axis": tc.axis}, tc.in...)
				require.Equal(t, typ, y.Type())
				assert.Equal(t, tc.shape, y.Shape())
				reftest.AssertClose(t, tc.want, y, 0)
			})
		}
	}
	t.Run("bool", func(t *testing.T) {
		y := run1(t, "Concat", graph.Attrs{"axis": int64(0)}, tBool(tensor.Shape{1}, true), tBool(tensor.Shape{2}, false, true))
		assert.Equal(t, []bool{true, false, true}, y.Bool())
	})
	t.Run("errors", func(t *testing.T) {
		a := tF32(tensor.Shape{2, 2}, 1, 2, 3, 4)
		_, err := runOp("Concat", graph.Attrs{"axis": int64(1)}, 1, a, tF32(tensor.Shape{3, 1}, 1, 2, 3))
		assert.ErrorIs(t, err, tensor.ErrShape)
		assert.Contains(t, err.Error(), "node_Concat")
		_, err = runOp("Concat", graph.Attrs{"axis": int64(1)}, 1, a, tI64(tensor.Shape{2, 1}, 1, 2))
		assert.ErrorIs(t, err, tensor.ErrType)
		_, err = runOp("Concat", graph.Attrs{"axis": int64(2)}, 1, a, a)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	})
}

func TestSplit(t *testing.T) {
	x := tOf(tensor.I32, tensor.Shape{2, 7}, iotaF(14))
	tests := []struct {
		name   string
		attrs  graph.Attrs
		split  *tensor.Tensor
		nOut   int
		shapes []tensor.Shape
		first  []float64
		last   []float64
	}{
		{"split_input", graph.Attrs{"axis": int64(1)}, tI64(tensor.Shape{2}, 2, 5), 2,
			[]tensor.Shape{{2, 2}, {2, 5}}, []float64{0, 1, 7, 8}, []float64{2, 3, 4, 5, 6, 9, 10, 11, 12, 13}},
		{"num_outputs_uneven", graph.Attrs{"axis": int64(-1), "num_outputs": int64(3)}, nil, 3,
			[]tensor.Shape{{2, 3}, {2, 3}, {2, 1}}, []float64{0, 1, 2, 7, 8, 9}, []float64{6, 13}},
		{"equal_axis0", nil, nil, 2, []tensor.Shape{{1, 7}, {1, 7}}, iotaF(7), []float64{7, 8, 9, 10, 11, 12, 13}},
		{"zero_size_part", graph.Attrs{"axis": int64(1)}, tI64(tensor.Shape{3}, 0, 7, 0), 3,
			[]tensor.Shape{{2, 0}, {2, 7}, {2, 0}}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runOp("Split", tc.attrs, tc.nOut, x, tc.split)
			require.NoError(t, err)
			require.Len(t, out, tc.nOut)
			for i, s := range tc.shapes {
				assert.Equal(t, s, out[i].Shape(), "output %d", i)
				assert.Equal(t, tensor.I32, out[i].Type())
			}
			reftest.AssertClose(t, tc.first, out[0], 0)
			reftest.AssertClose(t, tc.last, out[tc.nOut-1], 0)
		})
	}
	_, err := runOp("Split", graph.Attrs{"axis": int64(1)}, 2, x)
	assert.ErrorIs(t, err, tensor.ErrShape, "7 does not split into 2")
	_, err = runOp("Split", graph.Attrs{"axis": int64(1)}, 2, x, tI64(tensor.Shape{2}, 3, 3))
	assert.ErrorIs(t, err, tensor.ErrShape)
	assert.Contains(t, err.Error(), "node_Split")
}

func TestSlice(t *testing.T) {
	x := tOf(tensor.F32, tensor.Shape{3, 4}, iotaF(12))
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		name                      string
		starts, ends, axes, steps []int64
		shape                     tensor.Shape
		want                      []float64
	}{
		{"basic", []int64{1, 0}, []int64{2, 3}, nil, nil, tensor.Shape{1, 3}, []float64{4, 5, 6}},
		{"axes_subset", []int64{1}, []int64{3}, []int64{1}, nil, tensor.Shape{3, 2}, []float64{1, 2, 5, 6, 9, 10}},
		{"negative_axis_and_start", []int64{-2}, []int64{maxI}, []int64{-1}, nil, tensor.Shape{3, 2}, []float64{2, 3, 6, 7, 10, 11}},
		{"int64_max_end", []int64{1}, []int64{maxI}, []int64{0}, nil, tensor.Shape{2, 4}, iotaF(12)[4:]},
		{"clamped_start", []int64{-100}, []int64{1}, []int64{0}, nil, tensor.Shape{1, 4}, []float64{0, 1, 2, 3}},
		{"step2", []int64{0}, []int64{maxI}, []int64{1}, []int64{2}, tensor.Shape{3, 2}, []float64{0, 2, 4, 6, 8, 10}},
		{"reverse_all", []int64{-1, -1}, []int64{minI, minI}, []int64{0, 1}, []int64{-1, -1}, tensor.Shape{3, 4},
			[]float64{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"neg_step2", []int64{3}, []int64{0}, []int64{1}, []int64{-2}, tensor.Shape{3, 2}, []float64{3, 1, 7, 5, 11, 9}},
		{"neg_step_clamped_start", []int64{100}, []int64{-100}, []int64{0}, []int64{-2}, tensor.Shape{2, 4}, []float64{8, 9, 10, 11, 0, 1, 2, 3}},
		{"empty", []int64{2}, []int64{1}, []int64{0}, nil, tensor.Shape{0, 4}, nil},
		{"empty_neg", []int64{1}, []int64{2}, []int64{0}, []int64{-1}, tensor.Shape{0, 4}, nil},
	}
	for _, tc := range tests {
		for _, typ := range movementTypes {
			t.Run(fmt.Sprintf("%s/%v", tc.name, typ), func(t *testing.T) {
				in := []*tensor.Tensor{tOf(typ, x.Shape(), x.Float64s()),
					tI64(tensor.Shape{int64(len(tc.starts))}, tc.starts...),
					tI64(tensor.Shape{int64(len(tc.ends))}, tc.ends...), nil, nil}
				if tc.axes != nil {
					in[3] = tI64(tensor.Shape{int64(len(tc.axes))}, tc.axes...)
				}
				if tc.steps != nil {
					in[4] = tI64(tensor.Shape{int64(len(tc.steps))}, tc.steps...)
				}
				y := run1(t, "Slice", nil, in...)
				assert.Equal(t, tc.shape, y.Shape())
				reftest.AssertClose(t, tc.want, y, 0)
			})
		}
	}
	t.Run("i32_params", func(t *testing.T) {
		y := run1(t, "Slice", nil, x, tI32(tensor.Shape{1}, 1), tI32(tensor.Shape{1}, 2), tI32(tensor.Shape{1}, 1))
		assert.Equal(t, []float32{1, 5, 9}, y.F32())
	})
	t.Run("errors", func(t *testing.T) {
		_, err := runOp("Slice", nil, 1, x, tI64(tensor.Shape{1}, 0), tI64(tensor.Shape{1}, 1), tI64(tensor.Shape{1}, 0), tI64(tensor.Shape{1}, 0))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "step 0")
		_, err = runOp("Slice", nil, 1, x, tI64(tensor.Shape{2}, 0, 0), tI64(tensor.Shape{2}, 1, 1), tI64(tensor.Shape{2}, 0, -2))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "repeated axis")
		assert.Contains(t, err.Error(), "node_Slice")
	})
}

func TestReshapeFlattenSqueeze(t *testing.T) {
	x := tOf(tensor.F32, tensor.Shape{2, 3, 4}, iotaF(24))
	tests := []struct {
		name  string
		op    string
		attrs graph.Attrs
		arg   *tensor.Tensor
		shape tensor.Shape
	}{
		{"reshape_minus1", "Reshape", nil, tI64(tensor.Shape{2}, -1, 4), tensor.Shape{6, 4}},
		{"reshape_zero_copies", "Reshape", nil, tI64(tensor.Shape{3}, 0, -1, 2), tensor.Shape{2, 6, 2}},
		{"reshape_scalar_shape", "Reshape", nil, tI64(tensor.Shape{1}, 24), tensor.Shape{24}},
		{"flatten_default", "Flatten", nil, nil, tensor.Shape{2, 12}},
		{"flatten_0", "Flatten", graph.Attrs{"axis": int64(0)}, nil, tensor.Shape{1, 24}},
		{"flatten_neg", "Flatten", graph.Attrs{"axis": int64(-1)}, nil, tensor.Shape{6, 4}},
		{"flatten_rank", "Flatten", graph.Attrs{"axis": int64(3)}, nil, tensor.Shape{24, 1}},
		{"unsqueeze", "Unsqueeze", nil, tI64(tensor.Shape{2}, 0, -1), tensor.Shape{1, 2, 3, 4, 1}},
		{"unsqueeze_middle", "Unsqueeze", nil, tI64(tensor.Shape{2}, 3, 1), tensor.Shape{2, 1, 3, 1, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := []*tensor.Tensor{x}
			if tc.arg != nil {
				in = append(in, tc.arg)
			}
			y := run1(t, tc.op, tc.attrs, in...)
			assert.Equal(t, tc.shape, y.Shape())
			assert.Equal(t, x.F32(), y.F32())
			y.F32()[0] = 100
			assert.Equal(t, float32(0), x.F32()[0], "must not alias the input")
		})
	}
	t.Run("reshape_allowzero", func(t *testing.T) {
		y := run1(t, "Reshape", graph.Attrs{"allowzero": int64(1)}, tensor.MustNew(tensor.F32, tensor.Shape{0, 3}), tI64(tensor.Shape{2}, 3, 0))
		assert.Equal(t, tensor.Shape{3, 0}, y.Shape())
	})
	t.Run("squeeze", func(t *testing.T) {
		s := tOf(tensor.I64, tensor.Shape{1, 3, 1, 2}, iotaF(6))
		y := run1(t, "Squeeze", nil, s)
		assert.Equal(t, tensor.Shape{3, 2}, y.Shape())
		y = run1(t, "Squeeze", nil, s, tI64(tensor.Shape{1}, -2))
		assert.Equal(t, tensor.Shape{1, 3, 2}, y.Shape())
		assert.Equal(t, s.I64(), y.I64())
		_, err := runOp("Squeeze", nil, 1, s, tI64(tensor.Shape{1}, 1))
		assert.ErrorIs(t, err, tensor.ErrShape)
		assert.Contains(t, err.Error(), "node_Squeeze")
	})
	t.Run("errors", func(t *testing.T) {
		_, err := runOp("Reshape", nil, 1, x, tI64(tensor.Shape{2}, -1, -1))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		_, err = runOp("Reshape", nil, 1, x, tI64(tensor.Shape{2}, 5, -1))
		assert.ErrorIs(t, err, tensor.ErrShape)
		_, err = runOp("Reshape", nil, 1, x, tI64(tensor.Shape{2}, 5, 5))
		assert.ErrorIs(t, err, tensor.ErrShape)
		assert.Contains(t, err.Error(), "node_Reshape")
		_, err = runOp("Unsqueeze", nil, 1, x, tI64(tensor.Shape{2}, 0, 0))
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	})
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	shape := tensor.Shape{2, 3, 4, 5}
	perms := [][]int64{nil, {0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 2, 3}, {2, 0, 3, -3}}
	for _, typ := range movementTypes {
		for _, perm := range perms {
			t.Run(fmt.Sprintf("%v/%v", typ, perm), func(t *testing.T) {
				v := randVals(rng, typ, shape.NumElements(), 100)
				var attrs graph.Attrs
				p := []int64{3, 2, 1, 0}
				if perm != nil {
					attrs = graph.Attrs{"perm": perm}
					p = make([]int64, 4)
					for i, a := range perm {
						p[i] = (a + 4) % 4
					}
				}
				y := run1(t, "Transpose", attrs, tOf(typ, shape, v))
				out := make(tensor.Shape, 4)
				for i, a := range p {
					out[i] = shape[a]
				}
				require.Equal(t, out, y.Shape())
				want := make([]float64, len(v))
				for i := range want {
					oc := unravel(int64(i), out)
					ic := make([]int64, 4)
					for d, a := range p {
						ic[a] = oc[d]
					}
					want[i] = v[((ic[0]*shape[1]+ic[1])*shape[2]+ic[2])*shape[3]+ic[3]]
				}
				reftest.AssertClose(t, want, y, 0)
			})
		}
	}
	_, err := runOp("Transpose", graph.Attrs{"perm": []int64{0, 0}}, 1, tF32(tensor.Shape{1, 1}, 1))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	y := run1(t, "Transpose", nil, tensor.MustNew(tensor.F32, tensor.Shape{0, 3}))
	assert.Equal(t, tensor.Shape{3, 0}, y.Shape())
}

func TestGather(t *testing.T) {
	x := tOf(tensor.F32, tensor.Shape{3, 4}, iotaF(12))
	tests := []struct {
		name  string
		axis  int64
		idx   *tensor.Tensor
		shape tensor.Shape
		want  []float64
	}{
		{"axis0_negative", 0, tI64(tensor.Shape{2}, -1, 0), tensor.Shape{2, 4}, []float64{8, 9, 10, 11, 0, 1, 2, 3}},
		{"axis1_2d_i32", 1, tI32(tensor.Shape{2, 2}, 3, 0, -3, 1), tensor.Shape{3, 2, 2}, []float64{3, 0, 1, 1, 7, 4, 5, 5, 11, 8, 9, 9}},
		{"scalar_index", -1, tI64(tensor.Shape{}, 2), tensor.Shape{3}, []float64{2, 6, 10}},
		{"empty_indices", 0, tI64(tensor.Shape{0}), tensor.Shape{0, 4}, nil},
	}
	for _, tc := range tests {
		for _, typ := range movementTypes {
			t.Run(fmt.Sprintf("%s/%v", tc.name, typ), func(t *testing.T) {
				y := run1(t, "Gather", graph.Attrs{"axis": tc.axis}, tOf(typ, x.Shape(), x.Float64s()), tc.idx)
				require.Equal(t, typ, y.Type())
				assert.Equal(t, tc.shape, y.Shape())
				reftest.AssertClose(t, tc.want, y, 0)
			})
		}
	}
	t.Run("bool_data", func(t *testing.T) {
		y := run1(t, "Gather", nil, tBool(tensor.Shape{3}, true, false, true), tI64(tensor.Shape{2}, 1, -1))
		assert.Equal(t, []bool{false, true}, y.Bool())
	})
	t.Run("out_of_range", func(t *testing.T) {
		for _, i := range []int64{3, -4} {
			_, err := runOp("Gather", nil, 1, x, tI64(tensor.Shape{1}, i))
			assert.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "node_Gather")
		}
		_, err := runOp("Gather", nil, 1, x, tF32(tensor.Shape{1}, 0))
		assert.ErrorIs(t, err, tensor.ErrType)
	})
}

func TestShapeSizeConstantOfShape(t *testing.T) {
	x := tensor.MustNew(tensor.U8, tensor.Shape{2, 3, 4, 5})
	tests := []struct {
		name  string
		attrs graph.Attrs
		want  []int64
	}{
		{"all", nil, []int64{2, 3, 4, 5}},
		{"start", graph.Attrs{"start": int64(1)}, []int64{3, 4, 5}},
		{"negative", graph.Attrs{"start": int64(-3), "end": int64(-1)}, []int64{3, 4}},
		{"clamped", graph.Attrs{"start": int64(-10), "end": int64(10)}, []int64{2, 3, 4, 5}},
		{"empty", graph.Attrs{"start": int64(3), "end": int64(1)}, []int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := run1(t, "Shape", tc.attrs, x)
			assert.Equal(t, tensor.Shape{int64(len(tc.want))}, y.Shape())
			assert.Equal(t, tc.want, y.I64())
		})
	}
	s := run1(t, "Size", nil, x)
	assert.Equal(t, tensor.Shape{}, s.Shape())
	assert.Equal(t, []int64{120}, s.I64())

	c := run1(t, "ConstantOfShape", nil, tI64(tensor.Shape{2}, 2, 3))
	assert.Equal(t, tensor.F32, c.Type())
	assert.Equal(t, []float32{0, 0, 0, 0, 0, 0}, c.F32())
	c = run1(t, "ConstantOfShape", graph.Attrs{"value": tI64(tensor.Shape{1}, -7)}, tI64(tensor.Shape{3}, 1, 5, 1))
	assert.Equal(t, tensor.Shape{1, 5, 1}, c.Shape())
	assert.Equal(t, []int64{-7, -7, -7, -7, -7}, c.I64())
	c = run1(t, "ConstantOfShape", graph.Attrs{"value": tF32(tensor.Shape{1}, 2)}, tI64(tensor.Shape{2}, 0, 3))
	assert.Equal(t, tensor.Shape{0, 3}, c.Shape())
	c = run1(t, "ConstantOfShape", nil, tI64(tensor.Shape{0}))
	assert.Equal(t, 0, c.Rank())
	assert.Equal(t, []float32{0}, c.F32())
}

func TestExpandTile(t *testing.T) {
	x := tOf(tensor.I16, tensor.Shape{3, 1}, []float64{1, 2, 3})
	y := run1(t, "Expand", nil, x, tI64(tensor.Shape{3}, 2, 1, 4))
	assert.Equal(t, tensor.Shape{2, 3, 4}, y.Shape())
	want := refBroadcast(tensor.Shape{2, 3, 4}, []tensor.Shape{{3, 1}}, [][]float64{{1, 2, 3}}, func(a []float64) float64 { return a[0] })
	reftest.AssertClose(t, want, y, 0)
	y = run1(t, "Expand", nil, x, tI64(tensor.Shape{1}, 1))
	assert.Equal(t, tensor.Shape{3, 1}, y.Shape(), "a smaller shape keeps the input's")
	_, err := runOp("Expand", nil, 1, x, tI64(tensor.Shape{2}, 2, 4))
	assert.ErrorIs(t, err, tensor.ErrShape)
	assert.Contains(t, err.Error(), "node_Expand")

	m := tOf(tensor.F16, tensor.Shape{2, 3}, iotaF(6))
	tests := []struct {
		reps  []int64
		shape tensor.Shape
	}{{[]int64{1, 1}, tensor.Shape{2, 3}}, {[]int64{2, 1}, tensor.Shape{4, 3}}, {[]int64{1, 3}, tensor.Shape{2, 9}}, {[]int64{2, 2}, tensor.Shape{4, 6}}, {[]int64{0, 2}, tensor.Shape{0, 6}}}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("tile%v", tc.reps), func(t *testing.T) {
			y := run1(t, "Tile", nil, m, tI64(tensor.Shape{2}, tc.reps...))
			require.Equal(t, tc.shape, y.Shape())
			want := make([]float64, tc.shape.NumElements())
			for i := range want {
				c := unravel(int64(i), tc.shape)
				want[i] = float64((c[0]%2)*3 + c[1]%3)
			}
			reftest.AssertClose(t, want, y, 0)
		})
	}
	_, err = runOp("Tile", nil, 1, m, tI64(tensor.Shape{1}, 2))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

func TestRange(t *testing.T) {
	tests := []struct {
		name               string
		typ                tensor.ElementType
		start, limit, step float64
		want               []float64
	}{
		{"i64", tensor.I64, 0, 5, 1, []float64{0, 1, 2, 3, 4}},
		{"i32_step", tensor.I32, 1, 10, 3, []float64{1, 4, 7}},
		{"i64_negative", tensor.I64, 10, 4, -2, []float64{10, 8, 6}},
		{"i16_uneven_negative", tensor.I16, 10, 5, -2, []float64{10, 8, 6}},
		{"empty", tensor.I64, 5, 0, 1, []float64{}},
		{"f32", tensor.F32, 0, 1, 0.25, []float64{0, 0.25, 0.5, 0.75}},
		{"f64_fraction", tensor.F64, 1, 2.1, 0.5, []float64{1, 1.5, 2}},
		{"f32_empty", tensor.F32, 1, 1, 0.5, []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := func(v float64) *tensor.Tensor { return tOf(tc.typ, tensor.Shape{}, []float64{v}) }
			y := run1(t, "Range", nil, sc(tc.start), sc(tc.limit), sc(tc.step))
			require.Equal(t, tc.typ, y.Type())
			assert.Equal(t, tensor.Shape{int64(len(tc.want))}, y.Shape())
			reftest.AssertClose(t, tc.want, y, 1e-7)
		})
	}
	_, err := runOp("Range", nil, 1, tI64(tensor.Shape{}, 0), tI64(tensor.Shape{}, 5), tI64(tensor.Shape{}, 0))
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	_, err = runOp("Range", nil, 1, tI64(tensor.Shape{}, 0), tI32(tensor.Shape{}, 5), tI64(tensor.Shape{}, 1))
	assert.ErrorIs(t, err, tensor.ErrType)
}

func BenchmarkTranspose(b *testing.B) {
	x := tensor.MustNew(tensor.F32, tensor.Shape{1, 64, 56, 56})
	k := hostKernels()["Transpose"]
	n := graph.NewNode("Transpose", "bench", nil, graph.Attrs{"perm": []int64{0, 2, 3, 1}}, 1)
	for b.Loop() {
		if _, err := k(n, []*tensor.Tensor{x}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(x.ByteSize())
}
