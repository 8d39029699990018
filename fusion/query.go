package fusion

import (
	"github.com/clinfer/clinfer/graph"
)

// QuerySupported maps a device's answer about a transformed model back to
// the user's original model. supported holds the transformed nodes the
// device runs; the result holds the names of the original model's nodes
// they stand for (through Node.OriginalNames, i.e. the fused names the
// passes recorded), plus the housekeeping nodes: a Constant or Parameter
// whose every consumer is supported, and a Result whose producer is.
func QuerySupported(orig, transformed *graph.Model, supported func(*graph.Node) bool) (map[string]bool, error) {
	tnodes, err := transformed.Nodes()
	if err != nil {
		return nil, err
	}
	covered := map[string]bool{} // original names that some transformed node stands for
	ok := map[string]bool{}
	for _, n := range tnodes {
		names := n.OriginalNames()
		for _, name := range names {
			covered[name] = true
		}
		if supported(n) {
			for _, name := range names {
				ok[name] = true
			}
		}
	}
	// A name covered by both a supported and an unsupported node (a value
	// folded into two places) is supported only if all of them are.
	for _, n := range tnodes {
		if !supported(n) {
			for _, name := range n.OriginalNames() {
				delete(ok, name)
			}
		}
	}
	onodes, err := orig.Nodes()
	if err != nil {
		return nil, err
	}
	cons, err := orig.Consumers()
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(onodes))
	// Reverse topological order: consumers are decided before producers.
	for i := len(onodes) - 1; i >= 0; i-- {
		n := onodes[i]
		switch {
		case n.OpType == graph.OpResult:
			// Decided below, once producers are known.
		case n.OpType == graph.OpConstant || n.OpType == graph.OpParameter || !covered[n.Name]:
			// Inputs, constants, and nodes the passes eliminated without a
			// trace (a Shape folded into a constant that went away with
			// the no-op Reshape it fed): supported when everything they
			// feed is, since the device never runs them itself.
			if covered[n.Name] && !ok[n.Name] {
				continue
			}
			all := true
			for i := range n.Outputs {
				for _, c := range cons[n.Out(i)] {
					if c.Node.OpType == graph.OpResult {
						continue
					}
					all = all && out[c.Node.Name]
				}
			}
			if all {
				out[n.Name] = true
			}
		default:
			if ok[n.Name] {
				out[n.Name] = true
			}
		}
	}
	for _, r := range orig.Results {
		if in := r.Input(0); in.Valid() && out[in.Node.Name] {
			out[r.Name] = true
		}
	}
	return out, nil
}
