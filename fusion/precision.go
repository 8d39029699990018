package fusion

import (
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PrecisionPolicy says whether a device runs node n in a lowered
// precision and, if so, which of its f32 inputs it still reads in f32
// (parameters such as Resize's scales); the others it reads lowered.
type PrecisionPolicy func(n *graph.Node) (ok bool, keepF32 []int)

// ConvertPrecision lowers the f32 values of m to element type to (f16 for
// INFERENCE_PRECISION_HINT=f16) wherever a device can run the op in that
// type, as OpenVINO's ConvertPrecision does: every node the policy accepts
// reads its f32 inputs (but those it keeps) as to (f32 constants are
// converted once, other values through a Cast) and produces to where it
// produced f32;
// every other node, and every Result, reads f32 again through a Cast. The
// model's inputs and outputs keep their types, so callers see no change.
// Casts are named after the value they convert ("NAME/to_f16",
// "NAME/to_f32") and stand for no user node. m must have its shapes
// inferred; it is modified in place, and shapes are inferred again. It
// returns the number of nodes that now run in to.
func ConvertPrecision(m *graph.Model, to tensor.ElementType, policy PrecisionPolicy) (int, error) {
	if to == tensor.F32 {
		return 0, nil
	}
	nodes, err := m.Nodes()
	if err != nil {
		return 0, err
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	unique := func(base string) string {
		name := base
		for k := 1; names[name]; k++ {
			name = fmt.Sprintf("%s#%d", base, k)
		}
		names[name] = true
		return name
	}
	lowered := map[graph.Output]bool{}         // f32 outputs now of type to
	narrow := map[graph.Output]graph.Output{}  // f32 value -> its copy in to
	widened := map[graph.Output]graph.Output{} // lowered value -> its f32 copy
	cast := func(o graph.Output, t tensor.ElementType, suffix string) (graph.Output, error) {
		c := graph.NewNode("Cast", unique(o.Node.Name+"/"+suffix), []graph.Output{o}, graph.Attrs{"to": int64(t)}, 1)
		if err := graph.InferNode(c); err != nil {
			return graph.Output{}, err
		}
		return c.Out(0), nil
	}
	toNarrow := func(o graph.Output) (graph.Output, error) {
		if v, ok := narrow[o]; ok {
			return v, nil
		}
		var v graph.Output
		if o.Node.OpType == graph.OpConstant && o.Node.Value != nil {
			t, err := o.Node.Value.Convert(to)
			if err != nil {
				return graph.Output{}, fmt.Errorf("constant %q to %s: %w", o.Node.Name, to, err)
			}
			v = graph.NewConstant(unique(o.Node.Name+"/"+to.String()), t).Out(0)
		} else {
			var err error
			if v, err = cast(o, to, "to_"+to.String()); err != nil {
				return graph.Output{}, err
			}
		}
		narrow[o] = v
		return v, nil
	}
	toWide := func(o graph.Output) (graph.Output, error) {
		if v, ok := widened[o]; ok {
			return v, nil
		}
		v, err := cast(o, tensor.F32, "to_f32")
		if err != nil {
			return graph.Output{}, err
		}
		widened[o] = v
		return v, nil
	}
	count := 0
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant:
			continue
		}
		low, keep := false, []int(nil)
		if n.OpType != graph.OpResult {
			low, keep = policy(n)
		}
		for i, in := range n.Inputs {
			if !in.Valid() {
				continue
			}
			kept := slices.Contains(keep, i)
			var err error
			switch {
			case low && kept && lowered[in]:
				n.Inputs[i], err = toWide(in)
			case low && !kept && in.Type() == tensor.F32 && !lowered[in]:
				n.Inputs[i], err = toNarrow(in)
			case !low && lowered[in]:
				n.Inputs[i], err = toWide(in)
			}
			if err != nil {
				return count, n.Errorf("converting input %d to %s: %w", i, to, err)
			}
		}
		if !low {
			continue
		}
		if err := graph.InferNode(n); err != nil {
			return count, n.Errorf("running in %s: %w", to, err)
		}
		for k := range n.Outputs {
			if n.Outputs[k].Type == to {
				lowered[n.Out(k)] = true
			}
		}
		count++
	}
	return count, m.InferShapes()
}
