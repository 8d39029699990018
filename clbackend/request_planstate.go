package clbackend

import (
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
)

// A request's state for each plan it runs: activation buffers, views,
// kernels with their arguments set, staging and the command buffer, made
// at the plan's first run and kept until the request is released.

// planState is what a request holds for one plan: its activation buffers
// and its kernel objects with their arguments set once.
type planState struct {
	bufs    []*cl.MemObject        // per activation buffer of the plan
	views   map[view]*cl.MemObject // sub-buffers of bufs (makeViews)
	kernels []*cl.Kernel           // per launch
	bytes   int64                  // of bufs, counted in the context's activations
	// in and out are the stages of the plan's inputs and results: pinned
	// staging buffers or their bytes in a shared buffer (staging.go; nil
	// for a port that is not staged).
	in, out []*stage
	// sharedOut: a result's stage is shared memory, which download reads
	// with no command, so the plan's last launch (or its command buffer)
	// carries the event the wait waits on, sparing finish a marker.
	sharedOut bool
	// cmdbuf is the plan's launches recorded as one command buffer
	// (cl_khr_command_buffer), made at the first run that can use it;
	// noCmdbuf is set when the device, the configuration or the
	// recording refused one (the launches are then enqueued one by one).
	cmdbuf   *cl.CommandBuffer
	noCmdbuf bool
	// cmdbufStates: cmdbuf ends with the copies of the next states into
	// the request's state buffers (MAKE_STATEFUL), so download enqueues
	// none after it.
	cmdbufStates bool
	// stateOrder and stateSaved are the plan's stateResults, fixed per
	// plan: the order of its next states' copies and a cycle's results.
	stateOrder, stateSaved []int
}

// close releases the state's kernels and buffers, and takes their bytes
// off the activations of context cc.
func (st *planState) close(cc *clContext) error {
	var errs []error
	errs = append(errs, st.cmdbuf.Close())
	st.cmdbuf = nil
	for _, s := range append(st.in, st.out...) {
		errs = append(errs, s.close(cc))
	}
	st.in, st.out = nil, nil
	// Newest first: a driver may keep a program's kernels in a list it
	// prepends to (POCL does, and unlinks each released kernel by walking
	// it), so the creation order would make releasing n kernels O(n^2):
	// 90 s for the 100000 launches of TestHostileModels' deep chain.
	for i := len(st.kernels) - 1; i >= 0; i-- {
		errs = append(errs, st.kernels[i].Close())
	}
	errs = append(errs, st.closeViews()) // before the buffers they are part of
	for i := len(st.bufs) - 1; i >= 0; i-- {
		errs = append(errs, st.bufs[i].Close())
	}
	cc.activationBytes.Add(-st.bytes)
	st.kernels, st.bufs, st.bytes = nil, nil, 0
	return errors.Join(errs...)
}

// state returns the request's buffers and kernels for plan pl, creating
// them on first use.
func (r *InferRequest) state(pl *plan) (_ *planState, err error) {
	if st, ok := r.states[pl]; ok {
		return st, nil
	}
	c := r.c
	fail := func(what string, err error) error {
		return driver.Errorf(driver.ErrDevice, "gpu: infer request of %q on %s: %s: %w", c.model.Name, c.dev.name(), what, err)
	}
	st := &planState{}
	defer func() {
		if err != nil {
			_ = st.close(c.ctx)
		}
	}()
	shared := r.sharedBufs(pl)
	for i, size := range pl.bufSizes {
		var b *cl.MemObject
		var err error
		if shared[i] {
			// In memory the host shares (staging.go); where the driver
			// refuses, an ordinary buffer and staged transfers.
			b, err = c.ctx.cl.CreateSharedBuffer(cl.MemReadWrite, size)
		}
		if b == nil {
			b, err = c.ctx.cl.CreateEmptyBuffer(cl.MemReadWrite, size)
		}
		if err != nil {
			return nil, fail(fmt.Sprintf("activation buffer of %d bytes", size), err)
		}
		st.bufs = append(st.bufs, b)
		st.bytes += int64(size)
		c.ctx.activationBytes.Add(int64(size))
	}
	if err := st.makeViews(pl, r.held); err != nil {
		return nil, fail("sub-buffer of an activation buffer", err)
	}
	for _, l := range pl.launches {
		k, err := l.prog.CreateKernel(l.kernel.Entry)
		if err != nil {
			return nil, fail("kernel "+l.kernel.Entry+" for node "+l.node.Name, err)
		}
		st.kernels = append(st.kernels, k)
		args := make([]any, 0, len(l.args)+1)
		for i, a := range l.args {
			if s, ok := a.(slotArg); ok {
				args = append(args, r.buffer(pl, st, int(s)))
				continue
			}
			if i == 0 {
				args = append(args, a)
				continue
			}
			args = append(args, a)
		}
		if err := k.SetArgs(args...); err != nil {
			return nil, fail("arguments of kernel "+l.kernel.Entry+" for node "+l.node.Name, err)
		}
	}
	st.stateOrder, st.stateSaved = r.stateResults(pl)
	st.in, st.out = make([]*stage, len(pl.params)), make([]*stage, len(pl.results))
	if !c.profiling {
		// Profiled runs time every transfer with its event: no staging.
		if err := st.stages(c.ctx, pl); err != nil {
			return nil, fail("pinned staging buffers", err)
		}
	}
	r.states[pl] = st
	return st, nil
}
