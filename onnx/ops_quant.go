package onnx

import "github.com/clinfer/clinfer/graph"

// quantizeLinear imports QuantizeLinear of every opset (10: per-tensor;
// 13: axis; 19: saturate, for float8 outputs clinfer has no type for; 21:
// block_size and output_dtype; 23: precision): output_dtype becomes
// graph.AttrOutputType (an element type), a precision other than the
// scale's type is refused, saturate is dropped (it only concerns float8).
func quantizeLinear(c *nodeCtx) ([]graph.Output, error) {
	if err := outputDType(c, graph.AttrOutputType); err != nil {
		return nil, err
	}
	if err := sameAsScale(c, "precision"); err != nil {
		return nil, err
	}
	delete(c.attrs, "saturate")
	return outputsOf(c.node("QuantizeLinear", "", c.in, c.attrs, 1)), nil
}

// dequantizeLinear imports DequantizeLinear of every opset (10, 13: axis,
// 19, 21: block_size, 23: output_dtype, which must be the scale's type:
// the output type is the scale's).
func dequantizeLinear(c *nodeCtx) ([]graph.Output, error) {
	if err := sameAsScale(c, "output_dtype"); err != nil {
		return nil, err
	}
	return outputsOf(c.node("DequantizeLinear", "", c.in, c.attrs, 1)), nil
}

// outputDType moves an output_dtype attribute (an ONNX data type; 0 means
// unset) to attr as int64(tensor.ElementType).
func outputDType(c *nodeCtx, attr string) error {
	v, ok := c.attrs["output_dtype"]
	if !ok {
		return nil
	}
	delete(c.attrs, "output_dtype")
	dt, ok := v.(int64)
	if !ok {
		return c.attrErrorf("output_dtype", "is a %T, want an integer", v)
	}
	if dt == 0 {
		return nil
	}
	et, err := ElementType(dt)
	if err != nil {
		return c.typeErrorf("output_dtype", err)
	}
	c.attrs[attr] = int64(et)
	return nil
}

// sameAsScale accepts an attribute naming a data type (an ONNX data type;
// 0 means unset) only when it is the scale's (input 1) element type, which
// is the precision clinfer computes in, and removes it.
func sameAsScale(c *nodeCtx, attr string) error {
	v, ok := c.attrs[attr]
	if !ok {
		return nil
	}
	delete(c.attrs, attr)
	dt, ok := v.(int64)
	if !ok {
		return c.attrErrorf(attr, "is a %T, want an integer", v)
	}
	if dt == 0 {
		return nil
	}
	et, err := ElementType(dt)
	if err != nil {
		return c.typeErrorf(attr, err)
	}
	if s := c.input(1); s.Valid() && s.Type() != et {
		return c.attrErrorf(attr, "%v differs from the scale's element type %v (clinfer computes in the scale's type)", et, s.Type())
	}
	return nil
}

// quantImports convert the attributes of the quantize and dequantize ops;
// the integer convolutions and products import as they are (their rows'
// Since).
var quantImports = []opEntry{
	{"QuantizeLinear", "", 10, 0, quantizeLinear},
	{"DequantizeLinear", "", 10, 0, dequantizeLinear},
}
