package hetero

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func init() {
	driver.Register(DeviceName, func() (driver.Plugin, error) { return New() })
}

// DeviceName is the name the HETERO device is registered under.
const DeviceName = "HETERO"

// KeyNumberOfSubmodels is the number of subgraphs a compiled model was cut
// into (RO, compiled model).
const KeyNumberOfSubmodels = "NUMBER_OF_SUBMODELS"

// KeyDumpGraphDot names a directory: when set, CompileModel writes the
// model with every node's affinity (MODEL_affinity.dot) and each subgraph
// (MODEL_subgraphN_DEVICE.dot) there as Graphviz files (RW; "" is off).
const KeyDumpGraphDot = "HETERO_DUMP_GRAPH_DOT"

// passKeys are the HETERO properties handed on to the devices that compile
// the subgraphs, when the device supports the key.
var passKeys = []string{
	driver.KeyPerformanceHint,
	driver.KeyNumRequests,
	driver.KeyEnableProfiling,
	driver.KeyExecutionModeHint,
	driver.KeyModelPriority,
	driver.KeyDisableTransformations,
	driver.KeyRandomSeed,
}

// Plugin is the HETERO device. It owns a driver.Core through which it
// reaches the devices it splits models across, so those devices are its
// own instances, closed by its Close. It is safe for concurrent use.
type Plugin struct {
	state driver.PluginCore // properties, closed
	core  *driver.Core
}

// Interface checks.
var (
	_ driver.Plugin  = (*Plugin)(nil)
	_ driver.Querier = (*Plugin)(nil)
)

// New returns the HETERO device. It constructs none of the devices it will
// use: they are constructed, through the registry, on first use.
func New() (*Plugin, error) {
	p := &Plugin{core: driver.NewCore()}
	p.state.Init("hetero", DeviceName, driver.NewProperties(propertySpecs()...))
	return p, nil
}

// propertySpecs are HETERO's properties: the common ones (handed on to the
// devices, see passKeys), DEVICE_PRIORITIES, the dot-dump directory and
// read-only facts.
func propertySpecs() []driver.PropertySpec {
	return append(append(driver.CommonSpecs(),
		driver.PropertySpec{
			Key: driver.KeyDevicePriorities, Mutable: true,
			Accepted: "a comma-separated list of devices, e.g. GPU,CPU",
			Parse: func(s string) (string, error) {
				if strings.TrimSpace(s) == "" {
					return "", nil
				}
				devs, err := parseDevices(s)
				if err != nil {
					return "", err
				}
				return strings.Join(devs, ","), nil
			},
		},
		driver.StringSpec(KeyDumpGraphDot, ""),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, "HETERO (heterogeneous execution across devices)"),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, DeviceName),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, ""),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, "1 16 1"),
	), driver.StreamSpecs(maxStreams)...)
}

// maxStreams bounds NUM_STREAMS: the streams of HETERO's own executors,
// which run the subgraphs' stages.
const maxStreams = 16

// Name returns "HETERO".
func (p *Plugin) Name() string { return DeviceName }

// Property returns a device property.
func (p *Plugin) Property(key string) (string, error) { return p.state.Property(key) }

// SetProperties sets read-write properties, all or none.
func (p *Plugin) SetProperties(props map[string]string) error { return p.state.SetProperties(props) }

// SetDeviceProperties sets properties of one of the devices HETERO splits
// across ("GPU", "GPU.1", "CPU"): HETERO owns its devices, so this is how
// device-specific settings (e.g. the GPU's GPU_DISABLED_OPS in tests)
// reach them. The device is constructed if it was not yet.
func (p *Plugin) SetDeviceProperties(device string, props map[string]string) error {
	if err := p.check(); err != nil {
		return err
	}
	name, _, prio, err := driver.ParseDeviceName(device)
	if err != nil {
		return fmt.Errorf("hetero: %w", err)
	}
	if name == DeviceName || prio != "" {
		return driver.Errorf(driver.ErrInvalidArgument, "hetero: SetDeviceProperties on %q: not a device HETERO splits across", device)
	}
	if err := p.core.SetProperties(device, props); err != nil {
		return fmt.Errorf("hetero: device %s: %w", device, err)
	}
	return nil
}

// Close closes the devices HETERO constructed. Compiled models stay usable
// as far as those devices allow (CPU and GPU compiled models outlive their
// plugins).
func (p *Plugin) Close() error {
	if !p.state.MarkClosed() {
		return nil
	}
	if err := p.core.Close(); err != nil {
		return fmt.Errorf("hetero: %w", err)
	}
	return nil
}

func (p *Plugin) check() error { return p.state.Check() }

// config returns a copy of the configuration overridden by props, and the
// device list.
func (p *Plugin) config(props map[string]string) (*driver.Properties, []string, error) {
	cfg := p.state.Props().Clone()
	if err := cfg.Set(props); err != nil {
		return nil, nil, fmt.Errorf("hetero: %w", err)
	}
	prio, err := cfg.Get(driver.KeyDevicePriorities)
	if err != nil {
		return nil, nil, fmt.Errorf("hetero: %w", err)
	}
	if prio == "" {
		return nil, nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: no devices to split across: set %s (e.g. %s=GPU,CPU) or use the device name %s:GPU,CPU", driver.KeyDevicePriorities, driver.KeyDevicePriorities, DeviceName)
	}
	devs, err := parseDevices(prio)
	if err != nil {
		return nil, nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: %s=%q: %w", driver.KeyDevicePriorities, prio, err)
	}
	return cfg, devs, nil
}

// deviceProps are the properties HETERO hands on to device: the values of
// passKeys the device supports, INFERENCE_PRECISION_HINT when it is not
// the default f32, and ALLOW_AUTO_BATCHING=NO.
func (p *Plugin) deviceProps(cfg *driver.Properties, device string) (map[string]string, error) {
	dp, err := p.core.Plugin(device)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	keys := passKeys
	if v, err := cfg.Get(driver.KeyInferencePrecisionHint); err == nil && v != tensor.F32.String() {
		keys = append(keys[:len(keys):len(keys)], driver.KeyInferencePrecisionHint)
	}
	for _, k := range keys {
		if _, err := dp.Property(k); err != nil {
			if errors.Is(err, driver.ErrNotFound) {
				continue
			}
			return nil, err
		}
		v, err := cfg.Get(k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	// A subgraph runs as one stage of a chain: automatic batching would
	// hold it for requests the chain's executors never let arrive.
	if _, err := dp.Property(driver.KeyAllowAutoBatching); err == nil {
		out[driver.KeyAllowAutoBatching] = "NO"
	}
	return out, nil
}

// affinityModel clones m, infers its shapes and sets every node's affinity
// (see assignAffinities).
func (p *Plugin) affinityModel(ctx context.Context, m *graph.Model, cfg *driver.Properties, devs []string) (*graph.Model, error) {
	model := m.Clone()
	if _, err := model.Nodes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	if err := model.InferShapes(); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: model %q: %w", m.Name, err)
	}
	query := func(ctx context.Context, dev string) (map[string]string, error) {
		props, err := p.deviceProps(cfg, dev)
		if err != nil {
			return nil, err
		}
		// Each device answers on its own clone: queries may transform.
		return p.core.QueryModel(ctx, model.Clone(), dev, props)
	}
	if err := assignAffinities(ctx, model, devs, query); err != nil {
		return nil, err
	}
	return model, nil
}

// QueryModel maps every node of m to the device HETERO would run it on:
// the user's affinity, or the first device in DEVICE_PRIORITIES whose
// QueryModel lists it. Nodes no device supports are left out.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := p.state.Start(ctx, "query", m); err != nil {
		return nil, err
	}
	cfg, devs, err := p.config(props)
	if err != nil {
		return nil, err
	}
	model, err := p.affinityModel(ctx, m, cfg, devs)
	if err != nil && !errors.Is(err, driver.ErrUnsupported) {
		return nil, err
	}
	if err != nil {
		// Answer what is supported: redo the assignment leaving gaps.
		model = m.Clone()
		_ = model.InferShapes()
		answers := map[string]string{}
		for i := len(devs) - 1; i >= 0; i-- {
			props, err := p.deviceProps(cfg, devs[i])
			if err != nil {
				return nil, err
			}
			a, err := p.core.QueryModel(ctx, model.Clone(), devs[i], props)
			if err != nil {
				return nil, fmt.Errorf("hetero: query model %q on %s: %w", m.Name, devs[i], err)
			}
			for name := range a {
				answers[name] = devs[i]
			}
		}
		nodes, _ := model.Nodes()
		for _, n := range nodes {
			if n.RT.Affinity != "" {
				answers[n.Name] = n.RT.Affinity
			}
		}
		return answers, nil
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: query model %q: %w", m.Name, err)
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n.RT.Affinity
	}
	return out, nil
}

// CompileModel splits a clone of m across the devices of DEVICE_PRIORITIES
// (see the package documentation) and compiles each subgraph on its
// device.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := p.state.Start(ctx, "compile", m); err != nil {
		return nil, err
	}
	cfg, devs, err := p.config(props)
	if err != nil {
		return nil, err
	}
	model, err := p.affinityModel(ctx, m, cfg, devs)
	if err != nil {
		return nil, err
	}
	subs, err := split(model)
	if err != nil {
		return nil, err
	}
	dir, err := cfg.Get(KeyDumpGraphDot)
	if err != nil {
		return nil, fmt.Errorf("hetero: %w", err)
	}
	if dir != "" {
		if err := dumpDot(dir, model, subs); err != nil {
			return nil, err
		}
	}
	cm := &CompiledModel{model: model, subs: subs}
	defer func() {
		if cm != nil && err != nil {
			_ = cm.closeSubs()
		}
	}()
	for _, sg := range subs {
		if err = ctx.Err(); err != nil {
			return nil, fmt.Errorf("hetero: compile: %w", err)
		}
		var dprops map[string]string
		if dprops, err = p.deviceProps(cfg, sg.device); err != nil {
			return nil, fmt.Errorf("hetero: compile model %q: %s on %s: %w", m.Name, sg.name, sg.device, err)
		}
		var sub driver.CompiledModel
		sub, err = p.core.CompileModel(ctx, sg.model, sg.device, dprops)
		if err != nil {
			return nil, fmt.Errorf("hetero: compile model %q: %s on %s: %w", m.Name, sg.name, sg.device, err)
		}
		cm.compiled = append(cm.compiled, sub)
	}
	if err = cm.init(m.Name, cfg); err != nil {
		return nil, err
	}
	return cm, nil
}

// executionDevices lists the devices of subs once each, in order.
func executionDevices(subs []*subgraph) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range subs {
		if !seen[s.device] {
			seen[s.device] = true
			out = append(out, s.device)
		}
	}
	return strings.Join(out, " ")
}

// optimalRequests is the largest OPTIMAL_NUMBER_OF_INFER_REQUESTS of the
// subgraphs' compiled models (1 when none says).
func optimalRequests(cms []driver.CompiledModel) int {
	best := 1
	for _, c := range cms {
		v, err := c.Property(driver.KeyOptimalNumberOfInferRequests)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && n > best {
			best = n
		}
	}
	return best
}
