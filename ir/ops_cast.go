package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/tensor"

	"github.com/clinfer/clinfer/graph"
)

// castImports convert element types.
var castImports = []importRow{
	{"Convert", 1, importConvert},
	{"ConvertLike", 1, same("CastLike")},
	{"ConvertPromoteTypes", 14, importConvertPromoteTypes},
}

// importConvertPromoteTypes reads ConvertPromoteTypes-14: both inputs cast
// to their common type, chosen when the model is read. A float beats an
// integer (by promote_unsafe, or when it has twice the integer's bits),
// an integer beats a boolean; two floats give the wider (f16 with bf16:
// f32), two integers the narrowest type holding both (a u64 with a signed
// integer: u64_integer_promotion_target, by promote_unsafe); with
// pytorch_scalar_promotion a rank-0 input of the same kind takes the
// other's type.
func importConvertPromoteTypes(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	unsafe, err := c.boolean("promote_unsafe", false)
	if err != nil {
		return nil, err
	}
	scalar, err := c.boolean("pytorch_scalar_promotion", false)
	if err != nil {
		return nil, err
	}
	target, err := c.elemType("u64_integer_promotion_target", tensor.F32)
	if err != nil {
		return nil, err
	}
	t, err := promoteTypes(c.in[0], c.in[1], unsafe, scalar, target)
	if err != nil {
		return nil, c.errorf(ErrUnsupportedType, "%v", err)
	}
	var out []graph.Output
	for i, in := range c.in {
		o, err := c.castTo(in, t, "promoted_"+itoa(i))
		if err != nil {
			return nil, err
		}
		if o == in {
			if o, err = c.op("Identity", "promoted_"+itoa(i), nil, in); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// promoteTypes is ConvertPromoteTypes-14's common type of a and b.
func promoteTypes(a, b graph.Output, unsafe, scalar bool, target tensor.ElementType) (tensor.ElementType, error) {
	x, y := a.Type(), b.Type()
	kind := func(t tensor.ElementType) int {
		switch {
		case t.IsFloat():
			return 2
		case t.IsInteger():
			return 1
		case t == tensor.Bool:
			return 0
		}
		return -1
	}
	kx, ky := kind(x), kind(y)
	switch {
	case x == y:
		return x, nil
	case kx < 0 || ky < 0:
		return 0, errf("promoting %v and %v is not supported", x, y)
	case scalar && kx == ky && a.Shape().RankKnown && b.Shape().RankKnown && (a.Shape().Rank() == 0) != (b.Shape().Rank() == 0):
		if a.Shape().Rank() == 0 {
			return y, nil
		}
		return x, nil
	case kx != ky:
		if kx < ky {
			x, y, kx = y, x, ky
		}
		// x is of the higher kind.
		if kx == 2 && y != tensor.Bool && !unsafe && x.Bits() < 2*y.Bits() {
			return 0, errf("%v to %v may lose precision (set promote_unsafe)", y, x)
		}
		return x, nil
	case kx == 2:
		if x.Bits() == y.Bits() {
			return tensor.F32, nil // f16 and bf16
		}
		if x.Bits() > y.Bits() {
			return x, nil
		}
		return y, nil
	}
	if x.IsSigned() == y.IsSigned() {
		if x.Bits() >= y.Bits() {
			return x, nil
		}
		return y, nil
	}
	if x.IsUnsigned() {
		x, y = y, x
	}
	// x signed, y unsigned.
	switch {
	case x.Bits() > y.Bits():
		return x, nil
	case y.Bits() < 64:
		return map[int]tensor.ElementType{8: tensor.I8, 16: tensor.I16, 32: tensor.I32, 64: tensor.I64}[2*y.Bits()], nil
	case unsafe:
		return target, nil
	}
	return 0, errf("%v with %v has no common integer type (set promote_unsafe for u64_integer_promotion_target)", x, y)
}

// importConvert is Cast; a Convert of weights that OpenVINO marks as
// decompression keeps the mark (RT.Extra "ir:decompression"), so passes
// can tell compressed weights.
func importConvert(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	t, err := c.elemType("destination_type", 0)
	if err != nil {
		return nil, err
	}
	if t == 0 {
		return nil, c.errorf(ErrInvalidModel, "the Convert has no destination_type")
	}
	return one(c.op("Cast", "", graph.Attrs{"to": int64(t)}, c.in[0]))
}

// castExports write Cast and CastLike.
var castExports = map[string]exportFunc{
	"CastLike": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("ConvertLike", 1, nil, in...)
	},
	"Cast": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("to") {
			return false, nil
		}
		t := tensor.ElementType(e.attrInt("to", 0))
		if !t.Valid() {
			return false, nil
		}
		return e.single("Convert", 1, []xml.Attr{dataAttr("destination_type", t.String())}, in...)
	},
}
