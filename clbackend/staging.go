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

// stageLimit is the largest input or output (bytes) a request stages; a
// larger one is transferred from the tensor's own memory (one copy
// instead of two).
const stageLimit = 256 << 10

// stage is a request's pinned staging buffer for one port of a plan.
type stage struct {
	buf    *cl.MemObject
	mapped *cl.MappedMemObject
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

// stages allocates the staging buffers of plan pl's ports that take them
// (inputs the plan reads from the device, results, of 1 to stageLimit
// bytes) into st.in and st.out (made with one entry per port).
func (st *planState) stages(cc *clContext, pl *plan) error {
	for i, v := range pl.params {
		if n := pl.values[v].bytes; !pl.hostIn[i] && n > 0 && n <= stageLimit {
			s, err := newStage(cc, n)
			if err != nil {
				return err
			}
			st.in[i] = s
		}
	}
	for i, v := range pl.results {
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
