package cpufallback

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// QueryModel maps the friendly name of every node of m the CPU runs
// (Parameters, Constants and Results included) to "CPU". Bad props are an
// error, as in CompileModel.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := p.core.Start(ctx, "query", m); err != nil {
		return nil, err
	}
	cfg, err := p.config(props)
	if err != nil {
		return nil, err
	}
	if _, err := m.Nodes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: query model %q: %w", m.Name, err)
	}
	// The same passes as CompileModel, answered in m's node names through
	// the fused names the passes record.
	supported, err := fusion.QueryForDevice(ctx, m, cfg, ref.Evaluate, p.supports)
	if err != nil {
		return nil, fmt.Errorf("cpu: query: %w", err)
	}
	out := make(map[string]string, len(supported))
	for name, ok := range supported {
		if ok {
			out[name] = DeviceName
		}
	}
	return out, nil
}
