package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels/gen"
	"github.com/clinfer/clinfer/tensor"
)

// launchGeneratedChains launches kernels package gen prints for chains of
// element-wise ops (TestCatalogueKernels runs it, under oclgrind too), on
// f32 buffers and again built with -DHALF on f16 ones, at least one work
// item past n, their arguments checked against the generated signature:
//
//   - y = Gelu(Sigmoid(x*0.5 + b) * x - Clip(x, -1, 1)) with x [2,3,5] and
//     a bias b [3,1] broadcast, its shape table unmerged;
//   - y = HardSwish(Max(PRelu(x, s), Div(x, d)) - Min(x, e)) with x
//     [2,4,3,3], a slope s [4,1,1], d [3] and e [2,1,3,1]: four inputs,
//     three broadcast along different axes.
//
// Each runs as the generic kernel (no options) and as the eltwise
// family's flat and rows layouts with EPT=4 and the plan's -DRANK and
// -DS<i>, which must write the same output. Then a chain ending in a
// reduction, y = ReduceMean((x - b)^2, axes=-1) with x [2,3,5] and b [5],
// one item per row (graph.LaunchReduceRows), checked against the host.
func launchGeneratedChains(t *testing.T, e *clEnv) {
	k := 0
	op := func(typ string, in ...graph.Output) graph.Output {
		k++
		return graph.NewNode(typ, fmt.Sprintf("%s_%d", typ, k), in, nil, 1).Out(0)
	}
	c := func(v float32) graph.Output { return graph.NewConstant("c", tensor.Scalar(v)).Out(0) }
	cases := []struct {
		name  string
		body  func() *graph.Model
		dims  []int
		sizes []int   // elements of each input
		m     []int32 // the shape table the planner would pass
	}{
		{"gate", func() *graph.Model {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3, 5))
			b := graph.NewParameter("b", tensor.F32, graph.ShapeOf(3, 1))
			gate := op("Mul", op("Sigmoid", op("Add", op("Mul", x.Out(0), c(0.5)), b.Out(0))), x.Out(0))
			return graph.NewModel("gate", []*graph.Node{x, b}, []*graph.Node{graph.NewResult("y", op("Gelu", op("Sub", gate, op("Clip", x.Out(0), c(-1), c(1)))))})
		}, []int{2, 3, 5}, []int{30, 3},
			// rank 3, dims [2,3,5], x's strides [15,5,1], b's [0,1,0].
			[]int32{3, 2, 3, 5, 15, 5, 1, 0, 1, 0}},
		{"four_inputs", func() *graph.Model {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 4, 3, 3))
			s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(4, 1, 1))
			d := graph.NewParameter("d", tensor.F32, graph.ShapeOf(3))
			m := graph.NewParameter("e", tensor.F32, graph.ShapeOf(2, 1, 3, 1))
			y := op("HardSwish", op("Sub", op("Max", op("PRelu", x.Out(0), s.Out(0)), op("Div", x.Out(0), d.Out(0))), op("Min", x.Out(0), m.Out(0))))
			return graph.NewModel("four", []*graph.Node{x, s, d, m}, []*graph.Node{graph.NewResult("y", y)})
		}, []int{2, 4, 3, 3}, []int{72, 4, 3, 6},
			// rank 4, dims [2,4,3,3]; strides of x, s, d, e.
			[]int32{4, 2, 4, 3, 3, 36, 9, 3, 1, 0, 1, 0, 0, 0, 0, 0, 1, 3, 0, 1, 0}},
	}
	for _, cs := range cases {
		body := cs.body()
		require.NoError(t, body.InferShapes())
		g, err := gen.Elementwise(body)
		require.NoError(t, err, cs.name)
		n, rank := 1, len(cs.dims)
		for _, d := range cs.dims {
			n *= d
		}
		inner := cs.dims[rank-1]
		known := fmt.Sprintf("-DRANK=%d", rank)
		for i := range cs.sizes {
			known += fmt.Sprintf(" -DS%d=%d", i, cs.m[(i+2)*rank])
		}
		layouts := []struct {
			defines string
			global  []int
		}{
			{"", []int{(n/64 + 1) * 64}},
			{"-DEPT=4 " + known, []int{(n/4/64 + 1) * 64}},
			{"-DROWS -DEPT=4 " + known, []int{(inner+3)/4 + 1, n / inner}},
		}
		for _, half := range []bool{false, true} {
			var want []byte
			for _, l := range layouts {
				var args []any
				for i, size := range cs.sizes {
					if half {
						args = append(args, f16Pattern(size, false))
					} else {
						args = append(args, fill(size, -2+0.1*float32(i), 2))
					}
				}
				defines := l.defines
				if half {
					args = append(args, make([]uint16, n))
					defines += " -DHALF"
				} else {
					args = append(args, make([]float32, n))
				}
				args = append(args, uint64(n), cs.m, g.Params)
				out := e.launch(t, g.Spec(), defines, l.global, nil, args...)[len(cs.sizes)]
				if want == nil {
					want = out
					assert.NotEqual(t, make([]byte, len(out)), out, "%s: the chain wrote its output", cs.name)
					continue
				}
				assert.Equal(t, want, out, "%s built with %q", cs.name, defines)
			}
		}
	}
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3, 5))
	b := graph.NewParameter("b", tensor.F32, graph.ShapeOf(5))
	axes, err := tensor.FromI64(tensor.Shape{1}, []int64{-1})
	require.NoError(t, err)
	d := op("Sub", x.Out(0), b.Out(0))
	mean := graph.NewNode("ReduceMean", "mean", []graph.Output{op("Mul", d, d), graph.NewConstant("axes", axes).Out(0)}, nil, 1)
	body := graph.NewModel("reduce", []*graph.Node{x, b}, []*graph.Node{graph.NewResult("y", mean.Out(0))})
	require.NoError(t, body.InferShapes())
	g, err := gen.Reduction(body)
	require.NoError(t, err)
	xs, bs := fill(30, -2, 2), fill(5, -1, 1)
	// m: the row length 5, then rank 3, dims [2,3,5], x's strides
	// [15,5,1], b's [0,0,1].
	m := []int32{5, 3, 2, 3, 5, 15, 5, 1, 0, 0, 1}
	out := e.launch(t, g.Spec(), "", []int{64}, nil, xs, bs, make([]float32, 6), uint64(6), m, g.Params)[2]
	for r := range 6 {
		var want float64
		for c := range 5 {
			v := float64(xs[r*5+c]) - float64(bs[c])
			want += v * v / 5
		}
		got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*r:]))
		assert.InDelta(t, want, float64(got), 1e-5*(1+want), "row %d", r)
	}
	// A chain ending in a QuantizeLinear to u8 (zero point 7, scale 0.05):
	// the kernel stores the quantized bytes.
	qx := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3, 5))
	qb := graph.NewParameter("b", tensor.F32, graph.ShapeOf(5))
	zp, err := tensor.FromFloat64s(tensor.U8, tensor.Shape{}, []float64{7})
	require.NoError(t, err)
	q := graph.NewNode("QuantizeLinear", "q", []graph.Output{op("Add", qx.Out(0), qb.Out(0)), c(0.05), graph.NewConstant("zp", zp).Out(0)}, nil, 1)
	qbody := graph.NewModel("quant", []*graph.Node{qx, qb}, []*graph.Node{graph.NewResult("y", q.Out(0))})
	require.NoError(t, qbody.InferShapes())
	qg, err := gen.Elementwise(qbody)
	require.NoError(t, err)
	xs, bs = fill(30, -8, 8), fill(5, -1, 1)
	qm := []int32{3, 2, 3, 5, 15, 5, 1, 0, 0, 1}
	qout := e.launch(t, qg.Spec(), "", []int{64}, nil, xs, bs, make([]byte, 30), uint64(30), qm, qg.Params)[2]
	for i := range 30 {
		v := (xs[i] + bs[i%5]) / float32(0.05)
		want := min(max(math.RoundToEven(float64(v))+7, 0), 255)
		assert.Equal(t, byte(want), qout[i], "element %d", i)
	}
	e.launch(t, g.Spec(), "-DHALF", []int{64}, nil, f16Pattern(30, false), f16Pattern(5, false), make([]uint16, 6), uint64(6), m, g.Params)
}
