package cpufallback

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// step is one node of the plan.
type step struct {
	node *graph.Node
	k    ref.Kernel // nil for Parameter, Constant and Result
	impl string
	in   []int // value slot per input; -1 for an omitted optional input
	out  []int // value slot per output
	free []int // slots whose last reader is this step
}

// CompiledModel is a model compiled for the CPU: the cloned, shape-inferred
// graph and its execution plan. It is safe for concurrent use; requests
// share its constants read-only.
type CompiledModel struct {
	model     *graph.Model
	core      driver.ModelCore // ports, properties, closed, profiled times
	profiling bool

	steps     []step
	numSlots  int
	consts    map[int]*tensor.Tensor // slot -> constant value
	paramSlot []int                  // per model input
	resultIn  []int                  // per model output: the slot it reads

	maxHost    int64 // MAX_HOST_MEMORY
	constBytes int64 // the constants' bytes, held by every inference
	// staticPeak is set when compile checked the peak with every shape
	// known; otherwise peakFor checks it per input shapes (budget.go).
	staticPeak bool
	shapeParam []bool          // per input: its value decides shapes (shapeParams)
	peaks      driver.Verdicts // peakFor's, by input shapes

	async driver.AsyncSupport // executors and running requests; see stages.go
}

var _ driver.CompiledModel = (*CompiledModel)(nil)

// compile builds the plan for a clone of m under configuration cfg.
func compile(ctx context.Context, p *Plugin, m *graph.Model, cfg *driver.Properties) (*CompiledModel, error) {
	model := m.Clone()
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: compile model %q: %w", m.Name, err)
	}
	for _, n := range nodes {
		if !p.supports(n) {
			op := n.OpType
			if n.Domain != "" {
				op = n.Domain + "." + op
			}
			return nil, driver.Errorf(driver.ErrUnsupported, "cpu: compile model %q: node %q: op %s has no CPU kernel", m.Name, n.Name, op)
		}
	}
	if err := model.InferShapes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: compile model %q: %w", m.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cpu: compile: %w", err)
	}
	cm := &CompiledModel{model: model, consts: map[int]*tensor.Tensor{}}
	props := cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, strconv.Itoa(optimalRequests(cfg))),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, DeviceName),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
	)
	cm.core.Init("cpu", model, props)
	conf, err := driver.ParseConfig(props)
	if err != nil {
		return nil, fmt.Errorf("cpu: compile: %w", err)
	}
	cm.profiling = conf.EnableProfiling
	cm.maxHost = conf.MaxHostMemory
	cm.initAsync(p, conf)

	// Assign a slot to every output port.
	slots := map[graph.Output]int{}
	for _, n := range nodes {
		for i := range n.Outputs {
			slots[n.Out(i)] = cm.numSlots
			cm.numSlots++
		}
	}
	lastUse := make([]int, cm.numSlots)
	for i := range lastUse {
		lastUse[i] = -1
	}
	for _, n := range nodes {
		st := step{node: n, out: make([]int, len(n.Outputs))}
		for i := range n.Outputs {
			st.out[i] = slots[n.Out(i)]
		}
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
		case graph.OpConstant:
			if n.Value == nil {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: compile model %q: constant %q has no value", m.Name, n.Name)
			}
			// Converted once here, shared read-only by every request.
			cm.consts[st.out[0]] = n.Value.Contiguous()
		default:
			// Nodes with bodies get their bodies planned once, here.
			if st.k, err = ref.Prepare(n); err != nil {
				return nil, driver.Errorf(driver.ErrUnsupported, "cpu: compile model %q: %w", m.Name, err)
			}
			st.impl = ref.Impl(n)
		}
		st.in = make([]int, len(n.Inputs))
		for i, in := range n.Inputs {
			st.in[i] = -1
			if in.Valid() {
				s := slots[in]
				st.in[i] = s
				lastUse[s] = len(cm.steps)
			}
		}
		cm.steps = append(cm.steps, st)
	}
	for i, last := range lastUse {
		if last >= 0 && cm.consts[i] == nil {
			cm.steps[last].free = append(cm.steps[last].free, i)
		}
	}
	for _, n := range model.Parameters {
		cm.paramSlot = append(cm.paramSlot, slots[n.Out(0)])
	}
	for _, n := range model.Results {
		if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: compile model %q: result %q has no input", m.Name, n.Name)
		}
		cm.resultIn = append(cm.resultIn, slots[n.Inputs[0]])
	}
	for _, v := range cm.consts {
		cm.constBytes += v.ByteSize()
	}
	if cm.staticPeak, err = cm.checkPeak(cm.maxHost, staticShapes); err != nil {
		return nil, err
	}
	cm.shapeParam = shapeParams(model)
	return cm, nil
}

// Inputs describes the model inputs.
func (c *CompiledModel) Inputs() []driver.PortInfo { return c.core.Inputs() }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []driver.PortInfo { return c.core.Outputs() }

// Property returns the compiled model's configuration or a read-only fact
// (NETWORK_NAME, OPTIMAL_NUMBER_OF_INFER_REQUESTS, EXECUTION_DEVICES).
func (c *CompiledModel) Property(key string) (string, error) { return c.core.Property(key) }

// CreateInferRequest returns a new request. Inputs with static shapes start
// bound to zero tensors.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return newInferRequest(c)
}

// RuntimeModel returns a clone of the executed graph whose nodes carry
// RT.Extra LAYER_TYPE, EXECUTION_ORDER, IMPL_TYPE, ORIGINAL_NAMES and, once
// a profiled request has run, PERF_COUNTER (microseconds).
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	rm, nodes, err := c.core.RuntimeGraph(c.model)
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		impl := "ref_" + strings.ToLower(n.OpType)
		if i < len(c.steps) && c.steps[i].impl != "" {
			impl = c.steps[i].impl
		}
		c.core.Annotate(n, i, impl)
	}
	return rm, nil
}

// Close releases the compiled model; its requests fail afterwards.
func (c *CompiledModel) Close() error {
	err := c.closeAsync() // waits for running requests
	c.core.MarkClosed()
	return err
}

func (c *CompiledModel) check() error { return c.core.Check() }
