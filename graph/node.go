package graph

import (
	"fmt"
	"sort"

	"github.com/clinfer/clinfer/tensor"
)

// Op types of the housekeeping nodes every model has.
const (
	OpParameter = "Parameter"
	OpConstant  = "Constant"
	OpResult    = "Result"
)

// Output names one output port of a node: the value an edge carries. The zero
// Output (Node == nil) stands for an omitted optional input.
type Output struct {
	Node  *Node
	Index int
}

// Valid reports whether o names a real port (not an omitted optional input).
func (o Output) Valid() bool { return o.Node != nil && o.Index >= 0 && o.Index < len(o.Node.Outputs) }

// Port returns the port description o names. It panics on an invalid Output,
// which is a programmer error.
func (o Output) Port() *Port { return &o.Node.Outputs[o.Index] }

// Type is the element type of the value.
func (o Output) Type() tensor.ElementType { return o.Node.Outputs[o.Index].Type }

// Shape is the partial shape of the value.
func (o Output) Shape() PartialShape { return o.Node.Outputs[o.Index].Shape }

// Kind is what the value is: a tensor, a sequence or an optional.
func (o Output) Kind() tensor.Kind { return o.Node.Outputs[o.Index].Kind }

// String names the port as "node:index".
func (o Output) String() string {
	if o.Node == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s:%d", o.Node.Name, o.Index)
}

// Port describes one output of a node: the tensor name it had in the source
// model (ONNX value name), its element type and its partial shape. Kind
// says whether it carries a tensor (the zero Kind), a sequence of tensors
// or an optional one (see tensor.Kind); for those, Type and Shape describe
// the tensors inside (Shape merges what is common to a sequence's items).
type Port struct {
	Name  string
	Type  tensor.ElementType
	Shape PartialShape
	Kind  tensor.Kind
}

// Clone returns a copy of p that shares no memory with it.
func (p Port) Clone() Port {
	p.Shape = p.Shape.Clone()
	return p
}

// String writes the port's value type: "f32[1,3,?,?]",
// "sequence<i64[?]>".
func (p Port) String() string { return p.Kind.Describe(p.Type, p.Shape.String()) }

// RTInfo is the runtime information a node carries through transformations.
type RTInfo struct {
	// FusedNames are the friendly names of the original nodes this node
	// stands for after fusion; empty means just the node itself.
	FusedNames []string
	// Affinity is the device this node is pinned to ("GPU", "CPU"); set by
	// the user or by HETERO.
	Affinity string
	// Extra holds other string-keyed facts (e.g. runtime-model fields).
	Extra map[string]string
}

// Clone returns a copy of the runtime info that shares no memory with r.
func (r RTInfo) Clone() RTInfo {
	c := RTInfo{Affinity: r.Affinity}
	if r.FusedNames != nil {
		c.FusedNames = append([]string(nil), r.FusedNames...)
	}
	if r.Extra != nil {
		c.Extra = make(map[string]string, len(r.Extra))
		for k, v := range r.Extra {
			c.Extra[k] = v
		}
	}
	return c
}

// Node is one operation of a model.
type Node struct {
	// Name is the friendly name, unique within a model (the ONNX node name,
	// or one made up by the frontend when the model has none).
	Name string
	// OpType is the op's name in the op table ("Conv", "Add", "Parameter").
	OpType string
	// Domain is the op's domain; empty for the default ONNX domain.
	Domain string
	// Attrs are the op's attributes.
	Attrs Attrs
	// Inputs are the producer ports this node reads, in order; a zero Output
	// is an omitted optional input.
	Inputs []Output
	// Outputs describes the node's output ports; their types and shapes are
	// filled in by shape inference.
	Outputs []Port
	// Value is the constant's value on Constant nodes, nil otherwise.
	Value *tensor.Tensor
	// RT is the runtime info (fused names, affinity).
	RT RTInfo
}

// NewNode returns a node of the given op with numOutputs output ports whose
// types and shapes are left for shape inference.
func NewNode(opType, name string, inputs []Output, attrs Attrs, numOutputs int) *Node {
	if attrs == nil {
		attrs = Attrs{}
	}
	n := &Node{Name: name, OpType: opType, Attrs: attrs, Inputs: inputs, Outputs: make([]Port, numOutputs)}
	for i := range n.Outputs {
		if numOutputs == 1 {
			n.Outputs[i].Name = name
		} else {
			n.Outputs[i].Name = fmt.Sprintf("%s:%d", name, i)
		}
		n.Outputs[i].Shape = DynamicRank
	}
	return n
}

// NewParameter returns a model input of the given type and partial shape.
func NewParameter(name string, t tensor.ElementType, shape PartialShape) *Node {
	n := NewNode(OpParameter, name, nil, nil, 1)
	n.Outputs[0] = Port{Name: name, Type: t, Shape: shape.Clone()}
	return n
}

// NewConstant returns a constant node holding value (not copied).
func NewConstant(name string, value *tensor.Tensor) *Node {
	n := NewNode(OpConstant, name, nil, nil, 1)
	n.Value = value
	n.Outputs[0] = Port{Name: name, Type: value.Type(), Shape: StaticShape(value.Shape())}
	return n
}

// NewResult returns a model output reading from; its name is the output's
// name as users see it.
func NewResult(name string, from Output) *Node {
	n := NewNode(OpResult, name, []Output{from}, nil, 1)
	if from.Valid() {
		n.Outputs[0] = Port{Name: name, Type: from.Type(), Shape: from.Shape().Clone(), Kind: from.Kind()}
	}
	return n
}

// Out returns the node's i-th output port reference.
func (n *Node) Out(i int) Output { return Output{Node: n, Index: i} }

// Input returns the node's i-th input, or the zero Output when the input is
// omitted or beyond the inputs given.
func (n *Node) Input(i int) Output {
	if i < 0 || i >= len(n.Inputs) {
		return Output{}
	}
	return n.Inputs[i]
}

// ConstInput returns the value of input i when it comes straight from a
// Constant node.
func (n *Node) ConstInput(i int) (*tensor.Tensor, bool) {
	in := n.Input(i)
	if !in.Valid() || in.Node.OpType != OpConstant || in.Node.Value == nil {
		return nil, false
	}
	return in.Node.Value, true
}

// OriginalNames returns the friendly names of the source-model nodes this
// node stands for: its fused names, or its own name.
func (n *Node) OriginalNames() []string {
	if len(n.RT.FusedNames) > 0 {
		return append([]string(nil), n.RT.FusedNames...)
	}
	return []string{n.Name}
}

// String describes the node as "Conv(name)".
func (n *Node) String() string { return fmt.Sprintf("%s(%s)", n.OpType, n.Name) }

// Errorf returns an error prefixed with the node's op type and name.
func (n *Node) Errorf(format string, args ...any) error {
	return &NodeError{Node: n.Name, OpType: n.OpType, Err: fmt.Errorf(format, args...)}
}

// NodeError is an error about one node; it names the node and its op.
type NodeError struct {
	Node   string
	OpType string
	Err    error
}

// Error implements error.
func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %q (%s): %v", e.Node, e.OpType, e.Err)
}

// Unwrap returns the underlying error.
func (e *NodeError) Unwrap() error { return e.Err }

// sortedKeys returns m's keys sorted, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
