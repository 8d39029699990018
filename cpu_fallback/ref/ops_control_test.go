package ref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// countdownLoop is Loop(M, cond, v) whose body doubles v, emits v as a
// scan output and continues while the doubled value is below limit (a
// captured input).
func countdownLoop() *graph.Node {
	it := graph.NewParameter("i", tensor.I64, graph.ShapeOf())
	c := graph.NewParameter("c", tensor.Bool, graph.ShapeOf())
	v := graph.NewParameter("v", tensor.F32, graph.ShapeOf(2))
	lim := graph.NewParameter("limit", tensor.F32, graph.ShapeOf())
	two := graph.NewConstant("two", tensor.Scalar(2))
	dbl := graph.NewNode("Mul", "dbl", []graph.Output{v.Out(0), two.Out(0)}, nil, 1)
	red := graph.NewNode("ReduceMax", "max", []graph.Output{dbl.Out(0)}, graph.Attrs{"keepdims": int64(0)}, 1)
	less := graph.NewNode("Less", "less", []graph.Output{red.Out(0), lim.Out(0)}, nil, 1)
	body := graph.NewModel("body", []*graph.Node{it, c, v, lim}, []*graph.Node{
		graph.NewResult("c_out", less.Out(0)), graph.NewResult("v_out", dbl.Out(0)), graph.NewResult("scan", v.Out(0)),
	})
	ins := []graph.Output{
		graph.NewParameter("M", tensor.I64, graph.ShapeOf()).Out(0), graph.NewParameter("cond", tensor.Bool, graph.ShapeOf()).Out(0),
		graph.NewParameter("v0", tensor.F32, graph.ShapeOf(2)).Out(0), graph.NewParameter("lim", tensor.F32, graph.ShapeOf()).Out(0),
	}
	n := graph.NewNode(graph.OpLoop, "loop", ins, graph.Attrs{graph.AttrBody: body, graph.AttrCaptures: int64(1)}, 2)
	if err := graph.InferNode(n); err != nil {
		panic(err)
	}
	return n
}

// TestLoop: the loop stops at the trip count or when the body's condition
// turns false, whichever comes first; no iteration gives the initial
// value and an empty scan output.
func TestLoop(t *testing.T) {
	n := countdownLoop()
	v0 := tF32(tensor.Shape{2}, 1, 3)
	for _, c := range []struct {
		name    string
		m       int64
		cond    bool
		limit   float32
		want    []float32
		scanLen int64
	}{
		{"trip_count", 3, true, 1000, []float32{8, 24}, 3},
		{"condition", 100, true, 20, []float32{8, 24}, 3},
		{"never", 5, false, 1000, []float32{1, 3}, 0},
		{"zero_trips", 0, true, 1000, []float32{1, 3}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := tensor.FromI64(tensor.Shape{}, []int64{c.m})
			cond, _ := tensor.FromBool(tensor.Shape{}, []bool{c.cond})
			out, err := Evaluate(n, []*tensor.Tensor{m, cond, v0, tensor.Scalar(c.limit)})
			require.NoError(t, err)
			assert.Equal(t, c.want, out[0].F32())
			assert.Equal(t, tensor.Shape{c.scanLen, 2}, out[1].Shape())
			if c.scanLen == 3 {
				assert.Equal(t, []float32{1, 3, 2, 6, 4, 12}, out[1].F32())
			}
			assert.Equal(t, []float32{1, 3}, v0.F32(), "inputs are never modified")
		})
	}
}

// TestScanAxes: scan inputs are sliced along their axis, in reverse when
// asked, and each scan output is stacked along its own axis and
// direction.
func TestScanAxes(t *testing.T) {
	s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(2))
	x := graph.NewParameter("xt", tensor.F32, graph.ShapeOf(2))
	add := graph.NewNode("Add", "add", []graph.Output{s.Out(0), x.Out(0)}, nil, 1)
	body := graph.NewModel("body", []*graph.Node{s, x}, []*graph.Node{graph.NewResult("s_out", add.Out(0)), graph.NewResult("y", add.Out(0))})
	ins := []graph.Output{graph.NewParameter("s0", tensor.F32, graph.ShapeOf(2)).Out(0), graph.NewParameter("xs", tensor.F32, graph.ShapeOf(2, 3)).Out(0)}
	n := graph.NewNode(graph.OpScan, "scan", ins, graph.Attrs{graph.AttrBody: body, "num_scan_inputs": int64(1),
		"scan_input_axes": []int64{1}, "scan_input_directions": []int64{1},
		"scan_output_axes": []int64{-1}, "scan_output_directions": []int64{1}}, 2)
	require.NoError(t, graph.InferNode(n))
	assert.Equal(t, "[2,3]", n.Outputs[1].Shape.String())
	xs := tF32(tensor.Shape{2, 3}, 1, 2, 3, 10, 20, 30)
	out, err := Evaluate(n, []*tensor.Tensor{tF32(tensor.Shape{2}, 0, 0), xs})
	require.NoError(t, err)
	assert.Equal(t, []float32{6, 60}, out[0].F32())
	// Columns taken last to first: running sums 3, 5, 6 (and 30, 50, 60),
	// written last to first along the last axis.
	assert.Equal(t, []float32{6, 5, 3, 60, 50, 30}, out[1].F32())
}

// TestIfProgram: Prepare plans both branches once; the kernel runs the
// one the condition picks on the captured inputs, and results that are
// captured inputs are copies.
func TestIfProgram(t *testing.T) {
	mk := func(name string, pass bool) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2))
		out := x.Out(0)
		if !pass {
			out = graph.NewNode("Neg", name+"/neg", []graph.Output{out}, nil, 1).Out(0)
		}
		return graph.NewModel(name, []*graph.Node{x}, []*graph.Node{graph.NewResult(name+"/y", out)})
	}
	ins := []graph.Output{graph.NewParameter("c", tensor.Bool, graph.ShapeOf()).Out(0), graph.NewParameter("x", tensor.F32, graph.ShapeOf(2)).Out(0)}
	n := graph.NewNode(graph.OpIf, "if", ins, graph.Attrs{graph.AttrThenBranch: mk("then", true), graph.AttrElseBranch: mk("else", false), graph.AttrCaptures: int64(1)}, 1)
	require.NoError(t, graph.InferNode(n))
	k, err := Prepare(n)
	require.NoError(t, err)
	x := tF32(tensor.Shape{2}, 1, -2)
	for _, c := range []bool{true, false} {
		cond, _ := tensor.FromBool(tensor.Shape{}, []bool{c})
		out, err := k(n, []*tensor.Tensor{cond, x})
		require.NoError(t, err)
		if c {
			assert.Equal(t, []float32{1, -2}, out[0].F32())
			assert.NotSame(t, x, out[0], "a captured input passed through is copied")
		} else {
			assert.Equal(t, []float32{-1, 2}, out[0].F32())
		}
	}
	_, err = k(n, []*tensor.Tensor{tF32(tensor.Shape{2}, 1, 1), x})
	assert.ErrorContains(t, err, "condition must have one element")
}
