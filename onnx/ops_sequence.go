package onnx

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importSequenceMap converts SequenceMap: its body reads one element of
// each sequence input and each tensor input whole, then the outer values
// it captures (trailing inputs, graph.AttrCaptures).
func importSequenceMap(c *nodeCtx) ([]graph.Output, error) {
	b, caps, err := c.body(graph.AttrBody)
	if err != nil {
		return nil, err
	}
	ins, k := withCaptures(c.in, []*graph.Model{b}, [][]capture{caps})
	attrs := graph.Attrs{graph.AttrBody: b, graph.AttrCaptures: int64(k)}
	return outputsOf(c.node("SequenceMap", "", ins, attrs, len(b.Results))), nil
}

// importOptional converts Optional: its type attribute (an optional's
// content: a tensor or a sequence of tensors) becomes graph's dtype and
// AttrValueKind.
func importOptional(c *nodeCtx) ([]graph.Output, error) {
	attrs := graph.Attrs{}
	for _, a := range c.n.attrs {
		if a.name != "type" || a.tp == nil {
			continue
		}
		if a.tp.nonTensor || !a.tp.tensorType {
			return nil, c.typeErrorf("type", fmt.Errorf("%w: an optional of a map, sparse tensor or deeper nesting", ErrUnsupportedType))
		}
		t, err := ElementType(a.tp.elemType)
		if err != nil {
			return nil, c.typeErrorf("type", err)
		}
		k := tensor.KindOptional
		if a.tp.kind == tensor.KindSequence {
			k = tensor.KindOptionalSequence
		}
		attrs["dtype"], attrs[graph.AttrValueKind] = int64(t), int64(k)
	}
	return outputsOf(c.node("Optional", "", c.in, attrs, 1)), nil
}

// sequenceImports converts the sequence family's ops that need more than
// their row: SequenceEmpty's ONNX dtype, SequenceMap's body and Optional's
// type.
var sequenceImports = []opEntry{
	{"SequenceEmpty", "", 11, 0, same(dataTypeAttr("dtype"))},
	{"SequenceMap", "", 17, 0, importSequenceMap},
	{"Optional", "", 15, 0, importOptional},
}
