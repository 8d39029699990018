package clbackend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// clContext is an OpenCL context models compile into: the device's own
// (made on the first compile, one per device) or one wrapping the user's
// handles (Core.CreateContext). The models compiled in it share its
// programs (the plugin's program cache keys them by the context) and its
// weights (by content), and its remote tensors go to any of them. It is
// reference counted: the plugin holds the device's own, and every
// RemoteContext, compiled model and remote tensor holds one; the last
// release drops its programs from the cache and releases its handles
// (for a user context, the references clinfer took, never the user's).
type clContext struct {
	key   string // names the context in the program cache: "0" for GPU.0's own
	dev   *device
	cache *programCache
	cl    *cl.Context
	// queue is the user's queue (OCL_QUEUE), retained: the requests of
	// models compiled in the context run on it. nil: each request makes
	// its own.
	queue *cl.CommandQueue
	// devIndex is the device's index in the OpenCL context's device list
	// (OCL_CONTEXT_DEVICE_ID).
	devIndex int
	user     bool
	// inThread is the device's in-thread companion when the context holds
	// it too (the device's own context on POCL; inthread.go), else nil.
	inThread *device

	mu   sync.Mutex
	refs int
	// weights are the weights on the device by weightKey: almost always
	// one per key.
	weights   map[string][]*weightBuf
	weightIDs int64
	// transfer is the queue remote tensors copy on without a user queue
	// (and weight compares on), made on first use under tmu.
	tmu      sync.Mutex
	transfer *cl.CommandQueue

	weightBytes, activationBytes, stagingBytes, remoteBytes atomic.Int64
}

// weightBuf is one weight on the device, shared by the models whose
// constants have its content.
type weightBuf struct {
	name  string   // its key and a number: unique in the context
	mem   *hostMem // the memory buf uses in place, if any
	buf   *cl.MemObject
	refs  int
	bytes int64
}

// userContexts numbers user contexts for their program cache keys.
var userContexts atomic.Int64

// newContext returns a context over c and queue (owned: released with
// the last reference) with one reference, the caller's, who registers it
// with its device (track) for GPU_MEMORY_STATISTICS.
func newContext(d *device, cache *programCache, c *cl.Context, queue *cl.CommandQueue, devIndex int, user bool) *clContext {
	key := d.id()
	if user {
		key += "/user" + strconv.FormatInt(userContexts.Add(1), 10)
	}
	return &clContext{key: key, dev: d, cache: cache, cl: c, queue: queue, devIndex: devIndex, user: user, refs: 1, weights: map[string][]*weightBuf{}}
}

// acquire adds a reference; acquiring a released context is a programmer
// error of this package.
func (cc *clContext) acquire() *clContext {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.refs <= 0 {
		panic("clbackend: acquire of a released context")
	}
	cc.refs++
	return cc
}

// release drops a reference; the last one drops the context's programs
// from the cache and releases its queues and OpenCL context.
func (cc *clContext) release() error {
	cc.mu.Lock()
	if cc.refs <= 0 {
		cc.mu.Unlock()
		return nil
	}
	cc.refs--
	if cc.refs > 0 {
		cc.mu.Unlock()
		return nil
	}
	cc.mu.Unlock()
	cc.tmu.Lock()
	transfer := cc.transfer
	cc.transfer = nil
	cc.tmu.Unlock()
	cc.dev.untrack(cc)
	var errs []error
	if cc.user {
		errs = append(errs, cc.cache.dropContext(cc.key))
	}
	errs = append(errs, transfer.Close(), cc.queue.Close(), cc.cl.Close())
	return errors.Join(errs...)
}

// handle is the OpenCL context's handle, which tells whether two contexts
// are the same OpenCL context.
func (cc *clContext) handle() uintptr { return cc.cl.Handle() }

// transferQueue returns the queue remote tensor copies run on: the user's
// queue, else one of the context's own made on first use.
func (cc *clContext) transferQueue() (*cl.CommandQueue, error) {
	if cc.queue != nil {
		return cc.queue, nil
	}
	cc.tmu.Lock() // not mu: weight asks for the queue under mu
	defer cc.tmu.Unlock()
	if cc.transfer == nil {
		q, err := cc.cl.CreateCommandQueue(cc.dev.cl, 0)
		if err != nil {
			return nil, err
		}
		cc.transfer = q
	}
	return cc.transfer, nil
}

// weightKey names contiguous t's content in the weights of a context by
// its type, shape and the CRC-32C of its bytes, which the CPU computes in
// hardware (IS-Net medium's 261 MB of packed weights: 30-50 ms, where two
// seeded 64-bit hashes took 90-120 ms of every import). A key only says
// that two weights may be the same: weight compares their bytes before it
// shares one.
func weightKey(t *tensor.Tensor) string {
	key := []byte(t.Type().String())
	for _, d := range t.Shape() {
		key = binary.LittleEndian.AppendUint64(key, uint64(d))
	}
	return string(binary.LittleEndian.AppendUint32(key, crc32.Checksum(t.Bytes(), weightCRC)))
}

var weightCRC = crc32.MakeTable(crc32.Castagnoli)

// weight returns the device copy of a constant with t's content and its
// entry's name, adding a reference the caller gives back with
// releaseWeight: models compiled in the context upload each weight once
// between them.
func (cc *clContext) weight(t *tensor.Tensor, model string, mem *hostMem) (string, *cl.MemObject, error) {
	t = t.Contiguous()
	key := weightKey(t)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, w := range cc.weights[key] {
		same, err := cc.holds(w.buf, t.Bytes())
		if err != nil {
			return "", nil, driver.Errorf(driver.ErrDevice, "gpu: model %q: comparing %s with a weight on %s: %w", model, t, cc.dev.name(), err)
		}
		if same {
			w.refs++
			return w.name, w.buf, nil
		}
	}
	buf, used, err := cc.uploadFrom(t, model, mem)
	if err != nil {
		return "", nil, err
	}
	cc.weightIDs++
	w := &weightBuf{name: key + "#" + strconv.FormatInt(cc.weightIDs, 10), buf: buf, refs: 1, bytes: int64(buf.Size()), mem: used}
	cc.weights[key] = append(cc.weights[key], w)
	cc.weightBytes.Add(w.bytes)
	return w.name, buf, nil
}

// holds reports whether buf's bytes are data (a weight of the same key:
// almost always the same weight).
func (cc *clContext) holds(buf *cl.MemObject, data []byte) (bool, error) {
	if len(data) == 0 {
		return true, nil // an empty weight of the same type and shape
	}
	if buf.Size() != len(data) {
		return false, nil
	}
	q, err := cc.transferQueue()
	if err != nil {
		return false, err
	}
	got := make([]byte, len(data))
	ev, err := q.EnqueueReadBuffer(buf, true, 0, len(got), unsafe.Pointer(&got[0]), nil)
	if err != nil {
		return false, err
	}
	if err := ev.Close(); err != nil {
		return false, err
	}
	return bytes.Equal(got, data), nil
}

// releaseWeight gives back a reference weight returned under name.
func (cc *clContext) releaseWeight(name string) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	key := name
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		key = name[:i]
	}
	ws := cc.weights[key]
	i := slices.IndexFunc(ws, func(w *weightBuf) bool { return w.name == name })
	if i < 0 {
		return nil
	}
	w := ws[i]
	w.refs--
	if w.refs > 0 {
		return nil
	}
	if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
		delete(cc.weights, key)
	} else {
		cc.weights[key] = ws
	}
	cc.weightBytes.Add(-w.bytes)
	err := w.buf.Close()
	if w.mem != nil {
		w.mem.release()
	}
	return err
}

// uploadFrom is upload, except that on a device that shares host memory
// a tensor whose bytes lie in mem, at an address the device can use, is
// used in place: the buffer reads mem (pinned, and kept by the buffer's
// weightBuf until it is released) instead of a copy (IS-Net medium from
// the model cache: 261 MB of packed weights not allocated and copied
// again). It returns mem when the buffer uses it.
func (cc *clContext) uploadFrom(t *tensor.Tensor, model string, mem *hostMem) (*cl.MemObject, *hostMem, error) {
	data := t.Contiguous().Bytes()
	if mem == nil || cc.dev.inPlace <= 0 || len(data) == 0 || !mem.holds(data) || uintptr(unsafe.Pointer(&data[0]))%uintptr(cc.dev.inPlace) != 0 {
		buf, err := cc.upload(t, model)
		return buf, nil, err
	}
	mem.acquire()
	buf, err := cc.cl.CreateBufferUnsafe(cl.MemReadOnly|cl.MemUseHostPtr, len(data), unsafe.Pointer(&data[0]))
	if err != nil {
		mem.release()
		return nil, nil, driver.Errorf(driver.ErrDevice, "gpu: model %q: uploading %s (%d bytes, in place) to %s: %w", model, t, len(data), cc.dev.name(), err)
	}
	return buf, mem, nil
}

// hostMem is host memory that read-only device buffers use in place
// (CL_MEM_USE_HOST_PTR) on a device that shares host memory: the plan
// record of a blob ImportModel read, whose packed weights the restored
// plan's tensors already point into, or a tensor of a plan. Go memory is
// pinned while a buffer uses it; the buffers' weightBufs keep it alive,
// so it outlives the compiled model whose import read it as long as
// another model shares one of its weights. A mapped model cache blob
// (driver.CacheBlobFile; unmap set) is not pinned: the compiled model
// holds a reference (mappedMem) and each buffer another, and the last
// release unmaps it.
type hostMem struct {
	data  []byte
	unmap func() error
	mu    sync.Mutex
	pin   runtime.Pinner
	refs  int
}

// mappedMem is the hostMem of a mapped blob whose record is data, with one
// reference, the caller's.
func mappedMem(data []byte, unmap func() error) *hostMem {
	return &hostMem{data: data, unmap: unmap, refs: 1}
}

// holds reports whether b lies in the memory.
func (h *hostMem) holds(b []byte) bool {
	if len(b) == 0 || len(h.data) == 0 {
		return false
	}
	lo, hi := uintptr(unsafe.Pointer(&h.data[0])), uintptr(unsafe.Pointer(&h.data[0]))+uintptr(len(h.data))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p+uintptr(len(b)) <= hi
}

// pinnedHost holds every hostMem while it is pinned, so that a compiled
// model dropped without Close leaks its record's memory instead of the
// runtime finding a collected Pinner still pinned (a fatal panic).
var pinnedHost sync.Map // *hostMem -> struct{}

// acquire adds a buffer that uses the memory, pinning Go memory for the
// first.
func (h *hostMem) acquire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == 0 && h.unmap == nil {
		h.pin.Pin(&h.data[0])
		pinnedHost.Store(h, struct{}{})
	}
	h.refs++
}

// tryAcquire is acquire of a mapping that may be gone already: false
// when it is (Export after Close).
func (h *hostMem) tryAcquire() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == 0 {
		return false
	}
	h.refs++
	return true
}

// release drops a reference (a buffer's, after the buffer is released),
// unpinning Go memory, or unmapping a mapping, after the last.
func (h *hostMem) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs--; h.refs != 0 {
		return
	}
	if h.unmap != nil {
		if err := h.unmap(); err != nil {
			warnf("gpu: %v", err)
		}
		h.data, h.unmap = nil, nil
		return
	}
	h.pin.Unpin()
	pinnedHost.Delete(h)
}

// upload copies a host tensor into a new read-only device buffer.
func (cc *clContext) upload(t *tensor.Tensor, model string) (*cl.MemObject, error) {
	data := t.Contiguous().Bytes()
	if len(data) == 0 {
		data = make([]byte, 4)
	}
	buf, err := cc.cl.CreateBuffer(cl.MemReadOnly, data)
	if err != nil {
		return nil, driver.Errorf(driver.ErrDevice, "gpu: model %q: uploading %s (%d bytes) to %s: %w", model, t, len(data), cc.dev.name(), err)
	}
	return buf, nil
}

// stats is the context's GPU_MEMORY_STATISTICS.
func (cc *clContext) stats() driver.MemoryStatistics {
	return driver.MemoryStatistics{
		Weights:       cc.weightBytes.Load(),
		Activations:   cc.activationBytes.Load(),
		Staging:       cc.stagingBytes.Load(),
		RemoteTensors: cc.remoteBytes.Load(),
	}
}

// params describes the context (RemoteContext.Params).
func (cc *clContext) params() map[string]string {
	p := map[string]string{
		driver.KeyContextType:        driver.ContextTypeOCL,
		driver.KeyOCLContext:         driver.FormatHandle(cc.cl.Handle()),
		driver.KeyOCLContextDeviceID: strconv.Itoa(cc.devIndex),
	}
	if cc.queue != nil {
		p[driver.KeyOCLQueue] = driver.FormatHandle(cc.queue.Handle())
	}
	return p
}

// describe names the context in errors.
func (cc *clContext) describe() string {
	kind := "its own context"
	if cc.user {
		kind = "a user context"
	}
	return fmt.Sprintf("%s (%s, OCL_CONTEXT %s)", cc.dev.name(), kind, driver.FormatHandle(cc.cl.Handle()))
}

// track registers a live context of the device.
func (d *device) track(cc *clContext) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trackLocked(cc)
}

// trackLocked is track with d.mu held.
func (d *device) trackLocked(cc *clContext) {
	if d.contexts == nil {
		d.contexts = map[*clContext]struct{}{}
	}
	d.contexts[cc] = struct{}{}
}

// untrack forgets a released context.
func (d *device) untrack(cc *clContext) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.contexts, cc)
}

// memoryStats sums the statistics of the device's live contexts.
func (d *device) memoryStats() driver.MemoryStatistics {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s driver.MemoryStatistics
	for cc := range d.contexts {
		c := cc.stats()
		s.Weights += c.Weights
		s.Activations += c.Activations
		s.Staging += c.Staging
		s.RemoteTensors += c.RemoteTensors
	}
	return s
}
