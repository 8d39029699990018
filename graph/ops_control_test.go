package graph

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// unaryBody is a body of one op on one captured Parameter named x.
func unaryBody(name, op string) *Model {
	x := NewParameter("x", 0, DynamicRank)
	n := NewNode(op, name+"_"+op, []Output{x.Out(0)}, nil, 1)
	return NewModel(name, []*Node{x}, []*Node{NewResult(name+"_out", n.Out(0))})
}

// ifModel is y = If(cond, then: Relu(x), else: Neg(x)) with x captured,
// and a nested If in the then branch (on the same condition) when nested.
func ifModel(nested bool) *Model {
	cond := NewParameter("cond", tensor.Bool, ShapeOf())
	x := NewParameter("x", tensor.F32, shp("N", 3))
	then := unaryBody("then", "Relu")
	if nested {
		c := NewParameter("c", 0, DynamicRank)
		xx := NewParameter("x", 0, DynamicRank)
		in := NewNode(OpIf, "inner", []Output{c.Out(0), xx.Out(0)},
			Attrs{AttrThenBranch: unaryBody("t2", "Relu"), AttrElseBranch: unaryBody("e2", "Abs"), AttrCaptures: int64(1)}, 1)
		then = NewModel("then", []*Node{c, xx}, []*Node{NewResult("then_out", in.Out(0))})
	}
	els := unaryBody("else", "Neg")
	ins := []Output{cond.Out(0), x.Out(0)}
	if nested {
		c := NewParameter("c", 0, DynamicRank)
		els = NewModel("else", []*Node{c, els.Parameters[0]}, els.Results)
		ins = []Output{cond.Out(0), cond.Out(0), x.Out(0)}
	}
	n := NewNode(OpIf, "if", ins, Attrs{AttrThenBranch: then, AttrElseBranch: els, AttrCaptures: int64(len(ins) - 1)}, 1)
	return NewModel("m", []*Node{cond, x}, []*Node{NewResult("y", n.Out(0))})
}

// TestIfBodies: an If's branches are bound to its captured inputs by
// inference, validated, walked, cloned deeply, serialised and dumped, to
// any depth.
func TestIfBodies(t *testing.T) {
	m := ifModel(true)
	require.NoError(t, m.Validate())
	assert.Equal(t, "[N,3]", m.Results[0].Outputs[0].Shape.String())
	assert.Equal(t, tensor.F32, m.Results[0].Outputs[0].Type)

	var visited []string
	require.NoError(t, m.Walk(func(b *Model, owner *Node) error {
		name := "<root>"
		if owner != nil {
			name = owner.Name
		}
		visited = append(visited, b.Name+"@"+name)
		return nil
	}))
	assert.Equal(t, []string{"m@<root>", "else@if", "then@if", "e2@inner", "t2@inner"}, visited)

	// The nested branch was bound too: its Parameter has x's type and shape.
	inner := m.Node("if").Attrs[AttrThenBranch].(*Model).Node("inner")
	require.NotNil(t, inner)
	assert.Equal(t, "[N,3]", inner.Attrs[AttrElseBranch].(*Model).Parameters[0].Outputs[0].Shape.String())

	c := m.Clone()
	c.Node("if").Attrs[AttrThenBranch].(*Model).Node("inner").Name = "renamed"
	assert.NotNil(t, m.Node("if").Attrs[AttrThenBranch].(*Model).Node("inner"), "a clone shares no body with its original")

	b, err := m.MarshalBinary()
	require.NoError(t, err)
	var back Model
	require.NoError(t, back.UnmarshalBinary(b))
	require.NoError(t, back.Validate())
	b2, err := back.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, b, b2, "a model with nested bodies round-trips byte for byte")

	var txt bytes.Buffer
	require.NoError(t, m.WriteText(&txt))
	for _, want := range []string{"then_branch:", "model \"t2\"", "= Abs \"e2_Abs\""} {
		assert.Contains(t, txt.String(), want)
	}
}

// TestIfShapes: a known condition takes its branch's shapes; an unknown
// one merges them (a dynamic dimension where they differ, a dynamic rank
// where the ranks do), and branches of different types are an error.
func TestIfShapes(t *testing.T) {
	build := func(cond Output, a, b *Model) *Node {
		x := NewParameter("x", tensor.F32, ShapeOf(2, 3))
		return NewNode(OpIf, "if", []Output{cond, x.Out(0)}, Attrs{AttrThenBranch: a, AttrElseBranch: b, AttrCaptures: int64(1)}, 1)
	}
	reduce := func(name string, keep int64) *Model {
		x := NewParameter("x", 0, DynamicRank)
		n := NewNode("ReduceSum", name+"_sum", []Output{x.Out(0)}, Attrs{"keepdims": keep}, 1)
		return NewModel(name, []*Node{x}, []*Node{NewResult(name+"_out", n.Out(0))})
	}
	transpose := func(name string) *Model {
		x := NewParameter("x", 0, DynamicRank)
		n := NewNode("Transpose", name+"_t", []Output{x.Out(0)}, nil, 1)
		return NewModel(name, []*Node{x}, []*Node{NewResult(name+"_out", n.Out(0))})
	}
	cond := parT(tensor.Bool, ShapeOf())
	for _, c := range []struct {
		name string
		n    *Node
		want string
	}{
		{"same", build(cond, unaryBody("a", "Relu"), unaryBody("b", "Neg")), "[2,3]"},
		{"dims_differ", build(cond, unaryBody("a", "Relu"), transpose("b")), "[?,?]"},
		{"ranks_differ", build(cond, unaryBody("a", "Relu"), reduce("b", 0)), "[...]"},
		{"known_true", build(constBool(true), unaryBody("a", "Relu"), reduce("b", 0)), "[2,3]"},
		{"known_false", build(constBool(false), unaryBody("a", "Relu"), reduce("b", 0)), "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, InferNode(c.n))
			assert.Equal(t, c.want, c.n.Outputs[0].Shape.String())
		})
	}
	t.Run("types_differ", func(t *testing.T) {
		n := build(cond, unaryBody("a", "Relu"), unaryBody("b", "IsNaN"))
		err := InferNode(n)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "output 0 is f32 in branch")
	})
	t.Run("bad_body", func(t *testing.T) {
		n := build(cond, unaryBody("a", "Relu"), unaryBody("b", "NoSuchOp"))
		m := NewModel("m", []*Node{cond.Node, n.Inputs[1].Node}, []*Node{NewResult("y", n.Out(0))})
		err := m.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `else_branch "b"`)
	})
	t.Run("branch_invalid_for_shapes", func(t *testing.T) {
		// Squeeze of axis 0 of [2,3] cannot be: the If takes the other
		// branch's shapes (the invalid one fails only if it runs); with
		// both invalid it is an error.
		squeeze := func(name string) *Model {
			x := NewParameter("x", 0, DynamicRank)
			n := NewNode("Squeeze", name+"_sq", []Output{x.Out(0), ci64(0)}, nil, 1)
			return NewModel(name, []*Node{x}, []*Node{NewResult(name+"_out", n.Out(0))})
		}
		n := build(cond, unaryBody("a", "Relu"), squeeze("b"))
		require.NoError(t, InferNode(n))
		assert.Equal(t, "[2,3]", n.Outputs[0].Shape.String())
		assert.Error(t, InferNode(build(cond, squeeze("a"), squeeze("b"))))
		assert.Error(t, InferNode(build(constBool(false), unaryBody("a", "Relu"), squeeze("b"))), "the branch a known condition takes must be valid")
	})
}

func constBool(v bool) Output {
	t, _ := tensor.FromBool(tensor.Shape{}, []bool{v})
	return NewConstant("cb", t).Out(0)
}

// loopNode is Loop(M, cond, acc) whose body computes acc + x (x captured)
// and emits acc as a scan output; with grow, it concatenates instead, so
// the carried value changes shape every iteration.
func loopNode(m, cond Output, grow bool) *Node {
	acc := NewParameter("acc0", tensor.F32, ShapeOf(2))
	x := NewParameter("x", tensor.F32, ShapeOf(2))
	it := NewParameter("i", 0, DynamicRank)
	c := NewParameter("c", 0, DynamicRank)
	a := NewParameter("acc", 0, DynamicRank)
	bx := NewParameter("x", 0, DynamicRank)
	var next *Node
	if grow {
		next = NewNode("Concat", "grow", []Output{a.Out(0), bx.Out(0)}, Attrs{"axis": int64(0)}, 1)
	} else {
		next = NewNode("Add", "add", []Output{a.Out(0), bx.Out(0)}, nil, 1)
	}
	body := NewModel("body", []*Node{it, c, a, bx}, []*Node{
		NewResult("c_out", c.Out(0)), NewResult("acc_out", next.Out(0)), NewResult("scan", a.Out(0)),
	})
	return NewNode(OpLoop, "loop", []Output{m, cond, acc.Out(0), x.Out(0)}, Attrs{AttrBody: body, AttrCaptures: int64(1)}, 2)
}

// TestLoopShapes: a known trip count makes the scan outputs static; a
// carried value that grows becomes dynamic along the growing axis.
func TestLoopShapes(t *testing.T) {
	n := loopNode(scalarI64(5), Output{}, false)
	require.NoError(t, InferNode(n))
	assert.Equal(t, "[2]", n.Outputs[0].Shape.String())
	assert.Equal(t, "[5,2]", n.Outputs[1].Shape.String())
	trips, ok := LoopTripCount(n)
	assert.True(t, ok)
	assert.Equal(t, int64(5), trips)

	n = loopNode(parT(tensor.I64, ShapeOf()), Output{}, true)
	require.NoError(t, InferNode(n))
	assert.Equal(t, "[?]", n.Outputs[0].Shape.String())
	assert.Equal(t, "[?,?]", n.Outputs[1].Shape.String())
	_, ok = LoopTripCount(n)
	assert.False(t, ok)

	bad := loopNode(scalarI64(5), Output{}, false)
	bad.Attrs[AttrCaptures] = int64(9)
	assert.ErrorContains(t, InferNode(bad), "captures 9 is out of range")
}

// TestScanShapes: the scan axis is taken off each scan input for the body
// and inserted into each scan output where scan_output_axes says.
func TestScanShapes(t *testing.T) {
	s := NewParameter("s0", tensor.F32, ShapeOf(4))
	x := NewParameter("xs", tensor.F32, shp(4, "T", 3))
	bs := NewParameter("s", 0, DynamicRank)
	bx := NewParameter("xt", 0, DynamicRank)
	red := NewNode("ReduceSum", "rs", []Output{bx.Out(0), ci64(1)}, Attrs{"keepdims": int64(0)}, 1)
	add := NewNode("Add", "add", []Output{bs.Out(0), red.Out(0)}, nil, 1)
	body := NewModel("body", []*Node{bs, bx}, []*Node{NewResult("s_out", add.Out(0)), NewResult("y", bx.Out(0))})
	n := NewNode(OpScan, "scan", []Output{s.Out(0), x.Out(0)}, Attrs{AttrBody: body, "num_scan_inputs": int64(1),
		"scan_input_axes": []int64{-2}, "scan_output_axes": []int64{-1}, "scan_output_directions": []int64{1}}, 2)
	require.NoError(t, InferNode(n))
	assert.Equal(t, "[4]", n.Outputs[0].Shape.String())
	assert.Equal(t, "[4,3,T]", n.Outputs[1].Shape.String())
	_, l, err := ScanBody(n)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, l.InAxes)
	assert.Equal(t, []int{2}, l.OutAxes)
	assert.Equal(t, []bool{true}, l.OutReverse)
}

// TestBodyValidation: a structural error inside a nested body fails
// Validate naming the owning nodes.
func TestBodyValidation(t *testing.T) {
	m := ifModel(true)
	inner := m.Node("if").Attrs[AttrThenBranch].(*Model).Node("inner")
	b := inner.Attrs[AttrElseBranch].(*Model)
	b.Results[0].Inputs = nil
	err := m.Validate()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidModel)
	for _, want := range []string{`"if"`, `"inner"`, `else_branch "e2"`} {
		assert.Contains(t, err.Error(), want)
	}
}
