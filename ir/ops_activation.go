package ir

import (
	"encoding/xml"
	"strconv"

	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// activationImports are the activations and the softmax family.
var activationImports = []importRow{
	{"Relu", 1, same("Relu")},
	{"Sigmoid", 1, same("Sigmoid")},
	{"Tanh", 1, same("Tanh")},
	{"Elu", 1, importElu},
	{"Clamp", 1, importClamp},
	{"PRelu", 1, importPRelu},
	{"Gelu", 2, importGelu},
	{"Gelu", 7, importGelu},
	{"HSwish", 4, same("HardSwish")},
	{"HSigmoid", 5, importHSigmoid},
	{"HardSigmoid", 1, importHardSigmoid},
	{"Mish", 4, same("Mish")},
	{"SoftPlus", 4, same("Softplus")},
	{"SoftSign", 9, same("Softsign")},
	{"Swish", 4, importSwish},
	{"Selu", 1, importSelu},
	{"Softmax", 1, importSoftmax("Softmax", 1)},
	{"Softmax", 8, importSoftmax("Softmax", 1)},
	{"LogSoftmax", 5, importSoftmax("LogSoftmax", 1)},
}

func importElu(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	alpha, err := c.float("alpha", 1)
	if err != nil {
		return nil, err
	}
	return one(c.op("Elu", "", graph.Attrs{"alpha": alpha}, c.in[0]))
}

// importClamp: Clip with constant bounds of the input's type (integer
// bounds rounded inwards, as Clamp does).
func importClamp(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	lo, err := c.float("min", float32(math.Inf(-1)))
	if err != nil {
		return nil, err
	}
	hi, err := c.float("max", float32(math.Inf(1)))
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	l, h := float64(lo), float64(hi)
	if x.Type().IsInteger() {
		l, h = math.Ceil(l), math.Floor(h)
		if tl, th, ok := x.Type().IntRange(); ok {
			l, h = math.Max(l, float64(tl)), math.Min(h, float64(th))
		}
	}
	cmin, err := c.constOf("min", x.Type(), true, l)
	if err != nil {
		return nil, err
	}
	cmax, err := c.constOf("max", x.Type(), true, h)
	if err != nil {
		return nil, err
	}
	return one(c.op("Clip", "", nil, x, cmin, cmax))
}

// importPRelu: a 1-D slope as long as the channel axis applies per channel
// (axis 1); otherwise it broadcasts as numpy does.
func importPRelu(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	x, slope := c.in[0], c.in[1]
	xs, ss := x.Shape(), slope.Shape()
	if xs.RankKnown && ss.RankKnown && len(ss.Dims) == 1 && len(xs.Dims) > 2 {
		if cd, sd := xs.Dims[1], ss.Dims[0]; cd.IsStatic() && sd.IsStatic() && cd.Size == sd.Size && sd.Size != 1 {
			axes := make([]int64, len(xs.Dims)-2)
			for i := range axes {
				axes[i] = int64(i + 1)
			}
			var err error
			if slope, err = c.op("Unsqueeze", "per_channel", nil, slope, c.constI64("channel_axes", false, axes...)); err != nil {
				return nil, err
			}
		}
	}
	return one(c.op("PRelu", "", nil, x, slope))
}

func importGelu(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	mode := "erf"
	if c.opset >= 7 {
		var err error
		if mode, err = c.enum("approximation_mode", "erf", "erf", "tanh"); err != nil {
			return nil, err
		}
	}
	approx := "none"
	if mode == "tanh" {
		approx = "tanh"
	}
	return one(c.op("Gelu", "", graph.Attrs{"approximate": approx}, c.in[0]))
}

func importHSigmoid(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	return one(c.op("HardSigmoid", "", graph.Attrs{"alpha": float32(1.0 / 6), "beta": float32(0.5)}, c.in[0]))
}

// importHardSigmoid: alpha and beta are scalar inputs in IR, attributes in
// the op set.
func importHardSigmoid(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	a, err := c.scalar(1, "alpha")
	if err != nil {
		return nil, err
	}
	b, err := c.scalar(2, "beta")
	if err != nil {
		return nil, err
	}
	return one(c.op("HardSigmoid", "", graph.Attrs{"alpha": a, "beta": b}, c.in[0]))
}

// importSelu: alpha and lambda are scalar inputs in IR.
func importSelu(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	a, err := c.scalar(1, "alpha")
	if err != nil {
		return nil, err
	}
	g, err := c.scalar(2, "lambda")
	if err != nil {
		return nil, err
	}
	return one(c.op("Selu", "", graph.Attrs{"alpha": a, "gamma": g}, c.in[0]))
}

// scalar returns input i's single value, which must be a constant.
func (c *layerCtx) scalar(i int, what string) (float32, error) {
	v, err := c.floats(i, what)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, c.errorf(ErrInvalidModel, "input %d (%s) has %d values, want 1", i, what, len(v))
	}
	return float32(v[0]), nil
}

// importSwish: x * sigmoid(beta * x), beta 1 when not given.
func importSwish(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 2); err != nil {
		return nil, err
	}
	x := c.in[0]
	arg := x
	if len(c.in) == 2 {
		var err error
		if arg, err = c.op("Mul", "beta_x", nil, x, c.in[1]); err != nil {
			return nil, err
		}
	}
	s, err := c.op("Sigmoid", "sigmoid", nil, arg)
	if err != nil {
		return nil, err
	}
	return one(c.op("Mul", "", nil, x, s))
}

// importSoftmax: the axis attribute (default def; negative from opset 8).
func importSoftmax(opType string, def int64) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if err := c.inputs(1, 1); err != nil {
			return nil, err
		}
		axis, err := c.int("axis", def)
		if err != nil {
			return nil, err
		}
		return one(c.op(opType, "", graph.Attrs{"axis": axis}, c.in[0]))
	}
}

// scalarOf returns a one-element tensor of type t holding v.
func scalarOf(t tensor.ElementType, v float64) *tensor.Tensor {
	x, _ := tensor.FromFloat64s(t, tensor.Shape{}, []float64{v})
	return x
}

// activationExports write the activations.
var activationExports = map[string]exportFunc{
	"Relu": sameAs("Relu", 1), "Sigmoid": sameAs("Sigmoid", 1), "Tanh": sameAs("Tanh", 1),
	"HardSwish": sameAs("HSwish", 4), "Mish": sameAs("Mish", 4), "Softplus": sameAs("SoftPlus", 4),
	"Softsign": sameAs("SoftSign", 9),
	"Elu": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("alpha") {
			return false, nil
		}
		return e.single("Elu", 1, []xml.Attr{dataAttr("alpha", formatFloat(graph.ParamValue(e.n, "alpha")))}, in...)
	},
	"Gelu": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("approximate") {
			return false, nil
		}
		mode := "ERF"
		switch e.n.Attrs.String("approximate", "none") {
		case "tanh":
			mode = "TANH"
		case "none":
		default:
			return false, nil
		}
		return e.single("Gelu", 7, []xml.Attr{dataAttr("approximation_mode", mode)}, in...)
	},
	"Clip":        exportClip,
	"PRelu":       exportPRelu,
	"HardSigmoid": scalarParams("HardSigmoid", "alpha", "beta"),
	"Selu":        scalarParams("Selu", "alpha", "gamma"),
	"Softmax":     exportSoftmax("Softmax", 8),
	"LogSoftmax":  exportSoftmax("LogSoftmax", 5),
}

// exportClip: Clamp, when both bounds are scalar constants of the input's
// type (the reader makes exactly those).
func exportClip(e *exportCtx) (bool, error) {
	x := e.in(0)
	if len(e.n.Inputs) != 3 || !x.Valid() || !e.onlyAttrs() {
		return false, nil
	}
	var b [2]float64
	for i := 1; i <= 2; i++ {
		v, ok := e.value(i)
		if !ok || !e.owned(i) || v.Type() != x.Type() || len(v.Shape()) != 0 || !(x.Type() == tensor.F32 || x.Type().IsInteger()) {
			return false, nil
		}
		b[i-1] = v.Float64s()[0]
		if float64(float32(b[i-1])) != b[i-1] {
			return false, nil
		}
	}
	return e.single("Clamp", 1, []xml.Attr{dataAttr("min", formatFloat(float32(b[0]))), dataAttr("max", formatFloat(float32(b[1])))}, from(x))
}

// exportPRelu: a slope that IR broadcasts as numpy does (IR applies a 1-D
// slope as long as the channels per channel).
func exportPRelu(e *exportCtx) (bool, error) {
	in, ok := e.inputs()
	if !ok || !e.onlyAttrs() {
		return false, nil
	}
	xs, ss := e.in(0).Shape(), e.in(1).Shape()
	if !xs.RankKnown || !ss.RankKnown {
		return false, nil
	}
	if len(ss.Dims) == 1 && len(xs.Dims) > 2 && !(ss.Dims[0].IsStatic() && ss.Dims[0].Size == 1) {
		return false, nil
	}
	return e.single("PRelu", 1, nil, in...)
}

// scalarParams writes an activation whose float attributes IR takes as
// scalar inputs (f32 only, where the constants hold them exactly).
func scalarParams(typ string, params ...string) exportFunc {
	return func(e *exportCtx) (bool, error) {
		x := e.in(0)
		if len(e.n.Inputs) != 1 || !x.Valid() || x.Type() != tensor.F32 || !e.onlyAttrs(params...) {
			return false, nil
		}
		in := []src{from(x)}
		for _, p := range params {
			in = append(in, e.constSrc(p, scalarOf(tensor.F32, float64(graph.ParamValue(e.n, p)))))
		}
		return e.single(typ, 1, nil, in...)
	}
}

func exportSoftmax(typ string, opset int) exportFunc {
	return func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis") {
			return false, nil
		}
		return e.single(typ, opset, []xml.Attr{dataAttr("axis", strconv.FormatInt(e.attrInt("axis", -1), 10))}, in...)
	}
}
