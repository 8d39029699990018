package clbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// The inference side of data-dependent sizes (plan_sizes.go): after the
// launches of a plan that ends in pending sizes, resume reads the sizes
// back in one wait and goes on with the continuation for them, which the
// request builds on first use and keeps in a small cache of its own.

// contCacheSize is how many continuations a request keeps: a detection
// model sees a new count per image, and each continuation holds buffers.
const contCacheSize = 8

// segment is one plan of an inference's chain, with its request state and
// the host time of each of its launches.
type segment struct {
	pl  *plan
	st  *planState
	cpu []time.Duration
	ran []int // a program's launches, in the order they ran
}

// contEntry is a cached continuation and its key (parent and sizes).
type contEntry struct {
	key string
	pl  *plan
}

// segments returns the plans the inference ran, in order.
func (s *runState) segments() []segment {
	return append(append([]segment(nil), s.segs...), segment{s.pl, s.st, s.cpu, s.ran})
}

// resume reads back the sizes s.pl's data-sized nodes computed (one wait
// for all of them), switches s to the continuation for those sizes and
// enqueues all its launches (or walks its program).
func (r *InferRequest) resume(ctx context.Context, s *runState) error {
	pl := s.pl
	t0 := time.Now()
	pending := pl.cont.pending
	sizes := make([]int64, len(pending))
	counts := make([][]int32, len(pending))
	var last *cl.Event
	for i, p := range pending {
		if p.v < 0 {
			sizes[i] = p.size
			continue
		}
		if h := pl.values[pl.values[p.v].root].host; h != nil { // known at plan time
			sizes[i] = int64(h.Float64s()[0])
			continue
		}
		counts[i] = make([]int32, 1)
		ev, err := cl.EnqueueReadSlice(r.queue, r.buffer(pl, s.st, p.v), false, 0, counts[i], nil)
		if err != nil {
			return r.fail("reading the output size of node "+p.node, err)
		}
		s.keep(&s.evs.download, ev)
		s.transfers.DeviceToHost += 4
		last = ev
	}
	if last != nil {
		if err := r.queue.Flush(); err != nil {
			return r.fail("flushing the queue", err)
		}
		if err := r.waitFor(ctx, s, last, "waiting for the output sizes"); err != nil {
			return err
		}
	}
	for i, c := range counts {
		if c != nil {
			sizes[i] = int64(c[0])
		}
	}
	s.wait += time.Since(t0)
	next, err := r.continuation(ctx, pl, sizes)
	if err != nil {
		return fmt.Errorf("gpu: infer %q: %w", r.c.model.Name, err)
	}
	r.core.Mu.Lock()
	st, err := r.state(next)
	r.core.Mu.Unlock()
	if err != nil {
		return err
	}
	s.segs = append(s.segs, segment{s.pl, s.st, s.cpu, s.ran})
	s.pl, s.st, s.next, s.cpu, s.ran = next, st, 0, make([]time.Duration, len(next.launches)), nil
	if next.prog != nil {
		return r.runProgram(ctx, s)
	}
	return r.launch(s, len(next.launches))
}

// continuation returns parent's continuation for sizes from the request's
// cache, building it on a miss (and evicting the least recently used one
// beyond contCacheSize, with the continuations built on it).
func (r *InferRequest) continuation(ctx context.Context, parent *plan, sizes []int64) (*plan, error) {
	key := fmt.Sprintf("%p %v", parent, sizes)
	for i, e := range r.conts {
		if e.key == key {
			r.conts = append(append(r.conts[:i:i], r.conts[i+1:]...), e)
			return e.pl, nil
		}
	}
	pl, err := r.c.continuePlan(ctx, parent, sizes)
	if err != nil {
		return nil, err
	}
	r.conts = append(r.conts, contEntry{key, pl})
	if len(r.conts) > contCacheSize {
		for _, e := range r.conts {
			if !descends(pl, e.pl) { // not the chain this inference runs
				r.core.Mu.Lock()
				err := r.evict(e.pl)
				r.core.Mu.Unlock()
				if err != nil {
					return nil, r.fail("releasing a continuation plan", err)
				}
				break
			}
		}
	}
	return pl, nil
}

// descends reports whether pl is anc or a continuation built on it.
func descends(pl, anc *plan) bool {
	for p := pl; p != nil; p = p.parent {
		if p == anc {
			return true
		}
	}
	return false
}

// evict releases the cached continuation pl and those built on it, with
// the request's state for them; r.core.Mu is held.
func (r *InferRequest) evict(pl *plan) error {
	var err error
	keep := r.conts[:0]
	for _, e := range r.conts {
		if !descends(e.pl, pl) {
			keep = append(keep, e)
			continue
		}
		if st, ok := r.states[e.pl]; ok {
			if e := st.close(r.c.ctx); e != nil && err == nil {
				err = e
			}
			delete(r.states, e.pl)
		}
		if e := e.pl.release(r.c.ctx); e != nil && err == nil {
			err = e
		}
	}
	clear(r.conts[len(keep):])
	r.conts = keep
	return err
}

// releaseConts releases every cached continuation (after the states);
// r.core.Mu is held.
func (r *InferRequest) releaseConts() error {
	var err error
	for _, e := range r.conts {
		if e := e.pl.release(r.c.ctx); e != nil && err == nil {
			err = e
		}
	}
	r.conts = nil
	return err
}
