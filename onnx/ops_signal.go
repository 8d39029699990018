package onnx

import "github.com/clinfer/clinfer/graph"

// dft17 imports DFT-17, whose axis (default 1) is an attribute, as the
// opset-20 form that takes it as input 2.
func dft17(c *nodeCtx) ([]graph.Output, error) {
	axis := int64(1)
	if v, ok := c.attrs["axis"]; ok {
		a, ok := v.(int64)
		if !ok {
			return nil, c.attrErrorf("axis", "is a %T, want an integer", v)
		}
		axis = a
		delete(c.attrs, "axis")
	}
	inputs := []graph.Output{c.input(0), c.input(1), c.constI64("axis", []int64{axis})}
	return outputsOf(c.node("DFT", "", inputs, c.attrs, 1)), nil
}

// signalImports convert DFT-17 (DFT is imported as is from opset 20, STFT
// from 17).
var signalImports = []opEntry{
	{"DFT", "", 17, 20, dft17},
}
