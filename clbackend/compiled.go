package clbackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// buildOptions are added to every catalogue entry's options: the kernels
// are OpenCL C 1.2.
const buildOptions = "-cl-std=CL1.2"

// workGroupMultiple is what global sizes are rounded up to; the kernels
// bounds-check the extra work items.
const workGroupMultiple = 64

// slot is one value of the plan: a node output, held in a device buffer.
type slot struct {
	typ   tensor.ElementType
	shape tensor.Shape
	bytes int
	value *tensor.Tensor // constants: uploaded once by the compiled model
}

// launch is one kernel of the plan.
type launch struct {
	node   *graph.Node
	kernel kernels.Kernel
	prog   *cl.Program
	in     []int // input slots
	out    int   // output slot
	n      int64 // elements the kernel covers
	scalar []uint32
	global int
}

// CompiledModel is a model compiled for one GPU device: the cloned,
// shape-inferred graph, its launch plan, the built programs (shared with
// the plugin's cache) and the weights on the device. It is safe for
// concurrent use; its requests share the weights read-only.
type CompiledModel struct {
	dev       *device
	ctx       *shared[*cl.Context]
	model     *graph.Model
	props     *plugin.Properties
	profiling bool
	inputs    []plugin.PortInfo
	outputs   []plugin.PortInfo

	slots      []slot
	launches   []launch
	paramSlot  []int
	resultSlot []int
	order      map[*graph.Node]int // execution order of every node
	impl       map[*graph.Node]string
	progs      []*shared[*cl.Program]
	constBufs  map[int]*cl.MemObject

	// running is held for reading by every Infer and for writing by Close,
	// so Close waits for inferences on the device to end.
	running sync.RWMutex

	mu       sync.Mutex
	closed   bool
	requests map[*InferRequest]struct{}
	perf     map[string]time.Duration
}

var _ plugin.CompiledModel = (*CompiledModel)(nil)

// compile plans a clone of m for device d under configuration cfg.
func compile(ctx context.Context, p *Plugin, d *device, m *graph.Model, cfg *plugin.Properties) (_ *CompiledModel, err error) {
	model := m.Clone()
	if _, err := model.Nodes(); err != nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	if err := model.InferShapes(); err != nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	kernelOf := make(map[*graph.Node]string, len(nodes))
	for _, n := range nodes {
		k, why := support(n)
		if why != "" {
			return nil, plugin.Errorf(plugin.ErrUnsupported, "gpu: compile model %q for %s: node %q: op %s: %s", m.Name, d.name(), n.Name, n.OpType, why)
		}
		kernelOf[n] = k
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}

	cm := &CompiledModel{dev: d, model: model, order: map[*graph.Node]int{}, impl: map[*graph.Node]string{},
		constBufs: map[int]*cl.MemObject{}, requests: map[*InferRequest]struct{}{}, perf: map[string]time.Duration{}}
	cm.props = cfg.Extend(
		plugin.ReadOnlySpec(plugin.KeyNetworkName, m.Name),
		plugin.ReadOnlySpec(plugin.KeyOptimalNumberOfInferRequests, strconv.Itoa(optimalRequests(cfg))),
		plugin.ReadOnlySpec(plugin.KeyExecutionDevices, d.name()),
		plugin.ReadOnlySpec(plugin.KeyLoadedFromCache, "NO"),
	)
	conf, err := plugin.ParseConfig(cm.props)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	cm.profiling = conf.EnableProfiling

	cm.ctx, err = d.context()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = cm.release()
		}
	}()

	slotOf := map[graph.Output]int{}
	for i, n := range nodes {
		cm.order[n] = i
		for oi, o := range n.Outputs {
			s, _ := o.Shape.ToShape()
			sl := slot{typ: o.Type, shape: s, bytes: int(s.NumElements()) * o.Type.Size()}
			if n.OpType == graph.OpConstant {
				sl.value = n.Value.Contiguous()
			}
			slotOf[n.Out(oi)] = len(cm.slots)
			cm.slots = append(cm.slots, sl)
		}
		switch n.OpType {
		case graph.OpParameter:
			cm.impl[n] = "parameter"
			continue
		case graph.OpConstant:
			cm.impl[n] = "constant"
			continue
		case graph.OpResult:
			cm.impl[n] = "result"
			continue
		}
		k, err := kernels.Lookup(kernelOf[n])
		if err != nil {
			return nil, plugin.Errorf(plugin.ErrUnsupported, "gpu: compile model %q: node %q: %w", m.Name, n.Name, err)
		}
		prog, err := cm.program(p, k)
		if err != nil {
			return nil, fmt.Errorf("gpu: compile model %q: node %q: %w", m.Name, n.Name, err)
		}
		l := launch{node: n, kernel: k, prog: prog, out: slotOf[n.Out(0)]}
		for _, in := range n.Inputs {
			l.in = append(l.in, slotOf[in])
		}
		out := cm.slots[l.out]
		l.n = int64(out.bytes / out.typ.Size())
		switch k.Name {
		case "copy_words":
			l.n = int64(out.bytes / 4)
		case "copy_bytes":
			l.n = int64(out.bytes)
		case "add_f32", "mul_f32":
			for _, s := range l.in {
				l.scalar = append(l.scalar, boolU32(cm.slots[s].shape.NumElements() == 1 && l.n != 1))
			}
		}
		l.global = int((l.n + workGroupMultiple - 1) / workGroupMultiple * workGroupMultiple)
		cm.impl[n] = k.Name + ":" + k.Entry
		cm.launches = append(cm.launches, l)
	}
	for _, n := range model.Parameters {
		cm.paramSlot = append(cm.paramSlot, slotOf[n.Out(0)])
		cm.inputs = append(cm.inputs, plugin.PortInfo{Name: n.Name, Type: n.Outputs[0].Type, Shape: n.Outputs[0].Shape.Clone()})
	}
	for _, n := range model.Results {
		if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
			return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: compile model %q: result %q has no input", m.Name, n.Name)
		}
		cm.resultSlot = append(cm.resultSlot, slotOf[n.Inputs[0]])
		cm.outputs = append(cm.outputs, plugin.PortInfo{Name: n.Name, Type: n.Outputs[0].Type, Shape: n.Outputs[0].Shape.Clone()})
	}
	// Weights go to the device once; every request reads them.
	for i, s := range cm.slots {
		if s.value == nil {
			continue
		}
		data := s.value.Bytes()
		if len(data) == 0 {
			data = make([]byte, 4)
		}
		buf, err := cm.ctx.val.CreateBuffer(cl.MemReadOnly, data)
		if err != nil {
			return nil, plugin.Errorf(plugin.ErrDevice, "gpu: compile model %q: uploading constant of %s (%d bytes) to %s: %w", m.Name, s.shape, s.bytes, d.name(), err)
		}
		cm.constBufs[i] = buf
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	return cm, nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// program returns the built program of k, taking a reference the compiled
// model releases on Close.
func (c *CompiledModel) program(p *Plugin, k kernels.Kernel) (*cl.Program, error) {
	src, err := k.Source()
	if err != nil {
		return nil, err
	}
	dir, err := c.props.Get(plugin.KeyCacheDir)
	if err != nil {
		return nil, err
	}
	opts := strings.TrimSpace(buildOptions + " " + k.Options)
	sp, err := p.cache.program(c.dev, c.ctx.val, k.File, src, opts, dir)
	if err != nil {
		return nil, err
	}
	c.progs = append(c.progs, sp)
	return sp.val, nil
}

// Inputs describes the model inputs.
func (c *CompiledModel) Inputs() []plugin.PortInfo { return clonePorts(c.inputs) }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []plugin.PortInfo { return clonePorts(c.outputs) }

func clonePorts(ps []plugin.PortInfo) []plugin.PortInfo {
	out := make([]plugin.PortInfo, len(ps))
	for i, p := range ps {
		out[i] = plugin.PortInfo{Name: p.Name, Type: p.Type, Shape: p.Shape.Clone()}
	}
	return out
}

// Property returns the compiled model's configuration or a read-only fact
// (NETWORK_NAME, OPTIMAL_NUMBER_OF_INFER_REQUESTS, EXECUTION_DEVICES,
// LOADED_FROM_CACHE, and the device's facts).
func (c *CompiledModel) Property(key string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	return c.props.Get(key)
}

// CreateInferRequest returns a new request with its own command queue,
// activation buffers and kernels; inputs start bound to zero tensors.
func (c *CompiledModel) CreateInferRequest() (plugin.InferRequest, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, c.closedErr()
	}
	r, err := newInferRequest(c)
	if err != nil {
		return nil, err
	}
	c.requests[r] = struct{}{}
	return r, nil
}

// RuntimeModel returns a clone of the executed graph whose nodes carry
// RT.Extra LAYER_TYPE, EXECUTION_ORDER, IMPL_TYPE (catalogue name and
// kernel entry), ORIGINAL_NAMES and, once a profiled request has run,
// PERF_COUNTER (microseconds of device time).
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rm := c.model.Clone()
	nodes, err := rm.Nodes()
	if err != nil {
		return nil, fmt.Errorf("gpu: runtime model: %w", err)
	}
	orig, err := c.model.Nodes()
	if err != nil || len(orig) != len(nodes) {
		return nil, fmt.Errorf("gpu: runtime model: the graph changed (%v)", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range nodes {
		if n.RT.Extra == nil {
			n.RT.Extra = map[string]string{}
		}
		n.RT.Extra["LAYER_TYPE"] = n.OpType
		n.RT.Extra["EXECUTION_ORDER"] = strconv.Itoa(c.order[orig[i]])
		n.RT.Extra["IMPL_TYPE"] = c.impl[orig[i]]
		n.RT.Extra["ORIGINAL_NAMES"] = strings.Join(n.OriginalNames(), ",")
		if d, ok := c.perf[n.Name]; ok {
			n.RT.Extra["PERF_COUNTER"] = strconv.FormatInt(d.Microseconds(), 10)
		}
	}
	return rm, nil
}

// Close waits for running inferences, closes the model's requests and
// releases its weights, programs and context reference. It is idempotent.
func (c *CompiledModel) Close() error {
	c.running.Lock()
	defer c.running.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	reqs := c.requests
	c.requests = nil
	c.mu.Unlock()
	var errs []error
	for r := range reqs {
		errs = append(errs, r.release())
	}
	errs = append(errs, c.release())
	if err := errors.Join(errs...); err != nil {
		return plugin.Errorf(plugin.ErrDevice, "gpu: close compiled model %q: %w", c.model.Name, err)
	}
	return nil
}

// release frees the device resources the compiled model owns.
func (c *CompiledModel) release() error {
	var errs []error
	for _, b := range c.constBufs {
		errs = append(errs, b.Close())
	}
	c.constBufs = nil
	for _, p := range c.progs {
		errs = append(errs, p.release())
	}
	c.progs = nil
	if c.ctx != nil {
		errs = append(errs, c.ctx.release())
		c.ctx = nil
	}
	return errors.Join(errs...)
}

// forget drops a closed request from the model's list.
func (c *CompiledModel) forget(r *InferRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.requests, r)
}

func (c *CompiledModel) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.closedErr()
	}
	return nil
}

func (c *CompiledModel) closedErr() error {
	return fmt.Errorf("gpu: compiled model %q: %w", c.model.Name, plugin.ErrClosed)
}

// recordPerf keeps the latest profiled time of every node for
// RuntimeModel.
func (c *CompiledModel) recordPerf(prof []plugin.ProfilingInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range prof {
		if p.NodeType != "Stage" {
			c.perf[p.NodeName] = p.RealTime
		}
	}
}
