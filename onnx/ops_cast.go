package onnx

import (
	"strings"

	"github.com/clinfer/clinfer/graph"
)

// dataTypeAttr converts an attribute holding an ONNX data type (EyeLike's
// dtype) to int64(tensor.ElementType), like Cast's "to".
func dataTypeAttr(attr string) check {
	return func(c *nodeCtx) error {
		v, ok := c.attrs[attr]
		if !ok {
			return nil
		}
		dt, ok := v.(int64)
		if !ok {
			return c.attrErrorf(attr, "is a %T, want an integer", v)
		}
		et, err := ElementType(dt)
		if err != nil {
			return c.typeErrorf(attr, err)
		}
		c.attrs[attr] = int64(et)
		return nil
	}
}

// onnxTypeByName maps Cast-1's string "to" values to data type numbers.
var onnxTypeByName = map[string]int64{
	"FLOAT": dtFloat, "UINT8": dtUint8, "INT8": dtInt8, "UINT16": dtUint16, "INT16": dtInt16,
	"INT32": dtInt32, "INT64": dtInt64, "STRING": dtString, "BOOL": dtBool, "FLOAT16": dtFloat16,
	"DOUBLE": dtDouble, "UINT32": dtUint32, "UINT64": dtUint64, "BFLOAT16": dtBFloat16,
}

// cast stores "to" as int64(tensor.ElementType) instead of the ONNX data
// type number.
func cast(c *nodeCtx) ([]graph.Output, error) {
	var dt int64
	switch v := c.attrs["to"].(type) {
	case int64:
		dt = v
	case string:
		d, ok := onnxTypeByName[strings.ToUpper(v)]
		if !ok {
			return nil, c.attrErrorf("to", "unknown data type %q", v)
		}
		dt = d
	case nil:
		return nil, c.invalidf("required attribute \"to\" is missing")
	default:
		return nil, c.attrErrorf("to", "is a %T, want an integer", v)
	}
	et, err := ElementType(dt)
	if err != nil {
		return nil, c.typeErrorf("to", err)
	}
	attrs := graph.Attrs{"to": int64(et)}
	return outputsOf(c.node("Cast", "", []graph.Output{c.input(0)}, attrs, 1)), nil
}

// castImports converts Cast's ONNX data types.
var castImports = []opEntry{
	{"Cast", "", 1, 0, cast},
}
