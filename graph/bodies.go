package graph

import (
	"errors"
	"fmt"
	"sort"

	"github.com/clinfer/clinfer/tensor"
)

// Subgraphs. A node may own graphs: If's branches, Loop's and Scan's bodies,
// a KernelFusion's body. Each is a *Model held as an attribute of the
// node, with its own Parameters and Results. A body never reads a value of
// the enclosing graph directly: what it reads from the outer scope
// (ONNX's implicit inputs, resolved by name at import) is an explicit
// input of the owning node, bound to one of the body's Parameters, which
// keeps the value's name. So every edge of the outer graph is visible to
// the outer graph's passes, its topological order, dead-code removal and
// HETERO's split (a node with a body is placed whole), and every body is
// a self-contained model that the same passes, the serializer, shape
// inference and the devices walk into. Bodies nest to any depth.

// Body is one subgraph a node owns: the attribute that holds it and the
// model.
type Body struct {
	// Attr is the attribute name ("then_branch", "body").
	Attr string
	// Model is the subgraph.
	Model *Model
}

// Bodies returns the subgraphs n owns (its *Model attributes), sorted by
// attribute name.
func (n *Node) Bodies() []Body {
	var out []Body
	for k, v := range n.Attrs {
		if m, ok := v.(*Model); ok && m != nil {
			out = append(out, Body{Attr: k, Model: m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Attr < out[j].Attr })
	return out
}

// HasBodies reports whether n owns a subgraph.
func (n *Node) HasBodies() bool {
	for _, v := range n.Attrs {
		if m, ok := v.(*Model); ok && m != nil {
			return true
		}
	}
	return false
}

// maxBodyDepth bounds how deep Walk and validation follow nested bodies.
const maxBodyDepth = 64

// SkipBody, returned by a Walk function, skips the bodies nested in the
// model it was called for (the walk goes on with the next body).
var SkipBody = errors.New("graph: skip the bodies of this model")

// Walk calls fn for m (owner nil) and then for every body of its nodes,
// depth-first in topological order, each body before the bodies nested in
// it. fn's error stops the walk, except SkipBody. A model that cannot be
// ordered is an error.
func (m *Model) Walk(fn func(body *Model, owner *Node) error) error {
	return m.walk(fn, nil, 0)
}

func (m *Model) walk(fn func(*Model, *Node) error, owner *Node, depth int) error {
	if depth > maxBodyDepth {
		return invalid(fmt.Errorf("model %q: bodies nest deeper than %d levels", m.Name, maxBodyDepth))
	}
	if err := fn(m, owner); err != nil {
		if errors.Is(err, SkipBody) {
			return nil
		}
		return err
	}
	nodes, err := m.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for _, b := range n.Bodies() {
			if err := b.Model.walk(fn, n, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// PortType is an element type, a partial shape and a kind (a tensor, a
// sequence or an optional; see tensor.Kind): what a body Parameter is
// bound to.
type PortType struct {
	Type  tensor.ElementType
	Shape PartialShape
	Kind  tensor.Kind
}

// bindBody sets the Parameters of body to the given types and shapes (in
// place: bodies belong to their node, and inference rewrites ports as it
// does for the outer graph) and infers the body's shapes. An entry with an
// invalid type leaves its Parameter as it is.
func bindBody(n *Node, attr string, body *Model, ports []PortType) error {
	if len(body.Parameters) != len(ports) {
		return n.Errorf("%s %q has %d parameters, want %d", attr, body.Name, len(body.Parameters), len(ports))
	}
	for i, p := range body.Parameters {
		if p == nil || p.OpType != OpParameter || len(p.Outputs) != 1 {
			return n.Errorf("%s %q: parameter %d is not a Parameter node", attr, body.Name, i)
		}
		if ports[i].Type.Valid() {
			p.Outputs[0].Type = ports[i].Type
			p.Outputs[0].Shape = ports[i].Shape.Clone()
			p.Outputs[0].Kind = ports[i].Kind
		}
	}
	if err := body.InferShapes(); err != nil {
		return n.Errorf("%s %q: %w", attr, body.Name, err)
	}
	return nil
}

// inputPorts returns the types and shapes of n's inputs from..to-1 (an
// omitted input gives an invalid type).
func inputPorts(n *Node, from, to int) []PortType {
	out := make([]PortType, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		in := n.Input(i)
		if !in.Valid() {
			out = append(out, PortType{Shape: DynamicRank})
			continue
		}
		out = append(out, PortType{Type: in.Type(), Shape: in.Shape(), Kind: in.Kind()})
	}
	return out
}

// resultPort returns the type and shape of body result i.
func resultPort(body *Model, i int) PortType {
	r := body.Results[i]
	return PortType{Type: r.Outputs[0].Type, Shape: r.Outputs[0].Shape, Kind: r.Outputs[0].Kind}
}

// MergeShapes returns the most specific shape that both a and b have:
// equal static dimensions stay, others become dynamic (keeping a common
// name); a different or unknown rank gives DynamicRank.
func MergeShapes(a, b PartialShape) PartialShape {
	if !a.RankKnown || !b.RankKnown || len(a.Dims) != len(b.Dims) {
		return DynamicRank
	}
	out := PartialShape{RankKnown: true, Dims: make([]Dim, len(a.Dims))}
	for i := range a.Dims {
		da, db := a.Dims[i], b.Dims[i]
		switch {
		case da.IsStatic() && db.IsStatic() && da.Size == db.Size:
			out.Dims[i] = da
		case !da.IsStatic() && !db.IsStatic() && da.Name == db.Name:
			out.Dims[i] = da
		default:
			out.Dims[i] = DynamicDim("")
		}
	}
	return out
}

// SameShape reports whether two partial shapes are identical (ranks,
// sizes and dynamic dimensions' names).
func SameShape(a, b PartialShape) bool {
	if a.RankKnown != b.RankKnown || len(a.Dims) != len(b.Dims) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] {
			return false
		}
	}
	return true
}

// checkBodies runs the structural checks of Validate on every body of n,
// recursively.
func checkBodies(n *Node, depth int) error {
	for _, b := range n.Bodies() {
		if depth > maxBodyDepth {
			return n.Errorf("bodies nest deeper than %d levels", maxBodyDepth)
		}
		if err := b.Model.checkStructure(depth + 1); err != nil {
			return n.Errorf("%s %q: %w", b.Attr, b.Model.Name, err)
		}
	}
	return nil
}

// BodiesAll reports whether ok holds for every op node (not a Parameter,
// Constant or Result) of every body n owns, to any depth: what a device
// asks before saying it runs a node with bodies.
func (n *Node) BodiesAll(ok func(*Node) bool) bool {
	all := true
	for _, b := range n.Bodies() {
		err := b.Model.Walk(func(m *Model, _ *Node) error {
			nodes, err := m.Nodes()
			if err != nil {
				return err
			}
			for _, x := range nodes {
				switch x.OpType {
				case OpParameter, OpConstant, OpResult:
					continue
				}
				if !ok(x) {
					all = false
				}
			}
			return nil
		})
		if err != nil {
			return false
		}
	}
	return all
}
