package cl

import (
	"runtime"
	"unsafe"
)

// MemObject is an OpenCL buffer (cl_mem).
type MemObject struct {
	r      ref
	size   int
	flags  MemFlag
	parent *MemObject     // kept reachable so its cleanup cannot run before ours
	host   unsafe.Pointer // the shared memory of CreateSharedBuffer, else nil
}

func newMemObject(h handle, size int, flags MemFlag, parent *MemObject) *MemObject {
	m := &MemObject{size: size, flags: flags, parent: parent}
	track(m, &m.r, kindMemObject, h)
	return m
}

func (m *MemObject) h() handle {
	if m == nil {
		return nil
	}
	return m.r.handle()
}

// Size returns the buffer's size in bytes.
func (m *MemObject) Size() int { return m.size }

// Flags returns the flags the buffer was created with.
func (m *MemObject) Flags() MemFlag { return m.flags }

// Parent returns the buffer a sub-buffer was created from, or nil.
func (m *MemObject) Parent() *MemObject { return m.parent }

// Close releases the buffer. It is idempotent and returns the status of
// clReleaseMemObject. OpenCL frees the storage once no sub-buffer and no
// enqueued command uses it any more.
func (m *MemObject) Close() error {
	if m == nil {
		return nil
	}
	m.host = nil
	return m.r.close()
}

// CreateSubBuffer creates a buffer that aliases size bytes of m starting at
// origin, which must be a multiple of the device's MemBaseAddrAlign (in
// bits) or the call fails with ErrMisalignedSubBufferOffset. flags may be 0
// to inherit m's access flags.
func (m *MemObject) CreateSubBuffer(flags MemFlag, origin, size int) (*MemObject, error) {
	const op = "clCreateSubBuffer"
	mh := m.h()
	if mh == nil {
		return nil, closedError(op, ErrInvalidMemObject)
	}
	if origin < 0 || size <= 0 {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	h, err := createSubBuffer(mh, flags, origin, size)
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return newMemObject(h, size, flags, m), nil
}

// MappedMemObject is a region of a buffer mapped into host memory by
// CommandQueue.EnqueueMapBuffer. Its memory belongs to OpenCL: it is valid
// once the map command has completed and until the unmap command runs.
type MappedMemObject struct {
	ptr  unsafe.Pointer
	size int
}

// Ptr returns the host address of the mapped region.
func (m *MappedMemObject) Ptr() unsafe.Pointer { return m.ptr }

// Size returns the mapped region's size in bytes.
func (m *MappedMemObject) Size() int { return m.size }

// Bytes returns the mapped region as a byte slice. It must not be used after
// the region is unmapped.
func (m *MappedMemObject) Bytes() []byte { return unsafe.Slice((*byte)(m.ptr), m.size) }

// MappedSlice returns the mapped region of m as a []T of Size()/sizeof(T)
// elements. It must not be used after the region is unmapped.
func MappedSlice[T Scalar](m *MappedMemObject) []T {
	var zero T
	return unsafe.Slice((*T)(m.ptr), m.size/int(unsafe.Sizeof(zero)))
}

// Scalar is the set of element types the typed transfer helpers move.
type Scalar interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}
