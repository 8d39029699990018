package cl

import (
	"runtime"
	"unsafe"
)

// Context is an OpenCL context over one or more devices of one platform. It
// owns buffers, programs and user events created from it through the OpenCL
// reference count: closing the context while they are open is allowed, and
// the implementation frees it when the last of them is closed.
type Context struct {
	r       ref
	devices []*Device
}

func (c *Context) h() handle {
	if c == nil {
		return nil
	}
	return c.r.handle()
}

// CreateContext creates a context for devices, which must belong to one
// platform.
func CreateContext(devices []*Device) (*Context, error) {
	const op = "clCreateContext"
	if len(devices) == 0 || devices[0] == nil {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	ids, err := deviceHandles(op, devices)
	if err != nil {
		return nil, err
	}
	var platform handle
	if p := devices[0].platform; p != nil {
		platform = p.id
	}
	firstUse()
	h, err := createContext(platform, ids)
	if err != nil {
		return nil, err
	}
	c := &Context{devices: append([]*Device(nil), devices...)}
	track(c, &c.r, kindContext, h)
	return c, nil
}

func deviceHandles(op string, devices []*Device) ([]handle, error) {
	if len(devices) == 0 {
		return nil, nil
	}
	ids := make([]handle, len(devices))
	for i, d := range devices {
		if d == nil {
			return nil, &Error{Op: op, Code: ErrInvalidDevice}
		}
		ids[i] = d.id
	}
	return ids, nil
}

// Devices returns the devices the context was created for.
func (c *Context) Devices() []*Device { return append([]*Device(nil), c.devices...) }

// Close releases the context. It is idempotent and returns the status of
// clReleaseContext.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	return c.r.close()
}

// CreateCommandQueue creates a command queue on device. properties may
// combine CommandQueueProfilingEnable (events then carry timestamps) and
// CommandQueueOutOfOrderExecModeEnable (commands are ordered only by their
// wait lists and barriers).
func (c *Context) CreateCommandQueue(device *Device, properties CommandQueueProperty) (*CommandQueue, error) {
	const op = "clCreateCommandQueue"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if device == nil {
		return nil, &Error{Op: op, Code: ErrInvalidDevice}
	}
	h, err := createCommandQueue(ch, device.id, properties)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	q := &CommandQueue{ctx: c, device: device, properties: properties, serial: serialDevice(device)}
	track(q, &q.r, kindCommandQueue, h)
	return q, nil
}

// CreateEmptyBuffer creates a buffer of size bytes with unspecified content.
func (c *Context) CreateEmptyBuffer(flags MemFlag, size int) (*MemObject, error) {
	return c.CreateBufferUnsafe(flags, size, nil)
}

// CreateBuffer creates a buffer holding a copy of data. Unless flags ask for
// MemUseHostPtr, MemCopyHostPtr is added. With MemUseHostPtr the data are
// copied into page-aligned C memory that the buffer uses as its storage
// (zero-copy on devices sharing host memory) and that is freed when OpenCL
// destroys the buffer; data itself is never retained.
func (c *Context) CreateBuffer(flags MemFlag, data []byte) (*MemObject, error) {
	const op = "clCreateBuffer"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if len(data) == 0 {
		return nil, &Error{Op: op, Code: ErrInvalidBufferSize}
	}
	var h handle
	var err error
	if flags&MemUseHostPtr != 0 {
		h, err = createBufferCopyToC(ch, flags, data)
	} else {
		h, err = createBuffer(ch, flags|MemCopyHostPtr, len(data), unsafe.Pointer(&data[0]))
	}
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newMemObject(h, len(data), flags, nil), nil
}

// CreateBufferUnsafe creates a buffer of size bytes; dataPtr is passed to
// clCreateBuffer as host_ptr. With MemUseHostPtr OpenCL keeps using dataPtr
// after the call, so it must point to C memory (or pinned Go memory) that
// outlives the buffer; with MemCopyHostPtr it is read during the call only.
func (c *Context) CreateBufferUnsafe(flags MemFlag, size int, dataPtr unsafe.Pointer) (*MemObject, error) {
	const op = "clCreateBuffer"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	h, err := createBuffer(ch, flags, size, dataPtr)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newMemObject(h, size, flags, nil), nil
}

// CreateProgramWithSource creates a program from OpenCL C sources; build it
// with Program.BuildProgram.
func (c *Context) CreateProgramWithSource(sources []string) (*Program, error) {
	const op = "clCreateProgramWithSource"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if len(sources) == 0 {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	h, err := createProgramWithSource(ch, sources)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newProgram(h, c, c.devices), nil
}

// CreateProgramWithBinary creates a program from binaries returned by
// Program.Binaries, one per device; build it with Program.BuildProgram
// before creating kernels. A binary the device rejects fails with an error
// matching ErrInvalidBinary.
func (c *Context) CreateProgramWithBinary(devices []*Device, binaries [][]byte) (*Program, error) {
	const op = "clCreateProgramWithBinary"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	if len(devices) == 0 || len(devices) != len(binaries) {
		return nil, &Error{Op: op, Code: ErrInvalidValue}
	}
	for _, b := range binaries {
		if len(b) == 0 {
			return nil, &Error{Op: op, Code: ErrInvalidValue}
		}
	}
	ids, err := deviceHandles(op, devices)
	if err != nil {
		return nil, err
	}
	h, err := createProgramWithBinary(ch, ids, binaries)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newProgram(h, c, devices), nil
}

// CreateUserEvent creates an event whose status the host sets with
// Event.SetUserEventStatus, to hold back commands that wait on it.
func (c *Context) CreateUserEvent() (*Event, error) {
	const op = "clCreateUserEvent"
	ch := c.h()
	if ch == nil {
		return nil, closedError(op, ErrInvalidContext)
	}
	h, err := createUserEvent(ch)
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	e := &Event{}
	trackLeaked(e, &e.r, leaked{kind: kindEvent, h: h, user: true})
	return e, nil
}
