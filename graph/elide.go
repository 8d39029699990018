package graph

// ExtraElided is the RTInfo.Extra key (value "1") that marks a Constant
// whose value was left out of the model (ElideValues): its port keeps the
// value's element type and static shape, its Value is nil. Such a model
// describes a graph, not its weights: the device that imports it takes the
// data from elsewhere (the GPU's plan record holds the packed weights its
// kernels read) and refuses to plan it again. The mark is runtime
// information, so it survives Clone and the binary encoding, and a model
// read back from an elided encoding is elided too.
const ExtraElided = "elided_value"

// Elided reports whether n is a Constant whose value was left out (see
// ExtraElided).
func (n *Node) Elided() bool {
	return n.OpType == OpConstant && n.Value == nil && n.RT.Extra[ExtraElided] == "1"
}

// HasElided reports whether a node of m (not of its bodies) is an elided
// Constant.
func (m *Model) HasElided() bool {
	nodes, err := m.Nodes()
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if n.Elided() {
			return true
		}
	}
	return false
}

// ElideValues returns a copy of m, sharing its values, in which each
// Constant that elide selects has no value and the ExtraElided mark. Only
// Constants with a value and a static output port can be elided; elide is
// not asked about others. The copy's encoding leaves those values' bytes
// out.
func (m *Model) ElideValues(elide func(*Node) bool) *Model {
	out := m.clone(false)
	nodes, err := out.Nodes()
	if err != nil {
		return out
	}
	for _, n := range nodes {
		if n.OpType != OpConstant || n.Value == nil || len(n.Outputs) != 1 {
			continue
		}
		if s, ok := n.Outputs[0].Shape.ToShape(); !ok || !s.Equal(n.Value.Shape()) || n.Outputs[0].Type != n.Value.Type() || !elide(n) {
			continue
		}
		n.Value = nil
		if n.RT.Extra == nil {
			n.RT.Extra = map[string]string{}
		}
		n.RT.Extra[ExtraElided] = "1"
	}
	return out
}

// checkElided checks that an elided Constant's port still says what its
// value was: a valid element type and a static shape.
func checkElided(n *Node) error {
	p := n.Outputs[0]
	if _, ok := p.Shape.ToShape(); !ok || !p.Type.Valid() {
		return n.Errorf("elided constant has port %v, want a static shape and an element type", p)
	}
	return nil
}
