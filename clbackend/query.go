package clbackend

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
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
	tm, _, err := fusion.ForDevice(ctx, m, cfg, ref.Evaluate, chains(cfg, d))
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

// unsupportedNodes maps each node no plan could run to the reason: a node
// outside the GPU lowering table whose inputs are not all known on the
// host (constants, folded subgraphs, host parameters).
func unsupportedNodes(model *graph.Model, nodes []*graph.Node, hostParam []bool) map[*graph.Node]string {
	bad := map[*graph.Node]string{}
	known := map[*graph.Node]bool{}
	for i, prm := range model.Parameters {
		known[prm] = i < len(hostParam) && hostParam[i]
	}
	table := lowerings()
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
			continue
		case graph.OpConstant:
			if n.Value == nil && !n.Elided() { // elided: the plan record holds what reads it
				bad[n] = "constant has no value"
			}
			known[n] = true
			continue
		}
		fold := graph.FoldOf(n)
		all := fold != graph.FoldNever
		for _, in := range n.Inputs {
			if in.Valid() && !known[in.Node] && fold != graph.FoldShapes { // shapes are known at plan time
				all = false
			}
		}
		if all {
			known[n] = true
			continue
		}
		l, ok := table[n.OpType]
		if ok && l.check != nil {
			if why := l.check(n); why != "" {
				bad[n] = "op " + n.OpType + ": " + why
				continue
			}
		}
		if ok && l.noF64 && hasF64(n) {
			bad[n] = "op " + n.OpType + ": element type f64 (its GPU kernels compute in f32; run it on the CPU device or with HETERO:GPU,CPU)"
			continue
		}
		switch {
		case !ok || n.Domain != "":
			op := n.OpType
			if n.Domain != "" {
				op = n.Domain + "." + op
			}
			bad[n] = "op " + op + " has no GPU kernel yet"
		case l.lower == nil:
			bad[n] = "op " + n.OpType + " runs on the host only (" + l.host + "), and its inputs are not known at plan time"
		case n.OpType != graph.OpKernelFusion:
			// A control op runs when every op of its bodies has a lowering
			// (or folds on the host).
			n.BodiesAll(func(x *graph.Node) bool {
				if bl, ok := table[x.OpType]; !ok || x.Domain != "" || (bl.check != nil && bl.check(x) != "") {
					if _, done := bad[n]; !done {
						bad[n] = "node " + x.Name + " of its bodies: op " + x.OpType + " has no GPU kernel yet"
					}
					return false
				}
				return true
			})
		}
	}
	return bad
}

// hasF64 reports whether an input or output of n is an f64 tensor.
func hasF64(n *graph.Node) bool {
	for _, in := range n.Inputs {
		if in.Valid() && in.Type() == tensor.F64 {
			return true
		}
	}
	for _, o := range n.Outputs {
		if o.Type == tensor.F64 {
			return true
		}
	}
	return false
}
