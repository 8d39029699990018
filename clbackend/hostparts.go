package clbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Host parts. String tensors, sequences and optionals have no device
// form: the planner places the nodes that take or make them (and the ops
// whose lowering entry says hostPart) in host parts, which run the CPU
// reference kernels on host values, and everything else in device parts,
// each a CompiledModel of its own with its own plans (so a device part
// after a host part plans on the shapes the host part made). A model
// without such nodes is one CompiledModel, as before.

// hostPartReason says why n runs in a host part ("" when it does not):
// a string, sequence or optional input or output, or its op's hostPart.
func hostPartReason(n *graph.Node) string {
	switch n.OpType {
	case graph.OpParameter, graph.OpConstant, graph.OpResult:
		return ""
	}
	for i, in := range n.Inputs {
		if !in.Valid() {
			continue
		}
		if why := hostValue(in.Port()); why != "" {
			return fmt.Sprintf("input %d is %s", i, why)
		}
	}
	for i, p := range n.Outputs {
		if why := hostValue(&p); why != "" {
			return fmt.Sprintf("output %d is %s", i, why)
		}
	}
	if l, ok := lowerings()[n.OpType]; ok && n.Domain == "" && l.hostPart != "" {
		return l.hostPart
	}
	return ""
}

// hostValue says why a port's value lives on the host ("" when it does
// not).
func hostValue(p *graph.Port) string {
	switch {
	case p.Kind != tensor.KindTensor:
		return "a " + p.Kind.String() + " (" + p.String() + ")"
	case p.Type == tensor.String:
		return "a string tensor"
	}
	return ""
}

// part is one piece of a model with host parts: nodes that run in order,
// on the host or as one device CompiledModel.
type part struct {
	host  bool
	nodes []*graph.Node // in topological order
	// A device part's compiled model, and the values bound to its
	// Parameters and read from its Results, in order.
	gpu      *CompiledModel
	ins, out []graph.Output
}

// splitParts cuts the op nodes of m (in topological order) into parts
// that alternate between the host and the device: each part takes every
// remaining node of its side whose producers are placed, so there are as
// few parts as the graph's alternations need and never a cycle between
// them.
func splitParts(nodes []*graph.Node) []*part {
	placed := map[*graph.Node]bool{}
	var todo []*graph.Node
	host := map[*graph.Node]bool{}
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant:
			placed[n] = true
		case graph.OpResult:
		default:
			todo = append(todo, n)
			host[n] = hostPartReason(n) != ""
		}
	}
	var parts []*part
	side := len(todo) > 0 && host[todo[0]]
	for len(todo) > 0 {
		p := &part{host: side}
		var rest []*graph.Node
		for _, n := range todo {
			ready := host[n] == side
			for _, in := range n.Inputs {
				if in.Valid() && !placed[in.Node] {
					ready = false
				}
			}
			if ready {
				placed[n] = true
				p.nodes = append(p.nodes, n)
			} else {
				rest = append(rest, n)
			}
		}
		if len(p.nodes) > 0 {
			parts = append(parts, p)
		}
		todo, side = rest, !side
	}
	return parts
}

// devicePart makes the model of device part p of m: clones of its nodes,
// a Parameter per value it reads from outside (model inputs, other
// parts), its own copies of the constants it reads, and a Result per value
// that a later part or a model output reads. It records those values in
// p.ins and p.out.
func devicePart(m *graph.Model, p *part, k int, readers map[graph.Output][]*graph.Node) *graph.Model {
	in := map[*graph.Node]bool{}
	for _, n := range p.nodes {
		in[n] = true
	}
	clones := map[*graph.Node]*graph.Node{}
	params := map[graph.Output]*graph.Node{}
	var paramList []*graph.Node
	source := func(o graph.Output) graph.Output {
		if !o.Valid() {
			return o
		}
		if c, ok := clones[o.Node]; ok {
			return c.Out(o.Index)
		}
		if o.Node.OpType == graph.OpConstant {
			c := graph.NewConstant(o.Node.Name, o.Node.Value)
			c.Outputs[0] = o.Node.Outputs[0].Clone()
			clones[o.Node] = c
			return c.Out(0)
		}
		prm, ok := params[o]
		if !ok {
			prm = graph.NewParameter(fmt.Sprintf("part%d/in%d", k, len(paramList)), o.Type(), o.Shape())
			params[o] = prm
			paramList = append(paramList, prm)
			p.ins = append(p.ins, o)
		}
		return prm.Out(0)
	}
	for _, n := range p.nodes {
		c := &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: n.Attrs.Clone(), RT: n.RT.Clone(),
			Inputs: make([]graph.Output, len(n.Inputs)), Outputs: make([]graph.Port, len(n.Outputs))}
		for i, o := range n.Outputs {
			c.Outputs[i] = o.Clone()
		}
		for i, o := range n.Inputs {
			c.Inputs[i] = source(o)
		}
		clones[n] = c
	}
	var results []*graph.Node
	for _, n := range p.nodes {
		for i := range n.Outputs {
			o := n.Out(i)
			needed := false
			for _, r := range readers[o] {
				needed = needed || !in[r]
			}
			if needed {
				results = append(results, graph.NewResult(fmt.Sprintf("part%d/out%d", k, len(results)), clones[n].Out(i)))
				p.out = append(p.out, o)
			}
		}
	}
	sub := graph.NewModel(fmt.Sprintf("%s/part%d", m.Name, k), paramList, results)
	sub.Opsets = m.Opsets
	return sub
}

// HostParts is a GPU compiled model with host parts (see hostPartReason):
// its requests run the parts in order, passing values between them on the
// host. It implements the same interfaces as CompiledModel but remote
// tensors, which a request with host parts does not take. It is safe for
// concurrent use.
type HostParts struct {
	model     *graph.Model // the transformed graph, whole (runtime model, export)
	parts     []*part
	dev       *device
	core      driver.ModelCore
	profiling bool
}

// Interface checks.
var (
	_ driver.CompiledModel = (*HostParts)(nil)
	_ driver.Exporter      = (*HostParts)(nil)
)

// KeyHostParts is the compiled-model property that counts the host parts
// the planner placed (RO; "0" for a model without any).
const KeyHostParts = "GPU_HOST_PARTS"

// needsHostParts reports whether some node of m runs in a host part, or
// an input or output of m is a host value.
func needsHostParts(m *graph.Model) bool {
	nodes, err := m.Nodes()
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if hostPartReason(n) != "" {
			return true
		}
	}
	for _, n := range append(append([]*graph.Node(nil), m.Parameters...), m.Results...) {
		if hostValue(&n.Outputs[0]) != "" {
			return true
		}
	}
	return false
}

// compileModel compiles the transformed model m in context cc (whose
// reference it takes over): one CompiledModel, or HostParts when some node
// runs on the host.
func compileModel(ctx context.Context, p *Plugin, cc *clContext, m *graph.Model, cfg *driver.Properties) (driver.CompiledModel, error) {
	if !needsHostParts(m) {
		cm, err := compile(ctx, p, cc, m, cfg)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return cm, nil
	}
	hp, err := compileHostParts(ctx, p, cc, m, cfg)
	if err != nil {
		return nil, err
	}
	return hp, nil
}

// compileHostParts splits m into parts and compiles each device part.
func compileHostParts(ctx context.Context, p *Plugin, cc *clContext, m *graph.Model, cfg *driver.Properties) (_ *HostParts, err error) {
	defer func() {
		if rerr := cc.release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	model := m.Clone()
	if err := model.InferShapes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	if err := checkDisabled(model, cc.dev, cfg); err != nil {
		return nil, err
	}
	hp := &HostParts{model: model, parts: splitParts(nodes), dev: cc.dev}
	defer func() {
		if err != nil {
			_ = hp.closeParts()
		}
	}()
	readers := map[graph.Output][]*graph.Node{}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			if in.Valid() {
				readers[in] = append(readers[in], n)
			}
		}
	}
	hostCount := 0
	for k, pt := range hp.parts {
		if pt.host {
			hostCount++
			for _, n := range pt.nodes {
				if why := hostNodeUnsupported(n); why != "" {
					return nil, driver.Errorf(driver.ErrUnsupported, "gpu: compile model %q: node %q runs on the host (%s) but %s", m.Name, n.Name, hostPartReason(n), why)
				}
			}
			continue
		}
		sub := devicePart(model, pt, k, readers)
		if pt.gpu, err = compile(ctx, p, cc.acquire(), sub, cfg); err != nil {
			return nil, err
		}
	}
	props := cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, strconv.Itoa(optimalRequests(cfg, cc.dev))),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, cc.dev.name()),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
		driver.ReadOnlySpec(KeyHostParts, strconv.Itoa(hostCount)),
	)
	hp.core.Init("gpu", model, props)
	conf, err := driver.ParseConfig(props)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile model %q: %w", m.Name, err)
	}
	hp.profiling = conf.EnableProfiling
	return hp, nil
}

// Inputs describes the model inputs.
func (h *HostParts) Inputs() []driver.PortInfo { return h.core.Inputs() }

// Outputs describes the model outputs.
func (h *HostParts) Outputs() []driver.PortInfo { return h.core.Outputs() }

// Property returns the compiled model's configuration or a read-only fact
// (NETWORK_NAME, EXECUTION_DEVICES, GPU_HOST_PARTS, LOADED_FROM_CACHE...).
func (h *HostParts) Property(key string) (string, error) { return h.core.Property(key) }

// CreateInferRequest returns a new request: one request per device part,
// and the host parts' kernels.
func (h *HostParts) CreateInferRequest() (driver.InferRequest, error) {
	if err := h.core.Check(); err != nil {
		return nil, err
	}
	return newHostPartsRequest(h)
}

// KeyPlacement is the runtime model's RT.Extra key that says where a node
// ran: "GPU part N" or "host part N: <why>".
const KeyPlacement = "PLACEMENT"

// RuntimeModel returns the transformed graph whose nodes carry what their
// device part's runtime model says (LAYER_TYPE, IMPL_TYPE, ...); host
// nodes carry IMPL_TYPE host:<reference kernel>. Every node has PLACEMENT.
func (h *HostParts) RuntimeModel() (*graph.Model, error) {
	rm, nodes, err := h.core.RuntimeGraph(h.model)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*graph.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	order := 0
	for k, pt := range h.parts {
		if pt.host {
			for _, n := range pt.nodes {
				rn := byName[n.Name]
				h.core.Annotate(rn, order, "host:"+hostImpl(n))
				rn.RT.Extra[KeyPlacement] = fmt.Sprintf("host part %d: %s", k, hostPartReason(n))
				order++
			}
			continue
		}
		sm, err := pt.gpu.RuntimeModel()
		if err != nil {
			return nil, fmt.Errorf("gpu: runtime model of part %d: %w", k, err)
		}
		snodes, err := sm.Nodes()
		if err != nil {
			return nil, fmt.Errorf("gpu: runtime model of part %d: %w", k, err)
		}
		for _, sn := range snodes {
			rn, ok := byName[sn.Name]
			if !ok || sn.OpType == graph.OpParameter || sn.OpType == graph.OpResult || sn.OpType == graph.OpConstant {
				continue
			}
			if rn.RT.Extra == nil {
				rn.RT.Extra = map[string]string{}
			}
			for key, v := range sn.RT.Extra {
				rn.RT.Extra[key] = v
			}
			if o, err := strconv.Atoi(sn.RT.Extra[driver.RuntimeExecutionOrder]); err == nil {
				rn.RT.Extra[driver.RuntimeExecutionOrder] = strconv.Itoa(order + o)
			}
			rn.RT.Extra[KeyPlacement] = fmt.Sprintf("GPU part %d", k)
		}
		order += len(snodes)
	}
	return rm, nil
}

// Export writes the model as CompiledModel.Export does: the transformed
// graph, whole (ImportModel places its host parts again), and the program
// binaries of every device part.
func (h *HostParts) Export(w io.Writer) error {
	enc, err := h.core.ExportGraph(h.model)
	if err != nil {
		return err
	}
	sections := []driver.BlobSection{{Name: graphSection, Data: enc}}
	for _, pt := range h.parts {
		if pt.gpu == nil {
			continue
		}
		progs, err := pt.gpu.programSections()
		if err != nil {
			return err
		}
		sections = append(sections, progs...)
	}
	return driver.WriteBlob(w, &driver.Blob{
		Header:   h.core.Header(DeviceName, h.dev.architecture, exportConfig(h.core.Props())),
		Sections: sections,
	})
}

// Close closes the device parts. It is idempotent.
func (h *HostParts) Close() error {
	if !h.core.MarkClosed() {
		return nil
	}
	return h.closeParts()
}

func (h *HostParts) closeParts() error {
	var errs []error
	for k, pt := range h.parts {
		if pt.gpu != nil {
			if err := pt.gpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("gpu: closing part %d: %w", k, err))
			}
		}
	}
	return errors.Join(errs...)
}
