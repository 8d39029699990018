package batch

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Interface checks.
var (
	_ driver.InferRequest = (*InferRequest)(nil)
	_ driver.Stager       = (*InferRequest)(nil)
)

// InferRequest is one request of a BATCH compiled model: its inferences
// of batch 1 join batches, the others (and those a batch cannot take) run
// alone on its own request of the device (made on first need). Methods are safe for concurrent use; while Infer
// runs, SetTensor fails with driver.ErrBusy.
type InferRequest struct {
	c    *CompiledModel
	core driver.RequestCore // bindings, busy/closed state and the lock (core.Mu) for the rest

	single driver.InferRequest // request of the device's model as given, nil until a lone run
}

func (c *CompiledModel) newRequest() (*InferRequest, error) {
	if err := c.requestCreated(); err != nil {
		return nil, err
	}
	r := &InferRequest{c: c}
	r.core.Init("batch", c.inputs, c.outputs)
	if err := virtual.ZeroInputs("batch", c.inputs, r.core.IO.In); err != nil {
		c.requestClosed()
		return nil, err
	}
	return r, nil
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the result in place.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	return r.core.SetTensor(name, t)
}

// Tensor returns the tensor bound to an input, or an output's tensor
// (valid after Infer).
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	return r.core.Tensor(name)
}

// Infer runs the stages of Stages in order on the calling goroutine.
func (r *InferRequest) Infer(ctx context.Context) error {
	return r.core.RunInline(ctx, r.Stages())
}

// runState is what the stages of one inference share.
type runState struct {
	m       *member
	userOut []bool
}

// Stages implements driver.Stager: "preprocess" (snapshot the bindings,
// allocate the outputs the user did not bind), "batch" on the wait
// executor (join a batch and wait for it, or run alone) and "postprocess"
// (publish the outputs and the profile).
func (r *InferRequest) Stages() []driver.Stage {
	s := &runState{}
	return []driver.Stage{
		{Name: "preprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.preprocess(ctx, s) }},
		{Name: "batch", Executor: driver.ExecutorWait, Run: func(ctx context.Context) error { return r.batch(ctx, s) }},
		{Name: "postprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.postprocess(ctx, s) }},
	}
}

func (r *InferRequest) preprocess(ctx context.Context, s *runState) error {
	c := r.c
	in, out, userOut, err := r.core.Begin(ctx, c.name, c.check, nil)
	if err != nil {
		return err
	}
	one := true
	for _, t := range in {
		one = one && t.Shape()[0] == 1
	}
	for j, o := range c.outputs {
		if userOut[j] {
			continue
		}
		out[j] = nil // a lone run's own, unless a batch writes this one
		if !one {
			continue
		}
		t, err := tensor.New(o.Type, c.outOne[j])
		if err != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "batch: output %q: %w", o.Name, err)
		}
		out[j] = t
	}
	s.m = &member{in: in, out: out, one: one, done: make(chan struct{})}
	s.userOut = userOut
	return nil
}

func (r *InferRequest) batch(ctx context.Context, s *runState) error {
	if err := r.c.runs.Add(); err != nil {
		return fmt.Errorf("batch: infer %q: %w", r.c.name, err)
	}
	defer r.c.runs.Done()
	return r.c.submit(ctx, s.m, r.alone)
}

// alone runs m on the request's own request of the model as given, with
// m's inputs bound to it; its outputs are the device's, copied into the
// ones m has (bound by the user, or allocated for a batch).
func (r *InferRequest) alone(ctx context.Context, m *member) error {
	c := r.c
	r.core.Mu.Lock()
	sr := r.single
	r.core.Mu.Unlock()
	if sr == nil {
		var err error
		if sr, err = c.single.CreateInferRequest(); err != nil {
			return fmt.Errorf("batch: request of %q on %s: %w", c.name, c.device, err)
		}
		r.core.Mu.Lock()
		r.single = sr
		r.core.Mu.Unlock()
	}
	for i, in := range c.inputs {
		if err := sr.SetTensor(in.Name, m.in[i]); err != nil {
			return fmt.Errorf("batch: infer %q: input %q: %w", c.name, in.Name, err)
		}
	}
	if err := sr.Infer(ctx); err != nil {
		return fmt.Errorf("batch: infer %q on %s: %w", c.name, c.device, err)
	}
	for j, out := range c.outputs {
		t, err := sr.Tensor(out.Name)
		if err == nil && m.out[j] != nil {
			err = m.out[j].CopyFrom(t)
			t = m.out[j]
		}
		if err != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "batch: infer %q: output %q: %w", c.name, out.Name, err)
		}
		m.out[j] = t
	}
	if c.profiling {
		m.prof = sr.ProfilingInfo()
	}
	return nil
}

func (r *InferRequest) postprocess(ctx context.Context, s *runState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("batch: infer %q: %w", r.c.name, err)
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(s.m.out)
	r.core.Prof = s.m.prof
	return nil
}

// ProfilingInfo returns the last inference's profile when ENABLE_PROFILING
// is on: the device's entries for the batched inference the request was
// part of (shared by its whole batch), or for its lone run.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo { return r.core.ProfilingInfo() }

// Close releases the request's batch-1 request; a running one is an error
// wrapping driver.ErrBusy. It is idempotent.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	if r.core.Closed {
		r.core.Mu.Unlock()
		return nil
	}
	if r.core.Busy {
		r.core.Mu.Unlock()
		return fmt.Errorf("batch: close infer request: %w", driver.ErrBusy)
	}
	r.core.Closed = true
	sr := r.single
	r.single = nil
	r.core.Mu.Unlock()
	r.c.requestClosed()
	if sr == nil {
		return nil
	}
	if err := sr.Close(); err != nil {
		return fmt.Errorf("batch: close infer request: %w", err)
	}
	return nil
}
