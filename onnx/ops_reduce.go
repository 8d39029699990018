package onnx

import "github.com/clinfer/clinfer/graph"

// topK imports TopK, always with both outputs (Values, Indices); TopK-1's
// integer attribute k becomes the K input.
func topK(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0), c.input(1)}
	if c.version < 10 {
		v, ok := c.attrs["k"]
		if !ok {
			return nil, c.invalidf("required attribute \"k\" is missing")
		}
		k, ok := v.(int64)
		if !ok {
			return nil, c.attrErrorf("k", "is a %T, want an integer", v)
		}
		delete(c.attrs, "k")
		inputs[1] = c.constI64("k", []int64{k})
	}
	return outputsOf(c.node("TopK", "", inputs, c.attrs, 2)), nil
}

// reduceLogSum imports ReduceLogSum (every version) as Log(ReduceSum(x)),
// moving the axes attribute of opsets before 18 to an input.
func reduceLogSum(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0)}
	if c.version < 18 {
		if v, ok := c.attrs["axes"]; ok {
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf("axes", "is a %T, want a list of integers", v)
			}
			delete(c.attrs, "axes")
			inputs = append(inputs, c.constI64("axes", ints))
		}
	} else if c.input(1).Node != nil {
		inputs = append(inputs, c.input(1))
	}
	sum := c.node("ReduceSum", "sum", inputs, c.attrs, 1)
	return outputsOf(c.node("Log", "", []graph.Output{sum.Out(0)}, nil, 1)), nil
}

// inputSince rejects attribute name on an op that takes it as an input
// since opset v: such a node is malformed (ONNX's checker and ONNX Runtime
// refuse it), and guessing which of the two wins made the CPU and GPU
// devices disagree.
func inputSince(name string, v int) check {
	return func(c *nodeCtx) error {
		if _, ok := c.attrs[name]; ok {
			return c.attrErrorf(name, "is input 1 of %s since opset %d, not an attribute; pass it as an input (or re-export the model)", c.n.opType, v)
		}
		return nil
	}
}

// reduceImports converts the reductions whose axes were an attribute (an
// input since opset 18; ReduceSum: 13) and rejects the attribute after,
// ReduceLogSum and TopK-1's k.
var reduceImports = append(axesBecameInput([]string{"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
	"ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"}, 18, axesBecameInput([]string{"ReduceSum"}, 13, nil)),
	opEntry{"ReduceLogSum", "", 1, 0, reduceLogSum},
	opEntry{"TopK", "", 1, 0, topK},
)

// axesBecameInput appends to rows two rows per op: before opset v its axes
// attribute becomes input 1, from v on the attribute is refused.
func axesBecameInput(ops []string, v int64, rows []opEntry) []opEntry {
	for _, op := range ops {
		rows = append(rows, opEntry{op, "", 1, v, attrsToInputs(attrInput{name: "axes"})},
			opEntry{op, "", v, 0, same(inputSince("axes", int(v)))})
	}
	return rows
}
