package onnx

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// clipAttrs converts Clip before opset 11 (min and max attributes).
func clipAttrs(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0), {}, {}}
	for i, a := range []string{"min", "max"} {
		if c.attrs.Has(a) {
			inputs[i+1] = c.constF32(a, []float32{c.attrs.Float(a, 0)}, true)
			delete(c.attrs, a)
		}
	}
	for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
		inputs = inputs[:len(inputs)-1]
	}
	return outputsOf(c.node("Clip", "", inputs, c.attrs, 1)), nil
}

// coercedSoftmax converts Softmax and LogSoftmax before opset 13, which
// flatten the input to 2-D at axis, normalise each row and restore the
// shape: Flatten(axis) -> op(axis=-1) -> Reshape(Shape(x)). When the axis is
// the last one the coercion is a no-op and the op is emitted directly.
func coercedSoftmax(c *nodeCtx) ([]graph.Output, error) {
	x := c.input(0)
	axis := c.attrs.Int("axis", 1)
	last := axis == -1
	if x.Valid() {
		if ps := x.Shape(); ps.RankKnown && (axis == int64(ps.Rank()-1) || axis == -1) {
			last = true
		}
	}
	if last {
		return outputsOf(c.node(c.n.opType, "", []graph.Output{x}, graph.Attrs{"axis": int64(-1)}, 1)), nil
	}
	flat := c.node("Flatten", "flatten", []graph.Output{x}, graph.Attrs{"axis": axis}, 1)
	sm := c.node(c.n.opType, "", []graph.Output{flat.Out(0)}, graph.Attrs{"axis": int64(-1)}, 1)
	shape := c.node("Shape", "shape", []graph.Output{x}, nil, 1)
	back := c.node("Reshape", "reshape", []graph.Output{sm.Out(0), shape.Out(0)}, nil, 1)
	return []graph.Output{back.Out(0)}, nil
}

// legacyPRelu converts PRelu before opset 7, where a 1-D slope of size C
// applies along the channel axis (1), to numpy broadcasting by reshaping a
// constant slope to [C,1,...,1] when the input rank is known.
func legacyPRelu(c *nodeCtx) ([]graph.Output, error) {
	x, slope := c.input(0), c.input(1)
	if t, ok := constInput(c, 1); ok && t.Rank() == 1 && t.NumElements() > 1 && x.Valid() {
		if r := x.Shape().Rank(); r > 2 {
			shape := make(tensor.Shape, r-1)
			for i := range shape {
				shape[i] = 1
			}
			shape[0] = t.NumElements()
			if rt, err := t.Reshape(shape); err == nil {
				slope = c.constant("slope", rt.Clone())
			}
		}
	}
	return outputsOf(c.node("PRelu", "", []graph.Output{x, slope}, c.attrs, 1)), nil
}

// activationImports converts the older forms of PRelu and Clip and checks Gelu's approximation; the softmax family coerced its input to 2-D before opset 13.
var activationImports = []opEntry{
	{"PRelu", "", 1, 7, legacyPRelu},
	{"Gelu", "", 20, 0, same(enum("approximate", "none", "tanh"))},
	{"Clip", "", 1, 11, clipAttrs},
	{"Softmax", "", 1, 13, coercedSoftmax},
	{"LogSoftmax", "", 1, 13, coercedSoftmax},
	{"Hardmax", "", 1, 13, coercedSoftmax},
}
