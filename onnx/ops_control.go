package onnx

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The control-flow ops own subgraphs: their importers convert the GRAPH
// attributes into bodies whose outer-scope reads become the node's
// trailing captured inputs (scope.go, graph/ops_control.go).

// importIf converts If: both branches read the union of what either
// reads.
func importIf(c *nodeCtx) ([]graph.Output, error) {
	then, tc, err := c.body(graph.AttrThenBranch)
	if err != nil {
		return nil, err
	}
	els, ec, err := c.body(graph.AttrElseBranch)
	if err != nil {
		return nil, err
	}
	if len(then.Results) != len(els.Results) {
		return nil, c.invalidf("then_branch has %d outputs and else_branch %d", len(then.Results), len(els.Results))
	}
	ins, k := withCaptures([]graph.Output{c.input(0)}, []*graph.Model{then, els}, [][]capture{tc, ec})
	attrs := graph.Attrs{graph.AttrThenBranch: then, graph.AttrElseBranch: els, graph.AttrCaptures: int64(k)}
	return outputsOf(c.node(graph.OpIf, "", ins, attrs, len(then.Results))), nil
}

// importLoop converts Loop (opsets 1, 11, 13, 16: the same inputs and
// outputs; the later opsets widen the types).
func importLoop(c *nodeCtx) ([]graph.Output, error) {
	b, caps, err := c.body(graph.AttrBody)
	if err != nil {
		return nil, err
	}
	ins := []graph.Output{c.input(0), c.input(1)}
	for i := 2; i < len(c.in); i++ {
		ins = append(ins, c.in[i])
	}
	for len(ins) < 2 {
		ins = append(ins, graph.Output{})
	}
	ins, k := withCaptures(ins, []*graph.Model{b}, [][]capture{caps})
	attrs := graph.Attrs{graph.AttrBody: b, graph.AttrCaptures: int64(k)}
	return outputsOf(c.node(graph.OpLoop, "", ins, attrs, len(b.Results)-1)), nil
}

// scanAttrs are Scan's attributes besides its body.
var scanAttrs = []string{"num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"}

// importScan converts Scan of opset 9 and later.
func importScan(c *nodeCtx) ([]graph.Output, error) {
	b, caps, err := c.body(graph.AttrBody)
	if err != nil {
		return nil, err
	}
	ins, k := withCaptures(c.in, []*graph.Model{b}, [][]capture{caps})
	attrs := graph.Attrs{graph.AttrBody: b, graph.AttrCaptures: int64(k)}
	for _, a := range scanAttrs {
		if v, ok := c.attrs[a]; ok {
			attrs[a] = v
		}
	}
	return outputsOf(c.node(graph.OpScan, "", ins, attrs, len(b.Results))), nil
}

// importScan8 converts opset 8's Scan, whose inputs and outputs carry a
// leading batch axis (and an optional sequence_lens first input), into a
// Loop over the batch whose body runs the opset-9 Scan on one batch entry:
// every output of the Loop is a scan output, stacked along the batch axis
// as opset 8 returns it.
func importScan8(c *nodeCtx) ([]graph.Output, error) {
	if c.input(0).Valid() {
		return nil, c.attrErrorf("", "sequence_lens (input 0) is not supported; omit it to scan every batch entry to its full length")
	}
	if len(c.in) < 2 {
		return nil, c.invalidf("has %d inputs, want sequence_lens, the states and the scan inputs", len(c.in))
	}
	inner, caps, err := c.body(graph.AttrBody)
	if err != nil {
		return nil, err
	}
	values := c.in[1:]
	m := int(c.attrs.Int("num_scan_inputs", 0))
	if m < 1 || m > len(values) {
		return nil, c.invalidf("num_scan_inputs is %d for %d states and scan inputs", m, len(values))
	}
	// The Loop body: iteration b, condition, then the batched values and
	// the inner body's captures as the Loop's captures.
	iter := graph.NewParameter(c.name+"/batch", tensor.I64, graph.ShapeOf())
	cond := graph.NewParameter(c.name+"/cond", tensor.Bool, graph.ShapeOf())
	params := []*graph.Node{iter, cond}
	var scanIns []graph.Output
	for range values {
		p := graph.NewParameter(c.b.unique(c.name+"/batched"), 0, graph.DynamicRank)
		params = append(params, p)
		g := c.node("Gather", "entry", []graph.Output{p.Out(0), iter.Out(0)}, graph.Attrs{"axis": int64(0)}, 1)
		scanIns = append(scanIns, g.Out(0))
	}
	var innerCaps []graph.Output
	for _, cp := range caps {
		p := graph.NewParameter(cp.name, 0, graph.DynamicRank)
		params = append(params, p)
		innerCaps = append(innerCaps, p.Out(0))
	}
	attrs := graph.Attrs{graph.AttrBody: inner, graph.AttrCaptures: int64(len(caps)), "num_scan_inputs": int64(m)}
	if d, ok := c.attrs["directions"]; ok {
		attrs["scan_input_directions"] = d
	}
	scan := c.node(graph.OpScan, "scan", append(scanIns, innerCaps...), attrs, len(inner.Results))
	results := []*graph.Node{graph.NewResult(c.b.unique(c.name+"/cond_out"), cond.Out(0))}
	for j := range inner.Results {
		results = append(results, graph.NewResult(c.b.unique(c.name+"/entry_out"), scan.Out(j)))
	}
	body := graph.NewModel(c.name+"/batch_body", params, results)
	// M = the batch size, the first axis of the first batched value.
	shape := c.node("Shape", "shape", []graph.Output{values[0]}, nil, 1)
	batch := c.node("Gather", "batch", []graph.Output{shape.Out(0), c.constI64Scalar("zero", 0)}, graph.Attrs{"axis": int64(0)}, 1)
	ins := append([]graph.Output{batch.Out(0), {}}, values...)
	for _, cp := range caps {
		ins = append(ins, cp.outer)
	}
	loop := c.node(graph.OpLoop, "", ins, graph.Attrs{graph.AttrBody: body, graph.AttrCaptures: int64(len(values) + len(caps))}, len(inner.Results))
	// The batched values are the Loop's captures (read whole each
	// iteration), not carried values: the Loop carries nothing.
	return outputsOf(loop), nil
}

// constI64Scalar creates an i64 scalar constant.
func (c *nodeCtx) constI64Scalar(suffix string, v int64) graph.Output {
	t, _ := tensor.FromI64(tensor.Shape{}, []int64{v})
	return c.constant(suffix, t)
}

// controlImports converts the control-flow ops.
var controlImports = []opEntry{
	{"If", "", 1, 0, importIf},
	{"Loop", "", 1, 0, importLoop},
	{"Scan", "", 8, 9, importScan8},
	{"Scan", "", 9, 0, importScan},
}
