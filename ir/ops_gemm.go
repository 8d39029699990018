package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
)

// gemmImports are the matrix products.
var gemmImports = []importRow{
	{"MatMul", 1, importMatMul},
	{"Einsum", 7, importEinsum},
	{"ScaledDotProductAttention", 13, importSDPA},
}

// importMatMul: transpose_a and transpose_b swap the last two axes of an
// input of rank 2 or more (a 1-D input is not transposed).
func importMatMul(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	in := []graph.Output{c.in[0], c.in[1]}
	for i, attr := range []string{"transpose_a", "transpose_b"} {
		t, err := c.boolean(attr, false)
		if err != nil {
			return nil, err
		}
		if !t {
			continue
		}
		r, err := c.rank(i)
		if err != nil {
			return nil, err
		}
		if r < 2 {
			continue
		}
		perm := make([]int64, r)
		for j := range perm {
			perm[j] = int64(j)
		}
		perm[r-2], perm[r-1] = perm[r-1], perm[r-2]
		if in[i], err = c.op("Transpose", attr, graph.Attrs{"perm": perm}, in[i]); err != nil {
			return nil, err
		}
	}
	return one(c.op("MatMul", "", nil, in...))
}

func importEinsum(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, -1); err != nil {
		return nil, err
	}
	eq, ok := c.attr("equation")
	if !ok {
		return nil, c.errorf(ErrInvalidModel, "the Einsum has no equation")
	}
	return one(c.op("Einsum", "", graph.Attrs{"equation": eq}, c.in...))
}

// gemmExports write MatMul and Einsum.
var gemmExports = map[string]exportFunc{
	"MatMul": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("MatMul", 1, []xml.Attr{dataAttr("transpose_a", "false"), dataAttr("transpose_b", "false")}, in...)
	},
	"Einsum": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("equation") {
			return false, nil
		}
		return e.single("Einsum", 7, []xml.Attr{dataAttr("equation", e.n.Attrs.String("equation", ""))}, in...)
	},
}
