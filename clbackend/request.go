package clbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// InferRequest runs a GPU compiled model on its own tensors, command queue,
// activation buffers and kernels. Methods are safe for concurrent use;
// while Infer runs, SetTensor fails with plugin.ErrBusy.
type InferRequest struct {
	c *CompiledModel

	mu      sync.Mutex
	busy    bool
	closed  bool
	inputs  []*tensor.Tensor
	outputs []*tensor.Tensor
	userOut []bool
	prof    []plugin.ProfilingInfo

	// Device resources, owned by the request (released by release).
	queue   *cl.CommandQueue
	bufs    []*cl.MemObject // per slot; nil for constants (the model's)
	kernels []*cl.Kernel    // per launch, arguments set once
}

var _ plugin.InferRequest = (*InferRequest)(nil)

// newInferRequest creates the request's queue, buffers and kernels; c.mu
// is held.
func newInferRequest(c *CompiledModel) (_ *InferRequest, err error) {
	r := &InferRequest{c: c, inputs: make([]*tensor.Tensor, len(c.inputs)),
		outputs: make([]*tensor.Tensor, len(c.outputs)), userOut: make([]bool, len(c.outputs))}
	for i, in := range c.inputs {
		s, _ := in.Shape.ToShape()
		t, err := tensor.New(in.Type, s)
		if err != nil {
			return nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: input %q: %w", in.Name, err)
		}
		r.inputs[i] = t
	}
	defer func() {
		if err != nil {
			_ = r.release()
		}
	}()
	fail := func(what string, err error) error {
		return plugin.Errorf(plugin.ErrDevice, "gpu: infer request of %q on %s: %s: %w", c.model.Name, c.dev.name(), what, err)
	}
	var qprops cl.CommandQueueProperty
	if c.profiling {
		qprops |= cl.CommandQueueProfilingEnable
	}
	ctx := c.ctx.val
	if r.queue, err = ctx.CreateCommandQueue(c.dev.cl, qprops); err != nil {
		return nil, fail("command queue", err)
	}
	r.bufs = make([]*cl.MemObject, len(c.slots))
	for i, s := range c.slots {
		if s.value != nil {
			r.bufs[i] = nil
			continue
		}
		if r.bufs[i], err = ctx.CreateEmptyBuffer(cl.MemReadWrite, max(s.bytes, 4)); err != nil {
			return nil, fail(fmt.Sprintf("buffer for %s%s (%d bytes)", s.typ, s.shape, s.bytes), err)
		}
	}
	for _, l := range c.launches {
		k, err := l.prog.CreateKernel(l.kernel.Entry)
		if err != nil {
			return nil, fail("kernel "+l.kernel.Entry+" for node "+l.node.Name, err)
		}
		r.kernels = append(r.kernels, k)
		args := make([]any, 0, len(l.in)+4)
		for _, s := range l.in {
			args = append(args, r.buffer(s))
		}
		args = append(args, r.buffer(l.out), uint64(l.n))
		for _, s := range l.scalar {
			args = append(args, s)
		}
		if err := k.SetArgs(args...); err != nil {
			return nil, fail("arguments of kernel "+l.kernel.Entry+" for node "+l.node.Name, err)
		}
	}
	return r, nil
}

// buffer is the device buffer of slot s: the request's, or the model's for
// a constant.
func (r *InferRequest) buffer(s int) *cl.MemObject {
	if b := r.bufs[s]; b != nil {
		return b
	}
	return r.c.constBufs[s]
}

// ports returns inputs then outputs, for plugin.CheckTensor.
func (r *InferRequest) ports() []plugin.PortInfo {
	return append(clonePorts(r.c.inputs), r.c.outputs...)
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the result.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	idx, err := plugin.CheckTensor(r.ports(), name, t)
	if err != nil {
		return fmt.Errorf("gpu: set tensor: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if idx < len(r.inputs) {
		r.inputs[idx] = t
		return nil
	}
	idx -= len(r.inputs)
	r.outputs[idx] = t
	r.userOut[idx] = true
	return nil
}

// usable reports ErrClosed or ErrBusy; r.mu is held.
func (r *InferRequest) usable() error {
	if r.closed {
		return fmt.Errorf("gpu: infer request: %w", plugin.ErrClosed)
	}
	if r.busy {
		return fmt.Errorf("gpu: infer request is running: %w", plugin.ErrBusy)
	}
	return nil
}

// Tensor returns the tensor bound to an input, or an output's tensor
// (valid after Infer).
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("gpu: infer request: %w", plugin.ErrClosed)
	}
	for i, p := range r.c.inputs {
		if p.Name == name {
			return r.inputs[i], nil
		}
	}
	for i, p := range r.c.outputs {
		if p.Name == name {
			if r.outputs[i] == nil {
				return nil, plugin.Errorf(plugin.ErrNotFound, "gpu: output %q has no tensor yet (run Infer first)", name)
			}
			return r.outputs[i], nil
		}
	}
	names := make([]string, 0, len(r.c.inputs)+len(r.c.outputs))
	for _, p := range r.ports() {
		names = append(names, p.Name)
	}
	return nil, plugin.Errorf(plugin.ErrNotFound, "gpu: no tensor %q (ports: %s)", name, strings.Join(names, ", "))
}

// Infer runs the plan once: it writes the inputs (non-blocking), enqueues
// every kernel back to back on the request's in-order queue, reads the
// outputs and waits once. A ctx done before anything is enqueued returns
// its error; one done while the device works makes Infer wait for the
// queue to drain and then return ctx's error.
func (r *InferRequest) Infer(ctx context.Context) error {
	c := r.c
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gpu: infer %q: %w", c.model.Name, err)
	}
	c.running.RLock()
	defer c.running.RUnlock()
	r.mu.Lock()
	if err := r.usable(); err != nil {
		r.mu.Unlock()
		return err
	}
	if err := c.check(); err != nil {
		r.mu.Unlock()
		return err
	}
	r.busy = true
	inputs := append([]*tensor.Tensor(nil), r.inputs...)
	outputs := append([]*tensor.Tensor(nil), r.outputs...)
	userOut := append([]bool(nil), r.userOut...)
	r.mu.Unlock()

	results, prof, err := r.run(ctx, inputs, outputs, userOut)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = false
	if err != nil {
		return err
	}
	for i, t := range results {
		if !r.userOut[i] {
			r.outputs[i] = t
		}
	}
	r.prof = prof
	if c.profiling {
		c.recordPerf(prof)
	}
	return nil
}

// events collects the events of one inference and closes them.
type events struct {
	upload, download []*cl.Event
	kernels          []*cl.Event
	last             *cl.Event
}

func (e *events) close() error {
	var errs []error
	for _, list := range [][]*cl.Event{e.upload, e.kernels, e.download} {
		for _, ev := range list {
			errs = append(errs, ev.Close())
		}
	}
	return errors.Join(errs...)
}

// run executes one inference; it touches no request state but the device
// resources.
func (r *InferRequest) run(ctx context.Context, inputs, outputs []*tensor.Tensor, userOut []bool) (_ []*tensor.Tensor, _ []plugin.ProfilingInfo, err error) {
	c := r.c
	fail := func(what string, err error) error {
		return plugin.Errorf(plugin.ErrDevice, "gpu: infer %q on %s: %s: %w", c.model.Name, c.dev.name(), what, err)
	}
	var evs events
	defer func() {
		if cerr := evs.close(); cerr != nil && err == nil {
			err = fail("releasing events", cerr)
		}
	}()
	keep := func(list *[]*cl.Event, ev *cl.Event) {
		*list = append(*list, ev)
		evs.last = ev
	}
	enqueued := false
	defer func() {
		if err != nil && enqueued {
			// Commands may still use the request's buffers and the host
			// memory they read or write: drain before returning.
			_ = r.queue.Finish()
		}
	}()

	t0 := time.Now()
	// Upload: the input bytes stay referenced (pinned by cl) until the wait.
	hostIn := make([]*tensor.Tensor, len(inputs))
	for i, t := range inputs {
		hostIn[i] = t.Contiguous()
		b := hostIn[i].Bytes()
		if len(b) == 0 {
			continue
		}
		ev, err := cl.EnqueueWriteSlice(r.queue, r.bufs[c.paramSlot[i]], false, 0, b, nil)
		if err != nil {
			return nil, nil, fail("writing input "+c.inputs[i].Name, err)
		}
		enqueued = true
		keep(&evs.upload, ev)
	}
	upload := time.Since(t0)

	// Execute: the in-order queue orders the kernels; no wait lists.
	t1 := time.Now()
	cpu := make([]time.Duration, len(c.launches))
	for i, l := range c.launches {
		if l.n == 0 {
			continue
		}
		ts := time.Now()
		ev, err := r.queue.EnqueueNDRangeKernel(r.kernels[i], nil, []int{l.global}, nil, nil)
		if err != nil {
			return nil, nil, fail(fmt.Sprintf("launching %s for node %q", l.kernel.Entry, l.node.Name), err)
		}
		enqueued = true
		keep(&evs.kernels, ev)
		cpu[i] = time.Since(ts)
	}
	execute := time.Since(t1)

	// Download into fresh tensors, or into the ones the user bound.
	t2 := time.Now()
	results := make([]*tensor.Tensor, len(c.outputs))
	staged := make([]*tensor.Tensor, len(c.outputs)) // read targets
	for i, s := range c.resultSlot {
		sl := c.slots[s]
		dst := outputs[i]
		switch {
		case userOut[i] && dst.IsContiguous():
			staged[i] = dst
		default:
			staged[i] = tensor.MustNew(sl.typ, sl.shape)
		}
		results[i] = staged[i]
		b := staged[i].Bytes()
		if len(b) == 0 {
			continue
		}
		ev, err := cl.EnqueueReadSlice(r.queue, r.buffer(s), false, 0, b, nil)
		if err != nil {
			return nil, nil, fail("reading output "+c.outputs[i].Name, err)
		}
		enqueued = true
		keep(&evs.download, ev)
	}
	download := time.Since(t2)

	// One wait for everything: the queue is in order.
	t3 := time.Now()
	if evs.last != nil {
		if err := evs.last.WaitContext(ctx); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, nil, fmt.Errorf("gpu: infer %q: %w", c.model.Name, ctxErr)
			}
			return nil, nil, fail("waiting for the device", err)
		}
	}
	wait := time.Since(t3)
	for i := range results {
		if userOut[i] && results[i] != outputs[i] {
			if err := outputs[i].CopyFrom(results[i]); err != nil {
				return nil, nil, plugin.Errorf(plugin.ErrInvalidArgument, "gpu: infer %q: output %q: %w", c.model.Name, c.outputs[i].Name, err)
			}
			results[i] = outputs[i]
		}
	}
	if !c.profiling {
		return results, nil, nil
	}
	prof, err := r.profile(&evs, cpu, upload, execute, download, wait)
	if err != nil {
		return nil, nil, fail("reading profiling info", err)
	}
	return results, prof, nil
}

// profile turns the events of one inference into per-kernel entries (device
// time from OpenCL event profiling) followed by the stages.
func (r *InferRequest) profile(evs *events, cpu []time.Duration, upload, execute, download, wait time.Duration) ([]plugin.ProfilingInfo, error) {
	c := r.c
	var prof []plugin.ProfilingInfo
	k := 0
	for i, l := range c.launches {
		e := plugin.ProfilingInfo{NodeName: l.node.Name, NodeType: l.node.OpType, ExecType: l.kernel.Entry, Status: plugin.OptimizedOut}
		if l.n != 0 {
			p, err := evs.kernels[k].Profile()
			if err != nil {
				return nil, err
			}
			k++
			e.Status, e.RealTime, e.CPUTime = plugin.Executed, max(p.Duration(), 0), cpu[i]
		}
		prof = append(prof, e)
	}
	stage := func(name string, list []*cl.Event, host time.Duration) error {
		var dev time.Duration
		for _, ev := range list {
			p, err := ev.Profile()
			if err != nil {
				return err
			}
			dev += max(p.Duration(), 0)
		}
		prof = append(prof, plugin.ProfilingInfo{NodeName: name, NodeType: "Stage", ExecType: "opencl", Status: plugin.Executed, RealTime: dev, CPUTime: host})
		return nil
	}
	if err := stage("upload", evs.upload, upload); err != nil {
		return nil, err
	}
	if err := stage("execute", evs.kernels, execute); err != nil {
		return nil, err
	}
	if err := stage("download", evs.download, download); err != nil {
		return nil, err
	}
	prof = append(prof, plugin.ProfilingInfo{NodeName: "wait", NodeType: "Stage", ExecType: "clWaitForEvents", Status: plugin.Executed, RealTime: wait, CPUTime: wait})
	return prof, nil
}

// ProfilingInfo returns per-kernel entries and the upload, execute,
// download and wait stages of the last Infer when ENABLE_PROFILING is on.
func (r *InferRequest) ProfilingInfo() []plugin.ProfilingInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plugin.ProfilingInfo(nil), r.prof...)
}

// Close releases the request's queue, buffers and kernels. It fails with
// plugin.ErrBusy while Infer runs and is idempotent.
func (r *InferRequest) Close() error {
	r.mu.Lock()
	if r.busy {
		r.mu.Unlock()
		return fmt.Errorf("gpu: close infer request: %w", plugin.ErrBusy)
	}
	err := r.releaseLocked()
	r.mu.Unlock()
	r.c.forget(r)
	if err != nil {
		return plugin.Errorf(plugin.ErrDevice, "gpu: close infer request: %w", err)
	}
	return nil
}

// release frees the device resources; later calls do nothing.
func (r *InferRequest) release() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releaseLocked()
}

// releaseLocked is release with r.mu held.
func (r *InferRequest) releaseLocked() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for _, k := range r.kernels {
		errs = append(errs, k.Close())
	}
	r.kernels = nil
	for _, b := range r.bufs {
		if b != nil {
			errs = append(errs, b.Close())
		}
	}
	r.bufs = nil
	if r.queue != nil {
		errs = append(errs, r.queue.Close())
		r.queue = nil
	}
	clear(r.inputs)
	clear(r.outputs)
	return errors.Join(errs...)
}
