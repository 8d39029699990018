package onnx

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// legacyBroadcast imports element-wise binary ops before opset 7. With
// broadcast=1, B's shape must match a contiguous run of A's dims: the
// trailing ones without axis (which numpy broadcasting, the op set's rule,
// also does), or those starting at axis. An axis that does not make B a
// suffix of A is turned into numpy broadcasting by appending size-1 axes to
// B (an Unsqueeze, or a reshaped constant), which needs the ranks of A and B.
func legacyBroadcast(c *nodeCtx) ([]graph.Output, error) {
	bcast := c.attrs.Int("broadcast", 0) != 0
	axis, hasAxis := c.attrs["axis"]
	delete(c.attrs, "broadcast")
	delete(c.attrs, "axis")
	a, b := c.input(0), c.input(1)
	if !bcast || !hasAxis {
		return outputsOf(c.node(c.n.opType, "", c.in, c.attrs, 1)), nil
	}
	ax, ok := axis.(int64)
	if !ok {
		return nil, c.attrErrorf("axis", "is a %T, want an integer", axis)
	}
	ra, rb := rankOf(a), rankOf(b)
	if ra < 0 || rb < 0 {
		return nil, c.attrErrorf("axis", "legacy broadcasting along an axis needs the ranks of both inputs, which are not known at import")
	}
	if ax < 0 {
		ax += int64(ra)
	}
	if ax < 0 || ax+int64(rb) > int64(ra) {
		return nil, c.invalidf("broadcast axis %d does not fit B (rank %d) into A (rank %d)", axis, rb, ra)
	}
	extra := int64(ra) - ax - int64(rb)
	if extra > 0 {
		if t, ok := constInput(c, 1); ok {
			shape := append(t.Shape().Clone(), make(tensor.Shape, extra)...)
			for i := rb; i < len(shape); i++ {
				shape[i] = 1
			}
			rt, err := t.Contiguous().Reshape(shape)
			if err != nil {
				return nil, c.invalidf("reshaping B for broadcast: %v", err)
			}
			b = c.constant("broadcast_b", rt.Clone())
		} else {
			axes := make([]int64, extra)
			for i := range axes {
				axes[i] = int64(rb) + int64(i)
			}
			b = c.node("Unsqueeze", "broadcast_b", []graph.Output{b, c.constI64("broadcast_axes", axes)}, nil, 1).Out(0)
		}
	}
	return outputsOf(c.node(c.n.opType, "", []graph.Output{a, b}, c.attrs, 1)), nil
}

// rankOf returns the rank of a Parameter's or Constant's output, or -1
// when it is not known while importing (other nodes are inferred only
// after the whole graph is built).
func rankOf(o graph.Output) int {
	if !o.Valid() {
		return -1
	}
	switch o.Node.OpType {
	case graph.OpConstant:
		if o.Node.Value != nil {
			return o.Node.Value.Rank()
		}
	case graph.OpParameter:
		return o.Shape().Rank()
	}
	return -1
}

// eltwiseImports converts the element-wise ops of opsets before 7, whose legacy broadcast attributes the op set does not have.
var eltwiseImports = []opEntry{
	{"Add", "", 1, 7, legacyBroadcast},
	{"Sub", "", 1, 7, legacyBroadcast},
	{"Mul", "", 1, 7, legacyBroadcast},
	{"Div", "", 1, 7, legacyBroadcast},
	{"Pow", "", 1, 7, legacyBroadcast},
}
