package ir

import (
	"encoding/xml"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// indexImports gather and scatter by index tensors, and OneHot.
var indexImports = []importRow{
	{"Gather", 1, importGather},
	{"Gather", 7, importGather},
	{"Gather", 8, importGather},
	{"GatherElements", 6, importGatherElements},
	{"GatherND", 5, importGatherND},
	{"GatherND", 8, importGatherND},
	{"ScatterElementsUpdate", 3, importScatterElements},
	{"ScatterElementsUpdate", 12, importScatterElements},
	{"ScatterNDUpdate", 3, importScatterND},
	{"ScatterUpdate", 3, importScatterUpdate},
	{"OneHot", 1, importOneHot},
	{"EmbeddingBagPackedSum", 3, importEmbeddingBagPacked},
	{"EmbeddingSegmentsSum", 3, importEmbeddingSegments},
	{"EmbeddingBagOffsetsSum", 3, importEmbeddingBagOffsets},
}

// importGather: the axis input becomes the attribute; batch_dims (7+)
// must be 0, the op set's Gather having none.
func importGather(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	axis, err := c.scalarInt(2, "axis")
	if err != nil {
		return nil, err
	}
	if c.opset >= 7 {
		b, err := c.int("batch_dims", 0)
		if err != nil {
			return nil, err
		}
		if b != 0 {
			return nil, c.attrErrorf("batch_dims", "%d is not supported (0 is)", b)
		}
	}
	return one(c.op("Gather", "", graph.Attrs{"axis": axis}, c.in[0], c.in[1]))
}

func importGatherElements(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	axis, err := c.int("axis", 0)
	if err != nil {
		return nil, err
	}
	return one(c.op("GatherElements", "", graph.Attrs{"axis": axis}, c.in...))
}

// importGatherND: GatherND-5 flattens the batch dims of its output, -8
// keeps them as the op set does; so -5 is read for batch_dims 0 only.
func importGatherND(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	b, err := c.int("batch_dims", 0)
	if err != nil {
		return nil, err
	}
	if c.opset < 8 && b != 0 {
		return nil, c.attrErrorf("batch_dims", "GatherND-5 with batch_dims %d flattens the batch, which the op set does not; use GatherND-8", b)
	}
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("GatherND", "", graph.Attrs{"batch_dims": b}, c.in[0], idx))
}

// scatterReductions maps ScatterElementsUpdate-12's reductions to the op
// set's.
var scatterReductions = map[string]string{"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}

func importScatterElements(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(4, 4); err != nil {
		return nil, err
	}
	axis, err := c.scalarInt(3, "axis")
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{"axis": axis}
	if c.opset >= 12 {
		red, err := c.enum("reduction", "none", "none", "sum", "prod", "min", "max", "mean")
		if err != nil {
			return nil, err
		}
		r, ok := scatterReductions[red]
		if !ok {
			return nil, c.attrErrorf("reduction", "%q is not supported (none, sum, prod, min, max are)", red)
		}
		init, err := c.boolean("use_init_val", true)
		if err != nil {
			return nil, err
		}
		if !init && r != "none" {
			return nil, c.attrErrorf("use_init_val", "false is not supported")
		}
		attrs["reduction"] = r
	}
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("ScatterElements", "", attrs, c.in[0], idx, c.in[2]))
}

func importScatterND(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("ScatterND", "", nil, c.in[0], idx, c.in[2]))
}

// importScatterUpdate writes whole slices of axis 0 at the indices: a
// ScatterND whose indices gain a trailing axis of 1.
func importScatterUpdate(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(4, 4); err != nil {
		return nil, err
	}
	axis, err := c.scalarInt(3, "axis")
	if err != nil {
		return nil, err
	}
	if axis != 0 {
		return nil, c.errorf(ErrUnsupportedAttribute, "ScatterUpdate along axis %d is not supported (axis 0 is)", axis)
	}
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	idx, err = c.op("Unsqueeze", "indices_nd", nil, idx, c.constI64("last_axis", false, -1))
	if err != nil {
		return nil, err
	}
	return one(c.op("ScatterND", "", nil, c.in[0], idx, c.in[2]))
}

// importOneHot: on_value and off_value become the op set's values
// [off, on].
func importOneHot(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(4, 4); err != nil {
		return nil, err
	}
	axis, err := c.int("axis", -1)
	if err != nil {
		return nil, err
	}
	var values graph.Output
	off, okOff := c.value(3)
	on, okOn := c.value(2)
	if okOff && okOn && off.NumElements() == 1 && on.NumElements() == 1 && off.Type() == on.Type() {
		v, err := tensor.FromFloat64s(on.Type(), tensor.Shape{2}, []float64{off.Float64s()[0], on.Float64s()[0]})
		if err != nil {
			return nil, c.errorf(ErrInvalidModel, "values: %v", err)
		}
		values = c.constant("values", v)
	} else {
		var vals []graph.Output
		for i, s := range []string{"off_value", "on_value"} {
			v, err := c.op("Reshape", s+"_1d", nil, c.in[3-i], c.constI64(s+"_shape", false, 1))
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		var err error
		if values, err = c.op("Concat", "values", graph.Attrs{"axis": int64(0)}, vals...); err != nil {
			return nil, err
		}
	}
	depth, err := c.i64(1, "depth_i64")
	if err != nil {
		return nil, err
	}
	idx := c.in[0]
	if idx.Type().IsSigned() {
		// IR's negative indices select nothing; the op set's count from the
		// end: move them to depth, which selects nothing in both.
		d, err := c.castTo(c.in[1], idx.Type(), "depth_like_indices")
		if err != nil {
			return nil, err
		}
		zero, err := c.constOf("zero", idx.Type(), true, 0)
		if err != nil {
			return nil, err
		}
		neg, err := c.op("Less", "negative", nil, idx, zero)
		if err != nil {
			return nil, err
		}
		if idx, err = c.op("Where", "indices", nil, neg, d, idx); err != nil {
			return nil, err
		}
	}
	return one(c.op("OneHot", "", graph.Attrs{"axis": axis}, idx, depth, values))
}

// indexExports write the gathers, scatters and OneHot.
var indexExports = map[string]exportFunc{
	"Gather": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis") {
			return false, nil
		}
		return e.single("Gather", 8, []xml.Attr{dataAttr("batch_dims", "0")}, in[0], in[1], e.i64Src("axis", true, e.attrInt("axis", 0)))
	},
	"GatherElements": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis") {
			return false, nil
		}
		return e.single("GatherElements", 6, []xml.Attr{dataAttr("axis", strconv.FormatInt(e.attrInt("axis", 0), 10))}, in...)
	},
	"GatherND": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("batch_dims") || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		return e.single("GatherND", 8, []xml.Attr{dataAttr("batch_dims", strconv.FormatInt(e.attrInt("batch_dims", 0), 10))}, in...)
	},
	"ScatterElements": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis", "reduction") || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		red := ""
		for k, v := range scatterReductions {
			if v == e.n.Attrs.String("reduction", "none") {
				red = k
			}
		}
		if red == "" {
			return false, nil
		}
		return e.single("ScatterElementsUpdate", 12, []xml.Attr{dataAttr("reduction", red), dataAttr("use_init_val", "true")},
			in[0], in[1], in[2], e.i64Src("axis", true, e.attrInt("axis", 0)))
	},
	"ScatterND": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("reduction") || e.n.Attrs.String("reduction", "none") != "none" || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		return e.single("ScatterNDUpdate", 3, nil, in...)
	},
	"OneHot": func(e *exportCtx) (bool, error) {
		// IR's negative indices select nothing, the op set's count from
		// the end: only unsigned indices mean the same.
		if !e.onlyAttrs("axis") || len(e.n.Inputs) != 3 || !e.in(0).Valid() || e.in(0).Type().IsSigned() || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		v, ok := e.value(2)
		if !ok || !e.owned(2) || v.NumElements() != 2 || v.Type() == tensor.String {
			return false, nil
		}
		f := v.Contiguous()
		off, err := f.View([]int64{0}, []int64{1})
		if err != nil {
			return false, nil
		}
		on, err := f.View([]int64{1}, []int64{2})
		if err != nil {
			return false, nil
		}
		offS, _ := off.Contiguous().Reshape(tensor.Shape{})
		onS, _ := on.Contiguous().Reshape(tensor.Shape{})
		return e.single("OneHot", 1, []xml.Attr{dataAttr("axis", strconv.FormatInt(e.attrInt("axis", -1), 10))},
			from(e.in(0)), from(e.in(1)), e.constSrc("on_value", onS.Clone()), e.constSrc("off_value", offS.Clone()))
	},
}
