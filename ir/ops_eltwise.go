package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
)

// eltwiseImports are the arithmetic ops: the broadcasting binary ops
// (auto_broadcast numpy, none or pdpd) and unary math.
var eltwiseImports = []importRow{
	{"Add", 1, binaryOp("Add")},
	{"Subtract", 1, binaryOp("Sub")},
	{"Multiply", 1, binaryOp("Mul")},
	{"Divide", 1, importDivide},
	{"Power", 1, binaryOp("Pow")},
	{"Maximum", 1, binaryOp("Max")},
	{"Minimum", 1, binaryOp("Min")},
	{"Mod", 1, binaryAttrs("Mod", graph.Attrs{"fmod": int64(1)})},
	{"FloorMod", 1, importFloorMod},
	{"SquaredDifference", 1, importSquaredDifference},
	{"Sqrt", 1, same("Sqrt")},
	{"Exp", 1, same("Exp")},
	{"Log", 1, same("Log")},
	{"Erf", 1, same("Erf")},
	{"Negative", 1, same("Neg")},
	{"Abs", 1, same("Abs")},
	{"Sign", 1, same("Sign")},
	{"Floor", 1, same("Floor")},
	{"Ceiling", 1, same("Ceil")},
	{"Sin", 1, same("Sin")},
	{"Cos", 1, same("Cos")},
	{"Tan", 1, same("Tan")},
	{"Asin", 1, same("Asin")},
	{"Acos", 1, same("Acos")},
	{"Atan", 1, same("Atan")},
	{"Sinh", 1, same("Sinh")},
	{"Cosh", 1, same("Cosh")},
	{"Asinh", 3, same("Asinh")},
	{"Acosh", 3, same("Acosh")},
	{"Atanh", 3, same("Atanh")},
	{"Round", 5, importRound},
}

// broadcastInputs returns the two inputs of a binary layer after its
// auto_broadcast: numpy and none need nothing (equal shapes broadcast the
// same), pdpd aligns the second input at attribute axis.
func (c *layerCtx) broadcastInputs() (a, b graph.Output, err error) {
	if err := c.inputs(2, 2); err != nil {
		return a, b, err
	}
	a, b = c.in[0], c.in[1]
	mode, err := c.enum("auto_broadcast", "numpy", "numpy", "none", "pdpd")
	if err != nil || mode != "pdpd" {
		return a, b, err
	}
	axis, err := c.int("axis", -1)
	if err != nil {
		return a, b, err
	}
	if axis == -1 {
		return a, b, nil
	}
	ra, err := c.rank(0)
	if err != nil {
		return a, b, err
	}
	rb, err := c.rank(1)
	if err != nil {
		return a, b, err
	}
	if axis < 0 {
		axis += int64(ra)
	}
	if axis < 0 || int(axis)+rb > ra {
		return a, b, c.badAttr("axis", errf("pdpd axis %d does not fit ranks %d and %d", axis, ra, rb))
	}
	var trailing []int64
	for i := int(axis) + rb; i < ra; i++ {
		trailing = append(trailing, int64(i-int(axis)))
	}
	if len(trailing) == 0 {
		return a, b, nil
	}
	b, err = c.op("Unsqueeze", "pdpd", nil, b, c.constI64("pdpd_axes", false, trailing...))
	return a, b, err
}

// binaryOp converts a broadcasting binary op.
func binaryOp(opType string) importFunc { return binaryAttrs(opType, nil) }

func binaryAttrs(opType string, attrs graph.Attrs) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		a, b, err := c.broadcastInputs()
		if err != nil {
			return nil, err
		}
		return one(c.op(opType, "", attrs.Clone(), a, b))
	}
}

// importDivide: m_pythondivision (default true) floors integer quotients,
// where the op set's Div truncates them: a - pymod(a, b) divides exactly.
func importDivide(c *layerCtx) ([]graph.Output, error) {
	a, b, err := c.broadcastInputs()
	if err != nil {
		return nil, err
	}
	py, err := c.boolean("m_pythondivision", true)
	if err != nil {
		return nil, err
	}
	if !py || !a.Type().IsInteger() {
		return one(c.op("Div", "", nil, a, b))
	}
	r, err := c.op("Mod", "floor_mod", nil, a, b)
	if err != nil {
		return nil, err
	}
	d, err := c.op("Sub", "exact", nil, a, r)
	if err != nil {
		return nil, err
	}
	return one(c.op("Div", "", nil, d, b))
}

// importFloorMod: the remainder with the divisor's sign. The op set's Mod
// computes it for integers (fmod 0); floats take C's fmod and add the
// divisor to a non-zero remainder of the other sign.
func importFloorMod(c *layerCtx) ([]graph.Output, error) {
	a, b, err := c.broadcastInputs()
	if err != nil {
		return nil, err
	}
	if a.Type().IsInteger() {
		return one(c.op("Mod", "", nil, a, b))
	}
	r, err := c.op("Mod", "fmod", graph.Attrs{"fmod": int64(1)}, a, b)
	if err != nil {
		return nil, err
	}
	zero, err := c.constOf("zero", a.Type(), true, 0)
	if err != nil {
		return nil, err
	}
	var v graph.Output
	step := func(op, name string, in ...graph.Output) error {
		v, err = c.op(op, name, nil, in...)
		return err
	}
	if err := step("Equal", "exact", r, zero); err != nil {
		return nil, err
	}
	exact := v
	if err := step("Less", "r_negative", r, zero); err != nil {
		return nil, err
	}
	rn := v
	if err := step("Less", "b_negative", b, zero); err != nil {
		return nil, err
	}
	if err := step("Xor", "signs_differ", rn, v); err != nil {
		return nil, err
	}
	differ := v
	if err := step("Not", "inexact", exact); err != nil {
		return nil, err
	}
	if err := step("And", "shift", v, differ); err != nil {
		return nil, err
	}
	shift := v
	if err := step("Add", "shifted", r, b); err != nil {
		return nil, err
	}
	return one(c.op("Where", "", nil, shift, v, r))
}

func importSquaredDifference(c *layerCtx) ([]graph.Output, error) {
	a, b, err := c.broadcastInputs()
	if err != nil {
		return nil, err
	}
	d, err := c.op("Sub", "diff", nil, a, b)
	if err != nil {
		return nil, err
	}
	return one(c.op("Mul", "", nil, d, d))
}

// importRound: half_to_even is the op set's Round; half_away_from_zero is
// sign(x) * floor(|x| + 0.5).
func importRound(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "half_to_even", "half_to_even", "half_away_from_zero")
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	if mode == "half_to_even" || x.Type().IsInteger() {
		return one(c.op("Round", "", nil, x))
	}
	abs, err := c.op("Abs", "abs", nil, x)
	if err != nil {
		return nil, err
	}
	half, err := c.constOf("half", x.Type(), true, 0.5)
	if err != nil {
		return nil, err
	}
	up, err := c.op("Add", "plus_half", nil, abs, half)
	if err != nil {
		return nil, err
	}
	fl, err := c.op("Floor", "floor", nil, up)
	if err != nil {
		return nil, err
	}
	sg, err := c.op("Sign", "sign", nil, x)
	if err != nil {
		return nil, err
	}
	return one(c.op("Mul", "", nil, sg, fl))
}

// eltwiseExports write the arithmetic ops.
var eltwiseExports = map[string]exportFunc{
	"Add": binaryAs("Add"), "Sub": binaryAs("Subtract"), "Mul": binaryAs("Multiply"), "Pow": binaryAs("Power"),
	"Div": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 2 || !e.onlyAttrs() {
			return false, nil
		}
		// The op set's Div truncates integer quotients.
		return e.single("Divide", 1, []xml.Attr{dataAttr("auto_broadcast", "numpy"), dataAttr("m_pythondivision", "false")}, in...)
	},
	"Max": variadic2("Maximum"), "Min": variadic2("Minimum"),
	"Mod": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 2 || !e.onlyAttrs("fmod") {
			return false, nil
		}
		typ := "FloorMod"
		if e.attrInt("fmod", 0) != 0 {
			typ = "Mod"
		}
		return e.single(typ, 1, []xml.Attr{dataAttr("auto_broadcast", "numpy")}, in...)
	},
	"Sqrt": sameAs("Sqrt", 1), "Exp": sameAs("Exp", 1), "Log": sameAs("Log", 1), "Erf": sameAs("Erf", 1),
	"Neg": sameAs("Negative", 1), "Abs": sameAs("Abs", 1), "Sign": sameAs("Sign", 1), "Floor": sameAs("Floor", 1),
	"Ceil": sameAs("Ceiling", 1), "Sin": sameAs("Sin", 1), "Cos": sameAs("Cos", 1), "Tan": sameAs("Tan", 1),
	"Asin": sameAs("Asin", 1), "Acos": sameAs("Acos", 1), "Atan": sameAs("Atan", 1), "Sinh": sameAs("Sinh", 1),
	"Cosh": sameAs("Cosh", 1), "Asinh": sameAs("Asinh", 4), "Acosh": sameAs("Acosh", 4), "Atanh": sameAs("Atanh", 4),
	"Round": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("Round", 5, []xml.Attr{dataAttr("mode", "half_to_even")}, in...)
	},
}

// variadic2 writes the variadic Max and Min of two inputs.
func variadic2(typ string) exportFunc {
	return func(e *exportCtx) (bool, error) {
		if len(e.n.Inputs) != 2 {
			return false, nil
		}
		return binaryAs(typ)(e)
	}
}
