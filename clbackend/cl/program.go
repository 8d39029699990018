package cl

import (
	"errors"
	"runtime"
	"strings"
)

// Program is an OpenCL program: OpenCL C sources or device binaries, built
// for the devices of its context.
type Program struct {
	r       ref
	ctx     *Context
	devices []*Device
}

func newProgram(h handle, ctx *Context, devices []*Device) *Program {
	p := &Program{ctx: ctx, devices: append([]*Device(nil), devices...)}
	track(p, &p.r, kindProgram, h)
	return p
}

func (p *Program) h() handle {
	if p == nil {
		return nil
	}
	return p.r.handle()
}

// Context returns the context the program was created in.
func (p *Program) Context() *Context { return p.ctx }

// Close releases the program. It is idempotent and returns the status of
// clReleaseProgram. Kernels created from it keep it alive in OpenCL until
// they are closed too.
func (p *Program) Close() error {
	if p == nil {
		return nil
	}
	return p.r.close()
}

// BuildProgram compiles and links the program for devices (nil: all devices
// of the program) with the given build options ("-cl-fast-relaxed-math
// -DTILE=16"). A compile error returns a *BuildError holding each device's
// build log; it matches ErrBuildProgramFailure with errors.Is.
func (p *Program) BuildProgram(devices []*Device, options string) error {
	const op = "clBuildProgram"
	ph := p.h()
	if ph == nil {
		return closedError(op, ErrInvalidProgram)
	}
	ids, err := deviceHandles(op, devices)
	if err != nil {
		return err
	}
	err = buildProgram(ph, ids, options)
	runtime.KeepAlive(p)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != ErrBuildProgramFailure {
		return err
	}
	be := &BuildError{Err: ce}
	if devices == nil {
		devices, _ = p.Devices()
	}
	for _, d := range devices {
		log, _ := p.BuildLog(d)
		name, nerr := d.Name()
		if nerr != nil {
			name = "device"
		}
		be.Logs = append(be.Logs, BuildLog{Device: d, DeviceName: name, Log: log})
	}
	return be
}

// BuildLog returns the log of the program's latest build for device.
func (p *Program) BuildLog(device *Device) (string, error) {
	b, err := p.buildInfo(device, programBuildLog, "CL_PROGRAM_BUILD_LOG")
	return strings.TrimRight(cString(b), "\n"), err
}

// BuildStatus returns the state of the program's latest build for device.
func (p *Program) BuildStatus(device *Device) (BuildStatus, error) {
	v, err := uintInfo(p.buildInfo(device, programBuildStatus, "CL_PROGRAM_BUILD_STATUS"))
	return BuildStatus(int32(uint32(v))), err
}

func (p *Program) buildInfo(device *Device, param uint32, name string) ([]byte, error) {
	op := "clGetProgramBuildInfo(" + name + ")"
	ph := p.h()
	if ph == nil {
		return nil, closedError(op, ErrInvalidProgram)
	}
	if device == nil {
		return nil, &Error{Op: op, Code: ErrInvalidDevice}
	}
	b, err := getProgramBuildInfo(ph, device.id, param, name)
	runtime.KeepAlive(p)
	return b, err
}

// Devices returns the devices the program is associated with, in the order
// of Binaries.
func (p *Program) Devices() ([]*Device, error) {
	ph := p.h()
	if ph == nil {
		return nil, closedError("clGetProgramInfo(CL_PROGRAM_DEVICES)", ErrInvalidProgram)
	}
	ids, err := getProgramDevices(ph)
	runtime.KeepAlive(p)
	if err != nil {
		return nil, err
	}
	out := make([]*Device, len(ids))
	for i, id := range ids {
		out[i] = p.device(id)
	}
	return out, nil
}

// device returns the *Device of id the program was created with, so callers
// get back the values they passed in.
func (p *Program) device(id handle) *Device {
	for _, d := range p.devices {
		if d.id == id {
			return d
		}
	}
	var platform *Platform
	if len(p.devices) > 0 {
		platform = p.devices[0].platform
	}
	return &Device{id: id, platform: platform}
}

// Binaries returns the program's executable binary for each device of
// Devices, for a later Context.CreateProgramWithBinary (a kernel cache).
// Call it after a successful BuildProgram.
func (p *Program) Binaries() ([][]byte, error) {
	const op = "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)"
	ph := p.h()
	if ph == nil {
		return nil, closedError(op, ErrInvalidProgram)
	}
	sizes, err := sizesInfo(getProgramInfo(ph, programBinarySizes, "CL_PROGRAM_BINARY_SIZES"))
	if err != nil {
		return nil, err
	}
	bins, err := getProgramBinaries(ph, sizes)
	runtime.KeepAlive(p)
	return bins, err
}

// KernelNames returns the names of the kernels in a built program.
func (p *Program) KernelNames() ([]string, error) {
	const op = "clGetProgramInfo(CL_PROGRAM_KERNEL_NAMES)"
	ph := p.h()
	if ph == nil {
		return nil, closedError(op, ErrInvalidProgram)
	}
	b, err := getProgramInfo(ph, programKernelNames, "CL_PROGRAM_KERNEL_NAMES")
	runtime.KeepAlive(p)
	if err != nil {
		return nil, err
	}
	s := cString(b)
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, ";"), nil
}

// CreateKernel creates a kernel object for the __kernel function name of a
// built program.
func (p *Program) CreateKernel(name string) (*Kernel, error) {
	op := "clCreateKernel(" + name + ")"
	ph := p.h()
	if ph == nil {
		return nil, closedError(op, ErrInvalidProgram)
	}
	h, err := createKernel(ph, name)
	runtime.KeepAlive(p)
	if err != nil {
		return nil, err
	}
	k := &Kernel{program: p, name: name}
	track(k, &k.r, kindKernel, h)
	return k, nil
}
