package clbackend

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// warmUp runs the plan compile built (the static input shapes, or the
// probe shapes of a model with dynamic input dims) once on zero inputs and
// throws the results away. Drivers do part of their work at a kernel's
// first launch rather than when the program is built: POCL compiles every
// kernel again for its work-group size, other drivers finish their JIT or
// allocate on first use. Doing that here puts the cost in CompileModel,
// which users expect to be slow, instead of in the user's first inference
// (PP-OCR det 640 on POCL: 7 s of a 7.1 s first inference). A model with
// host-known inputs has no plan before its first inference and is not
// warmed up. The warm-up's timings are kept out of the runtime model's
// PERF_COUNTER. A done ctx stops it with ctx's error.
func (c *CompiledModel) warmUp(ctx context.Context) error {
	var shapes []tensor.Shape
	switch {
	case c.static != nil:
		// The planned shapes themselves (a 0 dimension stays 0).
		for _, in := range c.core.Inputs() {
			s, _ := in.Shape.ToShape()
			shapes = append(shapes, s)
		}
	case len(c.plans) == 1:
		shapes = probeShapes(c.core.Inputs())
	default:
		return nil
	}
	r, err := newInferRequest(c)
	if err != nil {
		return err
	}
	r.warmUp = true
	for i, s := range shapes {
		t, err := tensor.New(c.core.Input(i).Type, s)
		if err != nil {
			_ = r.Close()
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: warm-up input %q: %w", c.core.Input(i).Name, err)
		}
		r.core.IO.In[i] = t
	}
	err = r.Infer(ctx)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gpu: warm-up run of %q on %s: %w", c.model.Name, c.dev.name(), err)
	}
	return nil
}

// warmUpWindow is the launch window (see launchWindow) of the warm-up
// run: the driver's first-launch work happens as the queue runs (on POCL
// it is most of the time), so with a cancellable ctx (AUTO compiling in
// the background) the warm-up keeps one kernel queued ahead, and a Close
// stops it after the kernel in progress.
const warmUpWindow = 2

// window is the request's launch window.
func (r *InferRequest) window() int {
	if r.warmUp {
		return warmUpWindow
	}
	return launchWindow
}
