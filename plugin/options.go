package plugin

import (
	"context"
	"strconv"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Option sets one property in a property map; Props collects options into
// the map Core.CompileModel, Core.SetProperties and Core.ImportModel take:
//
//	props := plugin.Props(plugin.WithPerformanceHint(plugin.HintThroughput),
//		plugin.WithProfiling(true))
//
// Options only format values; the device validates them when they are set.
type Option func(map[string]string)

// Props returns a new property map with opts applied in order (a later
// option for the same key wins).
func Props(opts ...Option) map[string]string {
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		o(m)
	}
	return m
}

// WithProperty sets key to value verbatim.
func WithProperty(key, value string) Option {
	return func(m map[string]string) { m[key] = value }
}

// WithPerformanceHint sets PERFORMANCE_HINT.
func WithPerformanceHint(h PerformanceHint) Option {
	return WithProperty(KeyPerformanceHint, h.String())
}

// WithNumStreams sets NUM_STREAMS; n <= 0 is AUTO.
func WithNumStreams(n int) Option { return WithProperty(KeyNumStreams, driver.FormatNumStreams(n)) }

// WithNumRequests sets NUM_REQUESTS.
func WithNumRequests(n int) Option { return WithProperty(KeyNumRequests, strconv.Itoa(n)) }

// WithProfiling sets ENABLE_PROFILING.
func WithProfiling(on bool) Option { return WithProperty(KeyEnableProfiling, driver.FormatBool(on)) }

// WithInferencePrecision sets INFERENCE_PRECISION_HINT.
func WithInferencePrecision(t tensor.ElementType) Option {
	return WithProperty(KeyInferencePrecisionHint, t.String())
}

// WithExecutionMode sets EXECUTION_MODE_HINT.
func WithExecutionMode(m ExecutionMode) Option {
	return WithProperty(KeyExecutionModeHint, m.String())
}

// WithMaxHostMemory sets MAX_HOST_MEMORY, the bytes of host memory one
// inference may hold.
func WithMaxHostMemory(bytes int64) Option {
	return WithProperty(KeyMaxHostMemory, strconv.FormatInt(bytes, 10))
}

// WithRandomSeed sets RANDOM_SEED, the seed of the random ops that have
// no seed attribute (see WithRequestSeed for one inference's).
func WithRandomSeed(seed uint64) Option {
	return WithProperty(KeyRandomSeed, strconv.FormatUint(seed, 10))
}

// WithRequestSeed returns a context whose inferences draw the random ops
// without a seed attribute from seed instead of the compiled model's
// RANDOM_SEED; the same seed gives the same tensors on every device.
func WithRequestSeed(ctx context.Context, seed uint64) context.Context {
	return driver.WithRandomSeed(ctx, seed)
}

// WithCacheDir sets CACHE_DIR.
func WithCacheDir(dir string) Option { return WithProperty(KeyCacheDir, dir) }

// WithModelPriority sets MODEL_PRIORITY.
func WithModelPriority(p Priority) Option { return WithProperty(KeyModelPriority, p.String()) }

// WithLogLevel sets LOG_LEVEL.
func WithLogLevel(l LogLevel) Option { return WithProperty(KeyLogLevel, l.String()) }

// WithDisableTransformations sets DISABLE_TRANSFORMATIONS.
func WithDisableTransformations(on bool) Option {
	return WithProperty(KeyDisableTransformations, driver.FormatBool(on))
}

// WithExclusiveAsyncRequests sets EXCLUSIVE_ASYNC_REQUESTS.
func WithExclusiveAsyncRequests(on bool) Option {
	return WithProperty(KeyExclusiveAsyncRequests, driver.FormatBool(on))
}

// WithDeviceID sets DEVICE_ID.
func WithDeviceID(id string) Option { return WithProperty(KeyDeviceID, id) }
