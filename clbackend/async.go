package clbackend

import (
	"fmt"
	"strconv"

	"github.com/clinfer/clinfer/plugin/driver"
)

// Interface checks for the asynchronous machinery.
var (
	_ driver.Stager             = (*InferRequest)(nil)
	_ driver.AsyncCompiledModel = (*CompiledModel)(nil)
)

// deviceFacts is what a GPU device tells driver.PlanStreams: up to
// maxStreams streams (in-order queues working at once), two requests per
// stream so one request's transfers overlap another's kernels.
func deviceFacts(d *device) driver.DeviceFacts {
	cu := 1
	if d != nil && d.cl != nil {
		if n, err := d.cl.MaxComputeUnits(); err == nil && n > 0 {
			cu = n
		}
	}
	return driver.DeviceFacts{ComputeUnits: cu, MaxStreams: maxStreams, RequestsPerStream: 2}
}

// initAsync sets up the compiled model's asynchronous machinery on the
// plugin's executors (shared by name with its other compiled models, and
// stopped by Plugin.Close); compile calls it. Executors start on the first
// asynchronous request.
func (c *CompiledModel) initAsync(conf driver.Config) {
	plan := driver.PlanStreams(conf, deviceFacts(c.dev))
	c.core.Resolve(driver.KeyNumStreams, strconv.Itoa(plan.Streams))
	c.async.Init(&c.plugin.executors, driver.PipelineConfig{Device: c.dev.name(), Streams: plan.Streams, WaitStreams: plan.Requests},
		fmt.Sprintf("gpu: compiled model %q", c.model.Name))
}

// CreateAsyncInferRequest implements driver.AsyncCompiledModel: a new
// request whose stages (see InferRequest.Stages) run on the task and wait
// executors, so that with several requests in flight request N+1 uploads
// and enqueues while request N computes; callbacks run on the callback
// executor.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
	// The executors are the plugin's: none after it closed.
	if err := c.plugin.check(); err != nil {
		return nil, fmt.Errorf("gpu: compiled model %q: asynchronous request: %w", c.model.Name, err)
	}
	r, err := c.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	return c.async.NewRequest(r, opts...)
}
