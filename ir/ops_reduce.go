package ir

import (
	"encoding/xml"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// reduceImports reduce along axes: the ReduceXxx ops, TopK and CumSum.
var reduceImports = []importRow{
	{"ReduceSum", 1, importReduce("ReduceSum")},
	{"ReduceMean", 1, importReduce("ReduceMean")},
	{"ReduceMax", 1, importReduce("ReduceMax")},
	{"ReduceMin", 1, importReduce("ReduceMin")},
	{"ReduceProd", 1, importReduce("ReduceProd")},
	{"ReduceL1", 4, importReduce("ReduceL1")},
	{"ReduceL2", 4, importReduce("ReduceL2")},
	{"ReduceLogicalAnd", 1, importReduceLogical("ReduceMin")},
	{"ReduceLogicalOr", 1, importReduceLogical("ReduceMax")},
	{"TopK", 1, importTopK},
	{"TopK", 3, importTopK},
	{"TopK", 11, importTopK},
	{"CumSum", 3, importCumSum},
	{"CTCGreedyDecoder", 1, importCTCGreedy},
	{"CTCGreedyDecoderSeqLen", 6, importCTCGreedySeqLen},
}

// importReduce: keep_dims (default false); an empty axes list reduces
// nothing in IR, which the op set says with noop_with_empty_axes.
func importReduce(opType string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if err := c.inputs(2, 2); err != nil {
			return nil, err
		}
		keep, err := c.boolean("keep_dims", false)
		if err != nil {
			return nil, err
		}
		attrs := graph.Attrs{"keepdims": b2i(keep)}
		if v, ok := c.value(1); !ok || v.NumElements() == 0 {
			attrs["noop_with_empty_axes"] = int64(1)
		}
		axes, err := c.i64(1, "axes_i64")
		if err != nil {
			return nil, err
		}
		return one(c.op(opType, "", attrs, c.in[0], axes))
	}
}

// importReduceLogical reduces booleans as ReduceMin (all) or ReduceMax
// (any) of them as u8.
func importReduceLogical(opType string) importFunc {
	reduce := importReduce(opType)
	return func(c *layerCtx) ([]graph.Output, error) {
		if err := c.inputs(2, 2); err != nil {
			return nil, err
		}
		x, err := c.op("Cast", "u8", graph.Attrs{"to": int64(tensor.U8)}, c.in[0])
		if err != nil {
			return nil, err
		}
		c.in[0] = x
		r, err := reduce(c)
		if err != nil {
			return nil, err
		}
		return one(c.op("Cast", "bool", graph.Attrs{"to": int64(tensor.Bool)}, r[0]))
	}
}

// importTopK: mode max/min is largest; sort value sorts, none leaves the
// order open (index order is not expressible); k becomes the op set's
// 1-D k; index_element_type i32 casts the indices.
func importTopK(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	axis, err := c.int("axis", -1)
	if err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "max", "max", "min")
	if err != nil {
		return nil, err
	}
	sort, err := c.enum("sort", "none", "none", "value", "index")
	if err != nil {
		return nil, err
	}
	if sort == "index" {
		return nil, c.attrErrorf("sort", "index order is not in clinfer's op set (value and none are)")
	}
	if c.opset >= 11 {
		if _, err := c.boolean("stable", false); err != nil {
			return nil, err
		}
	}
	it := tensor.I32
	if c.opset >= 3 {
		if it, err = c.elemType("index_element_type", tensor.I32); err != nil {
			return nil, err
		}
	}
	var k graph.Output
	if v, err := c.scalarInt(1, "k"); err == nil {
		k = c.constI64("k", false, v)
	} else {
		if k, err = c.i64(1, "k_i64"); err != nil {
			return nil, err
		}
		if k, err = c.op("Reshape", "k_1d", nil, k, c.constI64("k_shape", false, 1)); err != nil {
			return nil, err
		}
	}
	attrs := graph.Attrs{"axis": axis, "largest": b2i(mode == "max"), "sorted": b2i(sort == "value")}
	n, err := c.node("TopK", "", []graph.Output{c.in[0], k}, attrs, 2)
	if err != nil {
		return nil, err
	}
	idx, err := c.castTo(n.Out(1), it, "indices")
	if err != nil {
		return nil, err
	}
	return []graph.Output{n.Out(0), idx}, nil
}

func importCumSum(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 2); err != nil {
		return nil, err
	}
	excl, err := c.boolean("exclusive", false)
	if err != nil {
		return nil, err
	}
	rev, err := c.boolean("reverse", false)
	if err != nil {
		return nil, err
	}
	axis := c.constI64("axis", true, 0)
	if len(c.in) == 2 {
		axis = c.in[1]
	}
	return one(c.op("CumSum", "", graph.Attrs{"exclusive": b2i(excl), "reverse": b2i(rev)}, c.in[0], axis))
}

// reduceExports write the reductions (with constant or run-time axes),
// TopK and CumSum.
var reduceExports = map[string]exportFunc{
	"ReduceSum": exportReduce("ReduceSum", 1), "ReduceMean": exportReduce("ReduceMean", 1),
	"ReduceMax": exportReduce("ReduceMax", 1), "ReduceMin": exportReduce("ReduceMin", 1),
	"ReduceProd": exportReduce("ReduceProd", 1), "ReduceL1": exportReduce("ReduceL1", 4),
	"ReduceL2": exportReduce("ReduceL2", 4),
	"TopK": func(e *exportCtx) (bool, error) {
		if len(e.n.Inputs) != 2 || !e.in(0).Valid() || !e.onlyAttrs("axis", "largest", "sorted") || len(e.n.Outputs) != 2 {
			return false, nil
		}
		k, ok := e.ints(1)
		if v, _ := e.value(1); !ok || !e.owned(1) || len(k) != 1 || v.Type() != tensor.I64 || len(v.Shape()) != 1 {
			return false, nil
		}
		mode, sort := "max", "value"
		if e.attrInt("largest", 1) == 0 {
			mode = "min"
		}
		if e.attrInt("sorted", 1) == 0 {
			sort = "none"
		}
		return e.single("TopK", 11, []xml.Attr{dataAttr("axis", strconv.FormatInt(e.attrInt("axis", -1), 10)), dataAttr("mode", mode),
			dataAttr("sort", sort), dataAttr("index_element_type", "i64"), dataAttr("stable", "false")},
			from(e.in(0)), e.i64Src("k", true, k[0]))
	},
	"CumSum": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 2 || !e.onlyAttrs("exclusive", "reverse") {
			return false, nil
		}
		return e.single("CumSum", 3, []xml.Attr{dataAttr("exclusive", boolStr(e.attrInt("exclusive", 0) != 0)),
			dataAttr("reverse", boolStr(e.attrInt("reverse", 0) != 0))}, in...)
	},
}

// exportReduce: IR's empty axes reduce nothing, the op set's reduce all
// unless noop_with_empty_axes; so constant non-empty axes, or run-time
// axes with noop_with_empty_axes.
func exportReduce(typ string, opset int) exportFunc {
	return func(e *exportCtx) (bool, error) {
		if len(e.n.Inputs) != 2 || !e.in(0).Valid() || !e.in(1).Valid() || !e.onlyAttrs("keepdims", "noop_with_empty_axes") || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		noop := e.attrInt("noop_with_empty_axes", 0) != 0
		if v, ok := e.value(1); ok {
			if v.NumElements() == 0 || noop {
				return false, nil
			}
		} else if !noop {
			return false, nil
		}
		return e.single(typ, opset, []xml.Attr{dataAttr("keep_dims", boolStr(e.attrInt("keepdims", 1) != 0))}, from(e.in(0)), from(e.in(1)))
	}
}
