package drivertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	)
	specs = append(specs, driver.StreamSpecs(fakeStreams)...)
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
	if err := p.check(); err != nil {
		return nil, err
	}
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
	cprops := cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, "1"),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, p.name),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
	)
	conf, err := driver.ParseConfig(cprops)
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
	c.core.Init("drivertest", c.model, cprops)
	c.core.Resolve(driver.KeyNumStreams, strconv.Itoa(fakeStreams))
	return c, nil
}

// CompiledModel is the fake's compiled model.
type CompiledModel struct {
	faults    Faults
	model     *graph.Model
	order     []*graph.Node
	core      driver.ModelCore // ports, properties, closed
	profiling bool
	async     asyncState // see async.go
}

// Inputs implements driver.CompiledModel.
func (c *CompiledModel) Inputs() []driver.PortInfo { return c.core.Inputs() }

// Outputs implements driver.CompiledModel.
func (c *CompiledModel) Outputs() []driver.PortInfo { return c.core.Outputs() }

// Property implements driver.CompiledModel.
func (c *CompiledModel) Property(key string) (string, error) { return c.core.Property(key) }

// RuntimeModel implements driver.CompiledModel.
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	rm, _, err := c.core.RuntimeGraph(c.model)
	return rm, err
}

// Close implements driver.CompiledModel: it waits for running
// asynchronous requests.
func (c *CompiledModel) Close() error {
	err := c.async.close()
	c.core.MarkClosed()
	return err
}

// CreateInferRequest implements driver.CompiledModel. Inputs with static
// shapes start as zero tensors.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	if err := c.core.Check(); err != nil {
		return nil, err
	}
	r := &InferRequest{c: c}
	ins, outs := c.Inputs(), c.Outputs()
	if c.faults.SkipShapeCheck {
		for _, ps := range [][]driver.PortInfo{ins, outs} {
			for i := range ps {
				ps[i].Shape = graph.DynamicRank
			}
		}
	}
	r.core.Init("drivertest", ins, outs)
	for i, in := range c.Inputs() {
		if s, ok := in.Shape.ToShape(); ok {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				return nil, fmt.Errorf("drivertest: input %q: %w", in.Name, err)
			}
			r.core.IO.In[i] = t
		}
	}
	return r, nil
}

// InferRequest is the fake's request, on driver.RequestCore.
type InferRequest struct {
	c    *CompiledModel
	core driver.RequestCore
}

// SetTensor implements driver.InferRequest.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	return r.core.SetTensor(name, t)
}

// Tensor implements driver.InferRequest.
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) { return r.core.Tensor(name) }

// Infer implements driver.InferRequest.
func (r *InferRequest) Infer(ctx context.Context) error {
	return r.core.RunInline(ctx, []driver.Stage{{Name: "infer", Executor: driver.ExecutorTask, Run: r.run}})
}

// run computes the outputs of the bound inputs.
func (r *InferRequest) run(ctx context.Context) error {
	in, out, userOut, err := r.core.Begin(ctx, r.c.model.Name, r.c.core.Check, nil)
	if err != nil {
		return err
	}
	start := time.Now()
	vals := map[graph.Output]*tensor.Tensor{}
	results := make([]*tensor.Tensor, len(r.c.model.Results))
	var prof []driver.ProfilingInfo
	for _, n := range r.c.order {
		t0 := time.Now()
		switch n.OpType {
		case graph.OpParameter:
			vals[n.Out(0)] = in[slices.Index(r.c.model.Parameters, n)]
			continue
		case graph.OpConstant:
			vals[n.Out(0)] = n.Value
			continue
		case graph.OpResult:
			i := slices.Index(r.c.model.Results, n)
			v := vals[n.Inputs[0]]
			if userOut[i] {
				// A tensor the user bound receives the result.
				if err := out[i].CopyFrom(v); err != nil {
					return fmt.Errorf("drivertest: output %q: %w", n.Name, err)
				}
				continue
			}
			results[i] = v.Contiguous().Clone()
			continue
		case "Identity":
			vals[n.Out(0)] = vals[n.Inputs[0]].Contiguous().Clone()
		case "Relu":
			x := vals[n.Inputs[0]]
			y := x.Contiguous().Clone()
			if r.c.faults.ModifyInput {
				y = x
			}
			ys := y.F32()
			for i, v := range ys {
				if v < 0 {
					ys[i] = 0
				}
			}
			vals[n.Out(0)] = y
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
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(results)
	r.core.Prof = prof
	return nil
}

// ProfilingInfo implements driver.InferRequest.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo { return r.core.ProfilingInfo() }

// Close implements driver.InferRequest.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.core.Busy {
		return driver.Errorf(driver.ErrBusy, "drivertest: close a running infer request")
	}
	r.core.Closed = true
	return nil
}
