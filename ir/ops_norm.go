package ir

import (
	"encoding/xml"
	"strconv"

	"github.com/clinfer/clinfer/graph"
)

// normImports are the normalisations. MVN, NormalizeL2 and
// GroupNormalization are written out in reductions and arithmetic.
var normImports = []importRow{
	{"BatchNormInference", 1, importBatchNorm},
	{"BatchNormInference", 5, importBatchNorm},
	{"LRN", 1, importLRN},
	{"MVN", 2, importMVN},
	{"MVN", 6, importMVN},
	{"NormalizeL2", 1, importNormalizeL2},
	{"GroupNormalization", 12, importGroupNorm},
	{"GRN", 1, importGRN},
}

// importGRN reads GRN-1: x / sqrt(sum over the channels (axis 1) of x^2 +
// bias), bias a required attribute.
func importGRN(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	if _, ok := c.attr("bias"); !ok {
		return nil, c.errorf(ErrInvalidModel, "attribute bias is required")
	}
	bias, err := c.float("bias", 0)
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	sq, err := c.op("ReduceSumSquare", "sum_squares", graph.Attrs{"keepdims": int64(1)}, x, c.constI64("channels", false, 1))
	if err != nil {
		return nil, err
	}
	b, err := c.constOf("bias", x.Type(), true, float64(bias))
	if err != nil {
		return nil, err
	}
	if sq, err = c.op("Add", "plus_bias", nil, sq, b); err != nil {
		return nil, err
	}
	if sq, err = c.op("Sqrt", "norm", nil, sq); err != nil {
		return nil, err
	}
	return one(c.op("Div", "", nil, x, sq))
}

// importBatchNorm: BatchNormInference-1 takes (gamma, beta, data, mean,
// variance), -5 (data, gamma, beta, mean, variance) as the op set does.
func importBatchNorm(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(5, 5); err != nil {
		return nil, err
	}
	eps, err := c.float("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	in := c.in
	if c.opset < 5 {
		in = []graph.Output{c.in[2], c.in[0], c.in[1], c.in[3], c.in[4]}
	}
	return one(c.op("BatchNormalization", "", graph.Attrs{"epsilon": eps}, in...))
}

// importLRN: across the channel axis only (axes [1]), where IR's and the
// op set's alpha mean the same.
func importLRN(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	axes, err := c.ints(1, "axes")
	if err != nil {
		return nil, err
	}
	if len(axes) != 1 || axes[0] != 1 {
		return nil, c.errorf(ErrUnsupportedAttribute, "LRN over axes %v is not supported (over the channels, [1], is)", axes)
	}
	attrs := graph.Attrs{}
	for _, p := range []struct {
		name string
		def  float32
	}{{"alpha", 1e-4}, {"beta", 0.75}, {"bias", 1}} {
		v, err := c.float(p.name, p.def)
		if err != nil {
			return nil, err
		}
		attrs[p.name] = v
	}
	size, err := c.int("size", 1)
	if err != nil {
		return nil, err
	}
	attrs["size"] = size
	return one(c.op("LRN", "", attrs, c.in[0]))
}

// importMVN: MVN-2 normalises over the spatial axes (and the channels
// with across_channels), MVN-6 over its axes input; eps inside or outside
// the square root (MVN-2: outside).
func importMVN(c *layerCtx) ([]graph.Output, error) {
	x := c.input(0)
	var axes []int64
	inside := false
	if c.opset >= 6 {
		if err := c.inputs(2, 2); err != nil {
			return nil, err
		}
		var err error
		if axes, err = c.ints(1, "axes"); err != nil {
			return nil, err
		}
		mode, err := c.enum("eps_mode", "inside_sqrt", "inside_sqrt", "outside_sqrt")
		if err != nil {
			return nil, err
		}
		inside = mode == "inside_sqrt"
	} else {
		if err := c.inputs(1, 1); err != nil {
			return nil, err
		}
		r, err := c.rank(0)
		if err != nil {
			return nil, err
		}
		across, err := c.boolean("across_channels", false)
		if err != nil {
			return nil, err
		}
		first := 2
		if across {
			first = 1
		}
		for i := first; i < r; i++ {
			axes = append(axes, int64(i))
		}
	}
	normVar, err := c.boolean("normalize_variance", true)
	if err != nil {
		return nil, err
	}
	eps, err := c.float("eps", 1e-9)
	if err != nil {
		return nil, err
	}
	return one(c.mvn(x, c.constI64("axes", false, axes...), eps, inside, normVar, ""))
}

// mvn writes (x - mean) / sqrt(var + eps) (inside) or / (sqrt(var) + eps)
// over axes; the last node takes the name suffix.
func (c *layerCtx) mvn(x, axes graph.Output, eps float32, inside, normVar bool, last string) (graph.Output, error) {
	keep := graph.Attrs{"keepdims": int64(1)}
	mean, err := c.op("ReduceMean", "mean", keep.Clone(), x, axes)
	if err != nil {
		return mean, err
	}
	if !normVar {
		return c.op("Sub", last, nil, x, mean)
	}
	d, err := c.op("Sub", "centered", nil, x, mean)
	if err != nil {
		return d, err
	}
	sq, err := c.op("Mul", "squared", nil, d, d)
	if err != nil {
		return sq, err
	}
	v, err := c.op("ReduceMean", "variance", keep.Clone(), sq, axes)
	if err != nil {
		return v, err
	}
	e, err := c.constOf("eps", x.Type(), true, float64(eps))
	if err != nil {
		return e, err
	}
	var den graph.Output
	if inside {
		if v, err = c.op("Add", "variance_eps", nil, v, e); err != nil {
			return v, err
		}
		den, err = c.op("Sqrt", "std", nil, v)
	} else {
		var s graph.Output
		if s, err = c.op("Sqrt", "std", nil, v); err != nil {
			return s, err
		}
		den, err = c.op("Add", "std_eps", nil, s, e)
	}
	if err != nil {
		return den, err
	}
	return c.op("Div", last, nil, d, den)
}

// importNormalizeL2: x / sqrt(max(sum(x^2), eps)) (eps_mode max) or
// x / sqrt(sum(x^2) + eps) (add) over axes.
func importNormalizeL2(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	eps, err := c.float("eps", 0)
	if err != nil {
		return nil, err
	}
	mode, err := c.enum("eps_mode", "add", "add", "max")
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	axes, err := c.i64(1, "axes_i64")
	if err != nil {
		return nil, err
	}
	sq, err := c.op("Mul", "squared", nil, x, x)
	if err != nil {
		return nil, err
	}
	sum, err := c.op("ReduceSum", "sum", graph.Attrs{"keepdims": int64(1)}, sq, axes)
	if err != nil {
		return nil, err
	}
	e, err := c.constOf("eps", x.Type(), true, float64(eps))
	if err != nil {
		return nil, err
	}
	op := "Add"
	if mode == "max" {
		op = "Max"
	}
	if sum, err = c.op(op, "sum_eps", nil, sum, e); err != nil {
		return nil, err
	}
	norm, err := c.op("Sqrt", "norm", nil, sum)
	if err != nil {
		return nil, err
	}
	return one(c.op("Div", "", nil, x, norm))
}

// importGroupNorm normalises x [N, C, ...] in num_groups groups of
// channels (as [N, G, rest]), then scales and shifts per channel.
func importGroupNorm(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	g, err := c.int("num_groups", 1)
	if err != nil {
		return nil, err
	}
	eps, err := c.float("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	if r < 2 || g < 1 {
		return nil, c.errorf(ErrInvalidModel, "GroupNormalization of rank %d in %d groups", r, g)
	}
	x := c.in[0]
	grouped, err := c.op("Reshape", "grouped", nil, x, c.constI64("grouped_shape", false, 0, g, -1))
	if err != nil {
		return nil, err
	}
	norm, err := c.mvn(grouped, c.constI64("axes", false, 2), eps, true, true, "normalized")
	if err != nil {
		return nil, err
	}
	shape, err := c.op("Shape", "shape", nil, x)
	if err != nil {
		return nil, err
	}
	back, err := c.op("Reshape", "ungrouped", nil, norm, shape)
	if err != nil {
		return nil, err
	}
	var trail []int64
	for i := 1; i < r-1; i++ {
		trail = append(trail, int64(i))
	}
	scale, bias := c.in[1], c.in[2]
	if len(trail) > 0 {
		if scale, err = c.op("Unsqueeze", "scale_c", nil, scale, c.constI64("scale_axes", false, trail...)); err != nil {
			return nil, err
		}
		if bias, err = c.op("Unsqueeze", "bias_c", nil, bias, c.constI64("bias_axes", false, trail...)); err != nil {
			return nil, err
		}
	}
	scaled, err := c.op("Mul", "scaled", nil, back, scale)
	if err != nil {
		return nil, err
	}
	return one(c.op("Add", "", nil, scaled, bias))
}

// normExports write BatchNormalization and LRN.
var normExports = map[string]exportFunc{
	"BatchNormalization": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 5 || !e.onlyAttrs("epsilon", "momentum", "spatial", "training_mode") || e.attrInt("training_mode", 0) != 0 || len(e.n.Outputs) != 1 {
			return false, nil
		}
		return e.single("BatchNormInference", 5, []xml.Attr{dataAttr("epsilon", formatFloat(e.n.Attrs.Float("epsilon", 1e-5)))}, in...)
	},
	"LRN": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("alpha", "beta", "bias", "size") || !e.n.Attrs.Has("size") {
			return false, nil
		}
		var data []xml.Attr
		for _, p := range []string{"alpha", "beta", "bias"} {
			data = append(data, dataAttr(p, formatFloat(graph.ParamValue(e.n, p))))
		}
		data = append(data, dataAttr("size", strconv.FormatInt(e.attrInt("size", 1), 10)))
		return e.single("LRN", 1, data, in[0], e.i64Src("axes", false, 1))
	},
}
