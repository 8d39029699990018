package clbackend

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// QueryModel maps the friendly name of every node of m that CompileModel
// can run (Parameters, Constants and Results included) to the device name
// ("GPU", or "GPU.1" when DEVICE_ID is given). It runs the same fusion
// passes as CompileModel and answers in m's node names through the fused
// names the passes record. Bad props are an error, as in CompileModel.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := driver.CheckModelCall(ctx, "gpu", "query", m); err != nil {
		return nil, err
	}
	d, cfg, err := p.target(props)
	if err != nil {
		return nil, err
	}
	name := DeviceName
	if _, ok := props[driver.KeyDeviceID]; ok {
		name = d.name()
	}
	onodes, err := m.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: query model %q: %w", m.Name, err)
	}
	// The user's op types by node name, bodies included: the passes fuse
	// inside bodies too.
	origType := make(map[string]string, len(onodes))
	err = m.Walk(func(b *graph.Model, _ *graph.Node) error {
		bn, err := b.Nodes()
		for _, n := range bn {
			if _, dup := origType[n.Name]; !dup || b == m {
				origType[n.Name] = n.OpType
			}
		}
		return err
	})
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: query model %q: %w", m.Name, err)
	}
	tm, _, err := fusion.ForDevice(ctx, m, cfg, ref.Evaluate, chains(cfg))
	if err != nil {
		return nil, fmt.Errorf("gpu: query: %w", err)
	}
	if tm == m {
		tm = m.Clone()
	}
	// Shapes and types decide support; a model the op table cannot infer
	// keeps the ones it was given.
	_ = tm.InferShapes()
	nodes, err := tm.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: query model %q: %w", m.Name, err)
	}
	var hostParam []bool
	for _, prm := range tm.Parameters {
		hostParam = append(hostParam, isHostParam(tm, prm))
	}
	bad := unsupportedNodes(tm, nodes, hostParam)
	off := disabledIn(cfg)
	supported := func(n *graph.Node) bool {
		if _, no := bad[n]; no {
			return false
		}
		// A fused node stands for the user's nodes; a disabled op type
		// among them disables the whole fused node. A node with bodies
		// runs whole on one device: a disabled op in them disables it.
		enabled := func(x *graph.Node) bool {
			if off[x.OpType] {
				return false
			}
			for _, on := range x.OriginalNames() {
				if off[origType[on]] {
					return false
				}
			}
			return true
		}
		return enabled(n) && n.BodiesAll(enabled)
	}
	ok, err := fusion.QuerySupported(m, tm, supported)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: query model %q: %w", m.Name, err)
	}
	out := make(map[string]string, len(ok))
	for n, yes := range ok {
		if yes {
			out[n] = name
		}
	}
	return out, nil
}
