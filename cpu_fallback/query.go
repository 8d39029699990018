package cpufallback

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
)

// QueryModel maps the friendly name of every node of m the CPU runs
// (Parameters, Constants and Results included) to "CPU". Bad props are an
// error, as in CompileModel.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cpu: query: %w", err)
	}
	if m == nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: query: nil model")
	}
	if _, err := p.config(props); err != nil {
		return nil, err
	}
	nodes, err := m.Nodes()
	if err != nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: query model %q: %w", m.Name, err)
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		if p.supports(n) {
			out[n.Name] = DeviceName
		}
	}
	return out, nil
}
