package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// poolImports are the windowed and adaptive poolings.
var poolImports = []importRow{
	{"MaxPool", 1, importPool("MaxPool")},
	{"MaxPool", 8, importPool("MaxPool")},
	{"MaxPool", 14, importPool("MaxPool")},
	{"AvgPool", 1, importPool("AveragePool")},
	{"AvgPool", 14, importPool("AveragePool")},
	{"AdaptiveAvgPool", 8, importAdaptivePool("GlobalAveragePool")},
	{"AdaptiveMaxPool", 8, importAdaptivePool("GlobalMaxPool")},
}

// importPool: rounding_type ceil and ceil_torch are the op set's
// ceil_mode (which, as PyTorch, drops a last window that would start in
// the end padding: ceil_torch exactly; OpenVINO's older ceil keeps it,
// which differs only for such windows); MaxPool-8's indices output is
// the op set's (flattened over the whole input) for axis 0.
func importPool(opType string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if err := c.inputs(1, 1); err != nil {
			return nil, err
		}
		attrs := graph.Attrs{}
		if err := c.windowAttrs(attrs, opType == "MaxPool" && c.opset >= 8); err != nil {
			return nil, err
		}
		k, ok, err := c.intList("kernel")
		if err != nil {
			return nil, err
		}
		if !ok || len(k) == 0 {
			return nil, c.errorf(ErrInvalidModel, "the pooling has no kernel")
		}
		attrs["kernel_shape"] = k
		allowed := []string{"floor", "ceil"}
		if c.opset >= 14 {
			allowed = append(allowed, "ceil_torch")
		}
		rt, err := c.enum("rounding_type", "floor", allowed...)
		if err != nil {
			return nil, err
		}
		attrs["ceil_mode"] = b2i(rt != "floor")
		if opType == "AveragePool" {
			excl, err := c.boolean("exclude-pad", false)
			if err != nil {
				return nil, err
			}
			attrs["count_include_pad"] = b2i(!excl)
		}
		nout := 1
		it := tensor.I64
		if opType == "MaxPool" && c.opset >= 8 && len(c.l.Outputs) > 1 && c.gc.consumers[portKey{c.l.ID, c.l.Outputs[1].ID}] > 0 {
			axis, err := c.int("axis", 0)
			if err != nil {
				return nil, err
			}
			if it, err = c.elemType("index_element_type", tensor.I64); err != nil {
				return nil, err
			}
			if axis != 0 {
				return nil, c.attrErrorf("axis", "indices flattened from axis %d are not supported (axis 0 is)", axis)
			}
			nout = 2
		}
		n, err := c.node(opType, "", []graph.Output{c.in[0]}, attrs, nout)
		if err != nil {
			return nil, err
		}
		if nout == 1 {
			return outs(n), nil
		}
		idx, err := c.castTo(n.Out(1), it, "indices")
		if err != nil {
			return nil, err
		}
		return []graph.Output{n.Out(0), idx}, nil
	}
}

// importAdaptivePool: an output of size 1 on every spatial axis is a
// global pooling; other sizes are not supported.
func importAdaptivePool(opType string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if err := c.inputs(2, 2); err != nil {
			return nil, err
		}
		size, err := c.ints(1, "output_shape")
		if err != nil {
			return nil, err
		}
		for _, s := range size {
			if s != 1 {
				return nil, c.errorf(ErrUnsupportedAttribute, "adaptive pooling to %v is not supported (to all ones, a global pooling, is)", size)
			}
		}
		if len(c.l.Outputs) > 1 && c.gc.consumers[portKey{c.l.ID, c.l.Outputs[1].ID}] > 0 {
			return nil, c.errorf(ErrUnsupportedOp, "AdaptiveMaxPool's indices are not supported")
		}
		return one(c.op(opType, "", nil, c.in[0]))
	}
}

// poolExports write the poolings: a global pooling is an adaptive one to
// size 1.
var poolExports = map[string]exportFunc{
	"MaxPool":           exportPool,
	"AveragePool":       exportPool,
	"GlobalAveragePool": exportGlobalPool("AdaptiveAvgPool"),
	"GlobalMaxPool":     exportGlobalPool("AdaptiveMaxPool"),
}

// exportPool: ceil_mode is ceil_torch (opset 14: the op set's rounding);
// MaxPool's indices are MaxPool-8's of axis 0.
func exportPool(e *exportCtx) (bool, error) {
	max := e.n.OpType == "MaxPool"
	allowed := []string{"strides", "dilations", "pads", "auto_pad", "kernel_shape", "ceil_mode"}
	if max {
		allowed = append(allowed, "storage_order")
	} else {
		allowed = append(allowed, "count_include_pad")
	}
	x := e.in(0)
	k := e.n.Attrs.Ints("kernel_shape", nil)
	if !x.Valid() || !e.onlyAttrs(allowed...) || len(k) == 0 || e.attrInt("storage_order", 0) != 0 {
		return false, nil
	}
	data, ok := e.windowData(len(k), max)
	if !ok {
		return false, nil
	}
	data = append(data, dataAttr("kernel", formatInts(k)))
	opset, rounding := 8, "floor"
	if !max {
		opset = 1
	}
	if e.attrInt("ceil_mode", 0) != 0 {
		opset, rounding = 14, "ceil_torch"
	}
	data = append(data, dataAttr("rounding_type", rounding))
	if max {
		data = append(data, dataAttr("index_element_type", "i64"), dataAttr("axis", "0"))
		// MaxPool-8 and -14 always have the indices port; the reader
		// makes the op set's second output only when something reads it.
		_, err := e.emit(layerSpec{typ: "MaxPool", opset: opset, data: data, in: []src{from(x)}, outs: 2, node: true})
		return err == nil, err
	}
	data = append(data, dataAttr("exclude-pad", boolStr(e.attrInt("count_include_pad", 0) == 0)))
	return e.single("AvgPool", opset, data, from(x))
}

func exportGlobalPool(typ string) exportFunc {
	return func(e *exportCtx) (bool, error) {
		x := e.in(0)
		r := x.Shape().Rank()
		if !x.Valid() || !e.onlyAttrs() || r < 3 || len(e.n.Outputs) != 1 {
			return false, nil
		}
		ones := make([]int64, r-2)
		for i := range ones {
			ones[i] = 1
		}
		data := []xml.Attr(nil)
		outs := 1
		if typ == "AdaptiveMaxPool" {
			data, outs = []xml.Attr{dataAttr("index_element_type", "i64")}, 2
		}
		_, err := e.emit(layerSpec{typ: typ, opset: 8, data: data, in: []src{from(x), e.i64Src("output_shape", false, ones...)}, outs: outs, node: true})
		return err == nil, err
	}
}
