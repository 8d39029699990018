package driver

import (
	"context"
	"errors"
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
)

// DevicePropertier is implemented by plugins with several devices ("GPU.0",
// "GPU.1") that answer properties per device. Core.Property uses it for
// device names with an id; plugins without it answer Plugin.Property for
// any of their AVAILABLE_DEVICES.
type DevicePropertier interface {
	// DeviceProperty returns property key of the device with that id.
	DeviceProperty(deviceID, key string) (string, error)
}

// Core finds plugins by device name, constructs each on first use and keeps
// it until Close. It is safe for concurrent use, and its zero value is
// ready to use. It is what plugin.Core is built on; virtual devices
// (HETERO) keep one to reach the devices they build on, and get the
// devices' CompiledModels back rather than plugin's wrappers.
//
// A plugin whose factory fails is not retried: the error (which explains
// what is missing, e.g. no OpenCL ICD) is cached and returned on every later
// use of that plugin by this Core, so a missing driver costs one probe, not
// one per call. Install the missing piece and make a new Core to retry.
type Core struct {
	mu      sync.Mutex
	closed  bool
	plugins map[string]*coreEntry
}

type coreEntry struct {
	once sync.Once
	p    Plugin
	err  error
}

// NewCore returns a Core over the registered plugins. It constructs none.
func NewCore() *Core { return &Core{} }

// deviceRef is a parsed device name.
type deviceRef struct {
	full, name, id, priorities string
}

func parseRef(device string) (deviceRef, error) {
	name, id, prio, err := ParseDeviceName(device)
	return deviceRef{full: device, name: name, id: id, priorities: prio}, err
}

// Plugin returns the plugin for a device name ("CPU", "GPU.1",
// "HETERO:GPU,CPU" all name a plugin: "CPU", "GPU", "HETERO"),
// constructing it on first use. An unregistered plugin is an error wrapping
// ErrNotFound that names the package to import; a factory error is
// returned wrapped (errors.Is finds the factory's sentinel).
func (c *Core) Plugin(device string) (Plugin, error) {
	ref, err := parseRef(device)
	if err != nil {
		return nil, err
	}
	return c.plugin(ref.name)
}

func (c *Core) plugin(name string) (Plugin, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errorf(ErrClosed, "plugin: core is closed (device %q)", name)
	}
	e, ok := c.plugins[name]
	if !ok {
		if c.plugins == nil {
			c.plugins = map[string]*coreEntry{}
		}
		f, registered := factory(name)
		if !registered {
			c.mu.Unlock()
			return nil, unknownDevice(name)
		}
		e = &coreEntry{}
		c.plugins[name] = e
		// Construct outside c.mu (factories probe drivers and may be slow)
		// but exactly once: concurrent callers wait on e.once.
		c.mu.Unlock()
		e.once.Do(func() { e.p, e.err = construct(name, f) })
	} else {
		c.mu.Unlock()
		e.once.Do(func() {}) // wait for a construction in progress
	}
	return e.p, e.err
}

// construct runs a factory, turning a panic or a nil plugin into an error.
func construct(name string, f Factory) (p Plugin, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, errorf(ErrDevice, "plugin: device %q: factory panicked: %v", name, r)
		}
	}()
	p, err = f()
	if err != nil {
		return nil, errorf(ErrDevice, "plugin: device %q is unavailable: %w", name, err)
	}
	if p == nil {
		return nil, errorf(ErrDevice, "plugin: device %q: factory returned no plugin and no error", name)
	}
	return p, nil
}

// AvailableDevices lists the devices that work, sorted by plugin name: for
// each registered plugin whose factory succeeds, its name when its
// AVAILABLE_DEVICES lists at most one id (or it has no such property), and
// "NAME.ID" for each id when it lists several ("GPU.0", "GPU.1"), as
// OpenVINO's Core does. Plugins that fail to construct are left out; use
// Plugin to see why.
func (c *Core) AvailableDevices() []string {
	var out []string
	for _, name := range Devices() {
		p, err := c.plugin(name)
		if err != nil {
			continue
		}
		v, err := p.Property(KeyAvailableDevices)
		ids := strings.Fields(v)
		if err != nil || len(ids) <= 1 {
			out = append(out, name)
			continue
		}
		for _, id := range ids {
			out = append(out, name+"."+id)
		}
	}
	return out
}

// withDevice returns a copy of props with DEVICE_ID / DEVICE_PRIORITIES
// from the device name. A conflicting value already in props is an error.
func withDevice(ref deviceRef, props map[string]string) (map[string]string, error) {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]string{}
	}
	set := func(key, v string) error {
		if v == "" {
			return nil
		}
		for k, old := range props {
			if CanonicalKey(k) == key && old != v {
				return errorf(ErrInvalidArgument, "plugin: device %q sets %s=%s but the properties say %s=%s", ref.full, key, v, k, old)
			}
		}
		out[key] = v
		return nil
	}
	if err := set(KeyDeviceID, ref.id); err != nil {
		return nil, err
	}
	if err := set(KeyDevicePriorities, ref.priorities); err != nil {
		return nil, err
	}
	return out, nil
}

// target finds the plugin for a call on device that takes properties: the
// plugin, the parsed name, and a copy of props with DEVICE_ID /
// DEVICE_PRIORITIES from the name ("GPU.1", "HETERO:GPU,CPU"; see
// withDevice).
func (c *Core) target(device string, props map[string]string) (Plugin, deviceRef, map[string]string, error) {
	ref, err := parseRef(device)
	if err != nil {
		return nil, ref, nil, err
	}
	if props, err = withDevice(ref, props); err != nil {
		return nil, ref, nil, err
	}
	p, err := c.plugin(ref.name)
	return p, ref, props, err
}

// CompileModel compiles m for the device named by device ("GPU.1" compiles
// with DEVICE_ID=1, "HETERO:GPU,CPU" with DEVICE_PRIORITIES=GPU,CPU) with
// the plugin's configuration overridden by props; props is not modified.
// It returns ctx.Err() if ctx is done before compilation starts.
//
// With PERFORMANCE_HINT=THROUGHPUT on a device that lists
// ALLOW_AUTO_BATCHING (YES there or in props) and the BATCH device
// registered, the model is compiled on BATCH over the device (automatic
// batching); a model BATCH cannot batch is compiled on the device as asked.
//
// With CACHE_DIR set (in props or on the plugin) and a device that
// implements Importer, the compiled model is cached in CACHE_DIR/<hash>.blob,
// one blob per model, device and configuration: a later call imports it
// (LOADED_FROM_CACHE=YES) instead of compiling, and a stale or corrupt blob
// is recompiled and replaced. See CacheBlobPath.
func (c *Core) CompileModel(ctx context.Context, m *graph.Model, device string, props map[string]string) (CompiledModel, error) {
	pairs, props, err := statefulOption(props)
	if err != nil {
		return nil, err
	}
	inner := props
	if pairs != nil && c.compilesStateful(device) {
		inner = maps.Clone(props)
		inner[KeyMakeStateful] = statePairsString(pairs)
	}
	cm, err := c.compileModel(ctx, m, device, inner)
	return withStates(cm, err, pairs)
}

// compilesStateful reports whether device's plugin keeps MAKE_STATEFUL
// states itself (StatefulCompiler).
func (c *Core) compilesStateful(device string) bool {
	p, _, _, err := c.target(device, nil)
	if err != nil {
		return false
	}
	sc, ok := p.(StatefulCompiler)
	return ok && sc.CompilesStateful()
}

// statePairsString formats pairs as MAKE_STATEFUL's value.
func statePairsString(pairs []StatePair) string {
	s := make([]string, len(pairs))
	for i, p := range pairs {
		s[i] = p.Input + ":" + p.Output
	}
	return strings.Join(s, ",")
}

// statefulOption takes MAKE_STATEFUL out of props (a copy) and parses it;
// pairs is nil when props has none.
func statefulOption(props map[string]string) (pairs []StatePair, rest map[string]string, err error) {
	for k, v := range props {
		if CanonicalKey(k) != KeyMakeStateful {
			continue
		}
		if pairs, err = ParseStatePairs(v); err != nil {
			return nil, nil, err
		}
		rest = make(map[string]string, len(props))
		for k2, v2 := range props {
			if k2 != k {
				rest[k2] = v2
			}
		}
		return pairs, rest, nil
	}
	return nil, props, nil
}

// withStates makes a compiled model stateful when pairs says so, closing
// it on error.
func withStates(cm CompiledModel, err error, pairs []StatePair) (CompiledModel, error) {
	if err != nil || pairs == nil {
		return cm, err
	}
	sm, err := MakeStateful(cm, pairs)
	if err != nil {
		_ = cm.Close()
		return nil, err
	}
	return sm, nil
}

// compileModel is CompileModel without MAKE_STATEFUL.
func (c *Core) compileModel(ctx context.Context, m *graph.Model, device string, props map[string]string) (CompiledModel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errorf(ErrInvalidArgument, "plugin: CompileModel on %q with a nil model", device)
	}
	p, ref, props, err := c.target(device, props)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.autoBatch(ref, props) {
		// Implicit batching (ALLOW_AUTO_BATCHING with THROUGHPUT): a model
		// BATCH cannot batch runs on the device itself, unbatched.
		if cm, err := c.compileAutoBatch(ctx, m, ref, props); err == nil || ctx.Err() != nil {
			return cm, err
		}
	}
	if dir := cacheDir(p, props); dir != "" {
		return c.compileCached(ctx, p, ref, m, props, dir)
	}
	return p.CompileModel(ctx, m, props)
}

// QueryModel asks the device which nodes of m it supports: friendly node
// name -> device name. A plugin that does not implement Querier is an error
// wrapping ErrNotImplemented.
func (c *Core) QueryModel(ctx context.Context, m *graph.Model, device string, props map[string]string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errorf(ErrInvalidArgument, "plugin: QueryModel on %q with a nil model", device)
	}
	p, ref, props, err := c.target(device, props)
	if err != nil {
		return nil, err
	}
	q, ok := p.(Querier)
	if !ok {
		return nil, errorf(ErrNotImplemented, "plugin: device %q does not implement QueryModel", ref.name)
	}
	return q.QueryModel(ctx, m, props)
}

// SetProperties sets properties of the device's plugin. For "GPU.1" the map
// also carries DEVICE_ID=1 (the plugin applies the other keys to that
// device), for "HETERO:GPU,CPU" DEVICE_PRIORITIES=GPU,CPU. props is not
// modified; on error nothing changes.
func (c *Core) SetProperties(device string, props map[string]string) error {
	p, _, props, err := c.target(device, props)
	if err != nil {
		return err
	}
	return p.SetProperties(props)
}

// Property returns a property of the device. For a name with an id
// ("GPU.1") it asks DevicePropertier when the plugin implements it, and
// otherwise checks the id is among AVAILABLE_DEVICES and asks the plugin.
func (c *Core) Property(device, key string) (string, error) {
	ref, err := parseRef(device)
	if err != nil {
		return "", err
	}
	p, err := c.plugin(ref.name)
	if err != nil {
		return "", err
	}
	if ref.id == "" {
		return p.Property(key)
	}
	if dp, ok := p.(DevicePropertier); ok {
		return dp.DeviceProperty(ref.id, key)
	}
	ids, err := p.Property(KeyAvailableDevices)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	for _, id := range strings.Fields(ids) {
		if id == ref.id {
			return p.Property(key)
		}
	}
	return "", errorf(ErrNotFound, "plugin: device %q: no device with id %q (AVAILABLE_DEVICES: %q)", device, ref.id, ids)
}

// Check returns an error wrapping ErrClosed, naming what (the call), once
// the Core is closed, and nil before; for methods that reach no device.
func (c *Core) Check(what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errorf(ErrClosed, "plugin: core is closed (%s)", what)
	}
	return nil
}

// Close closes every plugin the Core constructed and joins their errors.
// Later calls return nil; using the Core after Close is an error wrapping
// ErrClosed.
func (c *Core) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	entries := c.plugins
	c.plugins = nil
	c.mu.Unlock()
	var errs []error
	for _, name := range sortedNames(entries) {
		e := entries[name]
		e.once.Do(func() {})
		if e.p != nil {
			if err := e.p.Close(); err != nil {
				errs = append(errs, errorf(ErrDevice, "plugin: closing device %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// remotePlugin returns the plugin of device as a RemotePlugin, and the
// device id of the name ("GPU.1" -> "1"); a device without remote
// contexts is an error wrapping ErrNotImplemented.
func (c *Core) remotePlugin(device string) (RemotePlugin, deviceRef, error) {
	ref, err := parseRef(device)
	if err != nil {
		return nil, ref, err
	}
	if ref.priorities != "" {
		return nil, ref, errorf(ErrNotImplemented, "plugin: device %q: a virtual device has no remote context; use one of %s", device, ref.priorities)
	}
	p, err := c.plugin(ref.name)
	if err != nil {
		return nil, ref, err
	}
	rp, ok := p.(RemotePlugin)
	if !ok {
		return nil, ref, errorf(ErrNotImplemented, "plugin: device %q has no remote contexts (its tensors are host tensors)", device)
	}
	return rp, ref, nil
}

// DefaultContext returns a new reference to the context device ("GPU",
// "GPU.1") compiles models in. A device without remote contexts is an
// error wrapping ErrNotImplemented.
func (c *Core) DefaultContext(device string) (RemoteContext, error) {
	rp, ref, err := c.remotePlugin(device)
	if err != nil {
		return nil, err
	}
	return rp.DefaultContext(ref.id)
}

// CreateContext wraps the caller's device context, given by props
// (OCL_CONTEXT, and optionally OCL_QUEUE and OCL_CONTEXT_DEVICE_ID for
// "GPU"). props is not modified.
func (c *Core) CreateContext(device string, props map[string]string) (RemoteContext, error) {
	rp, ref, err := c.remotePlugin(device)
	if err != nil {
		return nil, err
	}
	if ref.id != "" {
		return nil, errorf(ErrInvalidArgument, "plugin: CreateContext on %q: the context's device is OCL_CONTEXT_DEVICE_ID of OCL_CONTEXT, not a device id; name the device %q", device, ref.name)
	}
	return rp.CreateContext(props)
}

// CompileModelIn compiles m in remote context rc, on rc's device, with
// that device's configuration overridden by props: the compiled model
// shares the context's programs and weights with the other models
// compiled in it, and takes its remote tensors. CACHE_DIR keeps program
// binaries, but the compiled model itself is not cached.
func (c *Core) CompileModelIn(ctx context.Context, m *graph.Model, rc RemoteContext, props map[string]string) (CompiledModel, error) {
	pairs, props, err := statefulOption(props)
	if err != nil {
		return nil, err
	}
	cm, err := c.compileModelIn(ctx, m, rc, props)
	return withStates(cm, err, pairs)
}

// compileModelIn is CompileModelIn without MAKE_STATEFUL.
func (c *Core) compileModelIn(ctx context.Context, m *graph.Model, rc RemoteContext, props map[string]string) (CompiledModel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m == nil || rc == nil {
		return nil, errorf(ErrInvalidArgument, "plugin: CompileModelIn with a nil model or context")
	}
	rp, _, err := c.remotePlugin(rc.DeviceName())
	if err != nil {
		return nil, err
	}
	return rp.CompileModelIn(ctx, m, rc, props)
}
