package clbackend

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// The GPU plugin's side of remote contexts (driver.RemotePlugin): the
// device's own context, contexts over the user's OpenCL handles, compiling
// in a context, and what a compiled model says of and does with its
// context's memory.

// DefaultContext returns a reference to the context the device with
// DEVICE_ID deviceID ("" for the default device) compiles models in.
func (p *Plugin) DefaultContext(deviceID string) (driver.RemoteContext, error) {
	d, err := p.deviceByID(deviceID)
	if err != nil {
		return nil, err
	}
	cc, err := d.context()
	if err != nil {
		return nil, err
	}
	return &RemoteContext{cc: cc}, nil
}

// deviceByID returns the device with DEVICE_ID id, or the default one for
// "".
func (p *Plugin) deviceByID(id string) (*device, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, p.closedErr()
	}
	if id == "" {
		return p.devices[p.def], nil
	}
	i, err := p.parseDeviceID(id)
	if err != nil {
		return nil, err
	}
	return p.devices[i], nil
}

// contextKeys are the keys CreateContext takes.
var contextKeys = []string{driver.KeyContextType, driver.KeyOCLContext, driver.KeyOCLQueue, driver.KeyOCLContextDeviceID}

// CreateContext wraps the caller's OpenCL context OCL_CONTEXT (with
// CONTEXT_TYPE=OCL, or no CONTEXT_TYPE) on its device
// OCL_CONTEXT_DEVICE_ID (an index in the context's device list, 0 by
// default), which must be one of this plugin's devices; with OCL_QUEUE,
// an in-order queue of that context and device, every request of a model
// compiled in the context runs on it, ordered with the caller's own
// commands there. clinfer takes references of its own (clRetainContext,
// clRetainCommandQueue) and releases only those.
func (p *Plugin) CreateContext(props map[string]string) (driver.RemoteContext, error) {
	fail := func(format string, args ...any) error {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: create context: "+format, args...)
	}
	for k := range props {
		if !slices.Contains(contextKeys, k) {
			return nil, fail("unknown key %s (accepted: %s)", k, strings.Join(contextKeys, ", "))
		}
	}
	if v, ok := props[driver.KeyContextType]; ok && v != driver.ContextTypeOCL {
		return nil, fail("%s=%q: the GPU device takes %s contexts", driver.KeyContextType, v, driver.ContextTypeOCL)
	}
	cv, ok := props[driver.KeyOCLContext]
	if !ok {
		return nil, fail("%s is missing: pass your cl_context's handle (clbackend.ContextParams makes the map from the cl package's types)", driver.KeyOCLContext)
	}
	ch, err := driver.ParseHandle(driver.KeyOCLContext, cv)
	if err != nil {
		return nil, err
	}
	idx := 0
	if v, ok := props[driver.KeyOCLContextDeviceID]; ok {
		if idx, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || idx < 0 {
			return nil, fail("bad %s %q: want an index in the context's device list", driver.KeyOCLContextDeviceID, v)
		}
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	uc, err := cl.RetainContext(ch)
	if err != nil {
		return nil, fail("%s %s is not a live OpenCL context: %v", driver.KeyOCLContext, cv, err)
	}
	var q *cl.CommandQueue
	ok = false
	defer func() {
		if !ok {
			_ = q.Close()
			_ = uc.Close()
		}
	}()
	devs := uc.Devices()
	if idx >= len(devs) {
		return nil, fail("%s=%d, and %s %s has %d device(s)", driver.KeyOCLContextDeviceID, idx, driver.KeyOCLContext, cv, len(devs))
	}
	var d *device
	for _, pd := range p.devices {
		if pd.cl.Equal(devs[idx]) {
			d = pd
		}
	}
	if d == nil {
		name, _ := devs[idx].Name()
		return nil, fail("device %d of %s %s (%q) is not one of the GPU device's OpenCL devices (%s); pick another %s", idx, driver.KeyOCLContext, cv, strings.TrimSpace(name), p.idList(", "), driver.KeyOCLContextDeviceID)
	}
	if qv, has := props[driver.KeyOCLQueue]; has {
		qh, err := driver.ParseHandle(driver.KeyOCLQueue, qv)
		if err != nil {
			return nil, err
		}
		if q, err = cl.RetainCommandQueue(uc, qh); err != nil {
			return nil, fail("%s %s is not a live queue of %s %s: %v", driver.KeyOCLQueue, qv, driver.KeyOCLContext, cv, err)
		}
		if !q.Device().Equal(d.cl) {
			return nil, fail("%s %s runs on another device than %s=%d (%s)", driver.KeyOCLQueue, qv, driver.KeyOCLContextDeviceID, idx, d.fullName)
		}
		if q.Properties()&cl.CommandQueueOutOfOrderExecModeEnable != 0 {
			return nil, fail("%s %s is out of order; clinfer's requests need an in-order queue (make it without CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)", driver.KeyOCLQueue, qv)
		}
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, p.closedErr()
	}
	cc := newContext(d, d.cache, uc, q, idx, true)
	d.track(cc)
	ok = true
	return &RemoteContext{cc: cc}, nil
}

// ContextParams returns the properties of Core.CreateContext for an
// OpenCL context made with the cl package, its device at index devIndex
// of the context's devices and (optionally, nil for none) an in-order
// queue of it.
func ContextParams(c *cl.Context, devIndex int, q *cl.CommandQueue) map[string]string {
	m := map[string]string{
		driver.KeyContextType:        driver.ContextTypeOCL,
		driver.KeyOCLContext:         driver.FormatHandle(c.Handle()),
		driver.KeyOCLContextDeviceID: strconv.Itoa(devIndex),
	}
	if q != nil {
		m[driver.KeyOCLQueue] = driver.FormatHandle(q.Handle())
	}
	return m
}

// BufferParams returns the properties of RemoteContext.CreateTensor that
// wrap buffer b made with the cl package.
func BufferParams(b *cl.MemObject) map[string]string {
	return map[string]string{driver.KeySharedMemType: driver.SharedMemOCLBuffer, driver.KeyMemHandle: driver.FormatHandle(b.Handle())}
}

// CompileModelIn compiles m as CompileModel does, in context rc (one of
// this plugin's): the model shares the context's programs and weights
// with the other models compiled in it, and its requests run on the
// context's OCL_QUEUE when it has one. props must not name another
// DEVICE_ID than rc's device.
func (p *Plugin) CompileModelIn(ctx context.Context, m *graph.Model, rc driver.RemoteContext, props map[string]string) (driver.CompiledModel, error) {
	if err := driver.CheckModelCall(ctx, "gpu", "compile", m); err != nil {
		return nil, err
	}
	r, ok := rc.(*RemoteContext)
	if !ok || r == nil || !slices.Contains(p.devices, r.cc.dev) {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: the remote context (%T) is not one of this GPU device's; get it from Core.DefaultContext or Core.CreateContext", m.Name, rc)
	}
	// A reference of the compile's own, which compile takes over.
	cc, err := r.ref("compile")
	if err != nil {
		return nil, err
	}
	cm, err := p.compileIn(ctx, m, cc, props)
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// compileIn is CompileModelIn in the context cc, whose reference it takes
// over (released on failure).
func (p *Plugin) compileIn(ctx context.Context, m *graph.Model, cc *clContext, props map[string]string) (_ driver.CompiledModel, err error) {
	handed := false
	defer func() {
		if !handed {
			err = errors.Join(err, cc.release())
		}
	}()
	d := cc.dev
	if id, ok := props[driver.KeyDeviceID]; ok {
		if i, err := p.parseDeviceID(id); err != nil || p.devices[i] != d {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %s=%s, and the remote context is on %s; leave %s out", m.Name, driver.KeyDeviceID, id, d.name(), driver.KeyDeviceID)
		}
	}
	props = maps.Clone(props)
	if props == nil {
		props = map[string]string{}
	}
	props[driver.KeyDeviceID] = d.id()
	_, cfg, err := p.target(props)
	if err != nil {
		return nil, err
	}
	tm, err := transform(ctx, m, d, cfg)
	if err != nil {
		return nil, err
	}
	handed = true
	return compileModel(ctx, p, cc, tm, cfg)
}

// Context returns a new reference to the context the model runs in.
func (c *CompiledModel) Context() (driver.RemoteContext, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.core.Check(); err != nil {
		return nil, err
	}
	return &RemoteContext{cc: c.ctx.acquire()}, nil
}

// ReleaseMemory frees the activation buffers (and the kernels bound to
// them) of every request of the model that is not running an inference;
// each makes them again on its next inference. A request in the middle of
// an inference keeps its memory, and is named in an error wrapping
// driver.ErrBusy once the others are freed.
func (c *CompiledModel) ReleaseMemory() error {
	c.mu.Lock()
	if err := c.core.Check(); err != nil {
		c.mu.Unlock()
		return err
	}
	reqs := make([]*InferRequest, 0, len(c.requests))
	for r := range c.requests {
		reqs = append(reqs, r)
	}
	c.mu.Unlock()
	var errs []error
	busy := 0
	for _, r := range reqs {
		freed, err := r.releaseMemory()
		if err != nil {
			errs = append(errs, err)
		}
		if !freed {
			busy++
		}
	}
	if busy > 0 {
		errs = append(errs, driver.Errorf(driver.ErrBusy, "gpu: release memory of %q: %d request(s) were running an inference and kept their activation memory; call ReleaseMemory when they are idle", c.model.Name, busy))
	}
	return errors.Join(errs...)
}
