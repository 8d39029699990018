package graph

import (
	"fmt"
	"sort"
)

// OpSpec describes one op of the op set: how many inputs it takes and how
// its output types and shapes follow from its inputs and attributes.
type OpSpec struct {
	// Name is the op type ("Conv").
	Name string
	// MinInputs and MaxInputs bound the number of inputs (MaxInputs < 0:
	// variadic).
	MinInputs, MaxInputs int
	// Infer sets n.Outputs[*].Type and .Shape from n's inputs and
	// attributes. It may read constant inputs with n.ConstInput. It returns
	// an error (via n.Errorf) for inputs or attributes that make no sense.
	Infer func(n *Node) error
}

// opTable is the op set: every op clinfer's devices implement, with its
// shape and type inference. It is one explicit table on purpose (no init
// side effects); ops_*.go hold the inference functions.
var opTable = map[string]OpSpec{}

func init() {
	// The table refers to functions in other files; filling it in init of
	// this one file keeps it a single explicit list.
	for _, s := range opList() {
		if _, dup := opTable[s.Name]; dup {
			panic("graph: op " + s.Name + " listed twice")
		}
		opTable[s.Name] = s
	}
}

// Lookup returns the spec of an op type.
func Lookup(opType string) (OpSpec, bool) {
	s, ok := opTable[opType]
	return s, ok
}

// OpTypes returns the names of every op in the op set, sorted.
func OpTypes() []string {
	names := make([]string, 0, len(opTable))
	for k := range opTable {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// InferNode runs shape and type inference for one node whose inputs are
// already inferred.
func InferNode(n *Node) error {
	spec, ok := opTable[n.OpType]
	if !ok {
		return n.Errorf("op type %q is not in the op set", n.OpType)
	}
	if len(n.Inputs) < spec.MinInputs || (spec.MaxInputs >= 0 && len(n.Inputs) > spec.MaxInputs) {
		if spec.MaxInputs < 0 {
			return n.Errorf("has %d inputs, want at least %d", len(n.Inputs), spec.MinInputs)
		}
		return n.Errorf("has %d inputs, want %d to %d", len(n.Inputs), spec.MinInputs, spec.MaxInputs)
	}
	for i, in := range n.Inputs {
		if in.Node != nil && !in.Valid() {
			return n.Errorf("input %d refers to output %d of %s, which has %d outputs", i, in.Index, in.Node, len(in.Node.Outputs))
		}
	}
	if spec.Infer == nil {
		return nil
	}
	return spec.Infer(n)
}

// InferShapes runs shape and type inference over the whole model in
// topological order.
func (m *Model) InferShapes() error {
	nodes, err := m.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := InferNode(n); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidModel, err)
		}
	}
	return nil
}
