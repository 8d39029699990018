package clbackend

import (
	"errors"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// Pinned staging: a request moves its small inputs and outputs through
// buffers of host memory the driver allocates (CL_MEM_ALLOC_HOST_PTR,
// page-locked on discrete GPUs) and that stay mapped for the request's
// life. The host copies a tensor into or out of the mapped memory, and the
// transfer command reads or writes that memory: no Go memory is handed to
// the driver, so no pinning and no completion callback into Go per
// transfer (a cgo callback from a driver thread costs microseconds, a
// small model's whole kernel time), and the commands need no events.
//
// Shared ports: on a device whose memory is the host's and that shares
// fine-grained buffer SVM with it (GPU_SHARED_HOST_IO), the activation
// buffers holding a plan's inputs and results are made in that shared
// memory (cl.Context.CreateSharedBuffer), and a port's stage is its bytes
// there: the host copies an input into place before the inference's
// first command and a result out of it after the wait, and no write or
// read command is enqueued. OpenCL orders those accesses: fine-grained
// SVM is coherent at the enqueue of a command (the host's writes before
// it are seen) and at the completion of its event (the command's writes
// are seen), and a request runs one inference at a time (pending), so no
// command of another inference uses the buffers meanwhile. A small model
// then costs one launch or command buffer and one wait: on POCL each
// command is a hand-off to a driver thread.

// stageLimit is the largest input or output (bytes) a request stages; a
// larger one is transferred from the tensor's own memory (one copy
// instead of two).
const stageLimit = 256 << 10

// stage is a request's pinned staging buffer for one port of a plan.
type stage struct {
	buf    *cl.MemObject
	mapped *cl.MappedMemObject
	// shared is the port's bytes in its shared activation buffer, when
	// the plan state made that buffer shared (buf and mapped are nil).
	shared []byte
}

// bytes is the host memory the port's bytes pass through.
func (s *stage) bytes() []byte {
	if s.shared != nil {
		return s.shared
	}
	return s.mapped.Bytes()
}

// newStage allocates and maps a staging buffer of n bytes in context cc,
// counted as staging memory there.
func newStage(cc *clContext, n int) (*stage, error) {
	q, err := cc.transferQueue()
	if err != nil {
		return nil, err
	}
	buf, err := cc.cl.CreateEmptyBuffer(cl.MemReadWrite|cl.MemAllocHostPtr, n)
	if err != nil {
		return nil, err
	}
	mapped, ev, err := q.EnqueueMapBuffer(buf, true, cl.MapFlagRead|cl.MapFlagWrite, 0, n, nil)
	if err == nil {
		err = ev.Close()
	}
	if err != nil {
		return nil, errors.Join(err, buf.Close())
	}
	cc.stagingBytes.Add(int64(n))
	return &stage{buf: buf, mapped: mapped}, nil
}

// close unmaps and releases the buffer; cc is its context.
func (s *stage) close(cc *clContext) error {
	if s == nil || s.buf == nil {
		return nil
	}
	cc.stagingBytes.Add(-int64(s.buf.Size()))
	q, err := cc.transferQueue()
	if err == nil {
		var ev *cl.Event
		if ev, err = q.EnqueueUnmapMemObject(s.buf, s.mapped, nil); err == nil {
			err = errors.Join(ev.Wait(), ev.Close())
		}
	}
	err = errors.Join(err, s.buf.Close())
	s.buf, s.mapped = nil, nil
	return err
}

// sharedBufs returns which of plan pl's activation buffers hold a port
// that the request shares with the host, when the compiled model shares
// them (GPU_SHARED_HOST_IO on a device with shared memory; no profiling,
// which times each transfer by its event): an input the plan reads from
// the device, or a result that is not a state.
func (r *InferRequest) sharedBufs(pl *plan) map[int]bool {
	if !r.c.sharedIO || r.c.profiling {
		return nil
	}
	shared := map[int]bool{}
	for i, v := range pl.params {
		if b, ok := pl.portBuf(v); ok && !pl.hostIn[i] && !r.holds(i) && !(i < len(pl.unread) && pl.unread[i]) {
			shared[b] = true
		}
	}
	for i, v := range pl.results {
		if _, state := r.c.stateIn[i]; !state {
			if b, ok := pl.portBuf(v); ok {
				shared[b] = true
			}
		}
	}
	return shared
}

// portBuf is the activation buffer of pl holding port value v, and
// whether there is one: not for a constant, a state buffer, a parent
// plan's value (plan_sizes.go) or an empty value.
func (pl *plan) portBuf(v int) (int, bool) {
	val := pl.values[v]
	rv := pl.values[val.root]
	if rv.host != nil || rv.held > 0 || val.root < pl.base || val.bytes == 0 || rv.first == unset || rv.buf >= len(pl.bufSizes) {
		return 0, false
	}
	return rv.buf, true
}

// sharedStage is the stage of port value v of pl when its activation
// buffer is shared memory (cl.MemObject.HostBytes), else nil.
func (st *planState) sharedStage(pl *plan, v int) *stage {
	b, ok := pl.portBuf(v)
	if !ok {
		return nil
	}
	host := st.bufs[b].HostBytes()
	if host == nil {
		return nil
	}
	off := pl.values[v].off
	return &stage{shared: host[off : off+pl.values[v].bytes]}
}

// stages makes the stages of plan pl's ports that take them (inputs the
// plan reads from the device, results) into st.in and st.out (made with
// one entry per port): a port in a shared buffer has its bytes there as
// its stage, any other of 1 to stageLimit bytes a pinned staging buffer.
func (st *planState) stages(cc *clContext, pl *plan) error {
	for i, v := range pl.params {
		if pl.hostIn[i] {
			continue
		}
		if s := st.sharedStage(pl, v); s != nil {
			st.in[i] = s
			continue
		}
		if n := pl.values[v].bytes; n > 0 && n <= stageLimit {
			s, err := newStage(cc, n)
			if err != nil {
				return err
			}
			st.in[i] = s
		}
	}
	for i, v := range pl.results {
		if s := st.sharedStage(pl, v); s != nil {
			st.out[i] = s
			st.sharedOut = true
			continue
		}
		if n := pl.values[v].bytes; n > 0 && n <= stageLimit {
			s, err := newStage(cc, n)
			if err != nil {
				return err
			}
			st.out[i] = s
		}
	}
	return nil
}

// unstageSplit is the size (bytes) from which unstage copies a request's
// results out of their stages on every core: below it, the goroutines'
// start costs more than they save.
const unstageSplit = 1 << 20

// unstage copies the results that s staged (unstage) out of their stages
// into s.staged. Large results (IS-Net medium's six 1024x1024 maps, 25 MB
// of fresh memory each inference, whose first touch faults each page in)
// are copied in one contiguous part of their concatenation per core: the
// device is done and the cores are idle.
func (r *InferRequest) unstage(s *runState) {
	total := 0
	for i, from := range s.unstage {
		if from {
			total += min(len(s.staged[i].Bytes()), len(s.st.out[i].bytes()))
		}
	}
	if total < unstageSplit {
		for i, from := range s.unstage {
			if from {
				copy(s.staged[i].Bytes(), s.st.out[i].bytes())
			}
		}
		return
	}
	splitRange(int64(total), func(lo, hi int64) {
		at := int64(0) // where result i starts in the concatenation
		for i, from := range s.unstage {
			if !from {
				continue
			}
			dst, src := s.staged[i].Bytes(), s.st.out[i].bytes()
			end := at + int64(min(len(dst), len(src)))
			if a, b := max(lo, at), min(hi, end); a < b {
				copy(dst[a-at:b-at], src[a-at:b-at])
			}
			at = end
		}
	})
}
