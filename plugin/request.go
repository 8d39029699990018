package plugin

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// InferRequest runs a compiled model on tensors it keeps between runs:
// bind inputs with SetTensor, run Infer, read outputs with Tensor. Its
// methods are safe for concurrent use, but one request runs one inference
// at a time: Infer or SetTensor while it runs is an error wrapping
// ErrBusy (CompiledModel.Infer pools requests for concurrent callers).
// After Close every method returns an error wrapping ErrClosed.
type InferRequest struct {
	request
}

// AsyncInferRequest is an InferRequest that also runs in the background:
// StartAsync returns at once, and Wait, WaitFor or the callback set with
// SetCallback report the result. The stages of an inference (on the GPU:
// preprocess, enqueue, wait, postprocess) run on the device's executors,
// so the stages of several requests overlap. Its methods are safe for
// concurrent use; after Close every method returns an error wrapping
// ErrClosed.
type AsyncInferRequest struct {
	request
	a *driver.AsyncInferRequest
}

// request holds the methods InferRequest and AsyncInferRequest share.
type request struct {
	r      driver.InferRequest
	closed atomic.Bool
}

// check returns an error wrapping ErrClosed once the request is closed.
func (r *request) check(what string) error {
	if r.closed.Load() {
		return fmt.Errorf("plugin: infer request: %s after Close: %w", what, ErrClosed)
	}
	return nil
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the results of later
// inferences in place. An unknown name is an error wrapping ErrNotFound
// that lists the ports; a tensor whose element type or shape does not fit
// the port (a dimension of 0 where the port's is dynamic included) one
// wrapping ErrInvalidArgument; a running request ErrBusy.
func (r *request) SetTensor(name string, t *tensor.Tensor) error {
	if err := r.check("set tensor"); err != nil {
		return err
	}
	return r.r.SetTensor(name, t)
}

// Tensor returns the tensor bound to an input, or an output's tensor once
// the inference has returned; each inference makes new output tensors
// unless one was bound with SetTensor.
func (r *request) Tensor(name string) (*tensor.Tensor, error) {
	if err := r.check("tensor"); err != nil {
		return nil, err
	}
	return r.r.Tensor(name)
}

// Infer runs one inference on the bound tensors, on the calling
// goroutine, and returns when the outputs are ready (an asynchronous
// request's callback is not called). It returns an error wrapping ctx's
// once ctx is done. An input with a dynamic shape that was never bound is
// an error wrapping ErrInvalidArgument that names it.
func (r *request) Infer(ctx context.Context) error {
	if err := r.check("infer"); err != nil {
		return err
	}
	return r.r.Infer(ctx)
}

// ProfilingInfo returns per-op and per-stage timings of the last inference
// when the model was compiled with ENABLE_PROFILING=YES (empty otherwise).
func (r *request) ProfilingInfo() ([]ProfilingInfo, error) {
	if err := r.check("profiling info"); err != nil {
		return nil, err
	}
	return r.r.ProfilingInfo(), nil
}

// Close releases the request's resources; an asynchronous request first
// cancels a run in progress and waits for it (callback included). Closing
// a running synchronous request, or an asynchronous one from its own
// callback (which would wait for itself), is an error wrapping ErrBusy and
// leaves it open. Later calls return nil.
func (r *request) Close() error {
	if r.closed.Load() {
		return nil
	}
	if err := r.r.Close(); err != nil {
		return err
	}
	r.closed.Store(true)
	return nil
}

// SetCallback sets the function called with each StartAsync's result (nil
// on success) once its stages are done; nil removes it. The callback runs
// on a callback executor after the request has become idle, so it may
// read outputs, bind tensors and call StartAsync again; Wait, WaitFor and
// Close on its own request would wait for the callback itself and return
// an error wrapping ErrBusy at once. A panic in it is recovered and
// returned by Wait as an error wrapping ErrCallback.
func (r *AsyncInferRequest) SetCallback(f func(err error)) {
	r.a.SetCallback(f)
}

// StartAsync starts an inference and returns without waiting for it. The
// run stops early with an error wrapping context.Canceled when ctx is
// cancelled or Cancel is called; ctx must stay valid until it ends. A
// running request is an error wrapping ErrBusy.
func (r *AsyncInferRequest) StartAsync(ctx context.Context) error {
	if err := r.check("start"); err != nil {
		return err
	}
	return r.a.StartAsync(ctx)
}

// Wait waits for the run StartAsync started (callback included) and
// returns its error; without a start it returns nil. If ctx is done first
// it returns ctx's error and the run goes on. From the request's own
// callback it returns an error wrapping ErrBusy at once.
func (r *AsyncInferRequest) Wait(ctx context.Context) error {
	if err := r.check("wait"); err != nil {
		return err
	}
	return r.a.Wait(ctx)
}

// WaitFor waits at most d for the run StartAsync started and reports
// whether it is over and, if so, its error; WaitFor(0) only looks.
func (r *AsyncInferRequest) WaitFor(d time.Duration) (done bool, err error) {
	if err := r.check("wait"); err != nil {
		return true, err
	}
	return r.a.WaitFor(d)
}

// Cancel stops the run StartAsync started: stages not yet started are
// skipped, the running one sees its context done, and Wait returns an
// error wrapping context.Canceled. The request is reusable afterwards.
func (r *AsyncInferRequest) Cancel() { r.a.Cancel() }
