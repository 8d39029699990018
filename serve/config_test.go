package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelConfig: config.json's fields become the device name and the
// compile properties, and bad values are errors naming the field.
func TestModelConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"device": "GPU", "performance_hint": "THROUGHPUT", "num_streams": 2,
		"cache_dir": "/c", "batching": {"max_batch_size": 8, "max_queue_delay_ms": 3}, "reshape": {"x": [1, 3, 48, 192]},
		"max_queue_size": 7, "timeout_ms": 250, "properties": {"INFERENCE_PRECISION_HINT": "f16"}}`), 0o644))
	c, err := ReadModelConfig(path)
	require.NoError(t, err)
	dev, props := c.compileTarget()
	assert.Equal(t, "BATCH:GPU(8)", dev)
	assert.Equal(t, map[string]string{"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": "2", "CACHE_DIR": "/c",
		"AUTO_BATCH_TIMEOUT": "3", "INFERENCE_PRECISION_HINT": "f16"}, props)
	assert.Equal(t, 7, c.queueSize())
	assert.Equal(t, 250*time.Millisecond, c.timeout(time.Minute))
	assert.Equal(t, []int64{1, 3, 48, 192}, c.Reshape["x"])

	missing, err := ReadModelConfig(filepath.Join(dir, "none.json"))
	require.NoError(t, err, "no config is the zero config")
	dev, props = missing.compileTarget()
	assert.Equal(t, DefaultDevice, dev)
	assert.Empty(t, props)
	assert.Equal(t, DefaultQueueSize, missing.queueSize())
	assert.Equal(t, time.Minute, missing.timeout(time.Minute))

	for _, bad := range []struct{ json, says string }{
		{`{"devise": "GPU"}`, `unknown field "devise"`},
		{`{"num_streams": -1}`, "num_streams"},
		{`{"max_queue_size": -1}`, "max_queue_size"},
		{`{"timeout_ms": -1}`, "timeout_ms"},
		{`{"batching": {"max_batch_size": 0}}`, "max_batch_size"},
		{`{"batching": {"max_batch_size": 2, "max_queue_delay_ms": -1}}`, "max_queue_delay_ms"},
		{`{"version_policy": {"latest": -1}}`, "version_policy.latest"},
		{`{"reshape": {"x": [1, -3]}}`, "negative"},
		{`{"device": 3}`, "device"},
	} {
		require.NoError(t, os.WriteFile(path, []byte(bad.json), 0o644))
		_, err := ReadModelConfig(path)
		assert.ErrorContains(t, err, bad.says, bad.json)
	}
}

// TestChooseVersions: the newest by default, and the policies.
func TestChooseVersions(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"1", "2", "10", "x", "0"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, v), 0o755))
		if v != "2" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, v, ModelFile), nil, 0o644))
		}
	}
	for _, tc := range []struct {
		p    *VersionPolicy
		want []int64
	}{
		{nil, []int64{10}},
		{&VersionPolicy{Latest: 2}, []int64{1, 10}},
		{&VersionPolicy{All: true}, []int64{1, 10}},
		{&VersionPolicy{Specific: []int64{1}}, []int64{1}},
	} {
		got, err := chooseVersions(dir, tc.p)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc.p)
	}
	_, err := chooseVersions(dir, &VersionPolicy{Specific: []int64{2}})
	assert.ErrorContains(t, err, "version 2")
	_, err = chooseVersions(t.TempDir(), nil)
	assert.ErrorContains(t, err, "has no version")
}
