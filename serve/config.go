package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/clinfer/clinfer"
)

// ConfigFile is the name of a model's optional configuration in the
// repository: <repository>/<model>/config.json.
const ConfigFile = "config.json"

// ModelConfig is one model's configuration: the device it compiles for
// and how, the batching, input shapes and the limits of its queue. The
// zero value compiles on DefaultDevice with the device's defaults and
// serves the newest version. In a repository it is
// <model>/config.json; unknown fields are an error naming the file.
type ModelConfig struct {
	// Device is a clinfer device name: "GPU", "CPU", "AUTO",
	// "HETERO:GPU,CPU", "GPU.1", "BATCH:GPU(8)" (default DefaultDevice).
	Device string `json:"device,omitempty"`
	// PerformanceHint is PERFORMANCE_HINT: LATENCY, THROUGHPUT or
	// CUMULATIVE_THROUGHPUT.
	PerformanceHint string `json:"performance_hint,omitempty"`
	// NumStreams is NUM_STREAMS (0: the device's default).
	NumStreams int `json:"num_streams,omitempty"`
	// CacheDir is CACHE_DIR: compiled models are cached there.
	CacheDir string `json:"cache_dir,omitempty"`
	// Properties are any other compile properties, by OpenVINO name.
	Properties map[string]string `json:"properties,omitempty"`
	// Batching gathers concurrent requests into batches on the BATCH
	// device over Device.
	Batching *Batching `json:"batching,omitempty"`
	// Reshape fixes input shapes before compiling (by input name), e.g.
	// {"x": [1, 3, 48, 192]}: a model with dynamic dimensions needs them
	// static to batch.
	Reshape map[string][]int64 `json:"reshape,omitempty"`
	// MaxQueueSize is how many requests may wait for a free inference
	// request beyond those running; more are refused with 429 /
	// RESOURCE_EXHAUSTED (default DefaultQueueSize).
	MaxQueueSize int `json:"max_queue_size,omitempty"`
	// TimeoutMS bounds each inference, queueing included (0: the
	// server's Options.InferTimeout).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// VersionPolicy says which versions are served (default: the newest).
	VersionPolicy *VersionPolicy `json:"version_policy,omitempty"`
}

// Batching is dynamic batching through the BATCH device: up to
// MaxBatchSize concurrent batch-1 requests are run as one inference,
// gathered for at most MaxQueueDelayMS milliseconds.
type Batching struct {
	MaxBatchSize    int `json:"max_batch_size"`
	MaxQueueDelayMS int `json:"max_queue_delay_ms"`
}

// VersionPolicy chooses the served versions, as Triton's version_policy:
// the Latest N (default 1), All, or the Specific ones.
type VersionPolicy struct {
	Latest   int     `json:"latest,omitempty"`
	All      bool    `json:"all,omitempty"`
	Specific []int64 `json:"specific,omitempty"`
}

// DefaultDevice is the device a model compiles for when its configuration
// names none.
const DefaultDevice = "AUTO"

// DefaultQueueSize is ModelConfig.MaxQueueSize's default.
const DefaultQueueSize = 256

// ReadModelConfig reads a config.json; a missing file is the zero config.
func ReadModelConfig(path string) (ModelConfig, error) {
	var c ModelConfig
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("serve: model config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("serve: model config %s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate checks the values that do not need a device.
func (c ModelConfig) Validate() error {
	switch {
	case c.NumStreams < 0:
		return fmt.Errorf("serve: model config: num_streams %d is negative", c.NumStreams)
	case c.MaxQueueSize < 0:
		return fmt.Errorf("serve: model config: max_queue_size %d is negative", c.MaxQueueSize)
	case c.TimeoutMS < 0:
		return fmt.Errorf("serve: model config: timeout_ms %d is negative", c.TimeoutMS)
	case c.Batching != nil && c.Batching.MaxBatchSize < 1:
		return fmt.Errorf("serve: model config: batching.max_batch_size %d: want 1 or more", c.Batching.MaxBatchSize)
	case c.Batching != nil && c.Batching.MaxQueueDelayMS < 0:
		return fmt.Errorf("serve: model config: batching.max_queue_delay_ms %d is negative", c.Batching.MaxQueueDelayMS)
	case c.VersionPolicy != nil && c.VersionPolicy.Latest < 0:
		return fmt.Errorf("serve: model config: version_policy.latest %d is negative", c.VersionPolicy.Latest)
	}
	for name, s := range c.Reshape {
		for _, d := range s {
			if d < 0 {
				return fmt.Errorf("serve: model config: reshape %q: %v has a negative dimension", name, s)
			}
		}
	}
	return nil
}

// compileTarget is the device name and the properties CompileModel gets.
func (c ModelConfig) compileTarget() (string, map[string]string) {
	dev := c.Device
	if dev == "" {
		dev = DefaultDevice
	}
	props := map[string]string{}
	for k, v := range c.Properties {
		props[k] = v
	}
	if c.PerformanceHint != "" {
		props["PERFORMANCE_HINT"] = c.PerformanceHint
	}
	if c.NumStreams > 0 {
		props["NUM_STREAMS"] = strconv.Itoa(c.NumStreams)
	}
	if c.CacheDir != "" {
		props["CACHE_DIR"] = c.CacheDir
	}
	if b := c.Batching; b != nil && b.MaxBatchSize > 1 {
		dev = fmt.Sprintf("BATCH:%s(%d)", dev, b.MaxBatchSize)
		props["AUTO_BATCH_TIMEOUT"] = strconv.Itoa(b.MaxQueueDelayMS)
	}
	return dev, props
}

// queueSize is MaxQueueSize with its default.
func (c ModelConfig) queueSize() int {
	if c.MaxQueueSize > 0 {
		return c.MaxQueueSize
	}
	return DefaultQueueSize
}

// timeout is the per-inference timeout, or def.
func (c ModelConfig) timeout(def time.Duration) time.Duration {
	if c.TimeoutMS > 0 {
		return time.Duration(c.TimeoutMS) * time.Millisecond
	}
	return def
}

// reshape fixes the dynamic dimensions of the model's inputs named in
// Reshape (a shape must fit the input's declared one), with Model.Reshape:
// an unknown input is ErrNotFound with the nearest name, a shape the model
// cannot take an error naming the dimension and what fits.
func (c ModelConfig) reshape(m *clinfer.Model) error {
	if len(c.Reshape) == 0 {
		return nil
	}
	shapes := make(map[string]clinfer.PartialShape, len(c.Reshape))
	for name, s := range c.Reshape {
		if p := m.Parameter(name); p != nil && !p.Outputs[0].Shape.Compatible(s) {
			return fmt.Errorf("serve: model config: reshape %q to %v: the input's shape is %v: %w", name, s, p.Outputs[0].Shape, clinfer.ErrInvalidArgument)
		}
		shapes[name] = clinfer.ShapeOf(s...)
	}
	if err := m.Reshape(shapes); err != nil {
		return fmt.Errorf("serve: model config: %w", err)
	}
	return nil
}
