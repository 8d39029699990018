package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

func TestOptions(t *testing.T) {
	got := plugin.Props(
		plugin.WithPerformanceHint(plugin.HintThroughput),
		plugin.WithNumStreams(0),
		plugin.WithNumRequests(4),
		plugin.WithProfiling(true),
		plugin.WithInferencePrecision(tensor.F16),
		plugin.WithExecutionMode(plugin.ModeAccuracy),
		plugin.WithCacheDir("/c"),
		plugin.WithModelPriority(plugin.PriorityLow),
		plugin.WithLogLevel(plugin.LogWarning),
		plugin.WithDisableTransformations(true),
		plugin.WithExclusiveAsyncRequests(false),
		plugin.WithDeviceID("1"),
		plugin.WithMaxHostMemory(1<<30),
		plugin.WithProperty("X", "y"),
		plugin.WithNumStreams(2), // later wins
	)
	assert.Equal(t, map[string]string{
		"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": "2", "NUM_REQUESTS": "4",
		"ENABLE_PROFILING": "YES", "INFERENCE_PRECISION_HINT": "f16", "EXECUTION_MODE_HINT": "ACCURACY",
		"CACHE_DIR": "/c", "MODEL_PRIORITY": "LOW", "LOG_LEVEL": "LOG_WARNING",
		"DISABLE_TRANSFORMATIONS": "YES", "EXCLUSIVE_ASYNC_REQUESTS": "NO", "DEVICE_ID": "1", "X": "y",
		"MAX_HOST_MEMORY": "1073741824",
	}, got)
	assert.Empty(t, plugin.Props())
}
