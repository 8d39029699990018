package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// compareImports are comparisons, logic, Select and the classifiers.
var compareImports = []importRow{
	{"Equal", 1, binaryOp("Equal")},
	{"NotEqual", 1, importNotEqual},
	{"Greater", 1, binaryOp("Greater")},
	{"GreaterEqual", 1, binaryOp("GreaterOrEqual")},
	{"Less", 1, binaryOp("Less")},
	{"LessEqual", 1, binaryOp("LessOrEqual")},
	{"LogicalAnd", 1, binaryOp("And")},
	{"LogicalOr", 1, binaryOp("Or")},
	{"LogicalXor", 1, binaryOp("Xor")},
	{"Xor", 1, binaryOp("Xor")}, // opset1's older spelling of LogicalXor
	{"LogicalNot", 1, same("Not")},
	{"Select", 1, importSelect},
	{"IsNaN", 10, same("IsNaN")},
	{"IsInf", 10, importIsInf},
	{"IsFinite", 10, importIsFinite},
	{"BitwiseAnd", 13, importBitwise("BitwiseAnd", "And")},
	{"BitwiseOr", 13, importBitwise("BitwiseOr", "Or")},
	{"BitwiseXor", 13, importBitwise("BitwiseXor", "Xor")},
	{"BitwiseNot", 13, importBitwise("BitwiseNot", "Not")},
	{"Bucketize", 3, importBucketize},
}

// importBucketize reads Bucketize-3 (data, buckets: sorted boundaries):
// each element's bucket is the count of boundaries below it
// (with_right_bound true, the default: a bucket includes its right
// boundary) or not above it (false), compared in a [..., boundaries]
// tensor and summed; output_type i64 or i32.
func importBucketize(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	right, err := c.boolean("with_right_bound", true)
	if err != nil {
		return nil, err
	}
	t, err := c.elemType("output_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	if t != tensor.I64 && t != tensor.I32 {
		return nil, c.attrErrorf("output_type", "%v is not i64 or i32", t)
	}
	x, err := c.op("Unsqueeze", "each", nil, c.in[0], c.constI64("last_axis", false, -1))
	if err != nil {
		return nil, err
	}
	bounds := c.in[1]
	if bounds.Type() != x.Type() {
		if bounds, err = c.op("Cast", "buckets_cast", graph.Attrs{"to": int64(x.Type())}, bounds); err != nil {
			return nil, err
		}
	}
	cmp := "Greater"
	if !right {
		cmp = "GreaterOrEqual"
	}
	past, err := c.op(cmp, "past", nil, x, bounds)
	if err != nil {
		return nil, err
	}
	if past, err = c.castTo(past, t, "past_count"); err != nil {
		return nil, err
	}
	return one(c.op("ReduceSum", "", graph.Attrs{"keepdims": int64(0)}, past, c.constI64("bucket_axis", false, -1)))
}

// importBitwise reads BitwiseAnd/Or/Xor/Not-13: on integers the op set's
// bitwise op, on booleans (which OpenVINO's take too) the logical one.
func importBitwise(op, logical string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if op == "BitwiseNot" {
			if err := c.inputs(1, 1); err != nil {
				return nil, err
			}
			if c.in[0].Type() == tensor.Bool {
				return one(c.op(logical, "", nil, c.in[0]))
			}
			return one(c.op(op, "", nil, c.in[0]))
		}
		a, b, err := c.broadcastInputs()
		if err != nil {
			return nil, err
		}
		if a.Type() == tensor.Bool {
			return one(c.op(logical, "", nil, a, b))
		}
		return one(c.op(op, "", nil, a, b))
	}
}

func importNotEqual(c *layerCtx) ([]graph.Output, error) {
	a, b, err := c.broadcastInputs()
	if err != nil {
		return nil, err
	}
	eq, err := c.op("Equal", "equal", nil, a, b)
	if err != nil {
		return nil, err
	}
	return one(c.op("Not", "", nil, eq))
}

// importSelect is Where; numpy and none broadcast alike.
func importSelect(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	if _, err := c.enum("auto_broadcast", "numpy", "numpy", "none"); err != nil {
		return nil, err
	}
	return one(c.op("Where", "", nil, c.in...))
}

func importIsInf(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	neg, err := c.boolean("detect_negative", true)
	if err != nil {
		return nil, err
	}
	pos, err := c.boolean("detect_positive", true)
	if err != nil {
		return nil, err
	}
	return one(c.op("IsInf", "", graph.Attrs{"detect_negative": b2i(neg), "detect_positive": b2i(pos)}, c.in[0]))
}

// importIsFinite: not NaN and not infinite.
func importIsFinite(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	nan, err := c.op("IsNaN", "nan", nil, c.in[0])
	if err != nil {
		return nil, err
	}
	inf, err := c.op("IsInf", "inf", nil, c.in[0])
	if err != nil {
		return nil, err
	}
	either, err := c.op("Or", "nan_or_inf", nil, nan, inf)
	if err != nil {
		return nil, err
	}
	return one(c.op("Not", "", nil, either))
}

// b2i is an ONNX-style boolean attribute.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// compareExports write comparisons and logic.
var compareExports = map[string]exportFunc{
	"Equal": binaryAs("Equal"), "Greater": binaryAs("Greater"), "GreaterOrEqual": binaryAs("GreaterEqual"),
	"Less": binaryAs("Less"), "LessOrEqual": binaryAs("LessEqual"), "And": binaryAs("LogicalAnd"),
	"Or": binaryAs("LogicalOr"), "Xor": binaryAs("LogicalXor"), "Not": sameAs("LogicalNot", 1),
	"IsNaN":      sameAs("IsNaN", 10),
	"BitwiseAnd": binaryAsV("BitwiseAnd", 13), "BitwiseOr": binaryAsV("BitwiseOr", 13), "BitwiseXor": binaryAsV("BitwiseXor", 13),
	"BitwiseNot": sameAs("BitwiseNot", 13),
	"Where": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 3 || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("Select", 1, []xml.Attr{dataAttr("auto_broadcast", "numpy")}, in...)
	},
	"IsInf": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("detect_negative", "detect_positive") {
			return false, nil
		}
		neg, pos := graph.ParamValue(e.n, "detect_negative") != 0, graph.ParamValue(e.n, "detect_positive") != 0
		return e.single("IsInf", 10, []xml.Attr{dataAttr("detect_negative", boolStr(neg)), dataAttr("detect_positive", boolStr(pos))}, in...)
	},
}
