package graph

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// smallModel is x -> Conv(w, b) -> Relu -> Add(relu, relu) -> out, with the
// Relu consumed twice.
func smallModel(t *testing.T) *Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewParameter("x", tensor.F32, shp("N", 3, 8, 8))
	wv := tensor.MustNew(tensor.F32, tensor.Shape{4, 3, 3, 3})
	for i := range wv.F32() {
		wv.F32()[i] = rng.Float32()
	}
	w := NewConstant("w", wv)
	b := NewConstant("b", tensor.MustNew(tensor.F32, tensor.Shape{4}))
	conv := NewNode("Conv", "conv", []Output{x.Out(0), w.Out(0), b.Out(0)}, Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{1, 1}}, 1)
	conv.RT.FusedNames = []string{"conv", "bn"}
	conv.RT.Affinity = "GPU"
	conv.RT.Extra = map[string]string{"impl": "fused_conv"}
	relu := NewNode("Relu", "relu", []Output{conv.Out(0)}, nil, 1)
	add := NewNode("Add", "add", []Output{relu.Out(0), relu.Out(0)}, nil, 1)
	m := NewModel("small", []*Node{x}, []*Node{NewResult("out", add.Out(0))})
	m.Opsets = map[string]int64{"": 21}
	require.NoError(t, m.Validate())
	return m
}

func TestValidateGood(t *testing.T) {
	m := smallModel(t)
	out := m.Results[0].Outputs[0]
	assert.Equal(t, "[N,4,8,8]", out.Shape.String())
	assert.Equal(t, tensor.F32, out.Type)
}

func TestValidateBad(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(m *Model)
		node     string // the node the error must name ("" for model-level errors)
		contains string
	}{
		{"duplicate name", func(m *Model) { m.Node("relu").Name = "conv" }, "conv", "name is also used"},
		{"unknown op", func(m *Model) { m.Node("relu").OpType = "Frobnicate" }, "relu", `"Frobnicate" is not in the op set`},
		{"bad output index", func(m *Model) { m.Node("add").Inputs[1].Index = 3 }, "add", "refers to output 3"},
		{"unlisted parameter", func(m *Model) {
			m.Node("add").Inputs[1] = NewParameter("stray", tensor.F32, shp(1)).Out(0)
		}, "add", "not one of the model's parameters"},
		{"parameter with input", func(m *Model) { m.Parameters[0].Inputs = []Output{m.Node("w").Out(0)} }, "x", "parameter has 1 inputs"},
		{"result with no input", func(m *Model) { m.Results[0].Inputs = nil }, "out", "result has 0 inputs"},
		{"result with two inputs", func(m *Model) { m.Results[0].Inputs = append(m.Results[0].Inputs, m.Node("relu").Out(0)) }, "out", "result has 2 inputs"},
		{"constant without value", func(m *Model) { m.Node("b").Value = nil }, "b", "constant has no value"},
		{"constant port mismatch", func(m *Model) { m.Node("b").Outputs[0].Shape = shp(5) }, "b", "port says f32[5]"},
		{"constant type mismatch", func(m *Model) { m.Node("b").Outputs[0].Type = tensor.F16 }, "b", "port says f16[4]"},
		{"constant with input", func(m *Model) { m.Node("b").Inputs = []Output{m.Parameters[0].Out(0)} }, "b", "constant has 1 inputs"},
		{"inference error", func(m *Model) {
			m.Node("w").Value = tensor.MustNew(tensor.F32, tensor.Shape{4, 2, 3, 3})
			m.Node("w").Outputs[0].Shape = shp(4, 2, 3, 3)
		}, "conv", "input has 3 channels"},
		{"too many inputs", func(m *Model) { n := m.Node("relu"); n.Inputs = append(n.Inputs, n.Inputs[0]) }, "relu", "has 2 inputs"},
		{"cycle", func(m *Model) { m.Node("relu").Inputs[0] = m.Node("add").Out(0) }, "", "cycle through node"},
		{"parameter of wrong op", func(m *Model) { m.Parameters = append(m.Parameters, m.Node("relu")) }, "relu", "listed as parameter 1"},
		{"result of wrong op", func(m *Model) { m.Results = append(m.Results, m.Node("relu")) }, "relu", "listed as result 1"},
		{"consumed result", func(m *Model) { m.Node("add").Inputs[0] = m.Results[0].Out(0) }, "", "cycle"},
		{"parameter without type", func(m *Model) { m.Parameters[0].Outputs[0].Type = tensor.Undefined }, "x", "parameter has no element type"},
		{"no results", func(m *Model) { m.Results = nil }, "", "no results"},
		{"nil result", func(m *Model) { m.Results = append(m.Results, nil) }, "", "result 1 is nil"},
		{"unnamed node", func(m *Model) { m.Node("relu").Name = "" }, "", "node has no name"},
		{"type mismatch", func(m *Model) {
			add := m.Node("add")
			h := NewParameter("h", tensor.F16, shp(1))
			m.Parameters = append(m.Parameters, h)
			add.Inputs[1] = h.Out(0)
		}, "add", "element type f16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := smallModel(t)
			tc.mutate(m)
			err := m.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidModel)
			assert.Contains(t, err.Error(), tc.contains)
			if tc.node != "" {
				var ne *NodeError
				require.True(t, errors.As(err, &ne), "error %v is a NodeError", err)
				assert.Equal(t, tc.node, ne.Node)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", tc.node))
			}
		})
	}
}

func TestValidateResultConsumedIsRejected(t *testing.T) {
	x := NewParameter("x", tensor.F32, shp(2))
	r1 := NewResult("r1", x.Out(0))
	relu := NewNode("Relu", "relu", []Output{r1.Out(0)}, nil, 1)
	m := NewModel("m", []*Node{x}, []*Node{r1, NewResult("r2", relu.Out(0))})
	err := m.Validate()
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.Contains(t, err.Error(), "results cannot be consumed")
}

func TestInferShapesWrapsInvalidModel(t *testing.T) {
	x := NewParameter("x", tensor.F32, shp(2, 3))
	y := NewParameter("y", tensor.F32, shp(4, 3))
	add := NewNode("Add", "bad_add", []Output{x.Out(0), y.Out(0)}, nil, 1)
	m := NewModel("m", []*Node{x, y}, []*Node{NewResult("out", add.Out(0))})
	err := m.InferShapes()
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.Contains(t, err.Error(), `"bad_add"`)
	assert.Contains(t, err.Error(), "[2,3]")
	assert.Contains(t, err.Error(), "[4,3]")
}

func TestCloneIsDeep(t *testing.T) {
	m := smallModel(t)
	c := m.Clone()
	require.NoError(t, c.Validate())

	// Same structure.
	mn, err := m.Nodes()
	require.NoError(t, err)
	cn, err := c.Nodes()
	require.NoError(t, err)
	require.Len(t, cn, len(mn))
	for i := range mn {
		assert.NotSame(t, mn[i], cn[i])
		assert.Equal(t, mn[i].Name, cn[i].Name)
		assert.Equal(t, mn[i].OpType, cn[i].OpType)
	}
	// A node consumed twice stays one node.
	cadd := c.Node("add")
	assert.Same(t, cadd.Inputs[0].Node, cadd.Inputs[1].Node)
	assert.Same(t, c.Node("relu"), cadd.Inputs[0].Node)

	// Mutating the clone leaves the original alone.
	cconv := c.Node("conv")
	cconv.Attrs.Ints("pads", nil)[0] = 7
	cconv.Attrs["group"] = int64(2)
	cconv.RT.FusedNames[0] = "changed"
	cconv.RT.Extra["impl"] = "other"
	cconv.RT.Affinity = "CPU"
	cconv.Outputs[0].Shape.Dims[0] = StaticDim(99)
	c.Node("w").Value.F32()[0] = 42
	c.Parameters[0].Outputs[0].Shape.Dims[1] = StaticDim(5)
	c.Opsets[""] = 7
	c.Node("relu").Inputs[0] = c.Parameters[0].Out(0)

	conv := m.Node("conv")
	assert.Equal(t, []int64{1, 1, 1, 1}, conv.Attrs.Ints("pads", nil))
	assert.False(t, conv.Attrs.Has("group"))
	assert.Equal(t, []string{"conv", "bn"}, conv.RT.FusedNames)
	assert.Equal(t, "fused_conv", conv.RT.Extra["impl"])
	assert.Equal(t, "GPU", conv.RT.Affinity)
	assert.Equal(t, "N", conv.Outputs[0].Shape.Dims[0].Name)
	assert.NotEqual(t, float32(42), m.Node("w").Value.F32()[0])
	assert.Equal(t, int64(3), m.Parameters[0].Outputs[0].Shape.Dims[1].Size)
	assert.Equal(t, int64(21), m.Opsets[""])
	assert.Same(t, conv, m.Node("relu").Inputs[0].Node)
}

func TestCloneTensorAttr(t *testing.T) {
	v, err := tensor.FromI64(tensor.Shape{1}, []int64{5})
	require.NoError(t, err)
	n := NewNode("ConstantOfShape", "cos", []Output{ci64(2)}, Attrs{"value": v}, 1)
	m := NewModel("m", nil, []*Node{NewResult("out", n.Out(0))})
	require.NoError(t, m.Validate())
	c := m.Clone()
	c.Node("cos").Attrs.Tensor("value").I64()[0] = 9
	assert.Equal(t, int64(5), v.I64()[0])
}

func TestNodesTopological(t *testing.T) {
	m := smallModel(t)
	nodes, err := m.Nodes()
	require.NoError(t, err)
	pos := map[*Node]int{}
	for i, n := range nodes {
		pos[n] = i
	}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			require.Contains(t, pos, in.Node)
			assert.Less(t, pos[in.Node], pos[n], "%s comes before %s", in.Node, n)
		}
	}
	assert.Len(t, nodes, 7)
}

func TestNodesRandomDAG(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	x := NewParameter("x", tensor.F32, shp(4))
	all := []*Node{x}
	for i := range 500 {
		a := all[rng.IntN(len(all))]
		b := all[rng.IntN(len(all))]
		all = append(all, NewNode("Add", fmt.Sprintf("n%d", i), []Output{a.Out(0), b.Out(0)}, nil, 1))
	}
	// Results over a random subset, shuffled, so order is not given away.
	var results []*Node
	for i, j := range rng.Perm(len(all))[:50] {
		results = append(results, NewResult(fmt.Sprintf("r%d", i), all[j].Out(0)))
	}
	m := NewModel("dag", []*Node{x}, results)
	require.NoError(t, m.Validate())
	nodes, err := m.Nodes()
	require.NoError(t, err)
	pos := map[*Node]int{}
	for i, n := range nodes {
		_, dup := pos[n]
		require.False(t, dup, "node %s listed twice", n)
		pos[n] = i
	}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			assert.Less(t, pos[in.Node], pos[n])
		}
	}
}

func TestDeepChain(t *testing.T) {
	const depth = 100_000
	x := NewParameter("x", tensor.F32, shp("N", 16))
	prev := x.Out(0)
	for i := range depth {
		n := NewNode("Relu", fmt.Sprintf("relu%d", i), []Output{prev}, nil, 1)
		prev = n.Out(0)
	}
	m := NewModel("deep", []*Node{x}, []*Node{NewResult("out", prev)})
	nodes, err := m.Nodes()
	require.NoError(t, err)
	require.Len(t, nodes, depth+2)
	assert.Same(t, x, nodes[0])
	assert.Equal(t, "relu0", nodes[1].Name)
	assert.Equal(t, "out", nodes[len(nodes)-1].Name)
	require.NoError(t, m.Validate())
	assert.Equal(t, "[N,16]", m.Results[0].Outputs[0].Shape.String())
	c := m.Clone()
	cn, err := c.Nodes()
	require.NoError(t, err)
	assert.Len(t, cn, depth+2)
}

func TestWriteText(t *testing.T) {
	m := smallModel(t)
	var b bytes.Buffer
	require.NoError(t, m.WriteText(&b))
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 8, out) // header + 7 nodes
	assert.Contains(t, lines[0], `model "small"`)
	var convLine string
	for _, l := range lines {
		if strings.Contains(l, `Conv "conv"`) {
			convLine = l
		}
	}
	require.NotEmpty(t, convLine, out)
	assert.Contains(t, convLine, "f32[N,4,8,8]")
	assert.Contains(t, convLine, "pads=[1 1 1 1]")
	assert.Contains(t, convLine, "fused=[conv,bn]")
	assert.Contains(t, convLine, "affinity=GPU")
	assert.Contains(t, convLine, `impl="fused_conv"`)
	assert.Regexp(t, `\(%\d+:0, %\d+:0, %\d+:0\)`, convLine)
	assert.Contains(t, out, `Add "add"`)
	assert.Contains(t, out, `Result "out"`)
}

func TestWriteDot(t *testing.T) {
	m := smallModel(t)
	var b bytes.Buffer
	require.NoError(t, m.WriteDot(&b))
	out := b.String()
	assert.True(t, strings.HasPrefix(out, `digraph "small" {`), out)
	assert.True(t, strings.HasSuffix(out, "}\n"))
	assert.Equal(t, 7, strings.Count(out, "[label=\"")-strings.Count(out, "->"), "one box per node")
	assert.Equal(t, 7, strings.Count(out, "->"), "one edge per input")
	assert.Contains(t, out, `f32[N,4,8,8]`)
	assert.Contains(t, out, `@GPU`)
}

func TestWriteCyclic(t *testing.T) {
	m := smallModel(t)
	m.Node("relu").Inputs[0] = m.Node("add").Out(0)
	assert.ErrorIs(t, m.WriteText(&bytes.Buffer{}), ErrInvalidModel)
	assert.ErrorIs(t, m.WriteDot(&bytes.Buffer{}), ErrInvalidModel)
}

// TestInvalidModelMessage: an error of shape inference names the node once
// and says "graph:" once, and matches ErrInvalidModel and *NodeError.
func TestInvalidModelMessage(t *testing.T) {
	x := NewParameter("x", tensor.F32, ShapeOf(1, 4))
	relu := NewNode("Relu", "relu", []Output{x.Out(0), x.Out(0)}, nil, 1)
	m := NewModel("bad", []*Node{x}, []*Node{NewResult("y", relu.Out(0))})
	for name, err := range map[string]error{"InferShapes": m.InferShapes(), "Validate": m.Validate()} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidModel)
			var ne *NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "relu", ne.Node)
			assert.Equal(t, 1, strings.Count(err.Error(), "graph:"), "%q", err)
			assert.Regexp(t, `^graph: node "relu" \(Relu\): invalid model: `, err.Error())
		})
	}
}

// TestSpecialize: the clone takes the input shapes and, where given, the
// values of inputs (a Reshape's target becomes known), leaves the user's
// model as it was, and a wrong number of shapes is ErrInvalidModel.
func TestSpecialize(t *testing.T) {
	x := NewParameter("x", tensor.F32, shp("N", 6))
	target := NewParameter("target", tensor.I64, shp(2))
	r := NewNode("Reshape", "r", []Output{x.Out(0), target.Out(0)}, nil, 1)
	relu := NewNode("Relu", "relu", []Output{x.Out(0)}, nil, 1)
	m := NewModel("m", []*Node{x, target}, []*Node{NewResult("y", r.Out(0)), NewResult("z", relu.Out(0))})
	require.NoError(t, m.InferShapes())
	tv, err := tensor.FromI64(tensor.Shape{2}, []int64{3, -1})
	require.NoError(t, err)
	shapes := []tensor.Shape{{4, 6}, {2}}
	cases := []struct {
		name   string
		values []*tensor.Tensor
		y      tensor.Shape // nil: still dynamic
	}{
		{"with the target", []*tensor.Tensor{nil, tv}, tensor.Shape{3, 8}},
		{"without it", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := m.Specialize(shapes, tc.values)
			require.NoError(t, err)
			y, ok := sm.Results[0].Inputs[0].Shape().ToShape()
			assert.Equal(t, tc.y != nil, ok, "y: %v", sm.Results[0].Inputs[0].Shape())
			if ok {
				assert.Equal(t, tc.y, y)
			}
			z, ok := sm.Results[1].Inputs[0].Shape().ToShape()
			assert.True(t, ok)
			assert.Equal(t, tensor.Shape{4, 6}, z)
		})
	}
	assert.False(t, m.Parameters[0].Outputs[0].Shape.IsStatic(), "the model is not changed")
	_, err = m.Specialize([]tensor.Shape{{4, 6}}, nil)
	assert.ErrorIs(t, err, ErrInvalidModel)
	assert.ErrorContains(t, err, `model "m"`)
}
