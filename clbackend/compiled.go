package clbackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// CompiledModel is a model compiled for one GPU device: the cloned,
// shape-inferred graph, its launch plans (one per set of input shapes,
// built once and cached), the built programs (shared with the plugin's
// cache) and the weights on the device, uploaded once and shared by every
// plan and request. It is safe for concurrent use.
type CompiledModel struct {
	dev *device
	// run is the device whose queues run the plans: dev, or its in-thread
	// companion (chooseRun); programs are built for it. Planning reads
	// dev's facts either way, so the plan is the same on both.
	run       *device
	ctx       *clContext // the context it runs in (one reference)
	model     *graph.Model
	core      driver.ModelCore // ports, properties, closed, profiled times
	profiling bool
	// commandBuffers: requests record their plans as command buffers
	// (GPU_COMMAND_BUFFERS on a device with cl_khr_command_buffer).
	commandBuffers bool
	// shapesStatic: every input shape is static (one plan for every
	// request), so that heuristics may follow sizes that a model with
	// dynamic dims would re-plan from built programs.
	shapesStatic bool
	// sharedIO: requests keep their ports' activation buffers in memory
	// the host shares (GPU_SHARED_HOST_IO on a device with it; staging.go).
	sharedIO bool
	// waitSpin is GPU_WAIT_SPIN_US: how long an inference's wait polls
	// before it blocks.
	waitSpin time.Duration
	hints    cl.QueueHints // of the queues its requests make
	cacheDir string
	// binaries is CACHE_MODE=OPTIMIZE_SPEED: Export and CACHE_DIR keep
	// the programs' device binaries.
	binaries bool
	tuning   *tuning // kernel variant configuration (variants.go)
	// compilerLog is set with LOG_LEVEL LOG_WARNING or above: programs are
	// built without -w, and a build that leaves a log (warnings) prints
	// it on stderr. Otherwise kernels are built with -w, so no compiler
	// output reaches the user's terminal.
	compilerLog bool
	hostParam   []bool
	// stateOut maps the state inputs of MAKE_STATEFUL to the outputs that
	// carry their next values, stateIn the other way (request_state.go).
	stateOut, stateIn map[int]int
	plugin            *Plugin

	// static is the plan of the declared input shapes, built at compile
	// time when they are static (nil otherwise).
	static *plan
	// conds are static's plans per outcome of its host conditions
	// (plan_conds.go; nil for none).
	conds *condPlans

	planMu sync.Mutex // serialises plan builds
	plans  map[string]*plan
	latest *plan // the plan the last inference used (under planMu)
	// lastRun is the last plan of the last inference's chain (a
	// continuation of latest when sizes were read back; under planMu).
	lastRun *plan

	shapeMu   sync.Mutex
	outShapes map[string][]tensor.Shape // OutputShapes' answers by plan key

	// elided: the model came from a model cache blob that left out the
	// Constants its plan record holds packed (ExportCached); only the
	// recorded plan can run it.
	elided bool
	// blob: the mapped model cache blob it was imported from (nil if none),
	// which the plan's recorded tensors lie in; release drops its reference.
	blob *hostMem

	wmu     sync.Mutex
	weights map[string]*cl.MemObject // Constant node name -> device copy
	wkeys   map[string]string        // Constant node name -> its key in the context's weights

	// running is held for reading by every Infer and for writing by Close,
	// so Close waits for inferences on the device to end.
	running sync.RWMutex

	mu       sync.Mutex
	requests map[*InferRequest]struct{}

	async driver.AsyncSupport // executors and running async requests; see async.go

	bg background // work after CompileModel returned: binaries, the cache blob
}

var _ driver.CompiledModel = (*CompiledModel)(nil)

// Compiled-model properties reporting the activation memory plan of the
// static input shapes: the bytes of the activation buffers after reuse by
// liveness, and the sum of all intermediate tensors.
const (
	KeyActivationBytesPlanned = "ACTIVATION_BYTES_PLANNED"
	KeyActivationBytesNaive   = "ACTIVATION_BYTES_NAIVE"
)

// compile plans a clone of m in context cc (whose reference it takes
// over: the compiled model's, or released on error) under configuration
// cfg.
func compile(ctx context.Context, p *Plugin, cc *clContext, m *graph.Model, cfg *driver.Properties) (_ *CompiledModel, err error) {
	d := cc.dev
	cm := &CompiledModel{dev: d, run: d, ctx: cc, plugin: p, plans: map[string]*plan{}, weights: map[string]*cl.MemObject{}, wkeys: map[string]string{},
		requests: map[*InferRequest]struct{}{}}
	ok := false
	defer func() {
		if !ok { // an error, or a panic ImportModel recovers from
			_ = cm.release()
		}
	}()
	model := m
	if !ownsModel(ctx) {
		model = m.Clone()
	}
	if _, err := model.Nodes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	if err := model.InferShapes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	cm.model = model
	cm.elided = model.HasElided()
	cm.core.Init("gpu", model, cfg)
	conf, err := driver.ParseConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	cm.profiling = conf.EnableProfiling
	if v, err := cfg.Get(KeyCommandBuffers); err == nil {
		b, err := driver.ParseBool(v)
		cm.commandBuffers = err == nil && b && d.cmdbufs
	}
	if v, err := cfg.Get(KeySharedHostIO); err == nil {
		b, err := driver.ParseBool(v)
		cm.sharedIO = err == nil && b && d.sharedIO
	}
	cm.waitSpin = waitSpinOf(cfg, conf.PerformanceHint)
	cm.compilerLog = conf.LogLevel >= driver.LogWarning
	if cm.cacheDir, err = cfg.Get(driver.KeyCacheDir); err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	mode, err := cfg.Get(driver.KeyCacheMode)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	cm.binaries = mode == driver.CacheModeOptimizeSpeed
	if cm.tuning, err = tuningOf(d, cfg, cm.cacheDir); err != nil {
		return nil, fmt.Errorf("gpu: compile model %q: %w", m.Name, err)
	}
	for _, n := range model.Parameters {
		cm.hostParam = append(cm.hostParam, isHostParam(model, n))
	}
	if err := cm.parseStates(cfg); err != nil {
		return nil, err
	}
	for _, n := range model.Results {
		if len(n.Inputs) != 1 || !n.Inputs[0].Valid() {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: result %q has no input", m.Name, n.Name)
		}
	}
	if err := checkSupport(model, nodes, cm.hostParam); err != nil {
		return nil, driver.Errorf(driver.ErrUnsupported, "gpu: compile model %q for %s: %w", m.Name, d.name(), err)
	}
	if err := checkDisabled(model, d, cfg); err != nil {
		return nil, err
	}
	if err := cm.checkContext(cfg); err != nil {
		return nil, err
	}
	threadMode := inThreadMode(cc, cfg)
	if threadMode == inThreadYes {
		cm.runOn(cc.inThread)
	}
	settled := threadMode == "" || planRecordOf(ctx) != nil || cm.decideInThread(threadMode, model)
	static := !slices.Contains(cm.hostParam, true)
	var shapes []tensor.Shape
	for _, in := range cm.core.Inputs() {
		s, ok := in.Shape.ToShape()
		static = static && ok
		shapes = append(shapes, s)
	}
	planned, naive := "0", "0"
	cm.shapesStatic = static
	if static {
		key := planKey(shapes, nil)
		pl, err := cm.restoreOrBuild(ctx, p, key, shapes)
		if err != nil {
			return nil, fmt.Errorf("gpu: compile model %q for %s: %w", m.Name, d.name(), err)
		}
		cm.static = pl
		cm.plans[key] = pl
		if err := cm.planConds(ctx, p); err != nil {
			return nil, fmt.Errorf("gpu: compile model %q for %s: %w", m.Name, d.name(), err)
		}
		if err := cm.settleInThread(ctx, p, settled, threadMode, key, shapes); err != nil {
			return nil, fmt.Errorf("gpu: compile model %q for %s: %w", m.Name, d.name(), err)
		}
		planned, naive = formatBytes(cm.static.planned), formatBytes(cm.static.naive)
	} else if !slices.Contains(cm.hostParam, true) && cm.tuning.mode == tune.None {
		// Dynamic input dims: plan one representative shape now so that
		// every program the model needs is built at compile time; a
		// request with another shape re-plans from built programs only.
		// (When tuning, the first inference's shapes are planned and tuned
		// instead: a probe plan of the same shapes would be reused
		// untuned.)
		if err := cm.probePlan(ctx, p); err != nil {
			return nil, fmt.Errorf("gpu: compile model %q for %s: %w", m.Name, d.name(), err)
		}
	}
	props := cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, strconv.Itoa(optimalRequests(cfg, d))),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, d.name()),
		driver.ReadOnlySpec(KeyOpenCLDevice, openCLName(cm.run)),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
		driver.ReadOnlySpec(KeyActivationBytesPlanned, planned),
		driver.ReadOnlySpec(KeyActivationBytesNaive, naive),
	)
	cm.core.SetProps(props)
	conf, err = driver.ParseConfig(props)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile model %q: %w", m.Name, err)
	}
	cm.initAsync(conf)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	if err := cm.warmUp(ctx); err != nil {
		return nil, err
	}
	if cm.cacheDir != "" && cm.binaries {
		// Off the compile's critical path: the model is usable now.
		var progs []*shared[*cl.Program]
		for _, pl := range cm.plans {
			progs = append(progs, pl.progs...)
		}
		cm.bg.run("writing program binaries to CACHE_DIR", func() error {
			return p.cache.saveBinaries(progs)
		})
	}
	ok = true
	return cm, nil
}

// checkDisabled refuses a model with a node whose op type GPU_DISABLED_OPS
// lists in cfg.
func checkDisabled(m *graph.Model, d *device, cfg *driver.Properties) error {
	off := disabledIn(cfg)
	if len(off) == 0 {
		return nil
	}
	nodes, err := m.Nodes()
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
	}
	for _, n := range nodes {
		if off[n.OpType] {
			return driver.Errorf(driver.ErrUnsupported, "gpu: compile model %q for %s: node %q: op %s is disabled by %s", m.Name, d.name(), n.Name, n.OpType, KeyDisabledOps)
		}
		if x := disabledInBodies(n, off); x != nil {
			return driver.Errorf(driver.ErrUnsupported, "gpu: compile model %q for %s: node %q: op %s of its bodies (node %q) is disabled by %s", m.Name, d.name(), n.Name, x.OpType, x.Name, KeyDisabledOps)
		}
	}
	return nil
}

// disabledInBodies returns a node of n's bodies (If branches, Loop and Scan
// bodies, at any depth) whose op type off lists, or nil: a node with a
// body runs whole on one device, so one disabled op in it disables it.
func disabledInBodies(n *graph.Node, off map[string]bool) *graph.Node {
	var hit *graph.Node
	n.BodiesAll(func(x *graph.Node) bool {
		if hit == nil && off[x.OpType] {
			hit = x
		}
		return hit == nil
	})
	return hit
}

// checkSupport finds, without shapes or values, a node that no plan could
// run (see unsupportedNodes).
func checkSupport(model *graph.Model, nodes []*graph.Node, hostParam []bool) error {
	bad := unsupportedNodes(model, nodes, hostParam)
	for _, n := range nodes {
		if why, ok := bad[n]; ok {
			return fmt.Errorf("node %q: %s", n.Name, why)
		}
	}
	return nil
}

// probeDim is the size planProbe gives a dynamic dimension other than the
// first (batch, 1): a multiple of the strides of common vision models, so
// that their shape arithmetic (stride-32 pyramids, upsample and concat)
// works out.
const probeDim = 64

// probeShapes returns the representative input shapes of a model with
// dynamic input dims: 1 for a leading dim, probeDim for any other, and the
// same size wherever a named dim recurs.
func probeShapes(ins []driver.PortInfo) []tensor.Shape {
	named := map[string]int64{}
	shapes := make([]tensor.Shape, len(ins))
	for i, in := range ins {
		s := make(tensor.Shape, len(in.Shape.Dims))
		for j, d := range in.Shape.Dims {
			switch v, ok := named[d.Name]; {
			case d.IsStatic():
				s[j] = d.Size
			case ok && d.Name != "":
				s[j] = v
			case j == 0:
				s[j] = 1
			default:
				s[j] = probeDim
			}
			if !d.IsStatic() && d.Name != "" {
				named[d.Name] = s[j]
			}
		}
		shapes[i] = s
	}
	return shapes
}

// probePlan plans the representative shapes of a model with dynamic input
// dims and keeps the plan, so that the programs it builds stay referenced
// by the compiled model and a request of that shape reuses it. A model
// whose shapes do not work out at the probe size (shape inference fails)
// or that a kernel rejects at that size is not an error: its programs are
// built when its first shape is planned, and a real failure is reported
// there, naming the shape.
func (c *CompiledModel) probePlan(ctx context.Context, p *Plugin) error {
	ins := c.core.Inputs()
	if slices.ContainsFunc(ins, func(in driver.PortInfo) bool { return !in.Shape.RankKnown }) {
		return nil
	}
	shapes := probeShapes(ins)
	key := planKey(shapes, nil)
	pl, err := c.buildPlan(withProbe(ctx), p, key, shapes, nil)
	if err != nil {
		return ctx.Err()
	}
	c.plans[key] = pl
	return nil
}

// planFor returns the plan of inputs ins (or, where remote[i] is not nil,
// of that remote tensor's shape), building and caching it on first use (a
// new input shape re-plans rather than failing).
func (c *CompiledModel) planFor(ctx context.Context, ins []*tensor.Tensor, remote []driver.RemoteTensor) (*plan, error) {
	if c.static != nil {
		if pl := c.conds.pickFrom(ins, remote); pl != nil {
			return pl, nil
		}
		return c.static, nil
	}
	shapes := make([]tensor.Shape, len(ins))
	host := make([]*tensor.Tensor, len(ins))
	for i, t := range ins {
		if remote[i] != nil {
			shapes[i] = remote[i].Shape() // not a host parameter: lockRemotes checked
			continue
		}
		shapes[i] = t.Shape()
		if c.hostParam[i] {
			host[i] = t.Contiguous().Clone()
		}
	}
	key := planKey(shapes, host)
	c.planMu.Lock()
	defer c.planMu.Unlock()
	if pl, ok := c.plans[key]; ok {
		c.latest = pl
		return pl, nil
	}
	pl, err := c.buildPlan(ctx, c.plugin, key, shapes, host)
	if err != nil {
		return nil, err
	}
	// No warm-up: launched first by this inference. A binary not written
	// is built from source next time: the inference goes on.
	_ = c.plugin.cache.saveBinaries(pl.progs)
	c.plans[key] = pl
	c.latest = pl
	return pl, nil
}

var _ driver.OutputShaper = (*CompiledModel)(nil)

// HostInputs implements driver.OutputShaper: the inputs whose values the
// plans read on the host (small integer shapes, axes, bounds), which
// take host tensors only.
func (c *CompiledModel) HostInputs() []bool { return slices.Clone(c.hostParam) }

// OutputShapes implements driver.OutputShaper: the output shapes of an
// inference of inputs of those shapes (and, for host inputs, values), as
// the plan of those inputs will make them, by shape inference over the
// model specialised to them; answers are cached by the plan's key. A
// host input with no value leaves the outputs that depend on it nil.
func (c *CompiledModel) OutputShapes(shapes []tensor.Shape, values []*tensor.Tensor) ([]tensor.Shape, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(shapes) != len(c.hostParam) {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: output shapes of %q: %d input shapes for %d inputs", c.model.Name, len(shapes), len(c.hostParam))
	}
	host := make([]*tensor.Tensor, len(shapes))
	for i, t := range values {
		if i < len(host) && c.hostParam[i] && t != nil {
			host[i] = t.Contiguous()
		}
	}
	key := planKey(shapes, host)
	c.shapeMu.Lock()
	defer c.shapeMu.Unlock()
	if out, ok := c.outShapes[key]; ok {
		return out, nil
	}
	m, err := c.model.FitInputs(shapes, host)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: output shapes of %q: %w", c.model.Name, err)
	}
	out := make([]tensor.Shape, len(m.Results))
	for i, res := range m.Results {
		if s, ok := res.Inputs[0].Shape().ToShape(); ok {
			out[i] = s
		}
	}
	if c.outShapes == nil {
		c.outShapes = map[string][]tensor.Shape{}
	}
	c.outShapes[key] = out
	return out, nil
}

// Inputs describes the model inputs.
func (c *CompiledModel) Inputs() []driver.PortInfo { return c.core.Inputs() }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []driver.PortInfo { return c.core.Outputs() }

// Property returns the compiled model's configuration or a read-only fact
// (NETWORK_NAME, OPTIMAL_NUMBER_OF_INFER_REQUESTS, EXECUTION_DEVICES,
// LOADED_FROM_CACHE, and the device's facts).
func (c *CompiledModel) Property(key string) (string, error) { return c.core.Property(key) }

// CreateInferRequest returns a new request with its own command queue,
// activation buffers and kernels; inputs start bound to zero tensors.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.core.Check(); err != nil {
		return nil, err
	}
	r, err := newInferRequest(c)
	if err != nil {
		return nil, err
	}
	c.requests[r] = struct{}{}
	return r, nil
}

// KeyKernelVariant is the runtime model's RT.Extra key of the kernel
// variant a node of a hot family runs ("gemm/direct:VW=16,MR=8,NV=2,WG=1").
const KeyKernelVariant = "KERNEL_VARIANT"

// RuntimeModel returns a clone of the executed graph whose nodes carry
// RT.Extra LAYER_TYPE, EXECUTION_ORDER, IMPL_TYPE (catalogue name and
// kernel entry), KERNEL_VARIANT (nodes of a hot family), ORIGINAL_NAMES
// and, once a profiled request has run, PERF_COUNTER (microseconds of
// device time). For a model with dynamic
// inputs, EXECUTION_ORDER and IMPL_TYPE are those of the plan the last
// inference used ("planned per input shape" before the first).
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	rm, nodes, err := c.core.RuntimeGraph(c.model)
	if err != nil {
		return nil, err
	}
	orig, err := c.model.Nodes()
	if err != nil || len(orig) != len(nodes) {
		return nil, fmt.Errorf("gpu: runtime model: the graph changed (%v)", err)
	}
	// A model with dynamic inputs reports the plan its last inference ran.
	pl := c.reportedPlan()
	for i, n := range nodes {
		if pl != nil {
			pn := pl.nodeByName(orig[i].Name)
			c.core.Annotate(n, pl.order[pn], pl.impl[pn])
			if v, ok := pl.variants[pn]; ok {
				n.RT.Extra[KeyKernelVariant] = v
			}
			n.RT.Extra[KeyOpenCLDevice] = openCLName(c.run)
		} else {
			c.core.Annotate(n, i, "planned per input shape")
		}
	}
	return rm, nil
}

// reportedPlan is the plan RuntimeModel and KernelChoices report: the
// last plan the last inference ran (a continuation, when sizes were read
// back), else the static plan or the latest one built.
func (c *CompiledModel) reportedPlan() *plan {
	c.planMu.Lock()
	defer c.planMu.Unlock()
	switch {
	case c.lastRun != nil:
		return c.lastRun
	case c.static != nil:
		return c.static
	}
	return c.latest
}

// Close waits for running inferences, closes the model's requests and
// releases its weights, programs and context reference. It is idempotent.
func (c *CompiledModel) Close() error {
	// The background work (binaries, the cache blob) ends first, then
	// running asynchronous requests (their stages hold no lock Close
	// needs), then synchronous ones (running).
	bgErr := c.bg.wait()
	asyncErr := c.async.Close()
	c.running.Lock()
	defer c.running.Unlock()
	c.mu.Lock()
	if !c.core.MarkClosed() {
		c.mu.Unlock()
		return nil
	}
	reqs := c.requests
	c.requests = nil
	c.mu.Unlock()
	errs := []error{bgErr, asyncErr}
	for r := range reqs {
		errs = append(errs, r.release())
	}
	errs = append(errs, c.release())
	if err := errors.Join(errs...); err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close compiled model %q: %w", c.model.Name, err)
	}
	return nil
}

// release frees the device resources the compiled model owns.
func (c *CompiledModel) release() error {
	var errs []error
	for _, pl := range c.plans {
		errs = append(errs, pl.release(c.ctx))
	}
	errs = append(errs, c.conds.release(c.ctx))
	c.plans = nil
	c.static, c.conds = nil, nil
	for _, key := range c.wkeys {
		errs = append(errs, c.ctx.releaseWeight(key))
	}
	c.weights, c.wkeys = nil, nil
	if c.blob != nil {
		c.blob.release() // after the plans and weights that read it
	}
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

func (c *CompiledModel) check() error { return c.core.Check() }
