package auto

import (
	"context"
	"errors"
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

// InferRequest is one request of an AUTO compiled model: each inference
// borrows a request of the device chosen for it (see the package
// documentation). Methods are safe for concurrent use; while Infer runs,
// SetTensor fails with driver.ErrBusy.
type InferRequest struct {
	c    *CompiledModel
	core driver.RequestCore // bindings, busy/closed state and the lock (core.Mu) for the rest

	device string // the device of the last inference
}

func (c *CompiledModel) newRequest() (*InferRequest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r := &InferRequest{c: c}
	r.core.Init("auto", c.inputs, c.outputs)
	if err := virtual.ZeroInputs("auto", c.inputs, r.core.IO.In); err != nil {
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
	inputs  []*tensor.Tensor
	dst     []*tensor.Tensor // per output: written in place by the device, nil for a dynamic shape
	results []*tensor.Tensor
	userOut []bool
	// taint: a user tensor is bound to a dynamic-shape output of the
	// device request, which must then not serve another AUTO request.
	taint  bool
	prof   []driver.ProfilingInfo
	device string
}

// Stages implements driver.Stager: "preprocess" (snapshot the bindings and
// allocate the outputs), "infer" on the wait executor (borrow a device
// request, run it, re-run on the next device after a device error) and
// "postprocess" (publish the outputs and the profile).
func (r *InferRequest) Stages() []driver.Stage {
	s := &runState{}
	return []driver.Stage{
		{Name: "preprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.preprocess(ctx, s) }},
		{Name: "infer", Executor: driver.ExecutorWait, Run: func(ctx context.Context) error { return r.infer(ctx, s) }},
		{Name: "postprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.postprocess(ctx, s) }},
	}
}

func (r *InferRequest) preprocess(ctx context.Context, s *runState) error {
	c := r.c
	in, out, userOut, err := r.core.Begin(ctx, c.model.Name, c.check, nil)
	if err != nil {
		return err
	}
	s.inputs, s.userOut = in, userOut
	for i, t := range s.inputs {
		if t == nil {
			return driver.Errorf(driver.ErrInvalidArgument, "auto: infer %q: input %q has no tensor (dynamic shape %v; bind one with SetTensor)", c.model.Name, c.inputs[i].Name, c.inputs[i].Shape)
		}
	}
	s.dst = make([]*tensor.Tensor, len(c.outputs))
	for j, o := range c.outputs {
		shape, static := o.Shape.ToShape()
		switch {
		case s.userOut[j]:
			s.dst[j] = out[j]
			s.taint = s.taint || !static
		case static:
			t, err := tensor.New(o.Type, shape)
			if err != nil {
				return driver.Errorf(driver.ErrInvalidArgument, "auto: output %q: %w", o.Name, err)
			}
			s.dst[j] = t
		}
	}
	return nil
}

// infer runs the inference on a device, and again on the next ones when
// it fails with a device error and ENABLE_RUNTIME_FALLBACK is on.
func (r *InferRequest) infer(ctx context.Context, s *runState) error {
	c := r.c
	if err := c.runs.Add(); err != nil {
		return fmt.Errorf("auto: infer %q: %w", c.model.Name, err)
	}
	defer c.runs.Done()
	t, dr, err := c.acquire(ctx, nil)
	if err != nil {
		return err
	}
	err = r.runOn(ctx, s, t, dr)
	if err == nil || !c.runtimeFB || !errors.Is(err, driver.ErrDevice) || ctx.Err() != nil {
		return err
	}
	for _, next := range c.fallbacks(t) {
		if ferr := c.ensure(ctx, next); ferr != nil {
			err = errors.Join(err, ferr)
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		nt, ndr, aerr := c.acquire(ctx, next)
		if aerr != nil {
			return errors.Join(err, aerr)
		}
		rerr := r.runOn(ctx, s, nt, ndr)
		if rerr == nil {
			c.mu.Lock()
			c.reruns++
			c.mu.Unlock()
			return nil
		}
		err = errors.Join(err, rerr)
		if !errors.Is(rerr, driver.ErrDevice) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// runOn runs the inference on dr, a request of t's device, and gives dr
// back.
func (r *InferRequest) runOn(ctx context.Context, s *runState, t *target, dr driver.InferRequest) (err error) {
	c := r.c
	broken := s.taint
	defer func() {
		if rerr := c.release(t, dr, broken); rerr != nil {
			err = errors.Join(err, fmt.Errorf("auto: releasing a request of %s: %w", t.name, rerr))
		}
	}()
	for i, in := range c.inputs {
		if err := dr.SetTensor(in.Name, s.inputs[i]); err != nil {
			return fmt.Errorf("auto: infer %q on %s: input %q: %w", c.model.Name, t.name, in.Name, err)
		}
	}
	for j, out := range c.outputs {
		if s.dst[j] == nil {
			continue
		}
		if err := dr.SetTensor(out.Name, s.dst[j]); err != nil {
			return fmt.Errorf("auto: infer %q on %s: output %q: %w", c.model.Name, t.name, out.Name, err)
		}
	}
	if err := dr.Infer(ctx); err != nil {
		broken = broken || errors.Is(err, driver.ErrDevice)
		return fmt.Errorf("auto: infer %q on %s: %w", c.model.Name, t.name, err)
	}
	s.results = make([]*tensor.Tensor, len(c.outputs))
	for j, out := range c.outputs {
		if s.dst[j] != nil {
			s.results[j] = s.dst[j]
			continue
		}
		y, err := dr.Tensor(out.Name)
		if err != nil {
			return fmt.Errorf("auto: infer %q on %s: output %q: %w", c.model.Name, t.name, out.Name, err)
		}
		s.results[j] = y.Clone() // dr serves other AUTO requests next
	}
	s.prof = nil
	if c.profiling {
		s.prof = dr.ProfilingInfo()
	}
	s.device = t.name
	return nil
}

func (r *InferRequest) postprocess(ctx context.Context, s *runState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("auto: infer %q: %w", r.c.model.Name, err)
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(s.results)
	r.core.Prof, r.device = s.prof, s.device
	return nil
}

// ProfilingInfo returns the last inference's profile when ENABLE_PROFILING
// is on: the entries of the device that ran it.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo { return r.core.ProfilingInfo() }

// Device returns the device that ran the request's last inference ("" before
// one), e.g. "CPU" while the selected device was compiling, "GPU.0" after.
func (r *InferRequest) Device() string {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	return r.device
}

// Close marks the request closed; a running one is an error wrapping
// driver.ErrBusy. It holds no device request between inferences, so there
// is nothing else to release. It is idempotent.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.core.Busy {
		return fmt.Errorf("auto: close infer request: %w", driver.ErrBusy)
	}
	r.core.Closed = true
	return nil
}
