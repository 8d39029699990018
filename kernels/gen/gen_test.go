package gen_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/kernels/gen"
	"github.com/clinfer/clinfer/tensor"
)

// chain builds the body y = Clip(LeakyRelu(x0 * 2.5 + x1), 0, 6) - x0.
func chain(t *testing.T) *graph.Model {
	x0 := graph.NewParameter("x0", tensor.F32, graph.ShapeOf(2, 3))
	x1 := graph.NewParameter("x1", tensor.F32, graph.ShapeOf(3))
	k := graph.NewConstant("k", tensor.Scalar(float32(2.5)))
	mul := graph.NewNode("Mul", "mul", []graph.Output{x0.Out(0), k.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{mul.Out(0), x1.Out(0)}, nil, 1)
	lr := graph.NewNode("LeakyRelu", "lr", []graph.Output{add.Out(0)}, graph.Attrs{"alpha": float32(0.25)}, 1)
	lo, hi := graph.NewConstant("lo", tensor.Scalar(float32(0))), graph.NewConstant("hi", tensor.Scalar(float32(6)))
	clip := graph.NewNode("Clip", "clip", []graph.Output{lr.Out(0), lo.Out(0), hi.Out(0)}, nil, 1)
	sub := graph.NewNode("Sub", "sub", []graph.Output{clip.Out(0), x0.Out(0)}, nil, 1)
	m := graph.NewModel("chain", []*graph.Node{x0, x1}, []*graph.Node{graph.NewResult("y", sub.Out(0))})
	require.NoError(t, m.InferShapes())
	return m
}

// TestElementwise prints a chain: one kernel of the element-wise
// convention (two inputs located through the shape table, the ops' macros
// in the body's order, the store), the headers expanded, the scalar
// constant and the ops' attributes as params; and the same source for a
// chain of the same ops with other names and constants.
func TestElementwise(t *testing.T) {
	k, err := gen.Elementwise(chain(t))
	require.NoError(t, err)
	for _, want := range []string{
		"__kernel void generated_chain(__global const FT* in0, __global const FT* in1, __global FT* out0, const ulong n, __global const int* m, __global const float* p)",
		"o[1] += (long)c * m[1 + (1 + 1) * RANK + d];",
		"ST(out0, i0 + e, chain_value(in0, in1, o[0] + (long)e * S0, o[1] + (long)e * S1, p));",
		"#define S1 m[3 * RANK]",
		"const float t0 = MUL(v0, p[0]);",
		"const float t1 = ADD(t0, v1);",
		"const float t2 = LEAKY_RELU(t1, p[1], p[2]);",
		"const float t3 = CLIP(t2, p[3], p[4]);",
		"const float t4 = SUB(t3, v0);",
		"return t4;",
		"#define LEAKY_RELU(x, a, b)", // eltwise_ops.clh, expanded
		"Work-size contract",
	} {
		assert.True(t, strings.Contains(k.Source, want), "the source has no %q", want)
	}
	assert.NotRegexp(t, `(?m)^#include`, k.Source, "the headers are expanded")
	assert.Equal(t, []float32{2.5, 0.25, 0, 0, 6}, k.Params)

	other := chain(t)
	nodes, err := other.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		n.Name += "_renamed"
		if n.OpType == graph.OpConstant {
			n.Value = tensor.Scalar(float32(7))
		}
	}
	k2, err := gen.Elementwise(other)
	require.NoError(t, err)
	assert.Equal(t, k.Source, k2.Source, "the source depends on the ops only")
}

// TestSquare: Pow's exponent is a parameter of the chain whatever its
// value, so squares and other powers share one source; POW
// (eltwise_ops.clh) squares by a product at run time.
func TestSquare(t *testing.T) {
	var sources []string
	for _, exp := range []float32{2, 3} {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4))
		e := graph.NewConstant("e", tensor.Scalar(exp))
		pow := graph.NewNode("Pow", "pow", []graph.Output{x.Out(0), e.Out(0)}, nil, 1)
		sq := graph.NewNode("Sqrt", "sqrt", []graph.Output{pow.Out(0)}, nil, 1)
		m := graph.NewModel("square", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", sq.Out(0))})
		require.NoError(t, m.InferShapes())
		k, err := gen.Elementwise(m)
		require.NoError(t, err)
		assert.Contains(t, k.Source, "const float t0 = POW(v0, p[0]);", "exponent %v", exp)
		sources = append(sources, k.Source)
	}
	assert.Equal(t, sources[0], sources[1], "the source depends on the ops only")
	ops, err := kernels.Source("eltwise_ops.clh")
	require.NoError(t, err)
	assert.Contains(t, ops, "#define POW(x, y) ((y) == K(2.0) ? (x) * (x) : pow((x), (y)))")
}

// TestSupports lists what a chain takes and what it refuses.
func TestSupports(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4))
	xi := graph.NewParameter("xi", tensor.I32, graph.ShapeOf(4))
	vt, err := tensor.FromF32(tensor.Shape{2}, []float32{0, 1})
	require.NoError(t, err)
	vec := graph.NewConstant("v", vt)
	node := func(op string, attrs graph.Attrs, in ...graph.Output) *graph.Node {
		n := graph.NewNode(op, op, in, attrs, 1)
		if err := graph.InferNode(n); err != nil { // a Clip bound that is not a scalar
			n.Outputs[0].Type = tensor.F32
		}
		return n
	}
	for _, c := range []struct {
		n    *graph.Node
		want bool
	}{
		{node("Relu", nil, x.Out(0)), true},
		{node("Gelu", graph.Attrs{"approximate": "tanh"}, x.Out(0)), true},
		{node("HardSwish", nil, x.Out(0)), true},
		{node("Add", nil, x.Out(0), x.Out(0)), true},
		{node("Pow", nil, x.Out(0), x.Out(0)), true},
		{node("Clip", nil, x.Out(0)), true},
		{node("Clip", nil, x.Out(0), vec.Out(0)), false}, // a bound that is not a scalar
		{node("Clip", nil, x.Out(0), x.Out(0)), false},   // a bound known only at run time
		{node("Add", nil, xi.Out(0), xi.Out(0)), false},  // integers
		{node("Equal", nil, x.Out(0), x.Out(0)), false},  // a boolean output
		{node("IsNaN", nil, x.Out(0)), false},
		{node("Softmax", nil, x.Out(0)), false}, // not element-wise
		{node("Max", nil, x.Out(0), x.Out(0), x.Out(0)), false},
	} {
		assert.Equal(t, c.want, gen.Supports(c.n), "%s(%d inputs)", c.n.OpType, len(c.n.Inputs))
	}
	assert.Equal(t, "leaky_relu", gen.UnaryKernels()["LeakyRelu"])
	assert.Equal(t, "is_nan", gen.SnakeCase("IsNaN"))
	assert.Equal(t, "gather_nd", gen.SnakeCase("GatherND"))
	_, err = gen.Elementwise(graph.NewModel("bad", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", node("Softmax", nil, x.Out(0)).Out(0))}))
	assert.ErrorContains(t, err, "not one a chain takes")
}

// TestReduction prints Sqrt(x0 * x1) folded by ReduceMean over the last
// axis, and lists the reductions a chain may end in: over trailing axes
// known at compile time only.
func TestReduction(t *testing.T) {
	x0 := graph.NewParameter("x0", tensor.F32, graph.ShapeOf(2, 3, 4))
	x1 := graph.NewParameter("x1", tensor.F32, graph.ShapeOf(3, 1))
	axes := func(a ...int64) graph.Output {
		v, err := tensor.FromI64(tensor.Shape{int64(len(a))}, a)
		require.NoError(t, err)
		return graph.NewConstant("axes", v).Out(0)
	}
	sq := graph.NewNode("Sqrt", "sqrt", []graph.Output{graph.NewNode("Mul", "mul", []graph.Output{x0.Out(0), x1.Out(0)}, nil, 1).Out(0)}, nil, 1)
	red := graph.NewNode("ReduceMean", "mean", []graph.Output{sq.Out(0), axes(-1)}, graph.Attrs{"keepdims": int64(0)}, 1)
	body := graph.NewModel("chain", []*graph.Node{x0, x1}, []*graph.Node{graph.NewResult("y", red.Out(0))})
	require.NoError(t, body.InferShapes())
	k, err := gen.Reduction(body)
	require.NoError(t, err)
	for _, want := range []string{
		"Mul -> Sqrt -> ReduceMean",
		"const float t1 = SQRT(t0, p[0], p[1]);",
		"return t1;",
		"const float v = chain_value(in0, in1, o[0], o[1], p);",
		"ST(out0, r, acc / (float)D);",
		"o[1] += t[(1 + 2) * rank];",
	} {
		assert.True(t, strings.Contains(k.Source, want), "the source has no %q", want)
	}
	_, err = gen.Elementwise(body)
	assert.Error(t, err, "a reduction is not element-wise")

	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3, 4))
	for _, c := range []struct {
		op   string
		axes graph.Output
		want bool
	}{
		{"ReduceSum", axes(-1), true},
		{"ReduceL2", axes(2, 1), true},
		{"ReduceSumSquare", graph.Output{}, true}, // all axes
		{"ReduceMean", axes(1), false},            // not trailing
		{"ReduceMean", axes(0, 2), false},
		{"ReduceMax", axes(-1), false},
		{"ReduceProd", axes(-1), false},
	} {
		in := []graph.Output{x.Out(0)}
		if c.axes.Valid() {
			in = append(in, c.axes)
		}
		n := graph.NewNode(c.op, c.op, in, nil, 1)
		require.NoError(t, graph.InferNode(n))
		assert.Equal(t, c.want, gen.SupportsReduction(n), "%s over %v", c.op, c.axes)
	}
}

// TestChainOps lists what the op support matrix credits to chains: float
// activations, arithmetic and the row reductions, not comparisons or
// integer-only ops.
func TestChainOps(t *testing.T) {
	ops := gen.ChainOps()
	for _, op := range []string{"Add", "Mul", "Sigmoid", "Gelu", "Clip", "PRelu", "ReduceMean", "ReduceL2", "QuantizeLinear"} {
		assert.Contains(t, ops, op)
	}
	for _, op := range []string{"IsNaN", "Equal", "BitwiseNot", "Not", "Softmax", "ReduceMax"} {
		assert.NotContains(t, ops, op)
	}
	assert.IsNonDecreasing(t, ops)
}

// TestQuantizeTail lists the QuantizeLinear nodes a chain may end in and
// prints one: the output buffer is the quantized type's, stored through
// quant.clh's rounding, without FP contraction.
func TestQuantizeTail(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 4))
	scalar := func(typ tensor.ElementType, v float64, shape ...int64) graph.Output {
		c, err := tensor.FromFloat64s(typ, tensor.Shape(shape), slices.Repeat([]float64{v}, int(tensor.Shape(shape).NumElements())))
		require.NoError(t, err)
		return graph.NewConstant("c", c).Out(0)
	}
	q := func(attrs graph.Attrs, in ...graph.Output) *graph.Node {
		n := graph.NewNode("QuantizeLinear", "q", in, attrs, 1)
		require.NoError(t, graph.InferNode(n))
		return n
	}
	for _, c := range []struct {
		name string
		n    *graph.Node
		want bool
	}{
		{"u8", q(nil, x.Out(0), scalar(tensor.F32, 0.1), scalar(tensor.U8, 128)), true},
		{"i8", q(nil, x.Out(0), scalar(tensor.F32, 0.1), scalar(tensor.I8, -3)), true},
		{"no zero point", q(nil, x.Out(0), scalar(tensor.F32, 0.1)), true},
		{"per axis", q(graph.Attrs{"axis": int64(1)}, x.Out(0), scalar(tensor.F32, 0.1, 4), scalar(tensor.U8, 1, 4)), false},
		{"i16", q(nil, x.Out(0), scalar(tensor.F32, 0.1), scalar(tensor.I16, 0)), false},
		{"scale at run time", q(nil, x.Out(0), graph.NewParameter("s", tensor.F32, graph.ShapeOf()).Out(0)), false},
	} {
		assert.Equal(t, c.want, gen.SupportsQuantizeTail(c.n), c.name)
	}
	y := graph.NewNode("Mul", "mul", []graph.Output{x.Out(0), x.Out(0)}, nil, 1)
	require.NoError(t, graph.InferNode(y))
	body := graph.NewModel("q", []*graph.Node{x}, []*graph.Node{graph.NewResult("y",
		q(nil, y.Out(0), scalar(tensor.F32, 0.1), scalar(tensor.I8, -3)).Out(0))})
	require.NoError(t, body.InferShapes())
	k, err := gen.Elementwise(body)
	require.NoError(t, err)
	for _, s := range []string{"#pragma OPENCL FP_CONTRACT OFF", "#define QT char", "#define QMIN -128", "__global QT* out0", "STQ(out0, ", "QUANTIZE(t0, p[0], p[1])"} {
		assert.Contains(t, k.Source, s)
	}
	assert.NotContains(t, k.Source, "ST(out0, ")
	assert.Equal(t, []float32{0.1, -3}, k.Params)
}
