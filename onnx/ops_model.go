package onnx

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// constant turns an ONNX Constant node into a graph Constant.
func constant(c *nodeCtx) ([]graph.Output, error) {
	if len(c.attrs) != 1 {
		return nil, c.invalidf("needs exactly one value attribute, has %d", len(c.attrs))
	}
	var t *tensor.Tensor
	for name, v := range c.attrs {
		var err error
		switch name {
		case "value":
			var ok bool
			if t, ok = v.(*tensor.Tensor); !ok {
				return nil, c.attrErrorf(name, "is a %T, want a tensor", v)
			}
		case "value_float":
			f, ok := v.(float32)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want a float", v)
			}
			t, err = tensor.FromF32(tensor.Shape{}, []float32{f})
		case "value_floats":
			f, ok := v.([]float32)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want floats", v)
			}
			t, err = tensor.FromF32(tensor.Shape{int64(len(f))}, f)
		case "value_int":
			i, ok := v.(int64)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want an integer", v)
			}
			t, err = tensor.FromI64(tensor.Shape{}, []int64{i})
		case "value_ints":
			i, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want integers", v)
			}
			t, err = tensor.FromI64(tensor.Shape{int64(len(i))}, i)
		default:
			return nil, c.attrErrorf(name, "constants of this kind are not supported")
		}
		if err != nil {
			return nil, c.invalidf("%v", err)
		}
	}
	n := graph.NewConstant(c.name, t)
	return []graph.Output{n.Out(0)}, nil
}

// float64s returns a constant's elements as float64 (nil for types
// without a plain numeric reading).
func float64s(t *tensor.Tensor) []float64 {
	t = t.Contiguous()
	out := make([]float64, 0, t.NumElements())
	switch t.Type() {
	case tensor.F32:
		for _, v := range t.F32() {
			out = append(out, float64(v))
		}
	case tensor.F64:
		out = append(out, t.F64()...)
	case tensor.I64:
		for _, v := range t.I64() {
			out = append(out, float64(v))
		}
	case tensor.I32:
		for _, v := range t.I32() {
			out = append(out, float64(v))
		}
	case tensor.Bool:
		for _, v := range t.Bool() {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case tensor.U8:
		for _, v := range t.U8() {
			out = append(out, float64(v))
		}
	default:
		return nil
	}
	return out
}

// modelImports imports Constant nodes as Constants of the graph.
var modelImports = []opEntry{
	{"Constant", "", 1, 0, constant},
}
