package auto

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/plugin/driver"
)

// acquire returns a device request for one inference: from only when it
// is not nil, else from the serving device (with CUMULATIVE_THROUGHPUT, a
// device with room, picked by SCHEDULE_POLICY). It waits while no device
// has room (or, before the first device is ready, for one), until ctx is
// done or the compiled model closes.
func (c *CompiledModel) acquire(ctx context.Context, only *target) (*target, driver.InferRequest, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, c.closedErr()
		}
		t := only
		if t == nil {
			t = c.pick()
		}
		if t != nil && t.state != targetReady && t.state != targetCompiling && t.state != targetIdle {
			err := t.err
			c.mu.Unlock()
			return nil, nil, driver.Errorf(driver.ErrDevice, "auto: device %s cannot serve: %v", t.dev, err)
		}
		if t != nil && t.free() {
			if n := len(t.idle); n > 0 {
				r := t.idle[n-1]
				t.idle = t.idle[:n-1]
				c.mu.Unlock()
				return t, r, nil
			}
			t.made++
			cm := t.cm
			c.mu.Unlock()
			r, err := cm.CreateInferRequest()
			if err != nil {
				c.mu.Lock()
				t.made--
				c.signal()
				c.mu.Unlock()
				return nil, nil, fmt.Errorf("auto: request of %q on %s: %w", c.model.Name, t.name, err)
			}
			return t, r, nil
		}
		wake := c.changed
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("auto: infer %q: waiting for a device: %w", c.model.Name, ctx.Err())
		case <-c.life.Done():
			return nil, nil, c.closedErr()
		}
	}
}

// pick chooses the target of the next inference, or nil when none has
// room. c.mu is held.
func (c *CompiledModel) pick() *target {
	if !c.s.cumulative {
		if c.serving < 0 {
			return nil
		}
		return c.targets[c.serving]
	}
	n := len(c.targets)
	first := 0
	if c.policy == PolicyRoundRobin {
		first = c.rr
	}
	for k := range n {
		i := (first + k) % n
		if t := c.targets[i]; t.free() {
			c.rr = (i + 1) % n
			return t
		}
	}
	return nil
}

// release gives a device request back after an inference. A request that
// failed with a device error (broken) is closed rather than reused, as are
// requests of a retired device, whose compiled model the last one closes.
func (c *CompiledModel) release(t *target, r driver.InferRequest, broken bool) error {
	c.mu.Lock()
	keep := !broken && !c.closed && t.state == targetReady
	var cm driver.CompiledModel
	if keep {
		t.idle = append(t.idle, r)
	} else {
		t.made--
		if t.state == targetRetired && t.made == 0 {
			cm, t.cm = t.cm, nil
		}
	}
	c.signal()
	c.mu.Unlock()
	if keep {
		return nil
	}
	return closeAll([]driver.InferRequest{r}, cm)
}

// fallbacks are the targets an inference that failed on t may run on
// instead: the later ones in priority order (with CUMULATIVE_THROUGHPUT,
// every other one, in priority order), skipping those that cannot serve.
func (c *CompiledModel) fallbacks(t *target) []*target {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*target
	after := false
	for _, x := range c.targets {
		if x == t {
			after = true
			continue
		}
		if (after || c.s.cumulative) && x.state != targetFailed && x.state != targetRetired {
			out = append(out, x)
		}
	}
	return out
}

// ensure makes t ready to serve, compiling it now if nothing has (a
// runtime fallback), or waiting for the compilation in progress.
func (c *CompiledModel) ensure(ctx context.Context, t *target) error {
	c.mu.Lock()
	switch t.state {
	case targetReady:
		c.mu.Unlock()
		return nil
	case targetCompiling:
		done := t.done
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.life.Done():
			return c.closedErr()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.state != targetReady {
			return driver.Errorf(driver.ErrDevice, "auto: device %s: %v", t.dev, t.err)
		}
		return nil
	case targetIdle:
		t.state, t.done = targetCompiling, make(chan struct{})
		c.mu.Unlock()
	default:
		err := t.err
		c.mu.Unlock()
		return driver.Errorf(driver.ErrDevice, "auto: device %s cannot serve: %v", t.dev, err)
	}
	// Compile with ctx, and stop when Close cancels c.life too.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	return c.bring(cctx, t)
}
