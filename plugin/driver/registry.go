package driver

import (
	"sort"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/internal/suggest"
)

// Factory constructs a Plugin. It initialises the device's backend and fails
// with an error that says what is missing (no OpenCL ICD, no device) and
// how to install it.
type Factory func() (Plugin, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a device available under name, usually from the init
// function of the device's package, as database/sql drivers do. It panics
// on a nil factory, an empty name, a name containing '.', ':' or ',' (those
// separate device ids and priority lists in device names) and on a name that
// is already registered: all are programmer errors.
func Register(name string, f Factory) {
	if f == nil {
		panic("plugin: Register factory is nil for device " + name)
	}
	if name == "" {
		panic("plugin: Register with an empty device name")
	}
	if strings.ContainsAny(name, ".:, ") {
		panic("plugin: Register device name " + name + " contains one of '.', ':', ',' or a space")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("plugin: Register called twice for device " + name)
	}
	registry[name] = f
}

// Devices returns the sorted names of the registered plugins ("CPU",
// "GPU", "HETERO"); it does not construct them. Core.AvailableDevices lists
// the devices that actually work.
func Devices() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// factory returns the factory registered under name.
func factory(name string) (Factory, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := registry[name]
	return f, ok
}

// unregister removes a registration; only tests use it (export_test.go).
func unregister(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, name)
}

// packageOf maps the well-known device names to the package whose import
// registers them, for the "forgotten import" hint.
var packageOf = map[string]string{
	"CPU":    "github.com/clinfer/clinfer/cpu_fallback",
	"GPU":    "github.com/clinfer/clinfer/clbackend",
	"HETERO": "github.com/clinfer/clinfer/hetero",
	"AUTO":   "github.com/clinfer/clinfer/auto",
	"BATCH":  "github.com/clinfer/clinfer/batch",
}

// unknownDevice is the error for a plugin name nobody registered: a
// registered name it is a misspelling of ("gpu" for GPU) is suggested
// first; a well-known device that is not registered is a forgotten import
// (the root package registers every device); otherwise the registered
// names are listed.
func unknownDevice(name string) error {
	registered := Devices()
	// Device names are short: one that differs from a known one in a
	// letter (NPU, CPU) is more likely another device than a typo.
	near := func(names []string) string {
		s := suggest.Closest(name, names)
		if len(name) <= 3 && !strings.EqualFold(s, name) {
			return ""
		}
		return s
	}
	if s := near(registered); s != "" {
		return errorf(ErrNotFound, "plugin: unknown device %q; did you mean %s? (devices: %s)", name, s, strings.Join(registered, ", "))
	}
	if pkg, ok := packageOf[name]; ok {
		return errorf(ErrNotFound, "plugin: unknown device %q (forgotten import of github.com/clinfer/clinfer or %s?)", name, pkg)
	}
	known := make([]string, 0, len(packageOf))
	for k := range packageOf {
		known = append(known, k)
	}
	sort.Strings(known)
	if s := near(known); s != "" {
		return errorf(ErrNotFound, "plugin: unknown device %q; did you mean %s? (forgotten import of github.com/clinfer/clinfer or %s?)", name, s, packageOf[s])
	}
	return errorf(ErrNotFound, "plugin: unknown device %q (devices: %s; forgotten import? github.com/clinfer/clinfer registers every device)", name, strings.Join(registered, ", "))
}
