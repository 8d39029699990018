package auto

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Interface checks.
var (
	_ driver.CompiledModel      = (*CompiledModel)(nil)
	_ driver.AsyncCompiledModel = (*CompiledModel)(nil)
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
	cm    driver.CompiledModel
	err   error
	done  chan struct{} // closed when a compilation ends (nil before one)

	// background marks a target compiled while the CPU serves: it takes
	// over when ready.
	background bool

	// Pool of the device's requests: at most limit (0: no bound) exist,
	// made counts them, idle are free.
	limit int
	made  int
	idle  []driver.InferRequest
}

// free reports whether an inference could start on t now.
func (t *target) free() bool {
	return t.state == targetReady && (len(t.idle) > 0 || t.limit == 0 || t.made < t.limit)
}

// Switch is one change of the devices serving a compiled model; the
// user API reaches the timeline through driver.Timeliner.
type Switch = driver.DeviceSwitch

var _ driver.Timeliner = (*CompiledModel)(nil)

// CompiledModel is a model compiled by AUTO on the device it selected (or
// on every device, with CUMULATIVE_THROUGHPUT); see the package
// documentation. It is safe for concurrent use.
type CompiledModel struct {
	p         *Plugin
	model     *graph.Model
	s         *setup
	props     *driver.Properties
	inputs    []driver.PortInfo
	outputs   []driver.PortInfo
	profiling bool
	runtimeFB bool
	policy    string
	start     time.Time

	// life is cancelled by Close: it stops background and fallback
	// compilations and waits for a device's request.
	life context.Context
	stop context.CancelFunc
	bg   sync.WaitGroup        // the background compilation
	runs driver.RequestTracker // inferences in progress, for Close

	targets []*target // in priority order; the slice never changes
	why     []string  // per target: why it cannot run the model (queryAll)
	// badProps is set when a device refused the properties AUTO passed
	// it (ErrInvalidArgument): noDevice's error then wraps that sentinel
	// too, since the properties, not only the devices, are at fault.
	badProps atomic.Bool

	mu       sync.Mutex
	closed   bool
	serving  int // index of the target serving (single device); -1 before one is ready
	helper   int // index of the CPU serving while the selected device compiles; -1 if none
	rr       int // ROUND_ROBIN: where the next search starts
	changed  chan struct{}
	timeline []Switch
	startErr error // why the background compilation failed, if it did
	reruns   int64 // inferences re-run on another device after a device error

	async driver.AsyncSupport
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
	conf, err := driver.ParseConfig(s.cfg)
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("auto: compile: %w", err)
	}
	c.profiling = conf.EnableProfiling
	rfb, _ := s.cfg.Get(KeyEnableRuntimeFallback)
	c.runtimeFB = rfb == "YES"
	c.policy, _ = s.cfg.Get(KeySchedulePolicy)
	c.props = s.cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, m.Name),
		driver.ComputedSpec(driver.KeyExecutionDevices, func() (string, error) { return c.executionDevices(), nil }),
		driver.ComputedSpec(driver.KeyOptimalNumberOfInferRequests, func() (string, error) { return strconv.Itoa(c.optimalRequests()), nil }),
		driver.ComputedSpec(driver.KeyLoadedFromCache, c.loadedFromCache),
		// NUM_STREAMS reads as what the serving devices resolved it to.
		driver.PropertySpec{Key: driver.KeyNumStreams, Mutable: true, Get: func() (string, error) { return strconv.Itoa(c.streams()), nil }},
	)
	return c, nil
}

// initAsync sets up the executors of asynchronous requests once the
// serving devices are known: an inference waits for its device on the
// wait executor, so it gets a stream for every request the devices take
// at once, and some for requests waiting for a device.
func (c *CompiledModel) initAsync() {
	c.async.Init(nil, driver.PipelineConfig{Device: DeviceName, Streams: 2, WaitStreams: max(16, 2*c.optimalRequests())},
		fmt.Sprintf("auto: compiled model %q", c.model.Name))
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
	cm   driver.CompiledModel
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

// streams is the serving devices' NUM_STREAMS, summed (at least 1).
func (c *CompiledModel) streams() int {
	n := 0
	for _, t := range c.serve() {
		if v, err := t.cm.Property(driver.KeyNumStreams); err == nil {
			if k, err := driver.ParseNumStreams(v); err == nil {
				n += k
			}
		}
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
		if v, err := t.cm.Property(driver.KeyLoadedFromCache); err != nil || v != "YES" {
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
func (c *CompiledModel) Inputs() []driver.PortInfo { return driver.ClonePorts(c.inputs) }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []driver.PortInfo { return driver.ClonePorts(c.outputs) }

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
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	return c.newRequest()
}

// CreateAsyncInferRequest implements driver.AsyncCompiledModel.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
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
		return nil, driver.Errorf(driver.ErrNotFound, "auto: compiled model %q: no device serves yet", c.model.Name)
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
	var reqs []driver.InferRequest
	var cms []driver.CompiledModel
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
	return fmt.Errorf("auto: compiled model %q: %w", c.model.Name, driver.ErrClosed)
}
