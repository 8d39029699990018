package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Validate checks that the model is well formed and runs shape inference on
// it (which updates the nodes' output ports). It checks that node names are
// unique, every input names an existing output of a node in the model, nodes
// read only Parameters listed in m.Parameters, Parameters and Constants have
// no inputs, Results have exactly one input, Constants hold a value matching
// their port, there are no cycles, and every op is in the op set, and the
// same of every body (subgraph) a node owns, to any depth. Every
// error wraps ErrInvalidModel and, where one node is at fault, is a
// *NodeError naming it.
func (m *Model) Validate() error {
	if err := m.checkStructure(0); err != nil {
		return err
	}
	nodes, err := m.Nodes()
	if err != nil {
		return invalid(err)
	}
	for _, n := range nodes {
		if err := InferNode(n); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// checkStructure runs Validate's structural checks on m and, through
// checkBodies, on every body of its nodes (depth is the nesting level).
func (m *Model) checkStructure(depth int) error {
	if len(m.Results) == 0 {
		return fmt.Errorf("%w: model %q has no results", ErrInvalidModel, m.Name)
	}
	params := make(map[*Node]bool, len(m.Parameters))
	for i, p := range m.Parameters {
		if p == nil {
			return fmt.Errorf("%w: parameter %d is nil", ErrInvalidModel, i)
		}
		if p.OpType != OpParameter {
			return invalid(p.Errorf("listed as parameter %d but its op is %s", i, p.OpType))
		}
		params[p] = true
	}
	results := make(map[*Node]bool, len(m.Results))
	for i, r := range m.Results {
		if r == nil {
			return fmt.Errorf("%w: result %d is nil", ErrInvalidModel, i)
		}
		if r.OpType != OpResult {
			return invalid(r.Errorf("listed as result %d but its op is %s", i, r.OpType))
		}
		results[r] = true
	}
	nodes, err := m.Nodes()
	if err != nil {
		if errors.Is(err, ErrInvalidModel) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	byName := make(map[string]*Node, len(nodes))
	for _, n := range nodes {
		if prev, dup := byName[n.Name]; dup {
			return invalid(n.Errorf("name is also used by %s", prev))
		}
		byName[n.Name] = n
		if err := checkNode(n, params, results, depth > 0); err != nil {
			return invalid(err)
		}
		if err := checkBodies(n, depth); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// invalid wraps err with ErrInvalidModel, keeping it a *NodeError.
func invalid(err error) error {
	if ne, ok := err.(*NodeError); ok {
		return &NodeError{Node: ne.Node, OpType: ne.OpType, Err: &invalidError{err: ne.Err}}
	}
	return &invalidError{prefix: "graph: ", err: err}
}

// invalidError marks err as ErrInvalidModel with one "graph:" in the
// message: `graph: node "x" (Relu): invalid model: ...` for a node's
// error, `graph: invalid model: ...` for another.
type invalidError struct {
	prefix string
	err    error
}

// Error returns the message with one "graph:".
func (e *invalidError) Error() string {
	return e.prefix + "invalid model: " + strings.TrimPrefix(e.err.Error(), "graph: ")
}

// Unwrap returns ErrInvalidModel and the error it marks.
func (e *invalidError) Unwrap() []error { return []error{ErrInvalidModel, e.err} }

// checkNode runs the structural checks of one node. In a body (inBody),
// a Parameter may have no type yet: the owning node binds it.
func checkNode(n *Node, params, results map[*Node]bool, inBody bool) error {
	if n.Name == "" {
		return n.Errorf("node has no name")
	}
	if _, ok := Lookup(n.OpType); !ok {
		return n.Errorf("op type %q is not in the op set", n.OpType)
	}
	for i, in := range n.Inputs {
		if in.Node == nil {
			continue
		}
		if in.Index < 0 || in.Index >= len(in.Node.Outputs) {
			return n.Errorf("input %d refers to output %d of %s, which has %d outputs", i, in.Index, in.Node, len(in.Node.Outputs))
		}
		if in.Node.OpType == OpParameter && !params[in.Node] {
			return n.Errorf("input %d reads %s, which is not one of the model's parameters", i, in.Node)
		}
		if in.Node.OpType == OpResult {
			return n.Errorf("input %d reads %s; results cannot be consumed", i, in.Node)
		}
	}
	switch n.OpType {
	case OpParameter:
		if len(n.Inputs) != 0 {
			return n.Errorf("parameter has %d inputs, want none", len(n.Inputs))
		}
		if len(n.Outputs) != 1 {
			return n.Errorf("parameter has %d outputs, want 1", len(n.Outputs))
		}
		if !n.Outputs[0].Type.Valid() && !inBody {
			return n.Errorf("parameter has no element type")
		}
	case OpConstant:
		if len(n.Inputs) != 0 {
			return n.Errorf("constant has %d inputs, want none", len(n.Inputs))
		}
		if len(n.Outputs) != 1 {
			return n.Errorf("constant has %d outputs, want 1", len(n.Outputs))
		}
		if n.Elided() {
			return checkElided(n)
		}
		if n.Value == nil {
			return n.Errorf("constant has no value")
		}
		p := n.Outputs[0]
		s, ok := p.Shape.ToShape()
		if p.Type != n.Value.Type() || !ok || !s.Equal(n.Value.Shape()) {
			return n.Errorf("port says %v%v but the value is %v", p.Type, p.Shape, n.Value)
		}
	case OpResult:
		if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
			return n.Errorf("result has %d inputs, want exactly 1", len(n.Inputs))
		}
		if !results[n] {
			return n.Errorf("result is not one of the model's results")
		}
	}
	return nil
}
