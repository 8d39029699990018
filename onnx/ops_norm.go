package onnx

import "github.com/clinfer/clinfer/graph"

// stashType converts LayerNormalization's stash_type from an ONNX data type
// to int64(tensor.ElementType), like Cast's "to".
func stashType(c *nodeCtx) error {
	v, ok := c.attrs["stash_type"]
	if !ok {
		return nil
	}
	dt, ok := v.(int64)
	if !ok {
		return c.attrErrorf("stash_type", "is a %T, want an integer", v)
	}
	et, err := ElementType(dt)
	if err != nil {
		return c.typeErrorf("stash_type", err)
	}
	c.attrs["stash_type"] = int64(et)
	return nil
}

// batchNorm imports every BatchNormalization version: for inference the
// running statistics are used, momentum and is_test are irrelevant, and the
// training outputs are not provided; with training_mode=1 (opset 14 on)
// it is BatchNormalizationTraining, which normalises with the batch's
// statistics and returns the updated running ones.
func batchNorm(c *nodeCtx) ([]graph.Output, error) {
	if c.attrs.Has("spatial") && c.attrs.Int("spatial", 1) == 0 {
		return nil, c.attrErrorf("spatial", "per-activation (spatial=0) normalisation is not supported")
	}
	if len(c.in) != 5 {
		return nil, c.invalidf("has %d inputs, want 5", len(c.in))
	}
	if c.attrs.Int("training_mode", 0) != 0 {
		attrs := graph.Attrs{"epsilon": c.attrs.Float("epsilon", 1e-5), "momentum": c.attrs.Float("momentum", 0.9)}
		return outputsOf(c.node("BatchNormalizationTraining", "", c.in, attrs, min(numOutputs(c), 3))), nil
	}
	attrs := graph.Attrs{"epsilon": c.attrs.Float("epsilon", 1e-5)}
	return outputsOf(c.node("BatchNormalization", "", c.in, attrs, 1)), nil
}

// normImports converts BatchNormalization to its inference form and checks LayerNormalization's stash type.
var normImports = []opEntry{
	{"BatchNormalization", "", 1, 0, batchNorm},
	{"LayerNormalization", "", 17, 0, same(stashType)},
}
