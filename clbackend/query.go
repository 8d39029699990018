package clbackend

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
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
	d, cfg, err := p.target(props)
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
	var hostParam []bool
	for _, prm := range model.Parameters {
		hostParam = append(hostParam, isHostParam(model, prm))
	}
	bad := unsupportedNodes(model, nodes, hostParam)
	off := disabledIn(cfg)
	for _, n := range nodes {
		if off[n.OpType] {
			bad[n] = "op " + n.OpType + " is disabled by " + KeyDisabledOps
		}
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		if _, no := bad[n]; !no {
			out[n.Name] = name
		}
	}
	return out, nil
}
