package fusion

import (
	"context"
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
	return convertPrecision(m, tensor.F32, to, policy)
}

// convertPrecision moves the values of type from of m to type to wherever
// policy accepts the node that reads them (ConvertPrecision lowers f32,
// ConvertF16ToF32 raises f16): accepted nodes read their from-typed inputs
// (but the kept ones) as to and produce to where they produced from;
// other nodes and the Results read from again through a Cast. When to is
// the wider type, an accepted Cast to from casts to to instead (a Cast
// to f16 of an f16 model run in f32 becomes a Cast to f32, which
// RemoveIdentity folds when its input already is f32); a narrowing never
// rewrites a Cast (int -> f32 -> f16 is not int -> f16).
func convertPrecision(m *graph.Model, from, to tensor.ElementType, policy PrecisionPolicy) (int, error) {
	widening := to.Size() > from.Size()
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
	lowered := map[graph.Output]bool{}         // outputs of type from now of type to
	narrow := map[graph.Output]graph.Output{}  // value of type from -> its copy in to
	widened := map[graph.Output]graph.Output{} // converted value -> its copy in from
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
		v, err := cast(o, from, "to_"+from.String())
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
			case low && !kept && in.Type() == from && !lowered[in]:
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
		if widening && n.OpType == "Cast" && tensor.ElementType(n.Attrs.Int("to", 0)) == from {
			n.Attrs["to"] = int64(to)
		}
		before := make([]tensor.ElementType, len(n.Outputs))
		for k, o := range n.Outputs {
			before[k] = o.Type
		}
		if err := graph.InferNode(n); err != nil {
			return count, n.Errorf("running in %s: %w", to, err)
		}
		for k := range n.Outputs {
			if before[k] == from && n.Outputs[k].Type == to {
				lowered[n.Out(k)] = true
			}
		}
		count++
	}
	return count, m.InferShapes()
}

// PassConvertF16ToF32 is the pass name of ConvertF16ToF32.
const PassConvertF16ToF32 = "ConvertF16ToF32"

// ConvertF16ToF32 runs a half-precision model in f32 when the execution
// precision is f32 (INFERENCE_PRECISION_HINT=f32, the default, or a device
// without cl_khr_fp16), as OpenVINO runs compressed models: its f16
// constants are decompressed once, here at compile time; every node that
// reads or makes f16 values computes in f32; a Cast to f16 becomes a Cast
// to f32, so the Cast pairs a converter put around f32-only ops
// (onnxconverter-common's Resize_input_cast0 / Resize_output_cast0) fold
// away in RemoveIdentity; the model's f16 inputs and outputs keep their
// types through Casts at the ports. Nodes owning subgraphs (If, Loop) keep
// f16 and are joined through Casts. With Options.KeepF16 (the hint f16 on a
// device that runs f16) it does nothing: the model then runs as written.
// Results stay within f16 rounding of the model as written (one rounding
// where it rounded per op).
func ConvertF16ToF32() Pass {
	return Pass{
		Name: PassConvertF16ToF32,
		Doc:  "run f16 nodes in f32 (decompress f16 constants once, fold the converter's Cast pairs) unless the execution precision is f16",
		Run: func(_ context.Context, m *graph.Model, opts *Options) (int, error) {
			if opts.KeepF16 {
				return 0, nil
			}
			raised, err := readsOrMakes(m, tensor.F16)
			if err != nil || len(raised) == 0 {
				return 0, err
			}
			return convertPrecision(m, tensor.F16, tensor.F32, func(n *graph.Node) (bool, []int) { return raised[n], nil })
		},
	}
}

// readsOrMakes returns the nodes of m that read or make a value of type t
// (Parameters and Constants aside), but those owning a subgraph, whose
// values the precision passes do not enter; taken before a pass changes
// any type.
func readsOrMakes(m *graph.Model, t tensor.ElementType) (map[*graph.Node]bool, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	out := map[*graph.Node]bool{}
nodes:
	for _, n := range nodes {
		for _, v := range n.Attrs {
			if _, ok := v.(*graph.Model); ok {
				continue nodes
			}
		}
		touches := slices.ContainsFunc(n.Outputs, func(o graph.Port) bool { return o.Type == t })
		for _, in := range n.Inputs {
			touches = touches || in.Valid() && in.Type() == t
		}
		if touches {
			out[n] = true
		}
	}
	return out, nil
}
