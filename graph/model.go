package graph

import (
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/tensor"
)

// ErrInvalidModel is wrapped by every error Validate returns.
var ErrInvalidModel = errors.New("graph: invalid model")

// Model is a computation graph: Parameters in, Results out, and every node
// reachable from the Results in between.
type Model struct {
	// Name is the model's name (the ONNX graph name).
	Name string
	// Parameters are the model inputs, in order.
	Parameters []*Node
	// Results are the model outputs, in order.
	Results []*Node
	// Opsets records the opset version imported per domain ("" is ONNX's
	// default domain), for diagnostics.
	Opsets map[string]int64
}

// NewModel returns a model over the given parameters and results.
func NewModel(name string, params, results []*Node) *Model {
	return &Model{Name: name, Parameters: params, Results: results}
}

// Nodes returns every node in topological order (producers before
// consumers): the nodes reachable from the Results, plus Parameters that no
// node reads. It returns an error naming a node on a cycle.
func (m *Model) Nodes() ([]*Node, error) {
	const (
		unseen = iota
		active
		done
	)
	state := map[*Node]int{}
	var order []*Node
	// Iterative DFS so deep graphs do not exhaust the goroutine stack.
	type frame struct {
		n *Node
		i int
	}
	visit := func(root *Node) error {
		if state[root] == done {
			return nil
		}
		stack := []frame{{root, 0}}
		state[root] = active
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.i < len(top.n.Inputs) {
				in := top.n.Inputs[top.i]
				top.i++
				if in.Node == nil {
					continue
				}
				switch state[in.Node] {
				case active:
					return fmt.Errorf("%w: cycle through node %q (%s)", ErrInvalidModel, in.Node.Name, in.Node.OpType)
				case unseen:
					state[in.Node] = active
					stack = append(stack, frame{in.Node, 0})
				}
				continue
			}
			state[top.n] = done
			order = append(order, top.n)
			stack = stack[:len(stack)-1]
		}
		return nil
	}
	for _, p := range m.Parameters {
		if err := visit(p); err != nil {
			return nil, err
		}
	}
	for _, r := range m.Results {
		if err := visit(r); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Consumers maps every output port to the nodes (and input indices) that
// read it.
func (m *Model) Consumers() (map[Output][]Input, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	c := map[Output][]Input{}
	for _, n := range nodes {
		for i, in := range n.Inputs {
			if in.Node != nil {
				c[in] = append(c[in], Input{Node: n, Index: i})
			}
		}
	}
	return c, nil
}

// Input names one input port of a node.
type Input struct {
	Node  *Node
	Index int
}

// Parameter returns the input named name, or nil.
func (m *Model) Parameter(name string) *Node {
	for _, p := range m.Parameters {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Inputs describes the model inputs, in order: each Parameter's name,
// element type and shape, whose dynamic dimensions (Dim.Size -1, with the
// ONNX dim_param as Dim.Name) are what a caller may choose per inference.
// The ports are copies.
func (m *Model) Inputs() []Port { return ports(m.Parameters) }

// Outputs describes the model outputs, in order: each Result's name,
// element type and shape as far as the model declares them before shape
// inference. The ports are copies.
func (m *Model) Outputs() []Port { return ports(m.Results) }

// ports describes Parameters or Results by their names and first outputs.
func ports(nodes []*Node) []Port {
	out := make([]Port, len(nodes))
	for i, n := range nodes {
		out[i].Name = n.Name
		if len(n.Outputs) > 0 {
			out[i].Type, out[i].Shape, out[i].Kind = n.Outputs[0].Type, n.Outputs[0].Shape.Clone(), n.Outputs[0].Kind
		}
	}
	return out
}

// Result returns the output named name, or nil.
func (m *Model) Result(name string) *Node {
	for _, r := range m.Results {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Node returns the node with the given friendly name, or nil.
func (m *Model) Node(name string) *Node {
	nodes, err := m.Nodes()
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Clone returns a deep copy of the model: new nodes, attributes, shapes and
// runtime info. Constant values are copied too, so a compiled model never
// shares mutable state with the user's model.
func (m *Model) Clone() *Model { return m.clone(true) }

// WithDataSizes returns a copy of m in which the DataSized nodes named in
// sizes carry AttrDataSize, shapes inferred again: the model for one
// inference whose data-dependent sizes a device has read back. Constant
// tensors are shared with m, not copied (neither may change them).
func (m *Model) WithDataSizes(sizes map[string]int64) (*Model, error) {
	out := m.clone(false)
	nodes, err := out.Nodes()
	if err != nil {
		return nil, err
	}
	set := 0
	for _, n := range nodes {
		if v, ok := sizes[n.Name]; ok && IsDataSized(n) {
			if n.Attrs == nil {
				n.Attrs = Attrs{}
			}
			n.Attrs[AttrDataSize] = v
			set++
		}
	}
	if set != len(sizes) {
		return nil, invalid(fmt.Errorf("model %q: %d data sizes for %d data-sized nodes of those names", m.Name, len(sizes), set))
	}
	if err := out.InferShapes(); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Model) clone(copyValues bool) *Model {
	nodes, err := m.Nodes()
	if err != nil {
		// A cyclic model cannot be ordered; clone what is reachable by
		// walking without order (Validate reports the cycle).
		nodes = m.reachable()
	}
	mapping := make(map[*Node]*Node, len(nodes))
	for _, n := range nodes {
		c := &Node{
			Name:   n.Name,
			OpType: n.OpType,
			Domain: n.Domain,
			Attrs:  n.Attrs.Clone(),
			RT:     n.RT.Clone(),
		}
		if c.Value = n.Value; n.Value != nil && copyValues {
			c.Value = n.Value.Clone()
		}
		c.Outputs = make([]Port, len(n.Outputs))
		for i, p := range n.Outputs {
			c.Outputs[i] = p.Clone()
		}
		mapping[n] = c
	}
	for _, n := range nodes {
		c := mapping[n]
		if n.Inputs != nil {
			c.Inputs = make([]Output, len(n.Inputs))
		}
		for i, in := range n.Inputs {
			if in.Node != nil {
				c.Inputs[i] = Output{Node: mapping[in.Node], Index: in.Index}
			}
		}
	}
	out := &Model{Name: m.Name}
	for _, p := range m.Parameters {
		out.Parameters = append(out.Parameters, mapping[p])
	}
	for _, r := range m.Results {
		out.Results = append(out.Results, mapping[r])
	}
	if m.Opsets != nil {
		out.Opsets = make(map[string]int64, len(m.Opsets))
		for k, v := range m.Opsets {
			out.Opsets[k] = v
		}
	}
	return out
}

// Specialize returns a clone of m for one set of input shapes: Parameter i
// has the static shape shapes[i] and, where values[i] is not nil, becomes
// a Constant of that value (so that what the value decides, a Reshape's
// target or a Range's length, is known), and shapes are inferred again.
// A Result whose shape still has dynamic dims depends on values it was
// not given. values may be shorter than shapes, or nil; the clone refers
// to them (they are not copied), so they must not change while it is
// used. Its Constants' tensors are m's, not copies (a device plans every
// input shape from one model: IS-Net medium's 176 MB of weights were
// copied for each plan), so neither model may change them.
func (m *Model) Specialize(shapes []tensor.Shape, values []*tensor.Tensor) (*Model, error) {
	if len(shapes) != len(m.Parameters) {
		return nil, invalid(fmt.Errorf("model %q: %d input shapes for %d parameters", m.Name, len(shapes), len(m.Parameters)))
	}
	out := m.clone(false)
	for i, prm := range out.Parameters {
		prm.Outputs[0].Shape = StaticShape(shapes[i])
		if i < len(values) && values[i] != nil {
			prm.OpType, prm.Value = OpConstant, values[i]
		}
	}
	if err := out.InferShapes(); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Model) reachable() []*Node {
	seen := map[*Node]bool{}
	var out []*Node
	stack := append(append([]*Node(nil), m.Parameters...), m.Results...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == nil || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		for _, in := range n.Inputs {
			stack = append(stack, in.Node)
		}
	}
	return out
}
