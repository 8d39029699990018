package clinfer

import (
	"context"

	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// Option sets one property in a property map; Props collects options into
// the map Core.CompileModel takes. See plugin.Option.
type Option = plugin.Option

// Props returns a new property map with opts applied in order.
func Props(opts ...Option) map[string]string { return plugin.Props(opts...) }

// PerformanceHint is the PERFORMANCE_HINT property.
type PerformanceHint = plugin.PerformanceHint

// Performance hints. The zero value is HintLatency, the default.
const (
	HintLatency              PerformanceHint = plugin.HintLatency
	HintThroughput           PerformanceHint = plugin.HintThroughput
	HintCumulativeThroughput PerformanceHint = plugin.HintCumulativeThroughput
)

// WithPerformanceHint sets PERFORMANCE_HINT.
func WithPerformanceHint(h PerformanceHint) Option { return plugin.WithPerformanceHint(h) }

// WithNumStreams sets NUM_STREAMS; n <= 0 is AUTO.
func WithNumStreams(n int) Option { return plugin.WithNumStreams(n) }

// WithProfiling sets ENABLE_PROFILING.
func WithProfiling(on bool) Option { return plugin.WithProfiling(on) }

// WithRandomSeed sets RANDOM_SEED, the seed of the random ops that have no
// seed attribute.
func WithRandomSeed(seed uint64) Option { return plugin.WithRandomSeed(seed) }

// WithRequestSeed returns a context whose inferences draw the random ops
// without a seed attribute from seed (see plugin.WithRequestSeed).
func WithRequestSeed(ctx context.Context, seed uint64) context.Context {
	return plugin.WithRequestSeed(ctx, seed)
}

// WithInferencePrecision sets INFERENCE_PRECISION_HINT.
func WithInferencePrecision(t tensor.ElementType) Option { return plugin.WithInferencePrecision(t) }

// WithCacheDir sets CACHE_DIR.
func WithCacheDir(dir string) Option { return plugin.WithCacheDir(dir) }

// WithProperty sets key (see the plugin.Key constants) to value verbatim.
func WithProperty(key, value string) Option { return plugin.WithProperty(key, value) }

// WithNumRequests sets NUM_REQUESTS, the most requests the device plans for
// (0: no bound).
func WithNumRequests(n int) Option { return plugin.WithNumRequests(n) }

// ExecutionMode is the EXECUTION_MODE_HINT property.
type ExecutionMode = plugin.ExecutionMode

// Execution modes. The zero value is ModePerformance, the default.
const (
	ModePerformance ExecutionMode = plugin.ModePerformance
	ModeAccuracy    ExecutionMode = plugin.ModeAccuracy
)

// WithExecutionMode sets EXECUTION_MODE_HINT.
func WithExecutionMode(m ExecutionMode) Option { return plugin.WithExecutionMode(m) }

// WithMaxHostMemory sets MAX_HOST_MEMORY: the bytes of the tensors one
// inference holds at once on the host (constants, inputs and the values
// alive at its peak), not the process's memory.
func WithMaxHostMemory(bytes int64) Option { return plugin.WithMaxHostMemory(bytes) }

// Priority is the MODEL_PRIORITY property.
type Priority = plugin.Priority

// Model priorities, in increasing order. The default is PriorityMedium.
const (
	PriorityLow    Priority = plugin.PriorityLow
	PriorityMedium Priority = plugin.PriorityMedium
	PriorityHigh   Priority = plugin.PriorityHigh
)

// WithModelPriority sets MODEL_PRIORITY.
func WithModelPriority(p Priority) Option { return plugin.WithModelPriority(p) }

// LogLevel is the LOG_LEVEL property.
type LogLevel = plugin.LogLevel

// Log levels, from silent to most verbose. The default is LogNone.
const (
	LogNone    LogLevel = plugin.LogNone
	LogError   LogLevel = plugin.LogError
	LogWarning LogLevel = plugin.LogWarning
	LogInfo    LogLevel = plugin.LogInfo
	LogDebug   LogLevel = plugin.LogDebug
	LogTrace   LogLevel = plugin.LogTrace
)

// WithLogLevel sets LOG_LEVEL.
func WithLogLevel(l LogLevel) Option { return plugin.WithLogLevel(l) }

// WithDisableTransformations sets DISABLE_TRANSFORMATIONS: compile without
// the fusion passes.
func WithDisableTransformations(on bool) Option { return plugin.WithDisableTransformations(on) }

// WithExclusiveAsyncRequests sets EXCLUSIVE_ASYNC_REQUESTS.
func WithExclusiveAsyncRequests(on bool) Option { return plugin.WithExclusiveAsyncRequests(on) }

// WithDeviceID sets DEVICE_ID ("1" for GPU.1).
func WithDeviceID(id string) Option { return plugin.WithDeviceID(id) }
