package clbackend

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Stateful models on the GPU (MAKE_STATEFUL, which the Core passes to the
// device and wraps with driver.MakeStateful): each request holds one
// device buffer per state. The plan reads the state input in place from it
// (the value is not in the activation pool), and each inference copies the
// output that carries the next state into it on the device: no state byte
// crosses the host, and no upload or download is enqueued for it.

// Interface checks.
var (
	_ driver.StateHolder      = (*InferRequest)(nil)
	_ driver.StatefulCompiler = (*Plugin)(nil)
)

// CompilesStateful reports that the GPU keeps MAKE_STATEFUL states on the
// device itself.
func (p *Plugin) CompilesStateful() bool { return true }

// parseStates reads MAKE_STATEFUL into c.stateOut and c.stateIn.
func (c *CompiledModel) parseStates(cfg *driver.Properties) error {
	if !cfg.Has(driver.KeyMakeStateful) {
		return nil
	}
	v, err := cfg.Get(driver.KeyMakeStateful)
	if err != nil || v == "" {
		return err
	}
	pairs, err := driver.ParseStatePairs(v)
	if err != nil {
		return err
	}
	c.stateOut, c.stateIn = map[int]int{}, map[int]int{}
	for _, p := range pairs {
		in, out := c.core.InputIndex(p.Input), c.core.OutputIndex(p.Output)
		if in < 0 || out < 0 {
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %s: no input %q or no output %q", c.model.Name, driver.KeyMakeStateful, p.Input, p.Output)
		}
		port := c.core.Input(in)
		if _, ok := port.Shape.ToShape(); !ok || c.hostParam[in] {
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: state input %q has shape %v (a state needs a static shape and values the plan does not read on the host)", c.model.Name, p.Input, port.Shape)
		}
		c.stateOut[in], c.stateIn[out] = out, in
	}
	return nil
}

// holds reports whether model input i is a state the request holds.
func (r *InferRequest) holds(i int) bool { return i < len(r.held) && r.held[i] != nil }

// allocStates makes the request's zeroed state buffers.
func (r *InferRequest) allocStates() error {
	if len(r.c.stateOut) == 0 {
		return nil
	}
	r.held = make([]*cl.MemObject, len(r.c.core.Inputs()))
	for i := range r.c.stateOut {
		port := r.c.core.Input(i)
		s, _ := port.Shape.ToShape()
		n, _ := s.Bytes(port.Type)
		b, err := r.c.ctx.cl.CreateEmptyBuffer(cl.MemReadWrite, max(int(n), 4))
		if err != nil {
			return driver.Errorf(driver.ErrDevice, "gpu: state %q of %q: %w", port.Name, r.c.model.Name, err)
		}
		r.held[i] = b
		r.c.ctx.activationBytes.Add(int64(b.Size()))
	}
	for i := range r.c.stateOut {
		if err := r.writeState(i, nil); err != nil {
			return err
		}
	}
	return nil
}

// releaseStates frees the state buffers.
func (r *InferRequest) releaseStates() error {
	var errs []error
	for i, b := range r.held {
		if b != nil {
			r.c.ctx.activationBytes.Add(-int64(b.Size()))
			errs = append(errs, b.Close())
			r.held[i] = nil
		}
	}
	return errors.Join(errs...)
}

// heldBy is the model input whose state buffer holds value v of pl (a
// state input, or a view of one), else -1.
func heldBy(pl *plan, v int) int {
	return pl.values[pl.values[v].root].held - 1
}

// resultReadsState reports whether a result of pl that is not a next
// state is read from one of the request's state buffers (a state input
// passed through, or a view of one): the next states' copies must then
// wait for its read.
func (r *InferRequest) resultReadsState(pl *plan) bool {
	for i, v := range pl.results {
		if _, state := r.c.stateIn[i]; !state && heldBy(pl, v) >= 0 {
			return true
		}
	}
	return false
}

// stateResults returns the indices of pl's results that carry a next
// state, in the order their copies into the state buffers must run: a
// copy that reads a state buffer (one state passed on as another's next
// value) before the copy that overwrites that buffer. Where states read
// each other's buffers in a cycle (s1_next = s2, s2_next = s1), no order
// serves: one result of the cycle is in saved, its value copied to a
// scratch buffer before any state copy, and its own copy, from there,
// runs last.
func (r *InferRequest) stateResults(pl *plan) (order, saved []int) {
	var todo []int
	for i := range pl.results {
		if _, ok := r.c.stateIn[i]; ok {
			todo = append(todo, i)
		}
	}
	order = make([]int, 0, len(todo))
	for len(todo) > 0 {
		pick := -1
		for k, i := range todo {
			read := false // is i's state buffer read by a copy still to run?
			for _, j := range todo {
				if j != i && heldBy(pl, pl.results[j]) == r.c.stateIn[i] {
					read = true
				}
			}
			if !read {
				pick = k
				break
			}
		}
		if pick < 0 { // a cycle: break it at its first result
			saved = append(saved, todo[0])
			todo = todo[1:]
			continue
		}
		order = append(order, todo[pick])
		todo = append(todo[:pick], todo[pick+1:]...)
	}
	return append(order, saved...), saved
}

// keepStates enqueues the copies of s's next states into the request's
// state buffers in stateResults' order (computed once per plan state:
// planState.stateOrder), a saved result's value through a
// scratch buffer (released once its copies are enqueued: OpenCL frees it
// when they finish).
func (r *InferRequest) keepStates(s *runState) (err error) {
	order, saved := s.st.stateOrder, s.st.stateSaved
	if len(order) == 0 {
		return nil
	}
	var from map[int]*cl.MemObject // only for a cycle's saved results
	if len(saved) > 0 {
		from = make(map[int]*cl.MemObject, len(saved))
	}
	defer func() {
		for _, b := range from {
			err = errors.Join(err, b.Close())
		}
	}()
	for _, i := range saved {
		v := s.pl.results[i]
		n := s.pl.values[v].bytes
		if n == 0 {
			continue
		}
		name := r.c.core.Input(r.c.stateIn[i]).Name
		b, err := r.c.ctx.cl.CreateEmptyBuffer(cl.MemReadWrite, n)
		if err != nil {
			return driver.Errorf(driver.ErrDevice, "gpu: infer %q: scratch buffer for state %q (states that take each other's values): %w", r.c.model.Name, name, err)
		}
		from[i] = b
		ev, err := r.queue.EnqueueCopyBuffer(r.buffer(s.pl, s.st, v), b, 0, 0, n, nil)
		if err != nil {
			return r.fail("saving the next value of state "+name, err)
		}
		s.keep(&s.evs.copies, ev)
	}
	for _, i := range order {
		if err := r.keepState(s, r.c.stateIn[i], s.pl.results[i], from[i]); err != nil {
			return err
		}
	}
	return nil
}

// keepState enqueues the copy of result value v (from src where not nil,
// else from its buffer) into the state buffer of input pi.
func (r *InferRequest) keepState(s *runState, pi, v int, src *cl.MemObject) error {
	n := s.pl.values[v].bytes
	if n == 0 || s.pl.values[s.pl.values[v].root].held == pi+1 {
		return nil
	}
	if src == nil {
		src = r.buffer(s.pl, s.st, v)
	}
	ev, err := r.queue.EnqueueCopyBuffer(src, r.held[pi], 0, 0, n, nil)
	if err != nil {
		return r.fail("keeping state "+r.c.core.Input(pi).Name, err)
	}
	s.keep(&s.evs.copies, ev)
	return nil
}

// writeState writes t (zeros when nil) into the state buffer of input i
// and waits for it.
func (r *InferRequest) writeState(i int, t *tensor.Tensor) error {
	b := r.held[i]
	var ev *cl.Event
	var err error
	if t == nil {
		zero := uint32(0)
		ev, err = r.queue.EnqueueFillBuffer(b, unsafe.Pointer(&zero), 4, 0, b.Size(), nil)
	} else {
		ev, err = cl.EnqueueWriteSlice(r.queue, b, true, 0, t.Contiguous().Bytes(), nil)
	}
	if err == nil {
		err = ev.Wait()
		err = errors.Join(err, ev.Close())
	}
	if err != nil {
		return r.fail("setting state "+r.c.core.Input(i).Name, err)
	}
	return nil
}

// HoldState returns input in's state (the request holds it whenever the
// model was compiled with MAKE_STATEFUL naming in and out).
func (r *InferRequest) HoldState(in, out string) (driver.VariableState, error) {
	i, o := r.c.core.InputIndex(in), r.c.core.OutputIndex(out)
	if i < 0 || !r.holds(i) || r.c.stateOut[i] != o {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: %q:%q is not a state pair of model %q (MAKE_STATEFUL)", in, out, r.c.model.Name)
	}
	return &gpuState{r: r, in: i}, nil
}

// gpuState is one state a request holds.
type gpuState struct {
	r  *InferRequest
	in int
}

// Name is the state's input name.
func (v *gpuState) Name() string { return v.r.c.core.Input(v.in).Name }

// idle runs f with the request's lock held, refusing while an inference
// runs.
func (v *gpuState) idle(what string, f func() error) error {
	r := v.r
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.core.Busy {
		return fmt.Errorf("gpu: %s state %q: %w", what, v.Name(), driver.ErrBusy)
	}
	if r.released || r.held == nil {
		return fmt.Errorf("gpu: %s state %q: %w", what, v.Name(), driver.ErrClosed)
	}
	if err := r.drainPendingLocked(); err != nil {
		return r.fail("draining before a state access", err)
	}
	return f()
}

// Reset sets the state to zeros.
func (v *gpuState) Reset() error {
	return v.idle("reset", func() error { return v.r.writeState(v.in, nil) })
}

// SetState writes t, of the state's type and shape.
func (v *gpuState) SetState(t *tensor.Tensor) error {
	port := v.r.c.core.Input(v.in)
	if t == nil || t.Type() != port.Type || !port.Shape.Compatible(t.Shape()) {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: state %q is %v%v; got %v", port.Name, port.Type, port.Shape, t)
	}
	return v.idle("set", func() error { return v.r.writeState(v.in, t) })
}

// State reads a copy of the state.
func (v *gpuState) State() (*tensor.Tensor, error) {
	port := v.r.c.core.Input(v.in)
	s, _ := port.Shape.ToShape()
	t, err := tensor.New(port.Type, s)
	if err != nil {
		return nil, err
	}
	err = v.idle("read", func() error {
		b := t.Bytes()
		if len(b) == 0 {
			return nil
		}
		ev, err := cl.EnqueueReadSlice(v.r.queue, v.r.held[v.in], true, 0, b, nil)
		if err == nil {
			err = ev.Close()
		}
		if err != nil {
			return v.r.fail("reading state "+port.Name, err)
		}
		return nil
	})
	return t, err
}
