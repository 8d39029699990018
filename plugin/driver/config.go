package driver

import (
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// PerformanceHint is the PERFORMANCE_HINT property.
type PerformanceHint int

// Performance hints. The zero value is HintLatency, the default.
const (
	HintLatency PerformanceHint = iota
	HintThroughput
	HintCumulativeThroughput
)

// ExecutionMode is the EXECUTION_MODE_HINT property.
type ExecutionMode int

// Execution modes. The zero value is ModePerformance, the default.
const (
	ModePerformance ExecutionMode = iota
	ModeAccuracy
)

// Priority is the MODEL_PRIORITY property.
type Priority int

// Model priorities, in increasing order. The default is PriorityMedium.
const (
	PriorityLow Priority = iota
	PriorityMedium
	PriorityHigh
)

// LogLevel is the LOG_LEVEL property.
type LogLevel int

// Log levels, from quiet to verbose. The zero value is LogNone, the default.
const (
	LogNone LogLevel = iota
	LogError
	LogWarning
	LogInfo
	LogDebug
	LogTrace
)

var (
	hintNames     = []string{"LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"}
	modeNames     = []string{"PERFORMANCE", "ACCURACY"}
	priorityNames = []string{"LOW", "MEDIUM", "HIGH"}
	logNames      = []string{"LOG_NONE", "LOG_ERROR", "LOG_WARNING", "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"}
)

func enumString(names []string, typ string, v int) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}

func enumParse(names []string, key, s string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return i, nil
		}
	}
	return 0, errorf(ErrInvalidArgument, "plugin: bad value %q for property %s (accepted: %s)", s, key, strings.Join(names, ", "))
}

// String returns the property value ("LATENCY").
func (h PerformanceHint) String() string { return enumString(hintNames, "PerformanceHint", int(h)) }

// MarshalText implements encoding.TextMarshaler.
func (h PerformanceHint) MarshalText() ([]byte, error) {
	if int(h) < 0 || int(h) >= len(hintNames) {
		return nil, errorf(ErrInvalidArgument, "plugin: invalid %s", h)
	}
	return []byte(h.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, so flag.TextVar
// works; it accepts any case.
func (h *PerformanceHint) UnmarshalText(b []byte) error {
	v, err := enumParse(hintNames, KeyPerformanceHint, string(b))
	if err == nil {
		*h = PerformanceHint(v)
	}
	return err
}

// String returns the property value ("PERFORMANCE").
func (m ExecutionMode) String() string { return enumString(modeNames, "ExecutionMode", int(m)) }

// MarshalText implements encoding.TextMarshaler.
func (m ExecutionMode) MarshalText() ([]byte, error) {
	if int(m) < 0 || int(m) >= len(modeNames) {
		return nil, errorf(ErrInvalidArgument, "plugin: invalid %s", m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts any case.
func (m *ExecutionMode) UnmarshalText(b []byte) error {
	v, err := enumParse(modeNames, KeyExecutionModeHint, string(b))
	if err == nil {
		*m = ExecutionMode(v)
	}
	return err
}

// String returns the property value ("MEDIUM").
func (p Priority) String() string { return enumString(priorityNames, "Priority", int(p)) }

// MarshalText implements encoding.TextMarshaler.
func (p Priority) MarshalText() ([]byte, error) {
	if int(p) < 0 || int(p) >= len(priorityNames) {
		return nil, errorf(ErrInvalidArgument, "plugin: invalid %s", p)
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts any case.
func (p *Priority) UnmarshalText(b []byte) error {
	v, err := enumParse(priorityNames, KeyModelPriority, string(b))
	if err == nil {
		*p = Priority(v)
	}
	return err
}

// String returns the property value ("LOG_NONE").
func (l LogLevel) String() string { return enumString(logNames, "LogLevel", int(l)) }

// MarshalText implements encoding.TextMarshaler.
func (l LogLevel) MarshalText() ([]byte, error) {
	if int(l) < 0 || int(l) >= len(logNames) {
		return nil, errorf(ErrInvalidArgument, "plugin: invalid %s", l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts any case.
func (l *LogLevel) UnmarshalText(b []byte) error {
	v, err := enumParse(logNames, KeyLogLevel, string(b))
	if err == nil {
		*l = LogLevel(v)
	}
	return err
}

// Config is the typed view of the common properties (CommonSpecs) for Go
// code inside devices. Devices keep their configuration as *Properties (the
// string form users see) and call ParseConfig when they compile.
type Config struct {
	PerformanceHint PerformanceHint
	// NumStreams is the number of streams; 0 is AUTO.
	NumStreams int
	// NumRequests bounds the requests the hint plans for; 0 is no bound.
	NumRequests            int
	EnableProfiling        bool
	InferencePrecision     tensor.ElementType
	ExecutionMode          ExecutionMode
	CacheDir               string
	ModelPriority          Priority
	LogLevel               LogLevel
	DisableTransformations bool
	ExclusiveAsyncRequests bool
	// MaxHostMemory is MAX_HOST_MEMORY in bytes.
	MaxHostMemory int64
	// RandomSeed is RANDOM_SEED.
	RandomSeed uint64
}

// DefaultConfig returns the configuration CommonSpecs starts from.
func DefaultConfig() Config {
	return Config{InferencePrecision: tensor.F32, ModelPriority: PriorityMedium, MaxHostMemory: tensor.DefaultAllocLimit()}
}

// ParseConfig reads the common properties of p into a Config. Keys p does
// not have keep their DefaultConfig value, so a device may leave out specs
// it does not support. A value that does not parse (possible only for
// specs a device replaced with a looser Parse) is an error wrapping
// ErrInvalidArgument naming the key.
func ParseConfig(p *Properties) (Config, error) {
	c := DefaultConfig()
	get := func(key string, f func(string) error) error {
		if !p.Has(key) {
			return nil
		}
		v, err := p.Get(key)
		if err != nil {
			return err
		}
		if err := f(v); err != nil {
			return errorf(ErrInvalidArgument, "plugin: property %s: %w", key, err)
		}
		return nil
	}
	atoi := func(dst *int) func(string) error {
		return func(s string) error {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			*dst = n
			return err
		}
	}
	boolean := func(dst *bool) func(string) error {
		return func(s string) error {
			b, err := ParseBool(s)
			*dst = b
			return err
		}
	}
	steps := []struct {
		key string
		f   func(string) error
	}{
		{KeyPerformanceHint, func(s string) error { return c.PerformanceHint.UnmarshalText([]byte(s)) }},
		{KeyNumStreams, func(s string) error {
			n, err := ParseNumStreams(s)
			c.NumStreams = n
			return err
		}},
		{KeyNumRequests, atoi(&c.NumRequests)},
		{KeyEnableProfiling, boolean(&c.EnableProfiling)},
		{KeyInferencePrecisionHint, func(s string) error { return c.InferencePrecision.UnmarshalText([]byte(s)) }},
		{KeyExecutionModeHint, func(s string) error { return c.ExecutionMode.UnmarshalText([]byte(s)) }},
		{KeyCacheDir, func(s string) error { c.CacheDir = s; return nil }},
		{KeyModelPriority, func(s string) error { return c.ModelPriority.UnmarshalText([]byte(s)) }},
		{KeyLogLevel, func(s string) error { return c.LogLevel.UnmarshalText([]byte(s)) }},
		{KeyDisableTransformations, boolean(&c.DisableTransformations)},
		{KeyExclusiveAsyncRequests, boolean(&c.ExclusiveAsyncRequests)},
		{KeyMaxHostMemory, func(s string) error {
			n, err := ParseBytes(s)
			c.MaxHostMemory = n
			return err
		}},
		{KeyRandomSeed, func(s string) error {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			c.RandomSeed = n
			return err
		}},
	}
	for _, s := range steps {
		if err := get(s.key, s.f); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// Props formats c as the property map Properties.Set takes, one entry per
// common key; ParseConfig after Set gives c back.
func (c Config) Props() map[string]string {
	return map[string]string{
		KeyPerformanceHint:        c.PerformanceHint.String(),
		KeyNumStreams:             FormatNumStreams(c.NumStreams),
		KeyNumRequests:            strconv.Itoa(c.NumRequests),
		KeyEnableProfiling:        FormatBool(c.EnableProfiling),
		KeyInferencePrecisionHint: c.InferencePrecision.String(),
		KeyExecutionModeHint:      c.ExecutionMode.String(),
		KeyCacheDir:               c.CacheDir,
		KeyModelPriority:          c.ModelPriority.String(),
		KeyLogLevel:               c.LogLevel.String(),
		KeyDisableTransformations: FormatBool(c.DisableTransformations),
		KeyExclusiveAsyncRequests: FormatBool(c.ExclusiveAsyncRequests),
		KeyMaxHostMemory:          strconv.FormatInt(c.MaxHostMemory, 10),
		KeyRandomSeed:             strconv.FormatUint(c.RandomSeed, 10),
	}
}
