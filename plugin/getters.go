package plugin

import (
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The typed getters read a common property of the compiled model and parse
// it; Property is the string form of each. A value that does not parse is
// an error wrapping ErrInvalidArgument that names the key.

// PerformanceHint returns PERFORMANCE_HINT.
func (c *CompiledModel) PerformanceHint() (PerformanceHint, error) {
	var h PerformanceHint
	err := c.parse(KeyPerformanceHint, func(s string) error { return h.UnmarshalText([]byte(s)) })
	return h, err
}

// NumStreams returns NUM_STREAMS: the number of execution streams the
// device planned for this model (an AUTO setting reads as the number it
// resolved to).
func (c *CompiledModel) NumStreams() (int, error) {
	var n int
	err := c.parse(KeyNumStreams, func(s string) (err error) { n, err = driver.ParseNumStreams(s); return err })
	return n, err
}

// InferencePrecision returns INFERENCE_PRECISION_HINT, the element type
// floating-point math runs in.
func (c *CompiledModel) InferencePrecision() (tensor.ElementType, error) {
	var t tensor.ElementType
	err := c.parse(KeyInferencePrecisionHint, func(s string) error { return t.UnmarshalText([]byte(s)) })
	return t, err
}

// Profiling returns ENABLE_PROFILING: whether requests record per-op
// timings (ProfilingInfo, RuntimePerfCounter).
func (c *CompiledModel) Profiling() (bool, error) {
	var on bool
	err := c.parse(KeyEnableProfiling, func(s string) (err error) { on, err = driver.ParseBool(s); return err })
	return on, err
}

// CacheDir returns CACHE_DIR, the directory compiled models are cached in
// ("" when caching is off).
func (c *CompiledModel) CacheDir() (string, error) {
	var dir string
	err := c.parse(KeyCacheDir, func(s string) error { dir = s; return nil })
	return dir, err
}

// ExecutionDevices returns EXECUTION_DEVICES, the devices the model runs on
// (["GPU.0"], or every device HETERO split it across).
func (c *CompiledModel) ExecutionDevices() ([]string, error) {
	var devs []string
	err := c.parse(KeyExecutionDevices, func(s string) error { devs = strings.Fields(s); return nil })
	return devs, err
}

// OptimalNumberOfInferRequests returns OPTIMAL_NUMBER_OF_INFER_REQUESTS,
// how many requests keep the device busy (the size of Infer's pool).
func (c *CompiledModel) OptimalNumberOfInferRequests() (int, error) {
	var n int
	err := c.parse(KeyOptimalNumberOfInferRequests, func(s string) (err error) { n, err = strconv.Atoi(strings.TrimSpace(s)); return err })
	return n, err
}

// Timeline returns which devices served the model when: on AUTO, the CPU
// from the start while the selected device compiled ("CPU until 1.20 s,
// then GPU.0"), one entry per change; on any other device one entry, its
// EXECUTION_DEVICES from the start.
func (c *CompiledModel) Timeline() ([]DeviceSwitch, error) {
	if tl, ok := c.cm.(driver.Timeliner); ok {
		if err := c.check("timeline"); err != nil {
			return nil, err
		}
		return tl.Timeline(), nil
	}
	devs, err := c.ExecutionDevices()
	if err != nil {
		return nil, err
	}
	return []DeviceSwitch{{Devices: strings.Join(devs, " ")}}, nil
}

// parse reads key and hands its value to f.
func (c *CompiledModel) parse(key string, f func(string) error) error {
	v, err := c.Property(key)
	if err != nil {
		return err
	}
	if err := f(v); err != nil {
		return driver.Errorf(ErrInvalidArgument, "plugin: compiled model on %s: property %s=%q: %w", c.device, key, v, err)
	}
	return nil
}
