package hetero

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// source says where a subgraph input comes from: a model input (sub < 0,
// index into the model's inputs) or an output of an earlier subgraph.
type source struct {
	sub   int    // producing subgraph, or -1 for a model input
	input int    // model input index when sub < 0
	name  string // producer's output name when sub >= 0
}

// subInput is one Parameter of a subgraph.
type subInput struct {
	name string
	from source
}

// subOutput is a Result of a subgraph that is a model output.
type subOutput struct {
	name  string // the Result's name in the subgraph (the model output's name)
	index int    // model output index
}

// subgraph is one piece of the split model: the nodes of one device that
// can run after every earlier subgraph and before every later one.
type subgraph struct {
	name    string // "subgraph0": the prefix of its profiling entries
	device  string // the device it compiles on ("GPU", "GPU.1", "CPU")
	model   *graph.Model
	inputs  []subInput
	outputs []subOutput
	links   []string // Results read by later subgraphs
}

// isHousekeeping reports whether n is a Parameter or Constant: nodes that
// belong to no subgraph (each subgraph gets its own copy).
func isHousekeeping(n *graph.Node) bool {
	return n.OpType == graph.OpParameter || n.OpType == graph.OpConstant
}

// assignAffinities sets RT.Affinity on every node of m (a clone the caller
// owns): a user-set affinity wins; other op nodes get the first device in
// devices whose QueryModel lists them; Results follow their producer,
// Parameters and Constants their first consumer. A node no device
// supports is an error wrapping driver.ErrUnsupported naming it.
func assignAffinities(ctx context.Context, m *graph.Model, devices []string, query func(ctx context.Context, device string) (map[string]string, error)) error {
	nodes, err := m.Nodes()
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	answers := make([]map[string]string, len(devices))
	asked := make([]bool, len(devices))
	var unsupported []string
	for _, n := range nodes {
		if isHousekeeping(n) || n.RT.Affinity != "" {
			continue
		}
		if n.OpType == graph.OpResult && n.Inputs[0].Valid() && !isHousekeeping(n.Inputs[0].Node) {
			continue // follows its producer below
		}
		for i, d := range devices {
			if !asked[i] {
				a, err := query(ctx, d)
				if err != nil {
					return fmt.Errorf("hetero: query model %q on %s: %w", m.Name, d, err)
				}
				answers[i], asked[i] = a, true
			}
			if _, ok := answers[i][n.Name]; ok {
				n.RT.Affinity = d
				break
			}
		}
		if n.RT.Affinity == "" {
			if n.OpType == graph.OpResult {
				n.RT.Affinity = devices[0] // a copy of an input or constant runs anywhere
				continue
			}
			op := n.OpType
			if n.Domain != "" {
				op = n.Domain + "." + op
			}
			unsupported = append(unsupported, fmt.Sprintf("%q (%s)", n.Name, op))
		}
	}
	if len(unsupported) > 0 {
		return driver.Errorf(driver.ErrUnsupported, "hetero: model %q: no device of %s supports node %s", m.Name, strings.Join(devices, ","), strings.Join(unsupported, ", "))
	}
	// Results follow their producers (which come first in topological order).
	for _, n := range nodes {
		if n.OpType == graph.OpResult && n.Inputs[0].Valid() && !isHousekeeping(n.Inputs[0].Node) {
			n.RT.Affinity = n.Inputs[0].Node.RT.Affinity
		}
	}
	// Parameters and Constants follow their first consumer (for the
	// affinity graph only; each subgraph gets its own copy of them).
	cons, err := m.Consumers()
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	for _, n := range nodes {
		if !isHousekeeping(n) {
			continue
		}
		if c := cons[n.Out(0)]; len(c) > 0 && n.RT.Affinity == "" {
			n.RT.Affinity = c[0].Node.RT.Affinity
		}
	}
	return nil
}

// split cuts m (every op node and Result with an affinity) into subgraphs.
// Subgraphs come out in an order they can run in: each reads only model
// inputs, constants and outputs of earlier subgraphs, so there is never a
// cycle between them. Subgraphs are grown from the outputs backwards: a
// subgraph takes every node of its device whose consumers are all placed;
// when none is left, the next (earlier) subgraph takes the device of the
// last such node in topological order. Where a single cut at an affinity
// change would create a cycle (A -> B -> A' with A and A' on one device),
// A simply lands in an earlier subgraph than A'.
func split(m *graph.Model) ([]*subgraph, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	cons, err := m.Consumers()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	var units []*graph.Node
	index := map[*graph.Node]int{}   // topological position
	pending := map[*graph.Node]int{} // unplaced consumers (see below)
	for _, n := range nodes {
		if isHousekeeping(n) {
			continue
		}
		if n.RT.Affinity == "" {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: node %q has no affinity", m.Name, n.Name)
		}
		index[n] = len(units)
		units = append(units, n)
		seen := map[*graph.Node]bool{}
		for i := range n.Outputs {
			for _, c := range cons[n.Out(i)] {
				if !seen[c.Node] {
					seen[c.Node] = true
					pending[n]++
				}
			}
		}
	}
	// Groups are grown from the Results backwards ("as late as possible"):
	// a node is ready once every consumer is placed, so a node joins the
	// subgraph of its consumers where it can. That keeps small side
	// computations (Shape -> Slice -> Concat feeding a Reshape) next to
	// the node that reads them instead of in the first subgraph.
	group := map[*graph.Node]int{}
	var groups [][]*graph.Node
	var devs []string
	for len(group) < len(units) {
		dev := ""
		for i := len(units) - 1; i >= 0; i-- {
			if _, placed := group[units[i]]; !placed && pending[units[i]] == 0 {
				dev = units[i].RT.Affinity
				break
			}
		}
		if dev == "" {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: cannot order the nodes into subgraphs", m.Name)
		}
		g := len(groups)
		groups = append(groups, nil)
		devs = append(devs, dev)
		for changed := true; changed; {
			changed = false
			for i := len(units) - 1; i >= 0; i-- {
				u := units[i]
				if _, placed := group[u]; placed || pending[u] != 0 || u.RT.Affinity != dev {
					continue
				}
				group[u] = g
				groups[g] = append(groups[g], u)
				changed = true
				done := map[*graph.Node]bool{}
				for _, in := range u.Inputs {
					if in.Valid() && !isHousekeeping(in.Node) && !done[in.Node] {
						done[in.Node] = true
						pending[in.Node]--
					}
				}
			}
		}
	}
	// Built backwards: reverse into run order, members in topological order.
	slices.Reverse(groups)
	slices.Reverse(devs)
	for g, members := range groups {
		slices.SortFunc(members, func(a, b *graph.Node) int { return index[a] - index[b] })
		for _, u := range members {
			group[u] = g
		}
	}

	// The values each subgraph receives from earlier ones: what its nodes
	// read from other subgraphs, looking through shape arithmetic it
	// recomputes itself.
	recompute := shapeMath{}
	needed := map[graph.Output]bool{}
	var need func(g int, o graph.Output, seen map[*graph.Node]bool)
	need = func(g int, o graph.Output, seen map[*graph.Node]bool) {
		if !o.Valid() || isHousekeeping(o.Node) || group[o.Node] == g {
			return
		}
		if p := o.Node; recompute.ok(p) {
			if !seen[p] {
				seen[p] = true
				for _, in := range p.Inputs {
					need(g, in, seen)
				}
			}
			return
		}
		needed[o] = true
	}
	for g, members := range groups {
		seen := map[*graph.Node]bool{}
		for _, u := range members {
			for _, in := range u.Inputs {
				need(g, in, seen)
			}
		}
	}
	linkNames := crossNames(nodes, needed)
	inputIndex := map[*graph.Node]int{}
	for i, p := range m.Parameters {
		inputIndex[p] = i
	}
	outputIndex := map[*graph.Node]int{}
	for i, r := range m.Results {
		outputIndex[r] = i
	}
	subs := make([]*subgraph, len(groups))
	for g, members := range groups {
		sg := &subgraph{name: fmt.Sprintf("subgraph%d", g), device: devs[g]}
		mapping := map[*graph.Node]*graph.Node{}
		fromOutside := map[graph.Output]*graph.Node{}
		var params, results []*graph.Node
		var get func(o graph.Output) graph.Output
		clone := func(u *graph.Node) *graph.Node {
			c := &graph.Node{Name: u.Name, OpType: u.OpType, Domain: u.Domain, Attrs: u.Attrs.Clone(), RT: u.RT.Clone(), Value: u.Value}
			c.Outputs = make([]graph.Port, len(u.Outputs))
			for i, pt := range u.Outputs {
				c.Outputs[i] = pt.Clone()
			}
			mapping[u] = c
			if u.Inputs != nil {
				c.Inputs = make([]graph.Output, len(u.Inputs))
			}
			for i, in := range u.Inputs {
				c.Inputs[i] = get(in)
			}
			return c
		}
		get = func(o graph.Output) graph.Output {
			if !o.Valid() {
				return o
			}
			p := o.Node
			if c, ok := mapping[p]; ok {
				return graph.Output{Node: c, Index: o.Index}
			}
			if recompute.ok(p) {
				// Shape arithmetic is recomputed here rather than passed
				// in: devices specialise plans on such values only when
				// they see where they come from.
				c := clone(p)
				c.RT.Affinity = sg.device
				return graph.Output{Node: c, Index: o.Index}
			}
			if p.OpType == graph.OpConstant {
				c := graph.NewConstant(p.Name, p.Value)
				c.Outputs[0] = p.Outputs[0].Clone()
				c.RT = p.RT.Clone()
				mapping[p] = c
				return c.Out(0)
			}
			if prm, ok := fromOutside[o]; ok {
				return prm.Out(0)
			}
			in := subInput{}
			if p.OpType == graph.OpParameter {
				in.name = p.Name
				in.from = source{sub: -1, input: inputIndex[p]}
			} else {
				in.name = linkNames[o]
				in.from = source{sub: group[p], name: linkNames[o]}
			}
			prm := graph.NewParameter(in.name, o.Type(), o.Shape())
			if p.OpType == graph.OpParameter {
				prm.RT = p.RT.Clone()
			}
			fromOutside[o] = prm
			params = append(params, prm)
			sg.inputs = append(sg.inputs, in)
			return prm.Out(0)
		}
		for _, u := range members {
			c, ok := mapping[u]
			if !ok {
				c = clone(u)
			}
			if u.OpType == graph.OpResult {
				results = append(results, c)
				sg.outputs = append(sg.outputs, subOutput{name: u.Name, index: outputIndex[u]})
			}
		}
		// Outputs read by later subgraphs become Results of this one, in
		// the order of the original nodes.
		for _, u := range members {
			for i := range u.Outputs {
				name, ok := linkNames[u.Out(i)]
				if !ok {
					continue
				}
				results = append(results, graph.NewResult(name, mapping[u].Out(i)))
				sg.links = append(sg.links, name)
			}
		}
		sg.model = graph.NewModel(fmt.Sprintf("%s_%s", m.Name, sg.name), params, results)
		sg.model.Opsets = m.Opsets
		subs[g] = sg
	}
	return subs, nil
}

// crossNames names every output another subgraph receives: the value's
// own name when no node of the model is called that, and otherwise that
// name with a "/hetero" suffix (and a number if needed), so that the
// Result and Parameter carrying it clash with no node.
func crossNames(nodes []*graph.Node, needed map[graph.Output]bool) map[graph.Output]string {
	used := map[string]bool{}
	for _, n := range nodes {
		used[n.Name] = true
	}
	names := map[graph.Output]string{}
	for _, n := range nodes {
		for i := range n.Outputs {
			o := n.Out(i)
			if !needed[o] {
				continue
			}
			base := n.Outputs[i].Name
			if base == "" {
				base = o.String()
			}
			name := base
			if used[name] {
				name = base + "/hetero"
				for k := 1; used[name]; k++ {
					name = fmt.Sprintf("%s/hetero%d", base, k)
				}
			}
			used[name] = true
			names[o] = name
		}
	}
	return names
}

// parseDevices splits a DEVICE_PRIORITIES value ("GPU,CPU") into device
// names, checking each and refusing HETERO inside HETERO.
func parseDevices(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty device list")
	}
	if _, _, _, err := driver.ParseDeviceName(DeviceName + ":" + s); err != nil {
		return nil, err
	}
	devs := strings.Split(s, ",")
	for i, d := range devs {
		name, _, _, _ := driver.ParseDeviceName(d)
		if name == DeviceName {
			return nil, fmt.Errorf("%s cannot list itself", DeviceName)
		}
		if slices.Contains(devs[:i], d) {
			return nil, fmt.Errorf("device %s listed twice", d)
		}
	}
	return devs, nil
}

// maxShapeMath bounds the elements of a value recomputed as shape
// arithmetic: shapes, axes and bounds are small; larger integer data is
// passed between subgraphs like any other value.
const maxShapeMath = 64

// shapeMath memoises which nodes are shape arithmetic: a node of a
// ShapeMath op (graph.OpSpec) with small, static integer outputs whose
// inputs are constants, model inputs, shape arithmetic, or anything at all
// for ops that fold from shapes alone (Shape, Size).
type shapeMath map[*graph.Node]bool

func (s shapeMath) ok(n *graph.Node) bool {
	if v, seen := s[n]; seen {
		return v
	}
	s[n] = false // no cycles in a valid model; guards against one anyway
	spec, known := graph.Lookup(n.OpType)
	v := n.Domain == "" && known && spec.ShapeMath
	for _, p := range n.Outputs {
		s, static := p.Shape.ToShape()
		v = v && p.Type.IsInteger() && static && s.NumElements() <= maxShapeMath
	}
	if v && graph.FoldOf(n) != graph.FoldShapes {
		for _, in := range n.Inputs {
			if in.Valid() && !isHousekeeping(in.Node) && !s.ok(in.Node) {
				v = false
				break
			}
		}
	}
	s[n] = v
	return v
}
