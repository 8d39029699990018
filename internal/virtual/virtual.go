package virtual

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Device is the plugin part of a virtual device: its name, its
// properties and closed state (a driver.PluginCore) and the Core through
// which it reaches real devices, so those are its own instances,
// constructed on first use and closed by its Close. Embed it to get Name,
// Property, SetProperties, Close, Check and Start. It is safe for
// concurrent use.
type Device struct {
	state  driver.PluginCore
	name   string
	prefix string // starts error messages: "auto"
	// Core reaches the devices this one runs on.
	Core *driver.Core
}

// NewDevice returns a device called name whose errors start with prefix,
// with properties made of specs.
func NewDevice(name, prefix string, specs []driver.PropertySpec) *Device {
	d := &Device{name: name, prefix: prefix, Core: driver.NewCore()}
	d.state.Init(prefix, name, driver.NewProperties(specs...))
	return d
}

// Name returns the name the device is registered under.
func (d *Device) Name() string { return d.name }

// Props returns the device's configuration.
func (d *Device) Props() *driver.Properties { return d.state.Props() }

// Property returns a device property.
func (d *Device) Property(key string) (string, error) { return d.state.Property(key) }

// SetProperties sets read-write properties, all or none.
func (d *Device) SetProperties(props map[string]string) error { return d.state.SetProperties(props) }

// Check returns an error wrapping driver.ErrClosed after Close.
func (d *Device) Check() error { return d.state.Check() }

// Start begins a CompileModel or QueryModel (what: "compile", "query"):
// see driver.PluginCore.Start.
func (d *Device) Start(ctx context.Context, what string, m *graph.Model) error {
	return d.state.Start(ctx, what, m)
}

// Close closes the devices this one constructed; their compiled models
// stay usable as far as those devices allow. Later calls return nil and
// other methods fail with driver.ErrClosed.
func (d *Device) Close() error {
	if !d.state.MarkClosed() {
		return nil
	}
	if err := d.Core.Close(); err != nil {
		return fmt.Errorf("%s: %w", d.prefix, err)
	}
	return nil
}

// Supports reports whether device lists key among its properties.
func (d *Device) Supports(device, key string) bool {
	_, err := d.Core.Property(device, key)
	return !errors.Is(err, driver.ErrNotFound)
}

// PassKeys are the common properties a virtual device hands on to the real
// devices it runs on, when they support the key. NUM_STREAMS and
// INFERENCE_PRECISION_HINT go too when they are not at their defaults.
var PassKeys = []string{
	driver.KeyPerformanceHint,
	driver.KeyNumRequests,
	driver.KeyEnableProfiling,
	driver.KeyExecutionModeHint,
	driver.KeyModelPriority,
	driver.KeyDisableTransformations,
	driver.KeyCacheDir,
	driver.KeyLogLevel,
}

// DeviceProps returns what device gets of cfg: the values of PassKeys (and
// of NUM_STREAMS and INFERENCE_PRECISION_HINT when not at their defaults)
// that device supports, then extra (keys the virtual device does not know,
// meant for device), each of which device must support: one it does not is
// an error wrapping driver.ErrNotFound naming the key.
func (d *Device) DeviceProps(cfg *driver.Properties, device string, extra map[string]string) (map[string]string, error) {
	keys := PassKeys
	for _, k := range []struct{ key, def string }{
		{driver.KeyNumStreams, driver.FormatNumStreams(0)},
		{driver.KeyInferencePrecisionHint, tensor.F32.String()},
	} {
		if v, err := cfg.Get(k.key); err == nil && v != k.def {
			keys = append(keys[:len(keys):len(keys)], k.key)
		}
	}
	out := map[string]string{}
	for _, k := range keys {
		if !cfg.Has(k) || !d.Supports(device, k) {
			continue
		}
		v, err := cfg.Get(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.prefix, err)
		}
		out[k] = v
	}
	for _, k := range SortedKeys(extra) {
		if !d.Supports(device, k) {
			return nil, driver.Errorf(driver.ErrNotFound, "%s: unknown property %s: neither %s nor device %s has it (%s has: %s)",
				d.prefix, k, d.name, device, d.name, joinSorted(cfg.Keys()))
		}
		out[k] = extra[k]
	}
	return out, nil
}

// Split separates props into the keys cfg has and the others.
func Split(cfg *driver.Properties, props map[string]string) (own, extra map[string]string) {
	own, extra = map[string]string{}, map[string]string{}
	for k, v := range props {
		if cfg.Has(k) {
			own[k] = v
		} else {
			extra[k] = v
		}
	}
	return own, extra
}

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinSorted(s []string) string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// OptimalRequests is cm's OPTIMAL_NUMBER_OF_INFER_REQUESTS (1 when it does
// not say).
func OptimalRequests(cm driver.CompiledModel) int {
	v, err := cm.Property(driver.KeyOptimalNumberOfInferRequests)
	if err != nil {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// ZeroInputs binds a zero tensor to every input of static shape in in (a
// request's input bindings, in port order), as devices do for new
// requests.
func ZeroInputs(prefix string, ports []driver.PortInfo, in []*tensor.Tensor) error {
	for i, p := range ports {
		s, ok := p.Shape.ToShape()
		if !ok {
			continue
		}
		t, err := tensor.New(p.Type, s)
		if err != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "%s: input %q: %w", prefix, p.Name, err)
		}
		in[i] = t
	}
	return nil
}
