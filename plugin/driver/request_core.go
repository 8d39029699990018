package driver

import (
	"context"
	"fmt"
	"sync"

	"github.com/clinfer/clinfer/tensor"
)

// RequestCore is the part of an infer request every device shares: the
// tensor bindings and the busy and closed state, guarded by Mu. A device
// keeps one in an unexported field, guards its own request state with the
// same Mu, and forwards SetTensor and Tensor to it, so the checks and the
// messages are the same on every device.
type RequestCore struct {
	// Mu guards the fields below and the device's own request state.
	Mu sync.Mutex
	// IO holds the bound tensors.
	IO Bindings
	// Busy is set while an inference runs (sync Infer; the asynchronous
	// request has its own guard).
	Busy bool
	// Closed is set by the device's Close.
	Closed bool
	// Prof is the last inference's profile, which ProfilingInfo returns.
	Prof []ProfilingInfo

	prefix string // "cpu", "gpu": starts every error message
}

// Init prepares the core for a model's ports; prefix starts the error
// messages ("cpu").
func (c *RequestCore) Init(prefix string, inputs, outputs []PortInfo) {
	c.prefix = prefix
	c.IO = NewBindings(inputs, outputs)
}

// Usable returns an error wrapping ErrClosed or ErrBusy when the request
// cannot be used now; Mu is held.
func (c *RequestCore) Usable() error {
	if c.Closed {
		return fmt.Errorf("%s: infer request: %w", c.prefix, ErrClosed)
	}
	if c.Busy {
		return fmt.Errorf("%s: infer request is running: %w", c.prefix, ErrBusy)
	}
	return nil
}

// SetTensor binds t to the input or output called name (see
// Bindings.Set); it fails with ErrBusy while an inference runs.
func (c *RequestCore) SetTensor(name string, t *tensor.Tensor) error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if err := c.Usable(); err != nil {
		return err
	}
	if err := c.IO.Set(name, t); err != nil {
		return fmt.Errorf("%s: set tensor: %w", c.prefix, err)
	}
	return nil
}

// SetRemoteTensor binds remote tensor t to the input or output called
// name (see Bindings.SetRemote) after check, the device's own test of t
// (its context and device); it fails with ErrBusy while an inference
// runs.
func (c *RequestCore) SetRemoteTensor(name string, t RemoteTensor, check func(RemoteTensor) error) error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if err := c.Usable(); err != nil {
		return err
	}
	if t != nil && check != nil {
		if err := check(t); err != nil {
			return fmt.Errorf("%s: set remote tensor %q for port %q: %w", c.prefix, t.Name(), name, err)
		}
	}
	if err := c.IO.SetRemote(name, t); err != nil {
		return fmt.Errorf("%s: set remote tensor: %w", c.prefix, err)
	}
	return nil
}

// RemoteTensor returns the remote tensor bound to a port (see
// Bindings.Remote); it fails with ErrClosed once the request is closed.
func (c *RequestCore) RemoteTensor(name string) (RemoteTensor, error) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Closed {
		return nil, fmt.Errorf("%s: infer request: remote tensor %q after Close: %w", c.prefix, name, ErrClosed)
	}
	t, err := c.IO.Remote(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.prefix, err)
	}
	return t, nil
}

// Tensor returns the tensor bound to an input, or an output's tensor (see
// Bindings.Get); it fails with ErrClosed once the request is closed.
func (c *RequestCore) Tensor(name string) (*tensor.Tensor, error) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Closed {
		return nil, fmt.Errorf("%s: infer request: tensor %q after Close: %w", c.prefix, name, ErrClosed)
	}
	t, err := c.IO.Get(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.prefix, err)
	}
	return t, nil
}

// ProfilingInfo returns a copy of Prof, the last inference's profile;
// nothing once the request is closed.
func (c *RequestCore) ProfilingInfo() []ProfilingInfo {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Closed {
		return nil
	}
	return append([]ProfilingInfo(nil), c.Prof...)
}

// RunInline is a synchronous Infer: it marks the request busy, runs the
// stages in order on the calling goroutine with ctx, and clears the mark.
// The first stage error is returned.
func (c *RequestCore) RunInline(ctx context.Context, stages []Stage) error {
	c.Mu.Lock()
	if err := c.Usable(); err != nil {
		c.Mu.Unlock()
		return err
	}
	c.Busy = true
	c.Mu.Unlock()
	defer func() {
		c.Mu.Lock()
		c.Busy = false
		c.Mu.Unlock()
	}()
	for _, st := range stages {
		if err := st.Run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Begin is how an inference's first stage starts on every device: with Mu
// held it fails when the request is closed or check (the compiled model's
// closed check) fails, snapshots the bindings (Bindings.Snapshot), fails
// with ErrInvalidArgument naming the first input that has no tensor (a
// dynamic one never bound: no device may make one up) and runs locked,
// the device's own work under Mu (nil for none); then it fails with ctx's
// error, naming model, once ctx is done. Busy is the caller's guard
// (RunInline, or the asynchronous request).
func (c *RequestCore) Begin(ctx context.Context, model string, check, locked func() error) (in, out []*tensor.Tensor, userOut []bool, err error) {
	return c.BeginInto(ctx, model, check, locked, nil, nil, nil)
}

// BeginInto is Begin that snapshots the bindings into the memory of an
// earlier inference's slices in, out and userOut (Bindings.SnapshotInto),
// for a request that runs inference after inference without allocating.
func (c *RequestCore) BeginInto(ctx context.Context, model string, check, locked func() error, in, out []*tensor.Tensor, userOut []bool) ([]*tensor.Tensor, []*tensor.Tensor, []bool, error) {
	var err error
	c.Mu.Lock()
	if c.Closed {
		c.Mu.Unlock()
		return nil, nil, nil, fmt.Errorf("%s: infer request: %w", c.prefix, ErrClosed)
	}
	if err := check(); err != nil {
		c.Mu.Unlock()
		return nil, nil, nil, err
	}
	in, out, userOut = c.IO.SnapshotInto(in, out, userOut)
	if err := c.IO.Unbound(); err != nil {
		c.Mu.Unlock()
		return nil, nil, nil, fmt.Errorf("%s: infer %q: %w", c.prefix, model, err)
	}
	if locked != nil {
		err = locked()
	}
	c.Mu.Unlock()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: infer %q: %w", c.prefix, model, err)
	}
	return in, out, userOut, nil
}
