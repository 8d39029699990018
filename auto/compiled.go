package auto

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin"
)

// Interface checks.
var (
	_ plugin.CompiledModel      = (*CompiledModel)(nil)
	_ plugin.AsyncCompiledModel = (*CompiledModel)(nil)
)

// target states.
const (
	targetIdle      = iota // not compiled (a later candidate)
	targetCompiling        // compiling (in the background or for a fallback)
	targetReady            // serving or ready to
	targetFailed           // does not support the model or failed to compile
	targetRetired          // the CPU after the selected device took over
)

// target is one candidate device of a compiled model: its compilation and
// its pool of requests.
type target struct {
	dev   string            // as listed: "GPU", "GPU.1", "CPU"
	props map[string]string // what it compiles with
	name  string            // its EXECUTION_DEVICES once compiled ("GPU.0")
	state int
	cm    plugin.CompiledModel
	err   error
	done  chan struct{} // closed when a compilation ends (nil before one)

	// background marks a target compiled while the CPU serves: it takes
	// over when ready.
	background bool

	// Pool of the device's requests: at most limit (0: no bound) exist,
	// made counts them, idle are free.
	limit int
	made  int
	idle  []plugin.InferRequest
}

// free reports whether an inference could start on t now.
func (t *target) free() bool {
	return t.state == targetReady && (len(t.idle) > 0 || t.limit == 0 || t.made < t.limit)
}

// Switch is one change of the devices serving a compiled model.
type Switch struct {
	// At is the time since CompileModel started.
	At time.Duration
	// Devices are the devices serving from then on (EXECUTION_DEVICES).
	Devices string
}

// CompiledModel is a model compiled by AUTO on the device it selected (or
// on every device, with CUMULATIVE_THROUGHPUT); see the package
// documentation. It is safe for concurrent use.
type CompiledModel struct {
	p         *Plugin
	model     *graph.Model
	s         *setup
	props     *plugin.Properties
	inputs    []plugin.PortInfo
	outputs   []plugin.PortInfo
	profiling bool
	runtimeFB bool
	policy    string
	start     time.Time

	// life is cancelled by Close: it stops background and fallback
	// compilations and waits for a device's request.
	life context.Context
	stop context.CancelFunc
	bg   sync.WaitGroup        // the background compilation
	runs plugin.RequestTracker // inferences in progress, for Close

	targets []*target // in priority order; the slice never changes
	why     []string  // per target: why it cannot run the model (queryAll)

	mu       sync.Mutex
	closed   bool
	serving  int // index of the target serving (single device); -1 before one is ready
	helper   int // index of the CPU serving while the selected device compiles; -1 if none
	rr       int // ROUND_ROBIN: where the next search starts
	changed  chan struct{}
	timeline []Switch
	startErr error // why the background compilation failed, if it did
	reruns   int64 // inferences re-run on another device after a device error

	async plugin.AsyncSupport
}

func newCompiledModel(p *Plugin, m *graph.Model, s *setup) (*CompiledModel, error) {
	c := &CompiledModel{p: p, model: m, s: s, start: time.Now(), serving: -1, helper: -1, changed: make(chan struct{})}
	c.life, c.stop = context.WithCancel(context.Background())
	for _, d := range s.devices {
		props, err := p.deviceProps(s, d)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.targets = append(c.targets, &target{dev: d, name: d, props: props})
	}
	conf, err := plugin.ParseConfig(s.cfg)
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("auto: compile: %w", err)
	}
	c.profiling = conf.EnableProfiling
	rfb, _ := s.cfg.Get(KeyEnableRuntimeFallback)
	c.runtimeFB = rfb == "YES"
	c.policy, _ = s.cfg.Get(KeySchedulePolicy)
	c.props = s.cfg.Extend(
		plugin.ReadOnlySpec(plugin.KeyNetworkName, m.Name),
		plugin.ComputedSpec(plugin.KeyExecutionDevices, func() (string, error) { return c.executionDevices(), nil }),
		plugin.ComputedSpec(plugin.KeyOptimalNumberOfInferRequests, func() (string, error) { return strconv.Itoa(c.optimalRequests()), nil }),
		plugin.ComputedSpec(plugin.KeyLoadedFromCache, c.loadedFromCache),
	)
	return c, nil
}

// initAsync sets up the executors of asynchronous requests once the
// serving devices are known: an inference waits for its device on the
// wait executor, so it gets a stream for every request the devices take
// at once, and some for requests waiting for a device.
func (c *CompiledModel) initAsync() {
	c.async.Init(nil, plugin.PipelineConfig{Device: DeviceName, Streams: 2, WaitStreams: max(16, 2*c.optimalRequests())},
		fmt.Sprintf("auto: compiled model %q", c.model.Name))
}

// compile compiles the model on t's device with ctx.
func (c *CompiledModel) compile(ctx context.Context, t *target) (plugin.CompiledModel, error) {
	cm, err := c.p.Core.CompileModel(ctx, c.model, t.dev, t.props)
	if err != nil {
		return nil, fmt.Errorf("auto: compile model %q on %s: %w", c.model.Name, t.dev, err)
	}
	return cm, nil
}

// queryAll asks every target's QueryModel and records in c.why, per
// target, why it cannot run the model ("" if it can, or if it has no
// QueryModel: its compilation decides). A target cannot run the model when
// its answer leaves out an op node another target's answer lists. Nodes no
// answer lists are not held against anyone: the devices' passes fold them
// away (a Shape of a static shape) and no device names them.
func (c *CompiledModel) queryAll(ctx context.Context) error {
	nodes, err := c.model.Nodes()
	if err != nil {
		return plugin.Errorf(plugin.ErrInvalidArgument, "auto: model %q: %w", c.model.Name, err)
	}
	answers := make([]map[string]string, len(c.targets))
	c.why = make([]string, len(c.targets))
	listed := map[string]bool{}
	for i, t := range c.targets {
		a, err := c.p.Core.QueryModel(ctx, c.model.Clone(), t.dev, t.props)
		switch {
		case errors.Is(err, plugin.ErrNotImplemented):
		case err != nil:
			if ctx.Err() != nil {
				return fmt.Errorf("auto: query model %q on %s: %w", c.model.Name, t.dev, ctx.Err())
			}
			c.why[i] = "QueryModel failed: " + err.Error()
		default:
			answers[i] = a
			for name := range a {
				listed[name] = true
			}
		}
	}
	for i, a := range answers {
		if a == nil {
			continue
		}
		for _, n := range nodes {
			switch n.OpType {
			case graph.OpParameter, graph.OpConstant, graph.OpResult:
				continue
			}
			if _, ok := a[n.Name]; listed[n.Name] && !ok {
				c.why[i] = fmt.Sprintf("does not support node %q (%s)", n.Name, n.OpType)
				break
			}
		}
	}
	return nil
}

// query reports why t cannot run the model ("" if it can), as queryAll
// found.
func (c *CompiledModel) query(t *target) string {
	return c.why[c.indexOf(t)]
}

// indexOf returns t's position in c.targets (which never changes).
func (c *CompiledModel) indexOf(t *target) int {
	for i, x := range c.targets {
		if x == t {
			return i
		}
	}
	return -1
}

// cached reports whether the model cache already holds t's compiled
// model, so compiling on t is an import.
func (c *CompiledModel) cached(t *target) bool {
	dir := t.props[plugin.KeyCacheDir]
	if dir == "" {
		return false
	}
	path, err := c.p.Core.CacheBlobPath(dir, c.model, t.dev, t.props)
	if err != nil {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}

// isCPU reports whether t's device is the CPU plugin's.
func isCPU(t *target) bool {
	plug, _, _, _ := plugin.ParseDeviceName(t.dev)
	return plug == cpuPlugin
}

// compileSelected selects the first target that supports the model and
// compiles it, with the CPU serving meanwhile when startup fallback
// applies (see the package documentation).
func (c *CompiledModel) compileSelected(ctx context.Context) error {
	if err := c.queryAll(ctx); err != nil {
		return err
	}
	var reasons []string
	sel := -1
	for i, t := range c.targets {
		if why := c.query(t); why == "" {
			sel = i
			break
		}
		c.fail(t, errors.New(c.query(t)))
		reasons = append(reasons, t.dev+": "+c.query(t))
	}
	if sel < 0 {
		return c.noDevice(reasons)
	}
	helper := -1
	if sfb, _ := c.s.cfg.Get(KeyEnableStartupFallback); sfb == "YES" && !isCPU(c.targets[sel]) && !c.cached(c.targets[sel]) {
		for i := sel + 1; i < len(c.targets); i++ {
			if isCPU(c.targets[i]) {
				helper = i
				break
			}
		}
	}
	if helper >= 0 {
		if why := c.query(c.targets[helper]); why != "" {
			c.fail(c.targets[helper], errors.New(why))
			helper = -1
		}
	}
	if helper < 0 {
		return c.compileInOrder(ctx, sel, reasons)
	}
	c.helper = helper
	c.targets[sel].state = targetCompiling
	c.targets[sel].done = make(chan struct{})
	c.bg.Add(1)
	// The background compilation ends when it has compiled a device or
	// run out of candidates, or when Close cancels c.life; Close waits
	// for it.
	go c.background(sel)
	h := c.targets[helper]
	cm, err := c.compile(ctx, h)
	if err == nil {
		err = c.ready(h, cm)
	}
	if err != nil {
		// No CPU to serve: wait for the selected device instead.
		c.fail(h, err)
		select {
		case <-c.targets[sel].done:
		case <-ctx.Done():
			return fmt.Errorf("auto: compile: %w", ctx.Err())
		}
		c.bg.Wait()
		c.mu.Lock()
		serving, startErr := c.serving, c.startErr
		c.mu.Unlock()
		if serving < 0 {
			return errors.Join(plugin.Errorf(plugin.ErrDevice, "auto: compile model %q: no device compiled it", c.model.Name), err, startErr)
		}
	}
	c.initAsync()
	return nil
}

// compileInOrder compiles on the targets from sel on, in order, until one
// succeeds; each after sel must support the model.
func (c *CompiledModel) compileInOrder(ctx context.Context, sel int, reasons []string) error {
	for i := sel; i < len(c.targets); i++ {
		t := c.targets[i]
		if i > sel {
			if why := c.query(t); why != "" {
				c.fail(t, errors.New(why))
				reasons = append(reasons, t.dev+": "+why)
				continue
			}
		}
		cm, err := c.compile(ctx, t)
		if err == nil {
			err = c.ready(t, cm)
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("auto: compile: %w", ctx.Err())
			}
			c.fail(t, err)
			reasons = append(reasons, err.Error())
			continue
		}
		c.initAsync()
		return nil
	}
	return c.noDevice(reasons)
}

// noDevice is the error when no candidate runs the model.
func (c *CompiledModel) noDevice(reasons []string) error {
	all := append(append([]string(nil), c.s.rejected...), reasons...)
	return plugin.Errorf(plugin.ErrUnsupported, "auto: no device can run model %q (%s)", c.model.Name, strings.Join(all, "; "))
}

// background compiles the selected target, and if that fails the later
// non-CPU targets that support the model, while the CPU serves.
func (c *CompiledModel) background(sel int) {
	defer c.bg.Done()
	var errs []error
	for i := sel; i < len(c.targets); i++ {
		t := c.targets[i]
		if i == c.helper || isCPU(t) {
			continue
		}
		c.mu.Lock()
		if i > sel && t.state != targetIdle {
			// Compiled (or failed) as a runtime fallback meanwhile.
			c.mu.Unlock()
			continue
		}
		t.background = true
		if i > sel {
			t.state, t.done = targetCompiling, make(chan struct{})
		}
		c.mu.Unlock()
		if why := c.query(t); i > sel && why != "" {
			c.fail(t, errors.New(why))
			errs = append(errs, fmt.Errorf("%s: %s", t.dev, why))
			continue
		}
		cm, err := c.compile(c.life, t)
		if err == nil {
			err = c.ready(t, cm)
		}
		if err == nil {
			return
		}
		c.fail(t, err)
		errs = append(errs, err)
		if c.life.Err() != nil {
			break
		}
	}
	c.mu.Lock()
	c.startErr = errors.Join(errs...)
	c.mu.Unlock()
}

// ready makes t serve with its compiled model cm (or, for the CPU helper
// after the selected device already took over, stand by). A cm whose ports
// differ from those of the devices already serving is refused. After Close
// cm is closed instead.
func (c *CompiledModel) ready(t *target, cm plugin.CompiledModel) error {
	name, err := cm.Property(plugin.KeyExecutionDevices)
	if err != nil || name == "" {
		name = t.dev
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.Join(fmt.Errorf("auto: compiled model %q: %w", c.model.Name, plugin.ErrClosed), cm.Close())
	}
	if c.inputs == nil {
		c.inputs, c.outputs = cm.Inputs(), cm.Outputs()
	} else if err := checkPorts(c.inputs, c.outputs, cm); err != nil {
		c.mu.Unlock()
		return errors.Join(fmt.Errorf("auto: %s: %w", t.dev, err), cm.Close())
	}
	t.cm, t.name, t.state = cm, name, targetReady
	t.limit = 0
	if c.s.cumulative {
		t.limit = virtual.OptimalRequests(cm)
	}
	finish(t)
	var retire []plugin.InferRequest
	var retireCM plugin.CompiledModel
	i := c.indexOf(t)
	switch {
	case c.s.cumulative:
	case c.serving < 0:
		c.serving = i
		c.record()
	case i == c.helper && !c.runtimeFB:
		// The selected device took over before the CPU was ready.
		retire, retireCM = c.retire(t)
	case t.background && c.serving == c.helper:
		// The selected device is ready: it takes over from the CPU.
		c.serving = i
		c.record()
		if !c.runtimeFB {
			retire, retireCM = c.retire(c.targets[c.helper])
		}
	}
	c.signal()
	c.mu.Unlock()
	return closeAll(retire, retireCM)
}

// checkPorts compares cm's ports with the model's.
func checkPorts(inputs, outputs []plugin.PortInfo, cm plugin.CompiledModel) error {
	if err := plugin.CheckPorts("input", inputs, cm.Inputs()); err != nil {
		return err
	}
	return plugin.CheckPorts("output", outputs, cm.Outputs())
}

// retire takes the CPU helper out of service: its idle requests, and its
// compiled model when none is busy, are returned for closing (the last
// busy one closes it in release). c.mu is held.
func (c *CompiledModel) retire(t *target) ([]plugin.InferRequest, plugin.CompiledModel) {
	t.state = targetRetired
	idle := t.idle
	t.idle = nil
	t.made -= len(idle)
	var cm plugin.CompiledModel
	if t.made == 0 {
		cm, t.cm = t.cm, nil
	}
	return idle, cm
}

// closeAll closes requests and then a compiled model (nil is skipped).
func closeAll(reqs []plugin.InferRequest, cm plugin.CompiledModel) error {
	var errs []error
	for _, r := range reqs {
		errs = append(errs, r.Close())
	}
	if cm != nil {
		errs = append(errs, cm.Close())
	}
	return errors.Join(errs...)
}

// fail records that t cannot serve.
func (c *CompiledModel) fail(t *target, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.state, t.err = targetFailed, err
	finish(t)
	c.signal()
}

// finish closes t.done, if a compilation made it, once. c.mu is held.
func finish(t *target) {
	if t.done == nil {
		return
	}
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// record appends the devices serving now to the timeline. c.mu is held.
func (c *CompiledModel) record() {
	c.timeline = append(c.timeline, Switch{At: time.Since(c.start), Devices: c.executionDevicesLocked()})
}

// signal wakes inferences waiting for a device. c.mu is held.
func (c *CompiledModel) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// compileAll compiles the model on every target that supports it,
// concurrently, for CUMULATIVE_THROUGHPUT; it fails only when none does.
func (c *CompiledModel) compileAll(ctx context.Context) error {
	if err := c.queryAll(ctx); err != nil {
		return err
	}
	errs := make([]error, len(c.targets))
	var wg sync.WaitGroup
	for i, t := range c.targets {
		wg.Add(1)
		go func() { // ends with its compilation; waited for below
			defer wg.Done()
			var err error
			if why := c.query(t); why != "" {
				err = fmt.Errorf("%s: %s", t.dev, why)
			}
			var cm plugin.CompiledModel
			if err == nil {
				cm, err = c.compile(ctx, t)
			}
			if err == nil {
				err = c.ready(t, cm)
			}
			if err != nil {
				c.fail(t, err)
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("auto: compile: %w", err)
	}
	c.mu.Lock()
	n := 0
	for _, t := range c.targets {
		if t.state == targetReady {
			n++
		}
	}
	if n > 0 {
		c.record()
	}
	c.mu.Unlock()
	if n == 0 {
		var reasons []string
		for _, err := range errs {
			reasons = append(reasons, err.Error())
		}
		return c.noDevice(reasons)
	}
	c.initAsync()
	return nil
}

// executionDevices names the devices serving now.
func (c *CompiledModel) executionDevices() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.executionDevicesLocked()
}

func (c *CompiledModel) executionDevicesLocked() string {
	if !c.s.cumulative {
		if c.serving < 0 {
			return ""
		}
		return c.targets[c.serving].name
	}
	var names []string
	for _, t := range c.targets {
		if t.state == targetReady {
			names = append(names, t.name)
		}
	}
	return strings.Join(names, " ")
}

// served is a device serving a compiled model, as seen at one moment.
type served struct {
	name string
	cm   plugin.CompiledModel
}

// serve returns the devices serving now (none after Close).
func (c *CompiledModel) serve() []served {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []served
	for i, t := range c.targets {
		if t.cm == nil || (!c.s.cumulative && i != c.serving) || (c.s.cumulative && t.state != targetReady) {
			continue
		}
		out = append(out, served{name: t.name, cm: t.cm})
	}
	return out
}

// optimalRequests is the OPTIMAL_NUMBER_OF_INFER_REQUESTS of the device
// serving now, or their sum with CUMULATIVE_THROUGHPUT.
func (c *CompiledModel) optimalRequests() int {
	n := 0
	for _, t := range c.serve() {
		n += virtual.OptimalRequests(t.cm)
	}
	return max(n, 1)
}

// loadedFromCache is YES when every serving device imported its model
// from CACHE_DIR.
func (c *CompiledModel) loadedFromCache() (string, error) {
	ts := c.serve()
	if len(ts) == 0 {
		return "NO", nil
	}
	for _, t := range ts {
		if v, err := t.cm.Property(plugin.KeyLoadedFromCache); err != nil || v != "YES" {
			return "NO", nil
		}
	}
	return "YES", nil
}

// Timeline returns when each set of devices started serving: with startup
// fallback, the CPU at first and the selected device once it compiled
// ("CPU until 1.2 s, then GPU.0").
func (c *CompiledModel) Timeline() []Switch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Switch(nil), c.timeline...)
}

// StartupError returns why the background compilation of the selected
// device failed (the CPU then keeps serving), or nil.
func (c *CompiledModel) StartupError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startErr
}

// Reruns returns how many inferences ran again on another device after a
// device error (ENABLE_RUNTIME_FALLBACK).
func (c *CompiledModel) Reruns() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reruns
}

// Inputs describes the model inputs.
func (c *CompiledModel) Inputs() []plugin.PortInfo { return virtual.ClonePorts(c.inputs) }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []plugin.PortInfo { return virtual.ClonePorts(c.outputs) }

// Property returns the compiled model's configuration or a read-only fact:
// NETWORK_NAME, EXECUTION_DEVICES (the device serving now; every device
// with CUMULATIVE_THROUGHPUT), OPTIMAL_NUMBER_OF_INFER_REQUESTS (the
// serving device's, or the sum) and LOADED_FROM_CACHE.
func (c *CompiledModel) Property(key string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	v, err := c.props.Get(key)
	if err != nil {
		return "", fmt.Errorf("auto: %w", err)
	}
	return v, nil
}

// CreateInferRequest returns a new request with zero tensors bound to its
// inputs of static shape.
func (c *CompiledModel) CreateInferRequest() (plugin.InferRequest, error) {
	return c.newRequest()
}

// CreateAsyncInferRequest implements plugin.AsyncCompiledModel.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...plugin.AsyncOption) (*plugin.AsyncInferRequest, error) {
	r, err := c.newRequest()
	if err != nil {
		return nil, err
	}
	ar, err := c.async.NewRequest(r, opts...)
	if err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return ar, nil
}

// RuntimeModel returns the runtime model of the device serving now (the
// first one with CUMULATIVE_THROUGHPUT).
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	ts := c.serve()
	if len(ts) == 0 {
		return nil, plugin.Errorf(plugin.ErrNotFound, "auto: compiled model %q: no device serves yet", c.model.Name)
	}
	rm, err := ts[0].cm.RuntimeModel()
	if err != nil {
		return nil, fmt.Errorf("auto: runtime model on %s: %w", ts[0].name, err)
	}
	return rm, nil
}

// Close waits for running requests, cancels and waits for a background
// compilation, and closes every device's requests and compiled model. It
// is idempotent.
func (c *CompiledModel) Close() error {
	aerr := c.async.Close()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return aerr
	}
	c.closed = true
	c.signal()
	c.mu.Unlock()
	c.stop()
	c.bg.Wait()
	c.runs.Close()
	errs := []error{aerr}
	c.mu.Lock()
	var reqs []plugin.InferRequest
	var cms []plugin.CompiledModel
	for _, t := range c.targets {
		reqs = append(reqs, t.idle...)
		t.idle = nil
		if t.cm != nil {
			cms = append(cms, t.cm)
			t.cm = nil
		}
	}
	c.mu.Unlock()
	for _, r := range reqs {
		errs = append(errs, r.Close())
	}
	for _, cm := range cms {
		errs = append(errs, cm.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("auto: close compiled model %q: %w", c.model.Name, err)
	}
	return nil
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
	return fmt.Errorf("auto: compiled model %q: %w", c.model.Name, plugin.ErrClosed)
}
