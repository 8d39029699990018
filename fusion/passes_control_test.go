package fusion_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// branch is a body over Parameters named after the captured values: it
// computes op(x, w) and passes the result through an Identity (which the
// standard pipeline removes inside the body).
func branch(name, op string) *graph.Model {
	x := graph.NewParameter("x", 0, graph.DynamicRank)
	w := graph.NewParameter("w", 0, graph.DynamicRank)
	n := graph.NewNode(op, name+"/"+op, []graph.Output{x.Out(0), w.Out(0)}, nil, 1)
	id := graph.NewNode("Identity", name+"/id", []graph.Output{n.Out(0)}, nil, 1)
	return graph.NewModel(name, []*graph.Node{x, w}, []*graph.Node{graph.NewResult(name+"/out", id.Out(0))})
}

// shapeIf is y = If(cond, then: x + w, else: x * w) with x a [2,3] input
// and w a captured constant; cond is Equal(Shape(x)[0], 2) (known once the
// shape is static) or a bool input.
func shapeIf(t *testing.T, static bool) (*graph.Model, *builder) {
	b := newBuilder(t)
	x := b.param("x", 2, 3)
	var cond graph.Output
	if static {
		s := b.op("Shape", nil, x)
		d := b.op("Gather", graph.Attrs{"axis": int64(0)}, s, b.ints(0))
		cond = b.op("Equal", nil, d, b.ints(2))
	} else {
		p := graph.NewParameter("cond", tensor.Bool, graph.ShapeOf())
		b.params = append(b.params, p)
		cond = p.Out(0)
	}
	w := b.rand(-1, 1, 3)
	n := graph.NewNode(graph.OpIf, "if", []graph.Output{cond, x, w},
		graph.Attrs{graph.AttrThenBranch: branch("then", "Add"), graph.AttrElseBranch: branch("else", "Mul"), graph.AttrCaptures: int64(2)}, 1)
	return b.model(n.Out(0)), b
}

// TestFoldControlFlow: with a condition known from shapes the If is
// replaced by its then branch (whose nodes stand for the If); with a
// condition known only at run time the If stays, the captured constant
// moves into both branches, and the pipeline's passes run inside them.
func TestFoldControlFlow(t *testing.T) {
	m, _ := shapeIf(t, true)
	in := randomInputs(t, m, 3, nil)
	tm, _ := transform(t, m, in, fusion.ConstantFolding(), fusion.FoldControlFlow())
	assert.Zero(t, opCount(t, tm, graph.OpIf), "the If whose condition is known is inlined")
	assert.Equal(t, 1, opCount(t, tm, "Add"))
	add := tm.Node("then/Add")
	require.NotNil(t, add)
	assert.Equal(t, []string{"if"}, add.OriginalNames(), "inlined nodes stand for the If")

	m, _ = shapeIf(t, false)
	for _, c := range []bool{true, false} {
		in := randomInputs(t, m, 5, nil)
		in["cond"], _ = tensor.FromBool(tensor.Shape{}, []bool{c})
		tm := m.Clone()
		_, err := fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
		require.NoError(t, err)
		require.NoError(t, tm.Validate())
		requireClose(t, runCPU(t, m, in), runCPU(t, tm, in), 1e-6, 1e-6)
		n := tm.Node("if")
		require.NotNil(t, n, "an If decided at run time stays")
		assert.Len(t, n.Inputs, 2, "the captured constant moved into the branches")
		for _, body := range n.Bodies() {
			assert.Len(t, body.Model.Parameters, 1, body.Attr)
			assert.Zero(t, opCount(t, body.Model, "Identity"), "%s: RemoveIdentity ran inside the branch", body.Attr)
			assert.Equal(t, 1, opCount(t, body.Model, graph.OpConstant), body.Attr)
		}
	}
}

// TestFoldControlFlowQuery: the CPU answers QueryModel for an If in the
// user's names, whether it was inlined or kept.
func TestFoldControlFlowQuery(t *testing.T) {
	for _, static := range []bool{true, false} {
		m, _ := shapeIf(t, static)
		got, err := fusion.QueryForDevice(context.Background(), m, driver.NewProperties(append(driver.CommonSpecs(), fusion.PropertySpecs()...)...), ref.Evaluate, func(n *graph.Node) bool {
			switch n.OpType {
			case graph.OpParameter, graph.OpConstant, graph.OpResult:
				return true
			}
			return ref.Supports(n) && n.BodiesAll(ref.Supports)
		})
		require.NoError(t, err)
		assert.True(t, got["if"], "static=%v: %v", static, got)
	}
}
