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
		case "value_string":
			s, ok := v.(string)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want a string", v)
			}
			t, err = tensor.FromStrings(tensor.Shape{}, []string{s})
		case "value_strings":
			s, ok := v.([]string)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want strings", v)
			}
			t, err = tensor.FromStrings(tensor.Shape{int64(len(s))}, s)
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

// modelImports imports Constant nodes as Constants of the graph.
var modelImports = []opEntry{
	{"Constant", "", 1, 0, constant},
}
