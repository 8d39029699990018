package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// compactImports are the ops whose output sizes their data decides.
var compactImports = []importRow{
	{"NonZero", 3, importNonZero},
	{"Unique", 10, importUnique},
}

// importNonZero: the op set's NonZero is i64, cast to output_type.
func importNonZero(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	t, err := c.elemType("output_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	if t == tensor.I64 {
		return one(c.op("NonZero", "", nil, c.in[0]))
	}
	nz, err := c.op("NonZero", "nonzero", nil, c.in[0])
	if err != nil {
		return nil, err
	}
	return one(c.op("Cast", "", graph.Attrs{"to": int64(t)}, nz))
}

// importUnique: the outputs are the op set's (unique values, first
// indices, inverse indices, counts); the axis is an optional constant
// input; the index and count types are cast to.
func importUnique(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 2); err != nil {
		return nil, err
	}
	sorted, err := c.boolean("sorted", true)
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{"sorted": b2i(sorted)}
	if len(c.in) == 2 {
		axis, err := c.scalarInt(1, "axis")
		if err != nil {
			return nil, err
		}
		attrs["axis"] = axis
	}
	it, err := c.elemType("index_element_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	ct, err := c.elemType("count_element_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	n, err := c.node("Unique", "", []graph.Output{c.in[0]}, attrs, 4)
	if err != nil {
		return nil, err
	}
	out := outs(n)
	for i, t := range []tensor.ElementType{it, it, ct} {
		if out[1+i], err = c.castTo(out[1+i], t, []string{"indices", "inverse", "counts"}[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compactExports write NonZero and Unique.
var compactExports = map[string]exportFunc{
	"NonZero": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("NonZero", 3, []xml.Attr{dataAttr("output_type", "i64")}, in...)
	},
	"Unique": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis", "sorted") {
			return false, nil
		}
		if e.n.Attrs.Has("axis") {
			in = append(in, e.i64Src("axis", true, e.attrInt("axis", 0)))
		}
		_, err := e.emit(layerSpec{typ: "Unique", opset: 10, in: in, outs: 4, node: true, data: []xml.Attr{
			dataAttr("sorted", boolStr(e.attrInt("sorted", 1) != 0)), dataAttr("index_element_type", "i64"),
			dataAttr("count_element_type", "i64")}})
		return err == nil, err
	},
}
