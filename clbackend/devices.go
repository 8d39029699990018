package clbackend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Device is one OpenCL device as the GPU plugin numbers it.
type Device struct {
	// Name is the device name users pass to driver.Core ("GPU.1").
	Name string
	// ID is the DEVICE_ID ("1").
	ID string
	// CL is the OpenCL device.
	CL *cl.Device
}

// device is the plugin's state for one OpenCL device: its facts, its
// configuration and its lazily created context.
type device struct {
	index int
	cl    *cl.Device

	fullName     string
	vendor       string
	driver       string
	architecture string
	typ          cl.DeviceType
	integrated   bool
	// inPlace is the alignment in bytes at which a read-only buffer may
	// use host memory in place (CL_MEM_USE_HOST_PTR: the device shares
	// host memory, CL_DEVICE_HOST_UNIFIED_MEMORY, and this is its
	// CL_DEVICE_MEM_BASE_ADDR_ALIGN); 0 where buffers copy it.
	inPlace int
	// subAlign is CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes, the alignment of
	// a sub-buffer's origin (a Concat's inputs written in place, their
	// producers bound to sub-buffers of its output); 0 when unknown.
	subAlign int
	fp16     bool
	// fp64 is whether kernels may compute in double (cl_khr_fp64); f64
	// lowerings are refused without it.
	fp64 bool
	// exactDiv is whether the device supports
	// -cl-fp32-correctly-rounded-divide-sqrt (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT).
	exactDiv bool
	// cmdbufs is whether the device has cl_khr_command_buffer in a
	// version the cl package calls.
	cmdbufs bool
	// sharedIO is whether the device's memory is the host's
	// (CL_DEVICE_HOST_UNIFIED_MEMORY) and it has fine-grained buffer SVM:
	// requests then keep their inputs and outputs in shared buffers the
	// host fills and reads in place (GPU_SHARED_HOST_IO).
	sharedIO bool
	memSize  int64
	// maxAlloc is CL_DEVICE_MAX_MEM_ALLOC_SIZE, the largest buffer.
	maxAlloc int64
	uuid     string // "" when the device reports none
	// binariesOnDemand is whether the driver makes a program's binary
	// only when asked for it, at the cost of a compile: POCL compiles the
	// generic work-group function of every kernel of the program
	// (clGetProgramInfo(CL_PROGRAM_BINARIES) takes as long as the
	// warm-up's compiles) and keeps compiled kernels in its own kernel
	// cache. CACHE_MODE defaults to OPTIMIZE_SIZE there.
	binariesOnDemand bool

	props *driver.Properties

	// inThread is the device's in-thread companion (inthread.go): POCL's
	// basic device beside its pthread device, in the device's own context
	// with it, where small plans run in the calling thread; nil for none.
	// It shares the device's index and name: it is no device of its own.
	inThread *device

	// shipped is the tuning database shipped for the device
	// (shippedFor), read once.
	shippedOnce sync.Once
	shipped     *tune.Shipped

	mu       sync.Mutex
	ctx      *clContext // the device's own context; nil until the first use
	closed   bool       // the plugin is closed: no new context
	contexts map[*clContext]struct{}
	// cache is the plugin's program cache, which contexts build in.
	cache *programCache
}

// id is the device's DEVICE_ID.
func (d *device) id() string { return strconv.Itoa(d.index) }

// name is the device's full name for users ("GPU.1").
func (d *device) name() string { return DeviceName + "." + d.id() }

// context returns the device's own context with a reference for the
// caller, creating it on first use. The caller releases the reference.
func (d *device) context() (*clContext, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("gpu: device %s: %w", d.name(), driver.ErrClosed)
	}
	if d.ctx == nil {
		c, comp, err := d.createContext()
		if err != nil {
			return nil, driver.Errorf(driver.ErrDevice, "gpu: device %s (%s): %w", d.name(), d.fullName, err)
		}
		d.ctx = newContext(d, d.cache, c, nil, 0, false) // the plugin's reference
		d.ctx.inThread = comp
		d.trackLocked(d.ctx)
	}
	return d.ctx.acquire(), nil
}

// closeContext drops the plugin's reference to the context.
func (d *device) closeContext() error {
	d.mu.Lock()
	d.closed = true
	cc := d.ctx
	d.ctx = nil
	d.mu.Unlock()
	if cc == nil {
		return nil
	}
	err := cc.release() // untracks cc: not under d.mu
	if err != nil {
		return fmt.Errorf("gpu: device %s: %w", d.name(), err)
	}
	return nil
}

// newDevice reads the facts of an OpenCL device.
func newDevice(index int, d *cl.Device) (*device, error) {
	dev := &device{index: index, cl: d}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	dev.fullName, err = d.Name()
	keep(err)
	dev.fullName = strings.TrimSpace(dev.fullName)
	dev.vendor, err = d.Vendor()
	keep(err)
	dev.driver, err = d.DriverVersion()
	keep(err)
	dev.typ, err = d.Type()
	keep(err)
	dev.memSize, err = d.GlobalMemSize()
	keep(err)
	dev.maxAlloc, err = d.MaxMemAllocSize()
	keep(err)
	dev.fp16, err = d.HasFP16()
	keep(err)
	dev.fp64, err = d.HasFP64()
	keep(err)
	fp, err := d.SingleFPConfig()
	keep(err)
	dev.exactDiv = fp&cl.FPConfigCorrectlyRoundedDivideSqrt != 0
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	dev.cmdbufs = d.CommandBuffersSupported()
	unified, _ := d.HostUnifiedMemory() // deprecated in OpenCL 2.0; absent means no
	dev.integrated = unified || dev.typ&cl.DeviceTypeGPU == 0
	dev.sharedIO = unified && d.FineGrainBufferSVM()
	if bits, err := d.MemBaseAddrAlign(); err == nil && bits >= 8 {
		dev.subAlign = bits / 8
		if unified {
			dev.inPlace = bits / 8
		}
	}
	if u, err := d.UUID(); err == nil {
		dev.uuid = u.String()
	}
	ver, _ := d.Version()
	dev.binariesOnDemand = strings.Contains(ver, "PoCL") // "OpenCL 3.0 PoCL HSTR: ..."
	dev.architecture = fmt.Sprintf("%s; %s; %s; driver %s", strings.TrimSpace(dev.vendor), dev.fullName, strings.TrimSpace(ver), strings.TrimSpace(dev.driver))
	return dev, nil
}

// enumerate returns the usable OpenCL devices in plugin order: GPU-type
// devices first, then the others, each group in platform order then device
// order. It fails with an explanation when there is none.
func enumerate() ([]*cl.Device, error) {
	ps, err := cl.GetPlatforms()
	if err != nil {
		if errors.Is(err, cl.ErrNotBuilt) {
			return nil, driver.Errorf(driver.ErrDevice, "gpu: %w", err)
		}
		return nil, driver.Errorf(driver.ErrDevice, "gpu: no OpenCL platform found (%s): %s: %w", vendorsHint(), cl.InstallHint, err)
	}
	var gpus, others []*cl.Device
	var skipped []string
	for pi, p := range ps {
		ds, err := p.GetDevices(cl.DeviceTypeAll)
		if err != nil {
			pname, _ := p.Name()
			skipped = append(skipped, fmt.Sprintf("platform %d (%s): %v", pi, pname, err))
			continue
		}
		for _, d := range ds {
			if why := unusable(d); why != "" {
				name, _ := d.Name()
				skipped = append(skipped, fmt.Sprintf("%s: %s", strings.TrimSpace(name), why))
				continue
			}
			if t, _ := d.Type(); t&cl.DeviceTypeGPU != 0 {
				gpus = append(gpus, d)
			} else {
				others = append(others, d)
			}
		}
	}
	all := append(gpus, others...)
	if len(all) == 0 {
		return nil, driver.Errorf(driver.ErrDevice, "gpu: %d OpenCL platform(s) found but no usable device (%s): %s",
			len(ps), strings.Join(skipped, "; "), cl.InstallHint)
	}
	return all, nil
}

// Unusable says why the GPU plugin leaves OpenCL device d out (not
// available, no compiler, older than OpenCL 1.2), or returns "" when the
// plugin uses it. cmd/clinfo shows it next to each device.
func Unusable(d *cl.Device) string { return unusable(d) }

// unusable says why the plugin cannot use d, or "" when it can.
// A query that fails is reported as such, with the call and its status,
// not as the answer it would have given.
func unusable(d *cl.Device) string {
	if ok, err := d.Available(); err != nil {
		return "could not be queried: " + err.Error()
	} else if !ok {
		return "not available (CL_DEVICE_AVAILABLE is false)"
	}
	if ok, err := d.CompilerAvailable(); err != nil {
		return "could not be queried: " + err.Error()
	} else if !ok {
		return "has no OpenCL C compiler (CL_DEVICE_COMPILER_AVAILABLE is false)"
	}
	if v, err := d.OpenCLVersion(); err != nil {
		return "could not be queried: " + err.Error()
	} else if !v.AtLeast(1, 2) {
		return fmt.Sprintf("OpenCL %v is older than 1.2", v)
	}
	return ""
}

// vendorsHint describes where the ICD loader looked for vendor files and
// what it found there.
func vendorsHint() string {
	dir, where := "/etc/OpenCL/vendors", "/etc/OpenCL/vendors"
	if v, ok := os.LookupEnv("OCL_ICD_VENDORS"); ok {
		dir, where = v, "OCL_ICD_VENDORS="+v
	}
	if f := os.Getenv("OCL_ICD_FILENAMES"); f != "" {
		where += " and OCL_ICD_FILENAMES=" + f
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.icd"))
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Sprintf("the ICD loader was pointed at the single vendor file %s, which loaded no platform", where)
	}
	if len(files) == 0 {
		return "the ICD loader found no vendor files in " + where
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return fmt.Sprintf("the ICD loader found %s in %s but none of them loaded a platform; check that the libraries they name are installed",
		strings.Join(names, ", "), where)
}

// parseDeviceID resolves a DEVICE_ID value ("1", "GPU.1") to a device
// index; an unknown or malformed id is an error wrapping driver.ErrNotFound
// that lists the ids.
func (p *Plugin) parseDeviceID(s string) (int, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, DeviceName+".")
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n >= len(p.devices) || strconv.Itoa(n) != t {
		return 0, driver.Errorf(driver.ErrNotFound, "gpu: bad value %q for property %s: no such device (available: %s)",
			s, driver.KeyDeviceID, p.idList(", "))
	}
	return n, nil
}

// idList joins the device ids.
func (p *Plugin) idList(sep string) string {
	ids := make([]string, len(p.devices))
	for i, d := range p.devices {
		ids[i] = d.id()
	}
	return strings.Join(ids, sep)
}
