package clbackend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func init() {
	driver.Register(DeviceName, func() (driver.Plugin, error) { return New() })
}

// Plugin is the GPU device: every usable OpenCL device, numbered "GPU.0",
// "GPU.1", …. It is safe for concurrent use.
type Plugin struct {
	devices []*device
	cache   *programCache

	// executors runs the stages of every compiled model's asynchronous
	// requests, shared by name; Close stops them (compiled models that
	// outlive the plugin keep synchronous Infer, and their asynchronous
	// requests then fail with driver.ErrClosed).
	executors driver.ExecutorManager

	mu     sync.Mutex // guards def, closed, and serialises SetProperties
	def    int        // index of the default device
	closed bool
}

// Interface checks.
var (
	_ driver.Plugin           = (*Plugin)(nil)
	_ driver.Querier          = (*Plugin)(nil)
	_ driver.DevicePropertier = (*Plugin)(nil)
)

// New probes the OpenCL ICD loader, its platforms and their devices, and
// returns the GPU device over every usable one. When there is none it fails
// with an error wrapping driver.ErrDevice that says what is missing and how
// to install it; in a build without OpenCL the error also wraps
// cl.ErrNotBuilt.
func New() (*Plugin, error) {
	devs, err := enumerate()
	if err != nil {
		return nil, err
	}
	p, err := newPlugin(devs)
	if err != nil {
		return nil, err
	}
	if v := os.Getenv(EnvDefaultDevice); v != "" {
		i, err := p.parseDeviceID(v)
		if err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("gpu: environment variable %s: %w", EnvDefaultDevice, err)
		}
		p.def = i
	}
	return p, nil
}

// EnvDefaultDevice names the environment variable that picks the device
// "GPU" means when no DEVICE_ID is given ("GPU.1" or "1"; GPU.0 without
// it), as CUDA_VISIBLE_DEVICES does for CUDA programs: the device bundle's
// run.sh runs the same test binaries on every OpenCL device with it.
const EnvDefaultDevice = "CLINFER_GPU_DEVICE"

// DefaultCLDevice returns the OpenCL device "GPU" means in a new plugin
// (EnvDefaultDevice, else GPU.0) and its name ("GPU.0"), for benchmarks and
// tools that drive the cl package directly on the same device.
func DefaultCLDevice() (*cl.Device, string, error) {
	p, err := New()
	if err != nil {
		return nil, "", err
	}
	d := p.devices[p.def]
	dev, id := d.cl, d.name()
	if err := p.Close(); err != nil {
		return nil, "", err
	}
	return dev, id, nil
}

// newPlugin builds the plugin over devs, in that order (tests pass the same
// OpenCL device twice to get two independent devices).
func newPlugin(devs []*cl.Device) (*Plugin, error) {
	p := &Plugin{cache: newProgramCache()}
	for i, d := range devs {
		dev, err := newDevice(i, d)
		if err != nil {
			return nil, driver.Errorf(driver.ErrDevice, "gpu: reading OpenCL device %d: %w", i, err)
		}
		dev.cache = p.cache
		dev.inThread = inThreadCompanion(dev)
		p.devices = append(p.devices, dev)
	}
	for _, d := range p.devices {
		d.props = driver.NewProperties(p.propertySpecs(d)...)
	}
	return p, nil
}

// Name returns "GPU".
func (p *Plugin) Name() string { return DeviceName }

// Devices lists the plugin's devices in DEVICE_ID order.
func (p *Plugin) Devices() []Device {
	out := make([]Device, len(p.devices))
	for i, d := range p.devices {
		out[i] = Device{Name: d.name(), ID: d.id(), CL: d.cl}
	}
	return out
}

// Property returns a property of the default device (GPU.0 unless a
// SetProperties with DEVICE_ID alone chose another).
func (p *Plugin) Property(key string) (string, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", p.closedErr()
	}
	d := p.devices[p.def]
	p.mu.Unlock()
	return d.props.Get(key)
}

// DeviceProperty returns a property of the device with that id ("1" or
// "GPU.1"). An unknown id is an error wrapping driver.ErrNotFound.
func (p *Plugin) DeviceProperty(deviceID, key string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	i, err := p.parseDeviceID(deviceID)
	if err != nil {
		return "", err
	}
	return p.devices[i].props.Get(key)
}

// SetProperties sets read-write properties, all or none. With DEVICE_ID
// the other keys apply to that device only, and DEVICE_ID alone makes that
// device the default; without it they apply to every device.
func (p *Plugin) SetProperties(props map[string]string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.closedErr()
	}
	rest := maps.Clone(props)
	targets := p.devices
	idStr, hasID := props[driver.KeyDeviceID]
	if hasID {
		i, err := p.parseDeviceID(idStr)
		if err != nil {
			return err
		}
		delete(rest, driver.KeyDeviceID)
		if len(rest) == 0 {
			p.def = i
			return nil
		}
		targets = p.devices[i : i+1]
	}
	// Validate on copies first so that a value one device rejects (f16
	// without cl_khr_fp16) changes no device.
	for _, d := range targets {
		if err := d.props.Clone().Set(rest); err != nil {
			if len(targets) > 1 {
				return fmt.Errorf("gpu: device %s: %w", d.name(), err)
			}
			return fmt.Errorf("gpu: %w", err)
		}
	}
	for _, d := range targets {
		if err := d.props.Set(rest); err != nil {
			return fmt.Errorf("gpu: device %s: %w", d.name(), err)
		}
	}
	return nil
}

// Close releases the plugin's contexts and program cache; compiled models
// keep what they use until they are closed. Later calls fail with
// driver.ErrClosed; Close itself is idempotent.
func (p *Plugin) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	errs := []error{p.executors.Close(), p.cache.close()}
	for _, d := range p.devices {
		errs = append(errs, d.closeContext())
	}
	if err := errors.Join(errs...); err != nil {
		return driver.Errorf(driver.ErrDevice, "gpu: close: %w", err)
	}
	return nil
}

func (p *Plugin) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.closedErr()
	}
	return nil
}

func (p *Plugin) closedErr() error {
	return fmt.Errorf("gpu: device %s: %w", DeviceName, driver.ErrClosed)
}

// target resolves the device and configuration of a compile or query:
// the device DEVICE_ID names (else the default one), its configuration
// overridden by props.
func (p *Plugin) target(props map[string]string) (*device, *driver.Properties, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, p.closedErr()
	}
	d := p.devices[p.def]
	p.mu.Unlock()
	if id, ok := props[driver.KeyDeviceID]; ok {
		i, err := p.parseDeviceID(id)
		if err != nil {
			return nil, nil, err
		}
		d = p.devices[i]
	}
	rest := maps.Clone(props)
	delete(rest, driver.KeyDeviceID)
	cfg := d.props.Clone()
	if err := cfg.Set(rest); err != nil {
		return nil, nil, fmt.Errorf("gpu: device %s: %w", d.name(), err)
	}
	return d, cfg, nil
}

// CompileModel compiles a clone of m for the device DEVICE_ID names (the
// default device without it), with that device's configuration overridden
// by props. An op the engine cannot run is an error wrapping
// driver.ErrUnsupported naming the node; a done ctx returns its error.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := driver.CheckModelCall(ctx, "gpu", "compile", m); err != nil {
		return nil, err
	}
	d, cfg, err := p.target(props)
	if err != nil {
		return nil, err
	}
	tm, err := transform(ctx, m, d, cfg)
	if err != nil {
		return nil, err
	}
	cc, err := d.context()
	if err != nil {
		return nil, err
	}
	if tm != m && !needsHostParts(tm) {
		// transform's clone is this compilation's own: compile need not
		// clone it again (IS-Net medium: 264 MB of weights copied, 0.2-0.35
		// s of a core and as much memory held through the compile).
		ctx = withOwnedModel(ctx)
	}
	return compileModel(ctx, p, cc, tm, cfg)
}

// transform runs the fusion passes and the precision lowering of cfg on a
// clone of m (m itself under DISABLE_TRANSFORMATIONS=YES), after refusing
// the op types GPU_DISABLED_OPS lists.
func transform(ctx context.Context, m *graph.Model, d *device, cfg *driver.Properties) (*graph.Model, error) {
	// GPU_DISABLED_OPS speaks of the user's op types, which the passes
	// may fuse away (a disabled Relu inside a FusedConv is still refused).
	if err := checkDisabled(m, d, cfg); err != nil {
		return nil, err
	}
	tm, _, err := fusion.ForDevice(ctx, m, cfg, ref.Evaluate, chains(cfg, d))
	if err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	return lowerPrecision(m, tm, cfg)
}

// chains makes the fusion passes group chains of element-wise ops into
// KernelFusion nodes whose kernels package kernels/gen generates
// (fusion.FuseElementwiseChains), leaving out the op types
// GPU_DISABLED_OPS lists in cfg, and run the chains of dense layers that
// fit device d's local memory and compute units in one work group per row
// (fusion.FuseDenseChain).
func chains(cfg *driver.Properties, d *device) func(*fusion.Options) {
	p := profileOf(d)
	if testProfile != nil {
		p = *testProfile
	}
	return func(o *fusion.Options) {
		o.Chains = &fusion.ChainOptions{Exclude: disabledIn(cfg)}
		o.DenseChain = &fusion.DenseChainOptions{LocalBytes: p.localMem, MaxRows: int64(p.computeUnits)}
		o.BodyFusions = true
	}
}

// lowerPrecision applies INFERENCE_PRECISION_HINT to the transformed model
// tm of m: with f16, the ops whose lowering says half run on f16 activations and Casts
// join them to the rest (fusion.ConvertPrecision); f32 leaves tm alone. It
// never modifies m (tm is m itself under DISABLE_TRANSFORMATIONS).
func lowerPrecision(m, tm *graph.Model, cfg *driver.Properties) (*graph.Model, error) {
	conf, err := driver.ParseConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("gpu: compile: %w", err)
	}
	if conf.InferencePrecision != tensor.F16 {
		return tm, nil
	}
	if tm == m {
		tm = m.Clone()
		if err := tm.InferShapes(); err != nil {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q: %w", m.Name, err)
		}
	}
	if _, err := fusion.ConvertPrecision(tm, tensor.F16, halfPolicy); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q in f16: %w", m.Name, err)
	}
	return tm, nil
}
