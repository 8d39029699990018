package cl

import (
	"runtime"
	"unsafe"
)

// CommandQueue is an OpenCL command queue on one device.
//
// Every Enqueue method takes an event wait list (nil entries are skipped)
// and returns the *Event of the command it enqueued, which the caller owns
// and must Close. Blocking transfers return once the command has completed.
type CommandQueue struct {
	r          ref
	ctx        *Context
	device     *Device
	properties CommandQueueProperty
	// serial is set on a queue of a POCL basic device: its enqueues,
	// flushes and finishes hold basicMu (serial.go).
	serial bool
}

func (q *CommandQueue) h() handle {
	if q == nil {
		return nil
	}
	return q.r.handle()
}

// Context returns the context the queue was created in.
func (q *CommandQueue) Context() *Context { return q.ctx }

// Device returns the device the queue submits to.
func (q *CommandQueue) Device() *Device { return q.device }

// Properties returns the properties the queue was created with.
func (q *CommandQueue) Properties() CommandQueueProperty { return q.properties }

// Close releases the queue. It is idempotent and returns the status of
// clReleaseCommandQueue. Commands already enqueued still run; call Finish
// first to wait for them.
func (q *CommandQueue) Close() error {
	if q == nil {
		return nil
	}
	return q.r.close()
}

// Flush submits the enqueued commands to the device (clFlush).
func (q *CommandQueue) Flush() error {
	h := q.h()
	if h == nil {
		return closedError("clFlush", ErrInvalidCommandQueue)
	}
	defer q.serialize()()
	err := flush(h)
	runtime.KeepAlive(q)
	return err
}

// Finish blocks until every enqueued command has completed (clFinish).
func (q *CommandQueue) Finish() error {
	h := q.h()
	if h == nil {
		return closedError("clFinish", ErrInvalidCommandQueue)
	}
	defer q.serialize()()
	err := finish(h)
	runtime.KeepAlive(q)
	return err
}

// waitList converts events into handles, skipping nil entries; a closed event
// is an invalid wait list.
func waitList(op string, events []*Event) ([]handle, error) {
	if len(events) == 0 {
		return nil, nil
	}
	hs := make([]handle, 0, len(events))
	for _, e := range events {
		if e == nil {
			continue
		}
		h := e.h()
		if h == nil {
			return nil, &Error{Op: op, Code: ErrInvalidEventWaitList}
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// prepare returns the queue's handle and the wait list of an enqueue call.
func (q *CommandQueue) prepare(op string, wait []*Event) (handle, []handle, error) {
	h := q.h()
	if h == nil {
		return nil, nil, closedError(op, ErrInvalidCommandQueue)
	}
	ws, err := waitList(op, wait)
	return h, ws, err
}

// memHandle returns m's handle or the error of an enqueue call given a nil or
// closed buffer.
func memHandle(op string, m *MemObject) (handle, error) {
	h := m.h()
	if h == nil {
		return nil, closedError(op, ErrInvalidMemObject)
	}
	return h, nil
}

// finishEnqueue wraps the event of an enqueue call and keeps the objects the
// command uses reachable until C has returned.
func finishEnqueue(ev handle, err error, keep ...any) (*Event, error) {
	runtime.KeepAlive(keep)
	if err != nil {
		return nil, err
	}
	return newEvent(ev), nil
}

// EnqueueNDRangeKernel enqueues kernel over globalWorkSize work items (1 to 3
// dimensions). globalWorkOffset and localWorkSize may be nil; otherwise they
// have one entry per dimension. A nil localWorkSize lets the implementation
// choose the work-group size.
func (q *CommandQueue) EnqueueNDRangeKernel(kernel *Kernel, globalWorkOffset, globalWorkSize, localWorkSize []int, eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueNDRangeKernel"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	kh := kernel.h()
	if kh == nil {
		return nil, closedError(op, ErrInvalidKernel)
	}
	dims := len(globalWorkSize)
	if dims < 1 || dims > 3 {
		return nil, &Error{Op: op, Code: ErrInvalidWorkDimension}
	}
	if globalWorkOffset != nil && len(globalWorkOffset) != dims {
		return nil, &Error{Op: op, Code: ErrInvalidGlobalOffset}
	}
	if localWorkSize != nil && len(localWorkSize) != dims {
		return nil, &Error{Op: op, Code: ErrInvalidWorkGroupSize}
	}
	unlock := q.serialize()
	ev, err := enqueueNDRangeKernel(h, kh, globalWorkOffset, globalWorkSize, localWorkSize, ws)
	unlock()
	return finishEnqueue(ev, err, q, kernel, eventWaitList)
}

// EnqueueNDRangeKernelNoEvent is EnqueueNDRangeKernel without a wait list
// and without an event: for the commands of an in-order queue that nothing
// waits on (the queue orders them, a later command's event covers them),
// saving the event's creation and release in the driver and in Go.
func (q *CommandQueue) EnqueueNDRangeKernelNoEvent(kernel *Kernel, globalWorkOffset, globalWorkSize, localWorkSize []int) error {
	const op = "clEnqueueNDRangeKernel"
	h, _, err := q.prepare(op, nil)
	if err != nil {
		return err
	}
	kh := kernel.h()
	if kh == nil {
		return closedError(op, ErrInvalidKernel)
	}
	dims := len(globalWorkSize)
	switch {
	case dims < 1 || dims > 3:
		return &Error{Op: op, Code: ErrInvalidWorkDimension}
	case globalWorkOffset != nil && len(globalWorkOffset) != dims:
		return &Error{Op: op, Code: ErrInvalidGlobalOffset}
	case localWorkSize != nil && len(localWorkSize) != dims:
		return &Error{Op: op, Code: ErrInvalidWorkGroupSize}
	}
	unlock := q.serialize()
	err = enqueueNDRangeKernelNoEvent(h, kh, globalWorkOffset, globalWorkSize, localWorkSize)
	unlock()
	runtime.KeepAlive(q)
	runtime.KeepAlive(kernel)
	return err
}

// EnqueueWriteMappedNoEvent writes size bytes from the mapped region src
// (host memory OpenCL owns: a staging buffer mapped once) at its offset
// srcOff to offset of buffer, without blocking and without an event: the
// caller keeps src mapped and unchanged until a later command of the
// in-order queue has completed.
func (q *CommandQueue) EnqueueWriteMappedNoEvent(buffer *MemObject, offset int, src *MappedMemObject, srcOff, size int) error {
	const op = "clEnqueueWriteBuffer"
	h, _, err := q.prepare(op, nil)
	if err != nil {
		return err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return err
	}
	if srcOff < 0 || size < 0 || srcOff+size > src.size {
		return &Error{Op: op, Code: ErrInvalidValue}
	}
	unlock := q.serialize()
	err = enqueueWriteBufferNoEvent(h, mh, offset, size, unsafe.Add(src.ptr, srcOff))
	unlock()
	runtime.KeepAlive(q)
	runtime.KeepAlive(buffer)
	return err
}

// EnqueueReadMapped reads size bytes at offset of buffer into the mapped
// region dst (see EnqueueWriteMappedNoEvent) at dstOff, without blocking;
// the returned event (nil when wantEvent is false) completes with it.
func (q *CommandQueue) EnqueueReadMapped(buffer *MemObject, offset int, dst *MappedMemObject, dstOff, size int, wantEvent bool) (*Event, error) {
	const op = "clEnqueueReadBuffer"
	if dstOff < 0 || size < 0 || dstOff+size > dst.size {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	if wantEvent {
		return q.EnqueueReadBuffer(buffer, false, offset, size, unsafe.Add(dst.ptr, dstOff), nil)
	}
	h, _, err := q.prepare(op, nil)
	if err != nil {
		return nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	err = enqueueReadBufferNoEvent(h, mh, offset, size, unsafe.Add(dst.ptr, dstOff))
	unlock()
	runtime.KeepAlive(q)
	runtime.KeepAlive(buffer)
	return nil, err
}

// EnqueueReadBuffer copies dataSize bytes at offset of buffer to dataPtr.
// For a non-blocking read, dataPtr must stay valid until the returned event
// completes: use C memory or pinned Go memory, or use EnqueueReadSlice,
// which pins for you.
func (q *CommandQueue) EnqueueReadBuffer(buffer *MemObject, blocking bool, offset, dataSize int, dataPtr unsafe.Pointer, eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueReadBuffer"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueueReadBuffer(h, mh, blocking, offset, dataSize, dataPtr, ws)
	unlock()
	return finishEnqueue(ev, err, q, buffer, eventWaitList)
}

// EnqueueWriteBuffer copies dataSize bytes from dataPtr to offset of buffer.
// For a non-blocking write, dataPtr must stay valid and unchanged until the
// returned event completes; see EnqueueReadBuffer.
func (q *CommandQueue) EnqueueWriteBuffer(buffer *MemObject, blocking bool, offset, dataSize int, dataPtr unsafe.Pointer, eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueWriteBuffer"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueueWriteBuffer(h, mh, blocking, offset, dataSize, dataPtr, ws)
	unlock()
	return finishEnqueue(ev, err, q, buffer, eventWaitList)
}

// EnqueueReadBufferFloat32 reads len(data) float32 values at byte offset of
// buffer into data; see EnqueueReadSlice.
func (q *CommandQueue) EnqueueReadBufferFloat32(buffer *MemObject, blocking bool, offset int, data []float32, eventWaitList []*Event) (*Event, error) {
	return EnqueueReadSlice(q, buffer, blocking, offset, data, eventWaitList)
}

// EnqueueWriteBufferFloat32 writes data to byte offset of buffer; see
// EnqueueWriteSlice.
func (q *CommandQueue) EnqueueWriteBufferFloat32(buffer *MemObject, blocking bool, offset int, data []float32, eventWaitList []*Event) (*Event, error) {
	return EnqueueWriteSlice(q, buffer, blocking, offset, data, eventWaitList)
}

// EnqueueReadSlice reads len(dst) elements at byte offset of buffer into dst.
// A non-blocking read pins dst until the command completes; dst must not be
// read before the returned event has completed.
func EnqueueReadSlice[T Scalar](q *CommandQueue, buffer *MemObject, blocking bool, offset int, dst []T, eventWaitList []*Event) (*Event, error) {
	return q.enqueueGoMemory(false, buffer, blocking, offset, sliceBytes(dst), unsafe.Pointer(unsafe.SliceData(dst)), eventWaitList)
}

// EnqueueWriteSlice writes src to byte offset of buffer. A non-blocking write
// pins src until the command completes; src must not be modified before the
// returned event has completed.
func EnqueueWriteSlice[T Scalar](q *CommandQueue, buffer *MemObject, blocking bool, offset int, src []T, eventWaitList []*Event) (*Event, error) {
	return q.enqueueGoMemory(true, buffer, blocking, offset, sliceBytes(src), unsafe.Pointer(unsafe.SliceData(src)), eventWaitList)
}

func sliceBytes[T Scalar](s []T) int {
	var zero T
	return len(s) * int(unsafe.Sizeof(zero))
}

// enqueueGoMemory reads or writes Go memory. A non-blocking transfer keeps
// the memory pinned until OpenCL reports the command complete, which is what
// the cgo rules ask of Go memory that C uses after a call returns.
func (q *CommandQueue) enqueueGoMemory(write bool, buffer *MemObject, blocking bool, offset, size int, ptr unsafe.Pointer, wait []*Event) (*Event, error) {
	transfer := q.EnqueueReadBuffer
	if write {
		transfer = q.EnqueueWriteBuffer
	}
	if blocking || size == 0 {
		return transfer(buffer, blocking, offset, size, ptr, wait)
	}
	pin := new(runtime.Pinner)
	pin.Pin(ptr)
	ev, err := transfer(buffer, false, offset, size, ptr, wait)
	if err != nil {
		pin.Unpin()
		return nil, err
	}
	eh := ev.h()
	if err := setEventCallback(eh, int32(CommandExecStatusComplete), func(int32) { pin.Unpin() }); err != nil {
		// Without a callback there is no telling when C is done with ptr.
		_ = waitForEvents([]handle{eh})
		runtime.KeepAlive(ev)
		pin.Unpin()
	}
	return ev, nil
}

// EnqueueCopyBuffer copies byteCount bytes from srcOffset of srcBuffer to
// dstOffset of dstBuffer on the device.
func (q *CommandQueue) EnqueueCopyBuffer(srcBuffer, dstBuffer *MemObject, srcOffset, dstOffset, byteCount int, eventWaitList []*Event) (*Event, error) {
	return q.copyBuffers("clEnqueueCopyBuffer", srcBuffer, dstBuffer, eventWaitList, func(h, src, dst handle, ws []handle) (handle, error) {
		return enqueueCopyBuffer(h, src, dst, srcOffset, dstOffset, byteCount, ws)
	})
}

// EnqueueCopyBufferRect copies rows rows of rowBytes bytes from srcOffset
// of srcBuffer to dstOffset of dstBuffer on the device; consecutive rows
// are srcPitch and dstPitch bytes apart (a 2-D region of
// clEnqueueCopyBufferRect, slice pitches unused).
func (q *CommandQueue) EnqueueCopyBufferRect(srcBuffer, dstBuffer *MemObject, srcOffset, dstOffset, rowBytes, rows, srcPitch, dstPitch int, eventWaitList []*Event) (*Event, error) {
	return q.copyBuffers("clEnqueueCopyBufferRect", srcBuffer, dstBuffer, eventWaitList, func(h, src, dst handle, ws []handle) (handle, error) {
		return enqueueCopyBufferRect(h, src, dst, srcOffset, dstOffset, rowBytes, rows, srcPitch, dstPitch, ws)
	})
}

// copyBuffers is the checking around a device copy between two buffers
// (the OpenCL call op, made by enqueue).
func (q *CommandQueue) copyBuffers(op string, srcBuffer, dstBuffer *MemObject, eventWaitList []*Event, enqueue func(h, src, dst handle, ws []handle) (handle, error)) (*Event, error) {
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	src, err := memHandle(op, srcBuffer)
	if err != nil {
		return nil, err
	}
	dst, err := memHandle(op, dstBuffer)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueue(h, src, dst, ws)
	unlock()
	return finishEnqueue(ev, err, q, srcBuffer, dstBuffer, eventWaitList)
}

// EnqueueFillBuffer fills size bytes at offset of buffer with copies of the
// patternSize-byte pattern (1, 2, 4, …, 128 bytes). OpenCL copies the
// pattern during the call.
func (q *CommandQueue) EnqueueFillBuffer(buffer *MemObject, pattern unsafe.Pointer, patternSize, offset, size int, eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueFillBuffer"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueueFillBuffer(h, mh, pattern, patternSize, offset, size, ws)
	unlock()
	return finishEnqueue(ev, err, q, buffer, eventWaitList)
}

// EnqueueFill fills size bytes at offset of buffer with copies of value.
func EnqueueFill[T Scalar](q *CommandQueue, buffer *MemObject, value T, offset, size int, eventWaitList []*Event) (*Event, error) {
	return q.EnqueueFillBuffer(buffer, unsafe.Pointer(&value), int(unsafe.Sizeof(value)), offset, size, eventWaitList)
}

// EnqueueMapBuffer maps size bytes at offset of buffer into host memory. The
// region may be used once the returned event has completed (at return for a
// blocking map) and until EnqueueUnmapMemObject.
func (q *CommandQueue) EnqueueMapBuffer(buffer *MemObject, blocking bool, flags MapFlag, offset, size int, eventWaitList []*Event) (*MappedMemObject, *Event, error) {
	const op = "clEnqueueMapBuffer"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, nil, err
	}
	unlock := q.serialize()
	ptr, evh, err := enqueueMapBuffer(h, mh, blocking, flags, offset, size, ws)
	unlock()
	ev, err := finishEnqueue(evh, err, q, buffer, eventWaitList)
	if err != nil {
		return nil, nil, err
	}
	return &MappedMemObject{ptr: ptr, size: size}, ev, nil
}

// EnqueueUnmapMemObject unmaps a region mapped by EnqueueMapBuffer; writes
// through the mapping reach the buffer when the returned event completes.
func (q *CommandQueue) EnqueueUnmapMemObject(buffer *MemObject, mappedObj *MappedMemObject, eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueUnmapMemObject"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	mh, err := memHandle(op, buffer)
	if err != nil {
		return nil, err
	}
	if mappedObj == nil || mappedObj.ptr == nil {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	unlock := q.serialize()
	ev, err := enqueueUnmapMemObject(h, mh, mappedObj.ptr, ws)
	unlock()
	return finishEnqueue(ev, err, q, buffer, eventWaitList)
}

// EnqueueMarkerWithWaitList enqueues a marker whose event completes when the
// events in eventWaitList have, or, with an empty list, when every command
// enqueued before it has.
func (q *CommandQueue) EnqueueMarkerWithWaitList(eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueMarkerWithWaitList"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueueMarkerWithWaitList(h, ws)
	unlock()
	return finishEnqueue(ev, err, q, eventWaitList)
}

// EnqueueBarrierWithWaitList is EnqueueMarkerWithWaitList that also holds
// back every command enqueued after it until it completes; in an
// out-of-order queue it is how to order groups of commands.
func (q *CommandQueue) EnqueueBarrierWithWaitList(eventWaitList []*Event) (*Event, error) {
	const op = "clEnqueueBarrierWithWaitList"
	h, ws, err := q.prepare(op, eventWaitList)
	if err != nil {
		return nil, err
	}
	unlock := q.serialize()
	ev, err := enqueueBarrierWithWaitList(h, ws)
	unlock()
	return finishEnqueue(ev, err, q, eventWaitList)
}
