package auto

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func init() {
	driver.Register(DeviceName, func() (driver.Plugin, error) { return New() })
}

// DeviceName is the name the AUTO device is registered under.
const DeviceName = "AUTO"

// AUTO's own property keys (RW).
const (
	// KeyEnableStartupFallback is YES or NO: serve the first requests on
	// the CPU while the selected device compiles (default YES).
	KeyEnableStartupFallback = "ENABLE_STARTUP_FALLBACK"
	// KeyEnableRuntimeFallback is YES or NO: re-run an inference that
	// failed with a device error on the next device (default YES).
	KeyEnableRuntimeFallback = "ENABLE_RUNTIME_FALLBACK"
	// KeySchedulePolicy is how CUMULATIVE_THROUGHPUT picks a device for an
	// inference: DEVICE_PRIORITY (default) or ROUND_ROBIN.
	KeySchedulePolicy = "SCHEDULE_POLICY"
)

// SCHEDULE_POLICY values.
const (
	PolicyDevicePriority = "DEVICE_PRIORITY"
	PolicyRoundRobin     = "ROUND_ROBIN"
)

// cpuPlugin is the plugin whose device serves while others compile.
const cpuPlugin = "CPU"

// Plugin is the AUTO device. It reaches the devices it selects from
// through a driver.Core of its own (virtual.Device), so they are its own
// instances, closed by its Close. It is safe for concurrent use.
type Plugin struct {
	*virtual.Device
}

// Interface checks.
var (
	_ driver.Plugin  = (*Plugin)(nil)
	_ driver.Querier = (*Plugin)(nil)
)

// New returns the AUTO device. The devices it selects from are
// constructed, through the registry, on first use.
func New() (*Plugin, error) {
	return &Plugin{virtual.NewDevice(DeviceName, "auto", propertySpecs())}, nil
}

func propertySpecs() []driver.PropertySpec {
	return append(driver.CommonSpecs(),
		driver.PropertySpec{
			Key: driver.KeyDevicePriorities, Mutable: true,
			Accepted: "a comma-separated list of devices in priority order, e.g. GPU,CPU (-DEV leaves DEV out; empty: every device)",
			Parse: func(s string) (string, error) {
				if strings.TrimSpace(s) == "" {
					return "", nil
				}
				entries, err := parseList(s)
				if err != nil {
					return "", err
				}
				return strings.Join(entries, ","), nil
			},
		},
		driver.BoolSpec(KeyEnableStartupFallback, true),
		driver.BoolSpec(KeyEnableRuntimeFallback, true),
		driver.EnumSpec(KeySchedulePolicy, PolicyDevicePriority, PolicyDevicePriority, PolicyRoundRobin),
		driver.BoolSpec(driver.KeyAllowAutoBatching, true),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, "AUTO (automatic device selection)"),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, DeviceName),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, ""),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, "1 64 1"),
	)
}

// parseList checks a DEVICE_PRIORITIES value: device names, each at most
// once, "-NAME" to leave a device out, and not AUTO itself.
func parseList(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		name := strings.TrimPrefix(e, "-")
		plug, _, prio, err := driver.ParseDeviceName(name)
		if err != nil || prio != "" {
			return nil, fmt.Errorf("bad entry %q: want a device name such as GPU, GPU.1 or -CPU", e)
		}
		if plug == DeviceName {
			return nil, fmt.Errorf("%s cannot select itself", DeviceName)
		}
		if slices.Contains(out, e) {
			return nil, fmt.Errorf("device %s listed twice", e)
		}
		out = append(out, e)
	}
	return out, nil
}

// setup is one compilation's configuration.
type setup struct {
	cfg        *driver.Properties
	devices    []string // capable candidates, in priority order
	rejected   []string // "DEV: why" for candidates without the capability
	extra      map[string]string
	cumulative bool
}

// config resolves props (on top of AUTO's configuration) into a setup.
func (p *Plugin) config(props map[string]string) (*setup, error) {
	own, extra := virtual.Split(p.Props(), props)
	cfg := p.Props().Clone()
	if err := cfg.Set(own); err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	list, err := cfg.Get(driver.KeyDevicePriorities)
	if err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	devs, err := p.candidates(list)
	if err != nil {
		return nil, err
	}
	for _, k := range virtual.SortedKeys(extra) {
		if !slices.ContainsFunc(devs, func(d string) bool { return p.Supports(d, k) }) {
			return nil, driver.Errorf(driver.ErrNotFound, "auto: unknown property %s: neither %s nor any of %s has it",
				k, DeviceName, strings.Join(devs, ", "))
		}
	}
	s := &setup{cfg: cfg, extra: extra}
	hint, _ := cfg.Get(driver.KeyPerformanceHint)
	s.cumulative = hint == driver.HintCumulativeThroughput.String()
	need := capabilityNeeded(cfg)
	unknown := 0 // devices no package registered ("gpu" for GPU)
	for _, d := range devs {
		if _, err := p.Core.Plugin(d); errors.Is(err, driver.ErrNotFound) {
			unknown++
		}
		if why := p.lacks(d, need); why != "" {
			s.rejected = append(s.rejected, d+": "+why)
			continue
		}
		s.devices = append(s.devices, d)
	}
	if len(s.devices) == 0 {
		why := strings.Join(s.rejected, "; ")
		if need != "" {
			prec, _ := cfg.Get(driver.KeyInferencePrecisionHint)
			why = fmt.Sprintf("%s=%s needs %s: %s", driver.KeyInferencePrecisionHint, prec, need, why)
		}
		if unknown == len(devs) {
			return nil, driver.Errorf(driver.ErrNotFound, "auto: no device to select from (%s)", why)
		}
		return nil, driver.Errorf(driver.ErrUnsupported, "auto: no device has the capability the configuration needs (%s)", why)
	}
	return s, nil
}

// candidates returns the devices of a DEVICE_PRIORITIES value, or every
// real device when it lists none (only exclusions or nothing).
func (p *Plugin) candidates(list string) ([]string, error) {
	var include, exclude []string
	if list != "" {
		entries, err := parseList(list)
		if err != nil {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "auto: %s=%q: %w", driver.KeyDevicePriorities, list, err)
		}
		for _, e := range entries {
			if name, ok := strings.CutPrefix(e, "-"); ok {
				exclude = append(exclude, name)
			} else {
				include = append(include, e)
			}
		}
	}
	if len(include) == 0 {
		include = p.realDevices()
	}
	var out []string
	for _, d := range include {
		plug, _, _, _ := driver.ParseDeviceName(d)
		if slices.Contains(exclude, d) || slices.Contains(exclude, plug) {
			continue
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, driver.Errorf(driver.ErrNotFound, "auto: no device to select from (%s=%q; available: %s)",
			driver.KeyDevicePriorities, list, strings.Join(p.realDevices(), ", "))
	}
	return out, nil
}

// realDevices lists the devices that work, without the virtual ones (those
// with DEVICE_PRIORITIES), discrete devices first, then integrated ones,
// then others, then the CPU.
func (p *Plugin) realDevices() []string {
	var devs []string
	for _, d := range p.Core.AvailableDevices() {
		if !p.Supports(d, driver.KeyDevicePriorities) {
			devs = append(devs, d)
		}
	}
	rank := func(d string) int {
		if plug, _, _, _ := driver.ParseDeviceName(d); plug == cpuPlugin {
			return 3
		}
		switch t, _ := p.Core.Property(d, driver.KeyDeviceType); t {
		case "discrete":
			return 0
		case "integrated":
			return 1
		}
		return 2
	}
	sort.SliceStable(devs, func(i, j int) bool { return rank(devs[i]) < rank(devs[j]) })
	return devs
}

// capabilityNeeded is the OPTIMIZATION_CAPABILITIES entry a device needs
// for cfg's INFERENCE_PRECISION_HINT ("" for f32, which every device has).
func capabilityNeeded(cfg *driver.Properties) string {
	v, err := cfg.Get(driver.KeyInferencePrecisionHint)
	if err != nil {
		return ""
	}
	switch t, _ := tensor.ParseElementType(v); t {
	case tensor.F16:
		return "FP16"
	case tensor.BF16:
		return "BF16"
	}
	return ""
}

// lacks says why device cannot serve the configuration, or "".
func (p *Plugin) lacks(device, capability string) string {
	if _, err := p.Core.Plugin(device); err != nil {
		return err.Error()
	}
	if capability == "" {
		return ""
	}
	caps, err := p.Core.Property(device, driver.KeyOptimizationCapabilities)
	if err != nil || slices.Contains(strings.Fields(caps), capability) {
		return ""
	}
	return fmt.Sprintf("no %s in %s (%s)", capability, driver.KeyOptimizationCapabilities, caps)
}

// deviceProps are the properties device gets: AUTO's common keys it
// supports (THROUGHPUT for CUMULATIVE_THROUGHPUT), ALLOW_AUTO_BATCHING,
// and the keys AUTO does not know that device has.
func (p *Plugin) deviceProps(s *setup, device string) (map[string]string, error) {
	extra := map[string]string{}
	for k, v := range s.extra {
		if p.Supports(device, k) {
			extra[k] = v
		}
	}
	out, err := p.DeviceProps(s.cfg, device, extra)
	if err != nil {
		return nil, err
	}
	if s.cumulative && out[driver.KeyPerformanceHint] != "" {
		out[driver.KeyPerformanceHint] = driver.HintThroughput.String()
	}
	if p.Supports(device, driver.KeyAllowAutoBatching) {
		v, err := s.cfg.Get(driver.KeyAllowAutoBatching)
		if err != nil {
			return nil, fmt.Errorf("auto: %w", err)
		}
		out[driver.KeyAllowAutoBatching] = v
	}
	return out, nil
}

// QueryModel maps every node of m to the first candidate device (in
// priority order) whose QueryModel lists it; nodes none lists are left out.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := p.Start(ctx, "query", m); err != nil {
		return nil, err
	}
	s, err := p.config(props)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i := len(s.devices) - 1; i >= 0; i-- {
		d := s.devices[i]
		dprops, err := p.deviceProps(s, d)
		if err != nil {
			return nil, err
		}
		answer, err := p.Core.QueryModel(ctx, m.Clone(), d, dprops)
		if errors.Is(err, driver.ErrNotImplemented) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("auto: query model %q on %s: %w", m.Name, d, err)
		}
		for name := range answer {
			out[name] = d
		}
	}
	return out, nil
}

// CompileModel selects the device (or, with CUMULATIVE_THROUGHPUT, the
// devices) m runs on and compiles it there; see the package documentation.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := p.Start(ctx, "compile", m); err != nil {
		return nil, err
	}
	s, err := p.config(props)
	if err != nil {
		return nil, err
	}
	c, err := newCompiledModel(p, m.Clone(), s)
	if err != nil {
		return nil, err
	}
	if s.cumulative {
		err = c.compileAll(ctx)
	} else {
		err = c.compileSelected(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}
