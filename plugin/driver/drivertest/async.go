package drivertest

import (
	"sync"

	"github.com/clinfer/clinfer/plugin/driver"
)

// asyncState is the fake compiled model's asynchronous machinery: a
// driver.Pipeline with executors of its own (the fake has no executor
// manager), made on first use and closed by CompiledModel.Close.
type asyncState struct {
	once     sync.Once
	pipeline *driver.Pipeline
	err      error
}

// fakeStreams is the number of task streams of the fake's pipeline.
const fakeStreams = 2

// CreateAsyncInferRequest implements driver.AsyncCompiledModel: a new
// request wrapped in an asynchronous one on the model's executors (one
// "infer" stage, since the fake's request is not a driver.Stager).
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
	c.async.once.Do(func() {
		dev, _ := c.core.Property(driver.KeyExecutionDevices)
		c.async.pipeline, c.async.err = driver.NewPipeline(nil, driver.PipelineConfig{Device: dev, Streams: fakeStreams})
	})
	if c.async.err != nil {
		return nil, c.async.err
	}
	r, err := c.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	return c.async.pipeline.NewRequest(r, opts...)
}

// close waits for the running asynchronous requests and stops the
// executors; later CreateAsyncInferRequest calls fail with
// driver.ErrClosed.
func (a *asyncState) close() error {
	a.once.Do(func() { a.err = driver.Errorf(driver.ErrClosed, "drivertest: compiled model is closed") })
	if a.pipeline != nil {
		return a.pipeline.Close()
	}
	return nil
}
