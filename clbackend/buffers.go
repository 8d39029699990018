package clbackend

import (
	"slices"
	"strconv"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/tensor"
)

// The device memory of a plan: activation buffers shared by liveness, and
// the uploads of weights and other host values the kernels read.

// planBuffers assigns every device root value an activation buffer by
// liveness: a buffer is reused once the last kernel that reads its value
// has been enqueued (the queue is in order), best fit first.
func (b *builder) planBuffers() {
	pl := b.pl
	vals := pl.values
	end := len(pl.launches)
	touch := func(v, at int) {
		r := vals[v].root
		if vals[r].host != nil || r < pl.base || vals[r].held > 0 {
			return // a constant, a parent plan's value (plan_sizes.go), or a state buffer the request holds
		}
		if vals[r].first == unset || at < vals[r].first {
			vals[r].first = at
		}
		vals[r].last = max(vals[r].last, at)
	}
	for _, v := range pl.params {
		touch(v, -1)
	}
	if pl.seed > 0 {
		touch(pl.seed-1, -1) // written with the inputs
	}
	if pl.prog != nil {
		end = b.progLiveness(touch)
	}
	for i, l := range pl.launches {
		if pl.prog != nil {
			break
		}
		for _, a := range l.args {
			if s, ok := a.(slotArg); ok {
				touch(int(s), i)
			}
		}
	}
	for _, v := range pl.results {
		touch(v, end)
	}
	for _, v := range b.ds.keep { // read by the continuations
		touch(v, end)
	}
	b.extendLoops()
	pl.unread = make([]bool, len(pl.params))
	for i, v := range pl.params {
		r := &vals[vals[v].root]
		pl.unread[i] = r.host == nil && r.held == 0 && vals[v].root >= pl.base && r.last == -1
	}
	// Allocate at first use, free after last use.
	starts := make([][]int, end+2)
	ends := make([][]int, end+2)
	for i := range vals {
		v := &vals[i]
		if v.root != i || v.host != nil || v.first == unset || i < pl.base {
			continue
		}
		starts[v.first+1] = append(starts[v.first+1], i)
		ends[v.last+1] = append(ends[v.last+1], i)
		pl.naive += int64(v.bytes)
	}
	var free []int
	for t := 0; t < end+2; t++ {
		for _, i := range starts[t] {
			need := max(vals[i].bytes, 4)
			best := -1
			for j, f := range free {
				if pl.bufSizes[f] >= need && (best < 0 || pl.bufSizes[f] < pl.bufSizes[free[best]]) {
					best = j
				}
			}
			if best < 0 && len(free) > 0 {
				best = 0
				for j, f := range free {
					if pl.bufSizes[f] > pl.bufSizes[free[best]] {
						best = j
					}
				}
			}
			if best >= 0 {
				vals[i].buf = free[best]
				pl.bufSizes[free[best]] = max(pl.bufSizes[free[best]], need)
				free = slices.Delete(free, best, best+1)
			} else {
				vals[i].buf = len(pl.bufSizes)
				pl.bufSizes = append(pl.bufSizes, need)
			}
		}
		for _, i := range ends[t] {
			free = append(free, vals[i].buf)
		}
	}
	for _, s := range pl.bufSizes {
		pl.planned += int64(s)
	}
}

// uploadConsts puts the plan's host values that kernels read on the
// device: weights once per compiled model, the rest once per plan.
func (b *builder) uploadConsts() error {
	used := map[int]bool{}
	for _, l := range b.pl.launches {
		for _, a := range l.args {
			if s, ok := a.(slotArg); ok {
				used[b.pl.values[int(s)].root] = true
			}
		}
	}
	for _, v := range b.pl.results {
		used[b.pl.values[v].root] = true
	}
	b.progUses(used)
	for i := range b.pl.values {
		v := &b.pl.values[i]
		if v.host == nil || !used[i] || b.pl.parentConst(i) {
			continue
		}
		if v.weight != "" {
			t, mem := v.host, b.mem
			if mem == nil && b.c.dev.inPlace > 0 && t.Kind() == tensor.KindTensor && t.Type() != tensor.String {
				// Planning, on a device that shares host memory: the
				// buffer uses the plan's own tensor (the graph's
				// Constant, or the layout the planner packed), which
				// the plan keeps and nothing writes, instead of a copy
				// (IS-Net medium: 280 MB of weights not allocated and
				// copied again, 1-1.9 s of every compile on a machine
				// where fresh memory costs ~8 ms per MB).
				t = t.Contiguous()
				mem = &hostMem{data: t.Bytes()}
			}
			if _, err := b.c.weight(v.weight, t, mem); err != nil {
				return err
			}
			continue
		}
		buf, err := b.c.upload(v.host)
		if err != nil {
			return err
		}
		b.pl.consts[i] = buf
	}
	return nil
}

// parentConst reports whether host value i is on the device as a constant
// of an ancestor of pl already (plan_sizes.go).
func (pl *plan) parentConst(i int) bool {
	for p := pl.parent; p != nil; p = p.parent {
		if _, ok := p.consts[i]; ok {
			return true
		}
	}
	return false
}

// upload copies a host tensor into a new read-only device buffer, counted
// in the context's weights (GPU_MEMORY_STATISTICS) until plan.release.
func (c *CompiledModel) upload(t *tensor.Tensor) (*cl.MemObject, error) {
	buf, err := c.ctx.upload(t, c.model.Name)
	if err != nil {
		return nil, err
	}
	c.ctx.weightBytes.Add(int64(buf.Size()))
	return buf, nil
}

// weight returns the device copy of a Constant's tensor, uploading it on
// first use: weights are on the device once per context, shared by every
// model compiled in it whose constant has the same content.
//
// With mem (an import's plan record, on a device that shares host memory)
// the buffer uses t's bytes in place when they lie in mem.
func (c *CompiledModel) weight(name string, t *tensor.Tensor, mem *hostMem) (*cl.MemObject, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if b, ok := c.weights[name]; ok {
		return b, nil
	}
	key, b, err := c.ctx.weight(t, c.model.Name, mem)
	if err != nil {
		return nil, err
	}
	c.weights[name], c.wkeys[name] = b, key
	return b, nil
}

// formatBytes is n as a decimal string, for properties.
func formatBytes(n int64) string { return strconv.FormatInt(n, 10) }

// buffer is the device buffer holding value v of plan pl: a weight of the
// model, a constant of the plan, or one of the request's activation
// buffers.
func (r *InferRequest) buffer(pl *plan, st *planState, v int) *cl.MemObject {
	val := pl.values[v]
	root := val.root
	rv := pl.values[root]
	if rv.held > 0 {
		if val.off == 0 {
			return r.held[rv.held-1]
		}
		// A view of the state buffer (gatherView), made by the plan
		// that has the state's value.
		for root < pl.base {
			pl = pl.parent
			st = r.states[pl]
		}
		return st.views[view{-rv.held, val.off, max(val.bytes, 1)}]
	}
	if rv.host != nil {
		if rv.weight != "" {
			r.c.wmu.Lock()
			defer r.c.wmu.Unlock()
			return r.c.weights[rv.weight]
		}
		for p := pl; p != nil; p = p.parent {
			if b, ok := p.consts[root]; ok {
				return b
			}
		}
		return nil
	}
	// A continuation reads what its ancestors computed in their buffers
	// (plan_sizes.go).
	for root < pl.base {
		pl = pl.parent
		st = r.states[pl]
	}
	if val.off != 0 {
		return st.views[view{rv.buf, val.off, max(val.bytes, 1)}]
	}
	return st.bufs[rv.buf]
}
