package onnx

import "github.com/clinfer/clinfer/graph"

// sliceAttrs converts Slice-1 (starts, ends, axes attributes).
func sliceAttrs(c *nodeCtx) ([]graph.Output, error) {
	return attrsToInputs(
		attrInput{name: "starts", required: true},
		attrInput{name: "ends", required: true},
		attrInput{name: "axes"},
	)(c)
}

// split converts every Split version to the opset-18 form: sizes as input 1,
// or num_outputs when no sizes are given.
func split(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0)}
	if c.version < 13 {
		if v, ok := c.attrs["split"]; ok {
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf("split", "is a %T, want a list of integers", v)
			}
			delete(c.attrs, "split")
			inputs = append(inputs, c.constI64("split", ints))
		} else if c.input(1).Node != nil {
			inputs = append(inputs, c.input(1)) // Split-1 took sizes as input 1
		}
	} else if c.input(1).Node != nil {
		inputs = append(inputs, c.input(1))
	}
	nOut := len(c.n.outputs)
	if nOut == 0 {
		return nil, c.invalidf("has no outputs")
	}
	if len(inputs) == 1 && !c.attrs.Has("num_outputs") {
		c.attrs["num_outputs"] = int64(nOut)
	}
	return outputsOf(c.node("Split", "", inputs, c.attrs, nOut)), nil
}

// padAttrs converts Pad before opset 11 (pads and value attributes).
func padAttrs(padsAttr string) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		if err := enum("mode", "constant", "reflect", "edge")(c); err != nil {
			return nil, err
		}
		pads, ok := c.attrs[padsAttr].([]int64)
		if !ok {
			return nil, c.invalidf("required attribute %q is missing or not a list of integers", padsAttr)
		}
		inputs := []graph.Output{c.input(0), c.constI64("pads", pads)}
		if v := c.attrs.Float("value", 0); v != 0 {
			inputs = append(inputs, c.constF32("value", []float32{v}, true))
		}
		attrs := graph.Attrs{}
		if c.attrs.Has("mode") {
			attrs["mode"] = c.attrs["mode"]
		}
		return outputsOf(c.node("Pad", "", inputs, attrs, 1)), nil
	}
}

// dropout emits Dropout(data) with the output and the optional mask when
// the node runs in inference (no training_mode input, or a constant false
// one; opsets before 12 have no training mode): ratio, is_test and seed do
// not matter then. Otherwise it keeps Dropout(data, ratio, training_mode)
// and its seed: training mode drops elements at random.
func dropout(c *nodeCtx) ([]graph.Output, error) {
	t, known := constInput(c, 2)
	if c.version < 12 || !c.input(2).Valid() || (known && t.NumElements() == 1 && t.Float64s()[0] == 0) {
		return outputsOf(c.node("Dropout", "", []graph.Output{c.input(0)}, nil, min(numOutputs(c), 2))), nil
	}
	attrs := graph.Attrs{}
	if c.attrs.Has("seed") {
		attrs["seed"] = c.attrs["seed"]
	}
	return outputsOf(c.node("Dropout", "", []graph.Output{c.input(0), c.input(1), c.input(2)}, attrs, min(numOutputs(c), 2))), nil
}

// movementImports converts the attribute-era forms of the data-movement ops (values that became inputs) and checks their modes.
var movementImports = []opEntry{
	{"Concat", "", 1, 4, same(defaultInt("axis", 1))},
	{"Split", "", 1, 0, split},
	{"Slice", "", 1, 10, sliceAttrs},
	{"Reshape", "", 1, 5, attrsToInputs(attrInput{name: "shape", required: true})},
	{"Squeeze", "", 1, 13, attrsToInputs(attrInput{name: "axes"})},
	{"Unsqueeze", "", 1, 13, attrsToInputs(attrInput{name: "axes", required: true})},
	{"Pad", "", 1, 2, padAttrs("paddings")},
	{"Pad", "", 2, 11, padAttrs("pads")},
	{"Pad", "", 11, 19, same(enum("mode", "constant", "reflect", "edge"))},
	{"Pad", "", 19, 0, same(enum("mode", "constant", "reflect", "edge", "wrap"))},
	{"Dropout", "", 1, 0, dropout},
	{"DepthToSpace", "", 1, 0, same(enum("mode", "DCR", "CRD"))},
}
