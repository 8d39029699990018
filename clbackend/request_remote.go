package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/plugin/driver"
)

// Remote tensors bound to a request's ports (driver.RemoteBinder): the
// inference copies a remote input into its input buffer and its result
// into a remote output on the device, so nothing crosses the host; and
// the bytes each inference moved (driver.TransferCounter).

// Interface checks.
var (
	_ driver.RemoteBinder    = (*InferRequest)(nil)
	_ driver.TransferCounter = (*InferRequest)(nil)
)

// SetRemoteTensor binds remote tensor t to the input or output called
// name: the inference reads the input from t's buffer, or writes the
// output into it, on the device. t must be a GPU remote tensor of the
// model's OpenCL context (CompiledModel.Context().CreateTensor, or one
// over the same cl_context), open, and of the port's type and shape;
// otherwise the error wraps driver.ErrInvalidArgument (driver.ErrClosed
// for a closed one) and names t and the port. A later SetTensor of the
// port binds a host tensor instead.
func (r *InferRequest) SetRemoteTensor(name string, t driver.RemoteTensor) error {
	return r.core.SetRemoteTensor(name, t, r.c.checkRemote)
}

// RemoteTensor returns the remote tensor bound to a port.
func (r *InferRequest) RemoteTensor(name string) (driver.RemoteTensor, error) {
	return r.core.RemoteTensor(name)
}

// Transfers returns the bytes the last inference moved: host to device
// (host inputs), device to host (host outputs) and device to device
// (remote tensors in and out).
func (r *InferRequest) Transfers() driver.Transfers {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	return r.transfers
}

// checkRemote tells whether t can be bound to a request of c: a GPU
// remote tensor, open, in c's OpenCL context.
func (c *CompiledModel) checkRemote(t driver.RemoteTensor) error {
	rt, ok := t.(*RemoteTensor)
	if !ok {
		return driver.Errorf(driver.ErrInvalidArgument, "it is a remote tensor of %s (%T), not of the GPU device; copy it through a host tensor", t.DeviceName(), t)
	}
	rt.mu.RLock()
	closed := rt.buf == nil
	rt.mu.RUnlock()
	if closed {
		return rt.closedErr("bind")
	}
	if rt.cc.handle() != c.ctx.handle() {
		return driver.Errorf(driver.ErrInvalidArgument, "it lives in %s, and model %q runs in %s; create it in the model's context (CompiledModel.Context) or compile the model in its context (CompileModelIn)", rt.cc.describe(), c.model.Name, c.ctx.describe())
	}
	return nil
}

// lockRemotes resolves the remote tensors bound to the ports, read-locking each tensor (once) until unlockRemotes so that
// Close waits for the inference; a tensor closed since it was bound, or
// one bound to an input whose values the plan reads on the host, is an
// error naming it.
func (r *InferRequest) lockRemotes(s *runState, in, out []driver.RemoteTensor) error {
	c := r.c
	resolve := func(rts []*RemoteTensor, ts []driver.RemoteTensor, port func(int) string, host []bool) ([]*RemoteTensor, error) {
		rts = resized(rts, len(ts))
		for i, t := range ts {
			if t == nil {
				continue
			}
			rt := t.(*RemoteTensor) // checkRemote let only these in
			if host != nil && host[i] {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: infer %q: input %q is bound to remote tensor %q, and the plan reads that input's values on the host (a shape or an index); bind a host tensor", c.model.Name, port(i), rt.name)
			}
			locked := false
			for _, l := range s.remotes {
				locked = locked || l == rt
			}
			if !locked {
				rt.mu.RLock()
				s.remotes = append(s.remotes, rt)
			}
			if rt.buf == nil {
				return nil, fmt.Errorf("gpu: infer %q: port %q: %w", c.model.Name, port(i), rt.closedErr("infer"))
			}
			rts[i] = rt
		}
		return rts, nil
	}
	var err error
	s.remoteIn, err = resolve(s.remoteIn, in, func(i int) string { return c.core.Input(i).Name }, c.hostParam)
	if err == nil {
		s.remoteOut, err = resolve(s.remoteOut, out, func(i int) string { return c.core.Output(i).Name }, nil)
	}
	if err != nil {
		s.unlockRemotes()
	}
	return err
}

// unlockRemotes releases the read locks lockRemotes took; later calls do
// nothing.
func (s *runState) unlockRemotes() {
	for _, rt := range s.remotes {
		rt.mu.RUnlock()
	}
	clear(s.remotes)
	s.remotes = s.remotes[:0]
}

// releaseMemory frees the request's activation buffers and kernels unless
// an inference uses them, and reports whether it did.
func (r *InferRequest) releaseMemory() (bool, error) {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.core.Busy || r.pending != nil {
		return false, nil
	}
	var err error
	for pl, st := range r.states {
		if e := st.close(r.c.ctx); e != nil && err == nil {
			err = driver.Errorf(driver.ErrDevice, "gpu: release memory of %q: %w", r.c.model.Name, e)
		}
		delete(r.states, pl)
	}
	return true, err
}
