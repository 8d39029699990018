package graph

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpTable checks that every op has an inference function and that the
// op set the devices rely on is complete.
func TestOpTable(t *testing.T) {
	for _, name := range OpTypes() {
		spec, ok := Lookup(name)
		require.True(t, ok)
		if name == OpParameter || name == OpConstant {
			continue
		}
		assert.NotNil(t, spec.Infer, "op %s has no inference function", name)
		assert.LessOrEqual(t, spec.MinInputs, max(spec.MaxInputs, spec.MinInputs), "op %s", name)
	}
	required := []string{"Conv", "ConvTranspose", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log",
		"Neg", "Abs", "Reciprocal", "Erf", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
		"Clip", "Elu", "Selu", "Gelu", "Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization",
		"InstanceNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Resize", "Concat",
		"Split", "Slice", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Gather", "Shape", "Cast",
		"ConstantOfShape", "Expand", "Where", "Equal", "Greater", "Less", "Not", "ReduceMean", "ReduceSum", "ReduceMax",
		"ReduceMin", "Pad", "Tile", "Identity", "Dropout", "Range"}
	for _, name := range required {
		_, ok := Lookup(name)
		assert.True(t, ok, "op %s is missing from the op table", name)
	}
}

// TestOpSpecSemantics checks the per-op facts devices read from the table
// instead of keeping their own lists.
func TestOpSpecSemantics(t *testing.T) {
	fams := map[Family]bool{}
	for _, f := range Families() {
		fams[f] = true
	}
	for _, name := range OpTypes() {
		spec, _ := Lookup(name)
		assert.True(t, fams[spec.Family], "op %s has family %q, not one of Families()", name, spec.Family)
		seen := map[int]bool{}
		for _, i := range spec.HostInputs {
			assert.False(t, seen[i], "op %s lists host input %d twice", name, i)
			seen[i] = true
			assert.True(t, i >= 0 && (spec.MaxInputs < 0 || i < spec.MaxInputs), "op %s: host input %d is not an input (max %d)", name, i, spec.MaxInputs)
		}
		if strings.HasPrefix(name, "Reduce") {
			// Every reduction takes its axes as input 1, which plans need
			// on the host.
			assert.Equal(t, 2, spec.MaxInputs, "op %s", name)
			assert.Equal(t, []int{1}, spec.HostInputs, "op %s: the axes input must be a host input", name)
		}
	}
	for _, c := range []struct {
		op    string
		attrs Attrs
		want  []float32
	}{
		{"LeakyRelu", nil, []float32{0.01}},
		{"LeakyRelu", Attrs{"alpha": float32(0.3)}, []float32{0.3}},
		{"HardSigmoid", Attrs{"beta": float32(0.25)}, []float32{0.2, 0.25}},
		{"IsInf", Attrs{"detect_negative": int64(0)}, []float32{1, 0}},
		{"Relu", nil, []float32{}},
	} {
		n := NewNode(c.op, "n", nil, c.attrs, 1)
		assert.Equal(t, c.want, ParamValues(n), "%s %v", c.op, c.attrs)
		if len(c.want) > 0 {
			assert.Equal(t, c.want[0], ParamValue(n, mustSpec(c.op).Params[0].Name), "%s", c.op)
		}
	}
	assert.Equal(t, FoldShapes, FoldOf(NewNode("Shape", "s", nil, nil, 1)))
	assert.Equal(t, FoldNever, FoldOf(NewNode("NoSuchOp", "x", nil, nil, 1)))
	assert.True(t, IsHostInput(NewNode("ReduceL2", "r", nil, nil, 1), 1))
	assert.False(t, IsHostInput(NewNode("ReduceL2", "r", nil, nil, 1), 0))
}

// mustSpec is Lookup for an op the test knows is in the table.
func mustSpec(op string) OpSpec {
	s, _ := Lookup(op)
	return s
}

// TestOpExamples builds every example of the op table (OpSpec.Examples)
// into its one-node model: an example that does not fit its op's arity,
// attributes or shape inference fails here with the op and example named,
// before any device test runs it. Names are unique within an op.
func TestOpExamples(t *testing.T) {
	n := 0
	for _, op := range OpTypes() {
		s, _ := Lookup(op)
		names := map[string]bool{}
		for _, ex := range s.Examples {
			n++
			assert.False(t, names[ex.Name], "op %s: two examples named %q", op, ex.Name)
			names[ex.Name] = true
			m, err := ex.Build(op)
			if !assert.NoError(t, err) {
				continue
			}
			assert.Len(t, m.Results, max(ex.Outputs, 1), "op %s example %q", op, ex.Name)
		}
	}
	assert.NotZero(t, n, "no op declares examples")
	// A wrong example is an error naming the op and the example.
	bad := Example{Name: "rank1", Inputs: []ExampleInput{{Shape: []int64{5}}}}
	_, err := bad.Build("Trilu")
	assert.ErrorContains(t, err, "op Trilu, example rank1")
}
