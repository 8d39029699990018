package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// shapeImports make values from shapes.
var shapeImports = []importRow{
	{"ShapeOf", 1, importShapeOf},
	{"ShapeOf", 3, importShapeOf},
	{"Range", 1, importRange},
	{"Range", 4, importRange},
	{"Eye", 9, importEye},
}

// castTo casts o to t unless it is of that type already.
func (c *layerCtx) castTo(o graph.Output, t tensor.ElementType, suffix string) (graph.Output, error) {
	if o.Type() == t {
		return o, nil
	}
	return c.op("Cast", suffix, graph.Attrs{"to": int64(t)}, o)
}

// importShapeOf is Shape, cast to output_type i32 when asked.
func importShapeOf(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	t, err := c.elemType("output_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	if t != tensor.I64 && t != tensor.I32 {
		return nil, c.badAttr("output_type", errf("%v is not i32 or i64", t))
	}
	if t == tensor.I64 {
		return one(c.op("Shape", "", nil, c.in[0]))
	}
	s, err := c.op("Shape", "shape", nil, c.in[0])
	if err != nil {
		return nil, err
	}
	return one(c.op("Cast", "", graph.Attrs{"to": int64(t)}, s))
}

// importRange: the op set's Range takes one type for its three scalars;
// Range-4's output_type casts them to it.
func importRange(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	t := c.in[0].Type()
	if c.opset >= 4 {
		var err error
		if t, err = c.elemType("output_type", 0); err != nil {
			return nil, err
		}
		if t == 0 {
			return nil, c.errorf(ErrInvalidModel, "Range-4 has no output_type")
		}
	}
	in := make([]graph.Output, 3)
	for i, s := range []string{"start", "stop", "step"} {
		v, err := c.castTo(c.in[i], t, s)
		if err != nil {
			return nil, err
		}
		in[i] = v
	}
	return one(c.op("Range", "", nil, in...))
}

// importEye: a [rows, cols] identity shifted by diagonal_index, as
// EyeLike of a tensor of that shape (no batch_shape input).
func importEye(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, c.errorf(ErrUnsupportedAttribute, "Eye with a batch_shape input is not supported (%v)", err)
	}
	t, err := c.elemType("output_type", 0)
	if err != nil {
		return nil, err
	}
	k, err := c.ints(2, "diagonal_index")
	if err != nil {
		return nil, err
	}
	if len(k) != 1 {
		return nil, c.errorf(ErrInvalidModel, "diagonal_index has %d values, want 1", len(k))
	}
	var dims []graph.Output
	for i, s := range []string{"rows", "cols"} {
		d, err := c.castTo(c.in[i], tensor.I64, s+"_i64")
		if err != nil {
			return nil, err
		}
		if d, err = c.op("Reshape", s+"_1d", nil, d, c.constI64(s+"_shape", false, 1)); err != nil {
			return nil, err
		}
		dims = append(dims, d)
	}
	shape, err := c.op("Concat", "shape", graph.Attrs{"axis": int64(0)}, dims...)
	if err != nil {
		return nil, err
	}
	zeros, err := c.op("ConstantOfShape", "zeros", graph.Attrs{"value": scalarOf(t, 0).Clone()}, shape)
	if err != nil {
		return nil, err
	}
	return one(c.op("EyeLike", "", graph.Attrs{"k": k[0], "dtype": int64(t)}, zeros))
}

// shapeExports write Shape and Range.
var shapeExports = map[string]exportFunc{
	"Shape": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("ShapeOf", 3, []xml.Attr{dataAttr("output_type", "i64")}, in...)
	},
	"Range": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 3 || !e.onlyAttrs() {
			return false, nil
		}
		t := e.in(0).Type()
		for i := 1; i < 3; i++ {
			if e.in(i).Type() != t {
				return false, nil
			}
		}
		return e.single("Range", 4, []xml.Attr{dataAttr("output_type", t.String())}, in...)
	},
}
