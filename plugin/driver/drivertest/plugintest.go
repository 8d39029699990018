package drivertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Faults are deliberate bugs the fake can have, to show a conformance suite
// detects them. The zero value is a correct device.
type Faults struct {
	// ModifyInput makes Infer apply Relu to the input tensor in place.
	ModifyInput bool
	// AcceptAnyStreams accepts any NUM_STREAMS value.
	AcceptAnyStreams bool
	// PartialSet applies the valid entries of a failed SetProperties.
	PartialSet bool
	// IgnoreCompileProps makes compiled models use the plugin's properties
	// only.
	IgnoreCompileProps bool
	// NoProfiling never records profiling entries.
	NoProfiling bool
	// SkipShapeCheck lets SetTensor accept any shape.
	SkipShapeCheck bool
}

// Plugin is the fake device. It supports Parameter, Constant, Result, Relu
// and Identity on f32 tensors and implements driver.Querier.
type Plugin struct {
	name   string
	faults Faults
	props  *driver.Properties

	mu     sync.Mutex
	closed bool
}

// New returns a fake device called name with the given faults.
func New(name string, faults Faults) *Plugin {
	p := &Plugin{name: name, faults: faults}
	specs := append(driver.CommonSpecs(),
		driver.PrecisionSpec(tensor.F32, tensor.F32),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, "clinfer fake device "+name),
		driver.ReadOnlySpec(driver.KeyAvailableDevices, ""),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, "fake"),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, "FP32"),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, "1 4 1"),
		driver.ReadOnlySpec(driver.KeyRangeForStreams, "1 2"),
	)
	if faults.AcceptAnyStreams {
		specs = append(specs, driver.PropertySpec{Key: driver.KeyNumStreams, Mutable: true, Default: "AUTO", Accepted: "anything"})
	}
	p.props = driver.NewProperties(specs...)
	return p
}

// Factory returns a driver.Factory for New(name, faults).
func Factory(name string, faults Faults) driver.Factory {
	return func() (driver.Plugin, error) { return New(name, faults), nil }
}

// Name implements driver.Plugin.
func (p *Plugin) Name() string { return p.name }

// Property implements driver.Plugin.
func (p *Plugin) Property(key string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	return p.props.Get(key)
}

// SetProperties implements driver.Plugin.
func (p *Plugin) SetProperties(props map[string]string) error {
	if err := p.check(); err != nil {
		return err
	}
	if p.faults.PartialSet {
		var first error
		for k, v := range props {
			if err := p.props.Set(map[string]string{k: v}); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return p.props.Set(props)
}

func (p *Plugin) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("drivertest: device %s: %w", p.name, driver.ErrClosed)
	}
	return nil
}

// Close implements driver.Plugin.
func (p *Plugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

var supported = map[string]bool{
	graph.OpParameter: true, graph.OpConstant: true, graph.OpResult: true,
	"Relu": true, "Identity": true,
}

// QueryModel implements driver.Querier: every node of a supported op type.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("drivertest: %w", err)
	}
	out := map[string]string{}
	for _, n := range nodes {
		if supported[n.OpType] {
			out[n.Name] = p.name
		}
	}
	return out, nil
}

// CompileModel implements driver.Plugin.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := p.props.Clone()
	if !p.faults.IgnoreCompileProps {
		if err := cfg.Set(props); err != nil {
			return nil, err
		}
	}
	c := &CompiledModel{faults: p.faults, model: m.Clone()}
	c.props = cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, "1"),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, p.name),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
	)
	conf, err := driver.ParseConfig(c.props)
	if err != nil {
		return nil, err
	}
	c.profiling = conf.EnableProfiling
	nodes, err := c.model.Nodes()
	if err != nil {
		return nil, fmt.Errorf("drivertest: %w", err)
	}
	for _, n := range nodes {
		if !supported[n.OpType] {
			return nil, driver.Errorf(driver.ErrUnsupported, "drivertest: node %q: op %s is not supported", n.Name, n.OpType)
		}
		if n.OpType == "Relu" || n.OpType == "Identity" {
			if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "drivertest: node %q: want one input", n.Name)
			}
			n.Outputs[0].Type = n.Inputs[0].Type()
			n.Outputs[0].Shape = n.Inputs[0].Shape().Clone()
		}
		if n.OpType == graph.OpResult {
			n.Outputs[0].Type = n.Inputs[0].Type()
			n.Outputs[0].Shape = n.Inputs[0].Shape().Clone()
		}
		if n.Outputs[0].Type != tensor.F32 {
			return nil, driver.Errorf(driver.ErrUnsupported, "drivertest: node %q: element type %s (only f32)", n.Name, n.Outputs[0].Type)
		}
	}
	c.order = nodes
	for _, n := range c.model.Parameters {
		c.inputs = append(c.inputs, driver.PortInfo{Name: n.Name, Type: n.Outputs[0].Type, Shape: n.Outputs[0].Shape.Clone()})
	}
	for _, n := range c.model.Results {
		c.outputs = append(c.outputs, driver.PortInfo{Name: n.Name, Type: n.Outputs[0].Type, Shape: n.Outputs[0].Shape.Clone()})
	}
	return c, nil
}

// CompiledModel is the fake's compiled model.
type CompiledModel struct {
	faults    Faults
	model     *graph.Model
	order     []*graph.Node
	props     *driver.Properties
	profiling bool
	inputs    []driver.PortInfo
	outputs   []driver.PortInfo
	async     asyncState // see async.go
}

// Inputs implements driver.CompiledModel.
func (c *CompiledModel) Inputs() []driver.PortInfo {
	return append([]driver.PortInfo(nil), c.inputs...)
}

// Outputs implements driver.CompiledModel.
func (c *CompiledModel) Outputs() []driver.PortInfo {
	return append([]driver.PortInfo(nil), c.outputs...)
}

// Property implements driver.CompiledModel.
func (c *CompiledModel) Property(key string) (string, error) { return c.props.Get(key) }

// RuntimeModel implements driver.CompiledModel.
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) { return c.model.Clone(), nil }

// Close implements driver.CompiledModel: it waits for running
// asynchronous requests.
func (c *CompiledModel) Close() error { return c.async.close() }

// CreateInferRequest implements driver.CompiledModel. Inputs with static
// shapes start as zero tensors.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	r := &InferRequest{c: c, tensors: map[string]*tensor.Tensor{}}
	for _, in := range c.inputs {
		if s, ok := in.Shape.ToShape(); ok {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				return nil, fmt.Errorf("drivertest: input %q: %w", in.Name, err)
			}
			r.tensors[in.Name] = t
		}
	}
	return r, nil
}

// InferRequest is the fake's request.
type InferRequest struct {
	c       *CompiledModel
	mu      sync.Mutex
	tensors map[string]*tensor.Tensor
	prof    []driver.ProfilingInfo
}

// SetTensor implements driver.InferRequest.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	ports := append(r.c.Inputs(), r.c.Outputs()...)
	if r.c.faults.SkipShapeCheck {
		for i := range ports {
			ports[i].Shape = graph.DynamicRank
		}
	}
	if _, err := driver.CheckTensor(ports, name, t); err != nil {
		return fmt.Errorf("drivertest: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tensors[name] = t
	return nil
}

// Tensor implements driver.InferRequest.
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tensors[name]
	if !ok {
		names := make([]string, 0, len(r.tensors))
		for _, p := range append(r.c.Inputs(), r.c.Outputs()...) {
			names = append(names, p.Name)
		}
		return nil, driver.Errorf(driver.ErrNotFound, "drivertest: no tensor %q (ports: %s)", name, strings.Join(names, ", "))
	}
	return t, nil
}

// Infer implements driver.InferRequest.
func (r *InferRequest) Infer(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	vals := map[graph.Output]*tensor.Tensor{}
	var prof []driver.ProfilingInfo
	for _, n := range r.c.order {
		t0 := time.Now()
		switch n.OpType {
		case graph.OpParameter:
			t, ok := r.tensors[n.Name]
			if !ok {
				return driver.Errorf(driver.ErrInvalidArgument, "drivertest: input %q has no tensor", n.Name)
			}
			vals[n.Out(0)] = t
			continue
		case graph.OpConstant:
			vals[n.Out(0)] = n.Value
			continue
		case graph.OpResult:
			v := vals[n.Inputs[0]]
			if dst, ok := r.tensors[n.Name]; ok && dst.Shape().Equal(v.Shape()) {
				// A tensor the user bound receives the result.
				if err := dst.CopyFrom(v); err != nil {
					return fmt.Errorf("drivertest: output %q: %w", n.Name, err)
				}
				continue
			}
			r.tensors[n.Name] = v.Contiguous().Clone()
			continue
		case "Identity":
			vals[n.Out(0)] = vals[n.Inputs[0]].Contiguous().Clone()
		case "Relu":
			in := vals[n.Inputs[0]]
			out := in.Contiguous().Clone()
			if r.c.faults.ModifyInput {
				out = in
			}
			x := out.F32()
			for i, v := range x {
				if v < 0 {
					x[i] = 0
				}
			}
			vals[n.Out(0)] = out
		}
		if r.c.profiling && !r.c.faults.NoProfiling {
			d := time.Since(t0)
			prof = append(prof, driver.ProfilingInfo{NodeName: n.Name, NodeType: n.OpType, ExecType: "go_" + strings.ToLower(n.OpType), Status: driver.Executed, RealTime: d, CPUTime: d})
		}
	}
	if r.c.profiling && !r.c.faults.NoProfiling {
		d := time.Since(start)
		prof = append(prof, driver.ProfilingInfo{NodeName: "infer", NodeType: "Stage", ExecType: "go", Status: driver.Executed, RealTime: d, CPUTime: d})
	}
	r.prof = prof
	return nil
}

// ProfilingInfo implements driver.InferRequest.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]driver.ProfilingInfo(nil), r.prof...)
}

// Close implements driver.InferRequest.
func (r *InferRequest) Close() error { return nil }
