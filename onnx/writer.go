package onnx

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/tensor"
)

// WriteOpset is the default-domain opset Marshal writes: the op set's
// semantics (graph/optable.go: the newest ONNX forms, values that older
// opsets held in attributes as inputs) are those of this opset, and its
// QuantizeLinear and DequantizeLinear take per-axis and blocked scales and
// 4-bit types.
const WriteOpset = 21

// ErrNotExportable is wrapped by Marshal's errors about a graph that has
// no ONNX form: a fused op of clinfer's own, a subgraph attribute.
var ErrNotExportable = errors.New("onnx: the graph has no ONNX form")

// elementTypeAttrs are the attributes that hold an element type
// (int64(tensor.ElementType)) in the op set and an ONNX data type in ONNX,
// by op, with their ONNX name.
var elementTypeAttrs = map[string]map[string]string{
	"Cast":               {"to": "to"},
	"EyeLike":            {"dtype": "dtype"},
	"LayerNormalization": {"stash_type": "stash_type"},
	"QuantizeLinear":     {graph.AttrOutputType: "output_dtype"},
}

// Marshal returns m as an ONNX ModelProto of IR version 10 at opset
// WriteOpset (and m.Opsets' versions of other domains): the inverse of
// Read for graphs of ONNX ops, as Read and the fusion passes that keep
// ONNX ops (constant folding, batch-norm folding) leave them. Constants
// become initializers; tensor names are the ports' names where they are
// unique; each Result's name is its graph output's (through an Identity
// where its value is also a graph input or another output). A node of an
// op outside ONNX (the fused ops) or with a subgraph is an error wrapping
// ErrNotExportable.
func Marshal(m *graph.Model) ([]byte, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("onnx: marshal %q: %w", m.Name, err)
	}
	b := onnxbuild.New(m.Name, WriteOpset).IRVersion(10).Producer("clinfer")
	for d, v := range m.Opsets {
		if d != "" && d != "ai.onnx" {
			b.Opset(d, v)
		}
	}
	names := tensorNames(m, nodes)
	for _, p := range m.Parameters {
		b.Input(names[p.Out(0)], p.Outputs[0].Type, dimsOf(p.Outputs[0].Shape))
	}
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
			continue
		case graph.OpConstant:
			if n.Value == nil {
				return nil, fmt.Errorf("%w: constant %q has no value", ErrNotExportable, n.Name)
			}
			b.Initializer(names[n.Out(0)], n.Value)
			continue
		}
		if err := exportable(n); err != nil {
			return nil, err
		}
		attrs, err := exportAttrs(n)
		if err != nil {
			return nil, err
		}
		ins := make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			if in.Valid() {
				ins[i] = names[in]
			}
		}
		for len(ins) > 0 && ins[len(ins)-1] == "" {
			ins = ins[:len(ins)-1]
		}
		outs := make([]string, len(n.Outputs))
		for i := range n.Outputs {
			outs[i] = names[n.Out(i)]
		}
		b.Node(n.OpType, n.Name, ins, outs, attrs)
	}
	for _, r := range m.Results {
		name := resultName(r)
		if src := names[r.Inputs[0]]; src != name {
			b.Node("Identity", r.Name+"/identity", []string{src}, []string{name}, nil)
		}
		b.Output(name, r.Outputs[0].Type, dimsOf(r.Outputs[0].Shape))
	}
	return b.Bytes(), nil
}

// WriteFile writes m (Marshal) to path.
func WriteFile(path string, m *graph.Model) error {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	return nil
}

// resultName is the graph output name of Result r.
func resultName(r *graph.Node) string {
	if r.Outputs[0].Name != "" {
		return r.Outputs[0].Name
	}
	return r.Name
}

// tensorNames names every value of the graph: a Parameter by its name, a
// value a Result reads by the Result's output name (unless a Parameter or
// another Result has it), the others by their port's name when it is free,
// else <node>:<index>.
func tensorNames(m *graph.Model, nodes []*graph.Node) map[graph.Output]string {
	names := map[graph.Output]string{}
	taken := map[string]bool{}
	claim := func(o graph.Output, name string) bool {
		if name == "" || taken[name] {
			return false
		}
		names[o], taken[name] = name, true
		return true
	}
	for _, p := range m.Parameters {
		claim(p.Out(0), p.Name)
	}
	for _, r := range m.Results {
		if in := r.Inputs[0]; in.Valid() {
			if _, named := names[in]; !named {
				claim(in, resultName(r))
			}
		}
	}
	for _, r := range m.Results {
		taken[resultName(r)] = true // an Identity may write it
	}
	for _, n := range nodes {
		for i := range n.Outputs {
			o := n.Out(i)
			if _, ok := names[o]; ok {
				continue
			}
			if claim(o, n.Outputs[i].Name) {
				continue
			}
			base := n.Name + ":" + strconv.Itoa(i)
			for k := 0; !claim(o, base); k++ {
				base = n.Name + ":" + strconv.Itoa(i) + "_" + strconv.Itoa(k)
			}
		}
	}
	return names
}

// dimsOf is a partial shape as graph input/output dims (nil: unknown
// rank).
func dimsOf(s graph.PartialShape) []onnxbuild.Dim {
	if !s.RankKnown {
		return nil
	}
	d := make([]onnxbuild.Dim, len(s.Dims))
	for i, x := range s.Dims {
		if x.IsStatic() {
			d[i] = onnxbuild.Dim{Size: x.Size}
		} else {
			d[i] = onnxbuild.Dim{Size: -1, Param: x.Name}
		}
	}
	return d
}

// exportable fails for nodes that have no ONNX form.
func exportable(n *graph.Node) error {
	if n.Domain != "" {
		return nil // another domain's op, as imported
	}
	if _, _, ok := Opsets(n.OpType); !ok {
		return fmt.Errorf("%w: node %q is a %s, which is not an ONNX op (export the model before the fusion passes)", ErrNotExportable, n.Name, n.OpType)
	}
	return nil
}

// exportAttrs converts n's attributes to ONNX attribute values
// (element types to ONNX data types).
func exportAttrs(n *graph.Node) (map[string]any, error) {
	out := map[string]any{}
	keys := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := n.Attrs[k]
		if onnxName, ok := elementTypeAttrs[n.OpType][k]; ok {
			i, ok := v.(int64)
			dt := DataType(tensor.ElementType(i))
			if !ok || dt == 0 {
				return nil, fmt.Errorf("%w: node %q: attribute %s=%v is not an element type with an ONNX data type", ErrNotExportable, n.Name, k, v)
			}
			out[onnxName] = dt
			continue
		}
		switch v.(type) {
		case int64, float32, string, []int64, []float32, []string, *tensor.Tensor:
			out[k] = v
		default:
			return nil, fmt.Errorf("%w: node %q: attribute %s of Go type %T (subgraphs are not written)", ErrNotExportable, n.Name, k, v)
		}
	}
	return out, nil
}
