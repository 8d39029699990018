package onnx

import "github.com/clinfer/clinfer/graph"

// renamed emits the op under a newer name with the same inputs and
// attributes (Scatter -> ScatterElements).
func renamed(opType string) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		return outputsOf(c.node(opType, "", c.in, c.attrs, numOutputs(c))), nil
	}
}

// indexImports renames Scatter-9 and checks the scatters' reduction.
var indexImports = []opEntry{
	{"Scatter", "", 9, 11, renamed("ScatterElements")},
	{"ScatterElements", "", 11, 0, same(enum("reduction", "none", "add", "mul", "max", "min"))},
	{"ScatterND", "", 11, 0, same(enum("reduction", "none", "add", "mul", "max", "min"))},
}
