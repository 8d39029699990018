package driver

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// ModelCore is the part of a compiled model every device shares: its
// ports, its properties, whether it is closed and the latest profiled time
// of each node, with the same checks and messages on every device. A
// device keeps one in an unexported field, calls Init once its properties
// are known, forwards Inputs, Outputs and Property to it and marks it
// closed in its Close. It is safe for concurrent use.
type ModelCore struct {
	prefix, name    string
	props           *Properties
	inputs, outputs []PortInfo

	closed   closedFlag
	mu       sync.Mutex // guards perf and resolved
	perf     map[string]time.Duration
	resolved map[string]string
}

// Init sets the ports from m's Parameters and Results and the compiled
// model's properties; prefix starts the error messages ("cpu").
func (c *ModelCore) Init(prefix string, m *graph.Model, props *Properties) {
	c.prefix, c.name, c.props = prefix, m.Name, props
	c.inputs, c.outputs = m.Inputs(), m.Outputs()
}

// Inputs returns a copy of the model's input descriptions.
func (c *ModelCore) Inputs() []PortInfo { return ClonePorts(c.inputs) }

// Outputs returns a copy of the model's output descriptions.
func (c *ModelCore) Outputs() []PortInfo { return ClonePorts(c.outputs) }

// Input returns input i's description (not a copy: do not modify it).
func (c *ModelCore) Input(i int) PortInfo { return c.inputs[i] }

// Output returns output i's description (not a copy: do not modify it).
func (c *ModelCore) Output(i int) PortInfo { return c.outputs[i] }

// InputIndex returns the index of the input called name, or -1.
func (c *ModelCore) InputIndex(name string) int { i, _ := portIndex(c.inputs, name); return i }

// OutputIndex returns the index of the output called name, or -1.
func (c *ModelCore) OutputIndex(name string) int { i, _ := portIndex(c.outputs, name); return i }

// ClonePorts returns a deep copy of ports (their shapes cloned), for the
// Inputs and Outputs of a compiled model that must not hand out its own.
func ClonePorts(ps []PortInfo) []PortInfo {
	out := make([]PortInfo, len(ps))
	for i, p := range ps {
		out[i] = p.Clone()
	}
	return out
}

// Property returns the compiled model's configuration or a read-only fact
// of its properties, or the value Resolve gave key; it fails with
// ErrClosed once the model is closed.
func (c *ModelCore) Property(key string) (string, error) {
	c.mu.Lock()
	v, ok := c.resolved[CanonicalKey(key)]
	c.mu.Unlock()
	if ok {
		if err := c.Check(); err != nil {
			return "", err
		}
		return v, nil
	}
	return property(c.prefix, c.Check, c.props, key)
}

// Resolve makes Property answer value for key: what a setting such as
// NUM_STREAMS=AUTO resolved to when the device planned the model. The
// properties (Props, and so the configuration an Export carries) keep
// the setting itself.
func (c *ModelCore) Resolve(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resolved == nil {
		c.resolved = map[string]string{}
	}
	c.resolved[key] = value
}

// Check returns an error wrapping ErrClosed once the model is closed.
func (c *ModelCore) Check() error {
	if c.Closed() {
		return fmt.Errorf("%s: compiled model %q: %w", c.prefix, c.name, ErrClosed)
	}
	return nil
}

// Closed reports whether MarkClosed was called.
func (c *ModelCore) Closed() bool { return c.closed.get() }

// MarkClosed marks the model closed and reports whether it was open, so
// that a device's Close releases its resources once.
func (c *ModelCore) MarkClosed() bool { return c.closed.mark() }

// RecordPerf keeps the latest profiled time of every node of prof (stages
// aside) for the runtime model's PERF_COUNTER.
func (c *ModelCore) RecordPerf(prof []ProfilingInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range prof {
		if p.NodeType == "Stage" {
			continue
		}
		if c.perf == nil {
			c.perf = map[string]time.Duration{}
		}
		c.perf[p.NodeName] = p.RealTime
	}
}

// PerfCounter returns node's latest profiled time in microseconds, as
// the runtime model's PERF_COUNTER shows it; ok is false before a profiled
// request ran it.
func (c *ModelCore) PerfCounter(node string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.perf[node]
	return strconv.FormatInt(d.Microseconds(), 10), ok
}

// Props returns the compiled model's properties.
func (c *ModelCore) Props() *Properties { return c.props }

// SetProps replaces the compiled model's properties (an imported model
// adds LOADED_FROM_CACHE).
func (c *ModelCore) SetProps(p *Properties) { c.props = p }

// RuntimeGraph starts a RuntimeModel: it fails with ErrClosed once the
// model is closed, else returns a clone of m (the executed graph) and its
// nodes in topological order.
func (c *ModelCore) RuntimeGraph(m *graph.Model) (*graph.Model, []*graph.Node, error) {
	if err := c.Check(); err != nil {
		return nil, nil, err
	}
	rm := m.Clone()
	nodes, err := rm.Nodes()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: runtime model: %w", c.prefix, err)
	}
	return rm, nodes, nil
}

// Annotate records on a node of the runtime model what ran it:
// LAYER_TYPE, EXECUTION_ORDER, IMPL_TYPE, ORIGINAL_NAMES,
// RUNTIME_PRECISION (NodePrecision) and, once a profiled request has run
// it, PERF_COUNTER (microseconds).
func (c *ModelCore) Annotate(n *graph.Node, order int, impl string) {
	if n.RT.Extra == nil {
		n.RT.Extra = map[string]string{}
	}
	n.RT.Extra[RuntimeLayerType] = n.OpType
	n.RT.Extra[RuntimeExecutionOrder] = strconv.Itoa(order)
	n.RT.Extra[RuntimeImplType] = impl
	n.RT.Extra[RuntimeOriginalNames] = strings.Join(n.OriginalNames(), ",")
	if p := NodePrecision(n); p != tensor.Undefined {
		n.RT.Extra[RuntimePrecision] = p.String()
	}
	if us, ok := c.PerfCounter(n.Name); ok {
		n.RT.Extra[RuntimePerfCounter] = us
	}
}

// ExportGraph starts an Export: it fails with ErrClosed once the model is
// closed, else returns m (the graph the blob carries) marshalled.
func (c *ModelCore) ExportGraph(m *graph.Model) ([]byte, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	enc, err := m.MarshalBinary()
	if err != nil {
		return nil, errorf(ErrInvalidArgument, "%s: export model %q: %w", c.prefix, c.name, err)
	}
	return enc, nil
}

// Header is the blob header of an Export: device, architecture and
// configuration as given, and the model's ports.
func (c *ModelCore) Header(device, arch string, config map[string]string) BlobHeader {
	return BlobHeader{Device: device, Architecture: arch, Config: config, Inputs: c.Inputs(), Outputs: c.Outputs()}
}

// NodePrecision is the element type node n computes in: that of its first
// floating-point output (an f16 node writes f16 values, computing in float
// inside a kernel only as OpenVINO's GPU f16 path does), else of its first
// floating-point input (a comparison, an ArgMax), else of its first
// output; Undefined for a node without ports. The integer convolutions
// and products compute in their 8-bit data's type (u8, i8), whatever
// their output (graph.IntegerPrecision).
func NodePrecision(n *graph.Node) tensor.ElementType {
	if t := graph.IntegerPrecision(n); t != tensor.Undefined {
		return t
	}
	for _, o := range n.Outputs {
		if o.Type.IsFloat() {
			return o.Type
		}
	}
	for _, in := range n.Inputs {
		if in.Valid() && in.Type().IsFloat() {
			return in.Type()
		}
	}
	if len(n.Outputs) > 0 {
		return n.Outputs[0].Type
	}
	return tensor.Undefined
}
