package fusion_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func TestPatternMatch(t *testing.T) {
	// x -> Add(x, 3) -> Clip(0, 6) -> Mul(x, clip) -> Div(6) -> out0
	//                                   x -> Relu -> out1 (and Sigmoid(relu) -> out2)
	b := newBuilder(t)
	x := b.param("x", 2, 8)
	hs := b.hardSwishChain(x)
	relu := b.op("Relu", nil, x)
	lrelu := b.op("LeakyRelu", graph.Attrs{"alpha": float32(0.1)}, x)
	m := b.model(hs, relu, b.op("Sigmoid", nil, relu), lrelu)
	cons, err := m.Consumers()
	require.NoError(t, err)

	hsPattern := fusion.Op("Div", fusion.Op("Mul",
		fusion.Op("Clip", fusion.Op("Add", fusion.Any().As("x"), fusion.ConstScalar(3)).Commutative(), fusion.ConstScalar(0), fusion.ConstScalar(6)).As("clip"),
		fusion.Same("x")).Commutative(), fusion.ConstScalar(6).As("six"))
	cases := []struct {
		name    string
		pattern *fusion.Pattern
		root    graph.Output
		match   bool
	}{
		{"hardswish chain with commutative Mul and Same", hsPattern, hs, true},
		{"wrong constant", fusion.Op("Div", nil, fusion.ConstScalar(5)), hs, false},
		{"op alternatives", fusion.Op("Sub|Div"), hs, true},
		{"non-commutative order fails", fusion.Op("Div", fusion.Op("Mul", fusion.Op("Clip"), fusion.Any())), hs, false},
		{"missing input", fusion.Op("Relu", fusion.Any(), fusion.Any()), relu, false},
		{"interior node read outside the match", fusion.Op("Sigmoid", fusion.Op("Relu")), b.lastOutput(m, 2), false},
		{"OneUse rejects a shared value", fusion.Op("Relu").OneUse(), relu, false},
		{"OneUse accepts a single consumer", fusion.Op("LeakyRelu").OneUse(), lrelu, true},
		{"attribute equal", fusion.Op("LeakyRelu").Attr("alpha", float32(0.1), float32(0.01)), lrelu, true},
		{"attribute differs", fusion.Op("LeakyRelu").Attr("alpha", float32(0.2), float32(0.01)), lrelu, false},
		{"attribute default", fusion.Op("Relu").Attr("alpha", float32(0.5), float32(0.5)), relu, true},
		{"Where predicate", fusion.Op("Relu").Where(func(n *graph.Node) bool { return n.Outputs[0].Shape.Rank() == 3 }), relu, false},
		{"OneOf", fusion.OneOf(fusion.Op("Tanh"), fusion.Op("Relu", fusion.Any().As("in"))), relu, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fusion.MatchAt(tc.pattern, tc.root.Node, cons)
			assert.Equal(t, tc.match, got != nil)
		})
	}

	mt := fusion.MatchAt(hsPattern, hs.Node, cons)
	require.NotNil(t, mt)
	assert.Equal(t, x, mt.Value("x"))
	assert.Equal(t, "Clip", mt.Node("clip").OpType)
	assert.InDelta(t, 6, mt.Const("six").Float64s()[0], 1e-6)
	assert.Nil(t, mt.Const("clip"), "Const on an op capture is nil")
	var ops []string
	for _, n := range mt.Nodes() {
		ops = append(ops, n.OpType)
	}
	assert.ElementsMatch(t, []string{"Div", "Mul", "Clip", "Add"}, ops)
}

// lastOutput returns the value Result i reads.
func (b *builder) lastOutput(m *graph.Model, i int) graph.Output { return m.Results[i].Input(0) }

func TestRuleRewriteErrorNamesRuleAndNode(t *testing.T) {
	b := newBuilder(t)
	m := b.model(b.op("Relu", nil, b.param("x", 2)))
	_, err := fusion.ApplyRules(context.Background(), m, fusion.Rule{
		Name:    "Broken",
		Pattern: fusion.Op("Relu"),
		Rewrite: func(*fusion.Match) (graph.Output, error) { return graph.Output{}, fmt.Errorf("no luck") },
	})
	require.Error(t, err)
	assert.ErrorContains(t, err, "rule Broken")
	assert.ErrorContains(t, err, `"Relu_1"`)
}

func TestQuerySupported(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 8, 8)
	y := b.op("Relu", nil, b.bn(b.conv(x, 3, 4), 4))
	z := b.op("Softmax", graph.Attrs{"axis": int64(1)}, y)
	m := b.model(z)
	tm := m.Clone()
	_, err := fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
	require.NoError(t, err)
	require.Equal(t, 1, opCount(t, tm, graph.OpFusedConv))

	// A device that runs FusedConv but not Softmax.
	got, err := fusion.QuerySupported(m, tm, func(n *graph.Node) bool { return n.OpType != "Softmax" })
	require.NoError(t, err)
	nodes, err := m.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		want := true
		switch {
		case n.OpType == "Softmax", n.OpType == graph.OpResult:
			want = false // the result reads the Softmax
		}
		assert.Equal(t, want, got[n.Name], "%s", n)
	}

	// A device that runs everything answers for every original node.
	all, err := fusion.QuerySupported(m, tm, func(*graph.Node) bool { return true })
	require.NoError(t, err)
	assert.Len(t, all, len(nodes))
}

// ExampleRule shows the kernel developer's path: one pattern declaration
// and one rewrite, run by the unchanged engine. Here log(1 + exp(x)),
// written out, becomes the Softplus op.
func ExampleRule() {
	softplus := fusion.Rule{
		Name:    "SoftplusWrittenOut",
		Pattern: fusion.Op("Log", fusion.Op("Add", fusion.Op("Exp", fusion.Any().As("x")), fusion.ConstScalar(1)).Commutative()),
		Rewrite: func(m *fusion.Match) (graph.Output, error) {
			return m.NewNode("Softplus", []graph.Output{m.Value("x")}, nil, 1).Out(0), nil
		},
	}
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4))
	exp := graph.NewNode("Exp", "exp", []graph.Output{x.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{exp.Out(0), graph.NewConstant("one", tensor.Scalar(1)).Out(0)}, nil, 1)
	log := graph.NewNode("Log", "log", []graph.Output{add.Out(0)}, nil, 1)
	m := graph.NewModel("softplus", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", log.Out(0))})
	if err := m.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	mgr := fusion.NewManager(fusion.PatternPass("FuseSoftplus", "log(1+exp(x)) -> Softplus", softplus))
	if _, err := mgr.Run(context.Background(), m, fusion.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	n := m.Results[0].Input(0).Node
	fmt.Println(n.OpType, n.Name, n.RT.FusedNames)
	// Output: Softplus log [exp add log]
}

func TestForDevice(t *testing.T) {
	props := func(kv map[string]string) *driver.Properties {
		p := driver.NewProperties(append(driver.CommonSpecs(), fusion.PropertySpecs()...)...)
		require.NoError(t, p.Set(kv))
		return p
	}
	ctx := context.Background()
	m := smallModel(t)

	tm, rep, err := fusion.ForDevice(ctx, m, props(nil), ref.Evaluate)
	require.NoError(t, err)
	require.NotNil(t, rep)
	assert.NotSame(t, m, tm)
	assert.Equal(t, 1, opCount(t, m, "BatchNormalization"), "the user's model is untouched")
	assert.Equal(t, 1, opCount(t, tm, graph.OpFusedConv))

	same, rep, err := fusion.ForDevice(ctx, m, props(map[string]string{driver.KeyDisableTransformations: "YES"}), ref.Evaluate)
	require.NoError(t, err)
	assert.Same(t, m, same)
	assert.Nil(t, rep)

	// A device whose spec for the key accepts anything still gets the
	// error, at compile time.
	loose := driver.NewProperties(driver.StringSpec(fusion.KeyDisabledTransformations, ""))
	require.NoError(t, loose.Set(map[string]string{fusion.KeyDisabledTransformations: "NoSuchPass"}))
	_, _, err = fusion.ForDevice(ctx, m, loose, nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorIs(t, err, fusion.ErrUnknownPass)
	assert.ErrorContains(t, err, `"NoSuchPass"`)

	got, err := fusion.QueryForDevice(ctx, m, props(nil), ref.Evaluate, func(n *graph.Node) bool { return n.OpType != graph.OpFusedConv })
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{}, got, "everything went into one unsupported FusedConv, which reads x and feeds the result")
	got, err = fusion.QueryForDevice(ctx, m, props(nil), ref.Evaluate, func(n *graph.Node) bool { return true })
	require.NoError(t, err)
	assert.True(t, got["Conv_3"] && got["BatchNormalization_8"] && got["Relu_9"] && got["x"] && got["out0"], "answers in the original names: %v", got)
}

// TestQueryEliminatedShapeNode: x -> Shape -> Reshape(x, shape) -> Relu.
// With a static x the Shape folds into a constant and the Reshape to x's
// own shape goes away with it, so no transformed node carries the Shape's
// name; it must still be supported when what it fed is (HETERO failed on
// a static-shape PP-OCR cls because its "p2o.Softmax.0/shape" was not).
func TestQueryEliminatedShapeNode(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	shape := graph.NewNode("Shape", "x/shape", []graph.Output{x.Out(0)}, nil, 1)
	reshape := graph.NewNode("Reshape", "reshape", []graph.Output{x.Out(0), shape.Out(0)}, nil, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{reshape.Out(0)}, nil, 1)
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", relu.Out(0))})
	props := driver.NewProperties(append(driver.CommonSpecs(), fusion.PropertySpecs()...)...)
	got, err := fusion.QueryForDevice(context.Background(), m, props, ref.Evaluate, func(*graph.Node) bool { return true })
	require.NoError(t, err)
	for _, name := range []string{"x", "x/shape", "reshape", "relu", "y"} {
		assert.True(t, got[name], "%s supported: %v", name, got)
	}
	// The eliminated node follows what it fed: the no-op Reshape (merged
	// into x) when Relu is not supported, nothing when nothing is.
	got, err = fusion.QueryForDevice(context.Background(), m, props, ref.Evaluate, func(n *graph.Node) bool { return n.OpType != "Relu" })
	require.NoError(t, err)
	assert.Equal(t, got["reshape"], got["x/shape"], "%v", got)
	assert.False(t, got["relu"])
	got, err = fusion.QueryForDevice(context.Background(), m, props, ref.Evaluate, func(n *graph.Node) bool { return n.OpType == graph.OpResult })
	require.NoError(t, err)
	assert.False(t, got["x/shape"], "%v", got)
}

// TestMatchAtTriesCommutedOrders: a residual Add(a, Conv(a)) whose a is
// also used elsewhere (MobileNet's blocks, PP-OCR cls) matches FuseConv's
// Add(Conv, r) with the commuted order, Conv = Conv(a) and r = a, after the
// first order (Conv = a) leaves a's other use outside the match: one
// FusedConv with a sum post-op and no Add, computing the same on the CPU.
func TestMatchAtTriesCommutedOrders(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 4, 5, 5)
	a := b.op("Conv", nil, x, b.rand(-0.5, 0.5, 4, 4, 1, 1), b.rand(-0.2, 0.2, 4))
	c := b.op("Conv", nil, a, b.rand(-0.5, 0.5, 4, 4, 1, 1), b.rand(-0.2, 0.2, 4))
	m := b.model(b.op("Add", nil, a, c), b.op("Sigmoid", nil, a))
	tm, _ := transform(t, m, randomInputs(t, m, 3, nil), fusion.FuseConv())
	assert.Zero(t, opCount(t, tm, "Add"))
	require.Equal(t, 1, opCount(t, tm, graph.OpFusedConv))
	nodes, err := tm.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		if n.OpType == graph.OpFusedConv {
			post, err := graph.PostOps(n)
			require.NoError(t, err)
			assert.Equal(t, []graph.PostOp{{Kind: graph.PostSum}}, post)
			assert.Equal(t, a, n.Input(3), "the residual is a")
		}
	}
}
