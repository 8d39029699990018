package auto_test

import (
	"context"
	"maps"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
)

// accelName is the test accelerator: the plugintest fake (Relu and
// Identity on f32) with a compilation the test can hold and an inference
// it can make fail, registered for AUTO to find.
const accelName = "TESTACCEL"

// accel controls the test accelerator.
var accel = &control{}

func init() {
	driver.Register(accelName, func() (driver.Plugin, error) {
		return &testDevice{Plugin: drivertest.New(accelName, drivertest.Faults{}), ctl: accel}, nil
	})
}

// control is what a test sets on the accelerator.
type control struct {
	mu        sync.Mutex
	gate      chan struct{} // non-nil: compilations wait until it is closed
	started   chan struct{} // gets a value when a compilation starts (while it has room)
	cancelled chan error    // gets the ctx error of a compilation that gave up
	failInfer error         // non-nil: every inference fails with it
	caps      string        // non-empty: the OPTIMIZATION_CAPABILITIES reported
}

// reset puts the accelerator back to compiling and inferring at once.
func (c *control) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate, c.failInfer, c.caps = nil, nil, ""
	c.started = make(chan struct{}, 64)
	c.cancelled = make(chan error, 64)
}

// hold makes compilations wait until the returned function is called.
func (c *control) hold() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gate := make(chan struct{})
	c.gate = gate
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func (c *control) setFailInfer(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failInfer = err
}

func (c *control) setCaps(caps string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.caps = caps
}

func (c *control) state() (gate, started chan struct{}, cancelled chan error, fail error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gate, c.started, c.cancelled, c.failInfer
}

type testDevice struct {
	*drivertest.Plugin
	ctl *control
}

func (d *testDevice) Property(key string) (string, error) {
	d.ctl.mu.Lock()
	caps := d.ctl.caps
	d.ctl.mu.Unlock()
	if key == driver.KeyOptimizationCapabilities && caps != "" {
		return caps, nil
	}
	return d.Plugin.Property(key)
}

func (d *testDevice) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	gate, started, cancelled, _ := d.ctl.state()
	if started != nil {
		select {
		case started <- struct{}{}:
		default: // nobody is counting this many compilations
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		}
	}
	d.ctl.mu.Lock()
	f16 := strings.Contains(d.ctl.caps, "FP16")
	d.ctl.mu.Unlock()
	if f16 {
		// The fake computes in f32 only; with FP16 in its capabilities it
		// plays a device that takes INFERENCE_PRECISION_HINT=f16.
		props = maps.Clone(props)
		delete(props, driver.KeyInferencePrecisionHint)
	}
	cm, err := d.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &testCompiled{CompiledModel: cm, ctl: d.ctl}, nil
}

type testCompiled struct {
	driver.CompiledModel
	ctl *control
}

func (c *testCompiled) CreateInferRequest() (driver.InferRequest, error) {
	r, err := c.CompiledModel.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	return &testRequest{InferRequest: r, ctl: c.ctl}, nil
}

type testRequest struct {
	driver.InferRequest
	ctl *control
}

func (r *testRequest) Infer(ctx context.Context) error {
	if _, _, _, fail := r.ctl.state(); fail != nil {
		return fail
	}
	return r.InferRequest.Infer(ctx)
}
