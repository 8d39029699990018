package clbackend

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// QueryModel maps the friendly name of every node of m that CompileModel
// can run (Parameters, Constants and Results included) to the device name
// ("GPU", or "GPU.1" when DEVICE_ID is given). Bad props are an error, as
// in CompileModel.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: query: %w", err)
	}
	if m == nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: query: nil model")
	}
	d, _, err := p.target(props)
	if err != nil {
		return nil, err
	}
	name := DeviceName
	if _, ok := props[plugin.KeyDeviceID]; ok {
		name = d.name()
	}
	model := m.Clone()
	// Shapes and types decide support; a model the op table cannot infer
	// keeps the ones it was given.
	_ = model.InferShapes()
	nodes, err := model.Nodes()
	if err != nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: query model %q: %w", m.Name, err)
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		if _, why := support(n); why == "" {
			out[n.Name] = name
		}
	}
	return out, nil
}

// support returns the catalogue kernel that runs n ("" for Parameter,
// Constant and Result, which need none) or why the engine cannot run n.
func support(n *graph.Node) (kernel, why string) {
	if n.Domain != "" {
		return "", "op " + n.Domain + "." + n.OpType + " is not in the GPU op set"
	}
	for i, o := range n.Outputs {
		if !o.Shape.IsStatic() {
			return "", fmt.Sprintf("output %d has dynamic shape %v (the GPU engine needs static shapes)", i, o.Shape)
		}
	}
	for i, in := range n.Inputs {
		if in.Valid() && !in.Shape().IsStatic() {
			return "", fmt.Sprintf("input %d has dynamic shape %v (the GPU engine needs static shapes)", i, in.Shape())
		}
	}
	f32 := func() string {
		for i, in := range n.Inputs {
			if !in.Valid() || in.Type() != tensor.F32 {
				return fmt.Sprintf("input %d is not f32 (the GPU %s kernel is f32 only)", i, n.OpType)
			}
		}
		if len(n.Outputs) != 1 || n.Outputs[0].Type != tensor.F32 {
			return "output is not f32 (the GPU " + n.OpType + " kernel is f32 only)"
		}
		return ""
	}
	switch n.OpType {
	case graph.OpParameter, graph.OpConstant, graph.OpResult:
		if n.OpType == graph.OpConstant && n.Value == nil {
			return "", "constant has no value"
		}
		return "", ""
	case "Identity":
		if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
			return "", "Identity needs one input"
		}
		if n.Inputs[0].Type().Size()%4 == 0 {
			return "copy_words", ""
		}
		return "copy_bytes", ""
	case "Relu":
		if len(n.Inputs) != 1 {
			return "", "Relu needs one input"
		}
		if why := f32(); why != "" {
			return "", why
		}
		return "relu_f32", ""
	case "Add", "Mul":
		if len(n.Inputs) != 2 {
			return "", n.OpType + " needs two inputs"
		}
		if why := f32(); why != "" {
			return "", why
		}
		a, _ := n.Inputs[0].Shape().ToShape()
		b, _ := n.Inputs[1].Shape().ToShape()
		o, _ := n.Outputs[0].Shape.ToShape()
		na, nb, no := a.NumElements(), b.NumElements(), o.NumElements()
		if !(a.Equal(b) && na == no) && !(na == 1 && nb == no) && !(nb == 1 && na == no) {
			return "", fmt.Sprintf("broadcast of %v and %v is not supported (the GPU kernel takes equal shapes or one scalar)", a, b)
		}
		if n.OpType == "Add" {
			return "add_f32", ""
		}
		return "mul_f32", ""
	}
	return "", "op " + n.OpType + " has no GPU kernel yet"
}
