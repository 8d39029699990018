package auto

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
)

// This file selects the device and compiles: the queries of every
// candidate, the selected device (in the background while the CPU serves),
// the takeover when it is ready, and CUMULATIVE_THROUGHPUT's compilation
// on every device.

// compile compiles the model on t's device with ctx.
func (c *CompiledModel) compile(ctx context.Context, t *target) (driver.CompiledModel, error) {
	cm, err := c.p.Core.CompileModel(ctx, c.model, t.dev, t.props)
	if err != nil {
		return nil, fmt.Errorf("auto: compile model %q on %s: %w", c.model.Name, t.dev, err)
	}
	return cm, nil
}

// queryAll asks every target's QueryModel and records in c.why, per
// target, why it cannot run the model ("" if it can, or if it has no
// QueryModel: its compilation decides). A target cannot run the model when
// its answer leaves out an op node another target's answer lists. Nodes no
// answer lists are not held against anyone: the devices' passes fold them
// away (a Shape of a static shape) and no device names them.
func (c *CompiledModel) queryAll(ctx context.Context) error {
	nodes, err := c.model.Nodes()
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "auto: model %q: %w", c.model.Name, err)
	}
	answers := make([]map[string]string, len(c.targets))
	c.why = make([]string, len(c.targets))
	listed := map[string]bool{}
	for i, t := range c.targets {
		a, err := c.p.Core.QueryModel(ctx, c.model.Clone(), t.dev, t.props)
		switch {
		case errors.Is(err, driver.ErrNotImplemented):
		case err != nil:
			if ctx.Err() != nil {
				return fmt.Errorf("auto: query model %q on %s: %w", c.model.Name, t.dev, ctx.Err())
			}
			c.noteBadProps(err)
			c.why[i] = "QueryModel failed: " + err.Error()
		default:
			answers[i] = a
			for name := range a {
				listed[name] = true
			}
		}
	}
	for i, a := range answers {
		if a == nil {
			continue
		}
		for _, n := range nodes {
			switch n.OpType {
			case graph.OpParameter, graph.OpConstant, graph.OpResult:
				continue
			}
			if _, ok := a[n.Name]; listed[n.Name] && !ok {
				c.why[i] = fmt.Sprintf("does not support node %q (%s)", n.Name, n.OpType)
				break
			}
		}
	}
	return nil
}

// bring compiles the model on t and makes t ready (see ready), if queryAll
// found t can run it; on failure t is marked failed and the error
// returned.
func (c *CompiledModel) bring(ctx context.Context, t *target) error {
	var err error
	if why := c.query(t); why != "" {
		err = fmt.Errorf("%s: %s", t.dev, why)
	}
	var cm driver.CompiledModel
	if err == nil {
		cm, err = c.compile(ctx, t)
	}
	if err == nil {
		err = c.ready(t, cm)
	}
	if err != nil {
		c.fail(t, err)
	}
	return err
}

// query reports why t cannot run the model ("" if it can), as queryAll
// found.
func (c *CompiledModel) query(t *target) string {
	return c.why[c.indexOf(t)]
}

// indexOf returns t's position in c.targets (which never changes).
func (c *CompiledModel) indexOf(t *target) int {
	for i, x := range c.targets {
		if x == t {
			return i
		}
	}
	return -1
}

// cached reports whether the model cache already holds t's compiled
// model, so compiling on t is an import.
func (c *CompiledModel) cached(t *target) bool {
	dir := t.props[driver.KeyCacheDir]
	if dir == "" {
		return false
	}
	path, err := c.p.Core.CacheBlobPath(dir, c.model, t.dev, t.props)
	if err != nil {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}

// isCPU reports whether t's device is the CPU plugin's.
func isCPU(t *target) bool {
	plug, _, _, _ := driver.ParseDeviceName(t.dev)
	return plug == cpuPlugin
}

// compileSelected selects the first target that supports the model and
// compiles it, with the CPU serving meanwhile when startup fallback
// applies (see the package documentation).
func (c *CompiledModel) compileSelected(ctx context.Context) error {
	if err := c.queryAll(ctx); err != nil {
		return err
	}
	var reasons []string
	sel := -1
	for i, t := range c.targets {
		if why := c.query(t); why == "" {
			sel = i
			break
		}
		c.fail(t, errors.New(c.query(t)))
		reasons = append(reasons, t.dev+": "+c.query(t))
	}
	if sel < 0 {
		return c.noDevice(reasons)
	}
	helper := -1
	if sfb, _ := c.s.cfg.Get(KeyEnableStartupFallback); sfb == "YES" && !isCPU(c.targets[sel]) && !c.cached(c.targets[sel]) {
		for i := sel + 1; i < len(c.targets); i++ {
			if isCPU(c.targets[i]) {
				helper = i
				break
			}
		}
	}
	if helper >= 0 {
		if why := c.query(c.targets[helper]); why != "" {
			c.fail(c.targets[helper], errors.New(why))
			helper = -1
		}
	}
	if helper < 0 {
		return c.compileInOrder(ctx, sel, reasons)
	}
	c.helper = helper
	c.targets[sel].state = targetCompiling
	c.targets[sel].done = make(chan struct{})
	c.bg.Add(1)
	// The background compilation ends when it has compiled a device or
	// run out of candidates, or when Close cancels c.life; Close waits
	// for it.
	go c.background(sel)
	h := c.targets[helper]
	cm, err := c.compile(ctx, h)
	if err == nil {
		err = c.ready(h, cm)
	}
	if err != nil {
		// No CPU to serve: wait for the selected device instead.
		c.fail(h, err)
		select {
		case <-c.targets[sel].done:
		case <-ctx.Done():
			return fmt.Errorf("auto: compile: %w", ctx.Err())
		}
		c.bg.Wait()
		c.mu.Lock()
		serving, startErr := c.serving, c.startErr
		c.mu.Unlock()
		if serving < 0 {
			return errors.Join(driver.Errorf(driver.ErrDevice, "auto: compile model %q: no device compiled it", c.model.Name), err, startErr)
		}
	}
	c.initAsync()
	return nil
}

// compileInOrder compiles on the targets from sel on, in order, until one
// succeeds; each after sel must support the model.
func (c *CompiledModel) compileInOrder(ctx context.Context, sel int, reasons []string) error {
	for _, t := range c.targets[sel:] {
		err := c.bring(ctx, t)
		if err == nil {
			c.initAsync()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("auto: compile: %w", ctx.Err())
		}
		c.noteBadProps(err)
		reasons = append(reasons, err.Error())
	}
	return c.noDevice(reasons)
}

// noteBadProps records a device's refusal of AUTO's properties.
func (c *CompiledModel) noteBadProps(err error) {
	if errors.Is(err, driver.ErrInvalidArgument) {
		c.badProps.Store(true)
	}
}

// noDevice is the error when no candidate runs the model.
func (c *CompiledModel) noDevice(reasons []string) error {
	all := append(append([]string(nil), c.s.rejected...), reasons...)
	err := driver.Errorf(driver.ErrUnsupported, "auto: no device can run model %q (%s)", c.model.Name, strings.Join(all, "; "))
	if c.badProps.Load() {
		return driver.Errorf(driver.ErrInvalidArgument, "%w", err)
	}
	return err
}

// background compiles the selected target, and if that fails the later
// non-CPU targets that support the model, while the CPU serves.
func (c *CompiledModel) background(sel int) {
	defer c.bg.Done()
	var errs []error
	for i := sel; i < len(c.targets); i++ {
		t := c.targets[i]
		if i == c.helper || isCPU(t) {
			continue
		}
		c.mu.Lock()
		if i > sel && t.state != targetIdle {
			// Compiled (or failed) as a runtime fallback meanwhile.
			c.mu.Unlock()
			continue
		}
		t.background = true
		if i > sel {
			t.state, t.done = targetCompiling, make(chan struct{})
		}
		c.mu.Unlock()
		err := c.bring(c.life, t)
		if err == nil {
			return
		}
		errs = append(errs, err)
		if c.life.Err() != nil {
			break
		}
	}
	c.mu.Lock()
	c.startErr = errors.Join(errs...)
	c.mu.Unlock()
}

// ready makes t serve with its compiled model cm (or, for the CPU helper
// after the selected device already took over, stand by). A cm whose ports
// differ from those of the devices already serving is refused. After Close
// cm is closed instead.
func (c *CompiledModel) ready(t *target, cm driver.CompiledModel) error {
	name, err := cm.Property(driver.KeyExecutionDevices)
	if err != nil || name == "" {
		name = t.dev
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.Join(fmt.Errorf("auto: compiled model %q: %w", c.model.Name, driver.ErrClosed), cm.Close())
	}
	if c.inputs == nil {
		c.inputs, c.outputs = cm.Inputs(), cm.Outputs()
	} else if err := checkPorts(c.inputs, c.outputs, cm); err != nil {
		c.mu.Unlock()
		return errors.Join(fmt.Errorf("auto: %s: %w", t.dev, err), cm.Close())
	}
	t.cm, t.name, t.state = cm, name, targetReady
	t.limit = 0
	if c.s.cumulative {
		t.limit = virtual.OptimalRequests(cm)
	}
	finish(t)
	var retire []driver.InferRequest
	var retireCM driver.CompiledModel
	i := c.indexOf(t)
	switch {
	case c.s.cumulative:
	case c.serving < 0:
		c.serving = i
		c.record()
	case i == c.helper && !c.runtimeFB:
		// The selected device took over before the CPU was ready.
		retire, retireCM = c.retire(t)
	case t.background && c.serving == c.helper:
		// The selected device is ready: it takes over from the CPU.
		c.serving = i
		c.record()
		if !c.runtimeFB {
			retire, retireCM = c.retire(c.targets[c.helper])
		}
	}
	c.signal()
	c.mu.Unlock()
	return closeAll(retire, retireCM)
}

// checkPorts compares cm's ports with the model's.
func checkPorts(inputs, outputs []driver.PortInfo, cm driver.CompiledModel) error {
	if err := driver.CheckPorts("input", inputs, cm.Inputs()); err != nil {
		return err
	}
	return driver.CheckPorts("output", outputs, cm.Outputs())
}

// retire takes the CPU helper out of service: its idle requests, and its
// compiled model when none is busy, are returned for closing (the last
// busy one closes it in release). c.mu is held.
func (c *CompiledModel) retire(t *target) ([]driver.InferRequest, driver.CompiledModel) {
	t.state = targetRetired
	idle := t.idle
	t.idle = nil
	t.made -= len(idle)
	var cm driver.CompiledModel
	if t.made == 0 {
		cm, t.cm = t.cm, nil
	}
	return idle, cm
}

// closeAll closes requests and then a compiled model (nil is skipped).
func closeAll(reqs []driver.InferRequest, cm driver.CompiledModel) error {
	var errs []error
	for _, r := range reqs {
		errs = append(errs, r.Close())
	}
	if cm != nil {
		errs = append(errs, cm.Close())
	}
	return errors.Join(errs...)
}

// fail records that t cannot serve.
func (c *CompiledModel) fail(t *target, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.state, t.err = targetFailed, err
	finish(t)
	c.signal()
}

// finish closes t.done, if a compilation made it, once. c.mu is held.
func finish(t *target) {
	if t.done == nil {
		return
	}
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// record appends the devices serving now to the timeline. c.mu is held.
func (c *CompiledModel) record() {
	c.timeline = append(c.timeline, Switch{At: time.Since(c.start), Devices: c.executionDevicesLocked()})
}

// signal wakes inferences waiting for a device. c.mu is held.
func (c *CompiledModel) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// compileAll compiles the model on every target that supports it,
// concurrently, for CUMULATIVE_THROUGHPUT; it fails only when none does.
func (c *CompiledModel) compileAll(ctx context.Context) error {
	if err := c.queryAll(ctx); err != nil {
		return err
	}
	errs := make([]error, len(c.targets))
	var wg sync.WaitGroup
	for i, t := range c.targets {
		wg.Add(1)
		go func() { // ends with its compilation; waited for below
			defer wg.Done()
			errs[i] = c.bring(ctx, t)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("auto: compile: %w", err)
	}
	c.mu.Lock()
	n := 0
	for _, t := range c.targets {
		if t.state == targetReady {
			n++
		}
	}
	if n > 0 {
		c.record()
	}
	c.mu.Unlock()
	if n == 0 {
		var reasons []string
		for _, err := range errs {
			c.noteBadProps(err)
			reasons = append(reasons, err.Error())
		}
		return c.noDevice(reasons)
	}
	c.initAsync()
	return nil
}
