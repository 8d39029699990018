package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
)

func init() {
	driver.Register(DeviceName, func() (driver.Plugin, error) { return New() })
}

// DeviceName is the name the BATCH device is registered under.
const DeviceName = driver.BatchDeviceName

// KeyTimeout is how many milliseconds a batch that is not full waits for
// more requests before its members run alone (RW, default 1000; 0 never
// waits).
const KeyTimeout = "AUTO_BATCH_TIMEOUT"

// KeyOptimalBatchSize is the batch size of a compiled model (RO, compiled
// model).
const KeyOptimalBatchSize = "OPTIMAL_BATCH_SIZE"

// DefaultBatchSize is the batch size when DEVICE_PRIORITIES names a device
// without one ("GPU").
const DefaultBatchSize = 4

// defaultTimeoutMS is AUTO_BATCH_TIMEOUT's default, as OpenVINO's.
const defaultTimeoutMS = 1000

// Plugin is the BATCH device. It reaches the device it batches on through
// a driver.Core of its own (virtual.Device), so that device is its own
// instance, closed by its Close. It is safe for concurrent use.
type Plugin struct {
	*virtual.Device
}

// Interface checks.
var (
	_ driver.Plugin  = (*Plugin)(nil)
	_ driver.Querier = (*Plugin)(nil)
)

// New returns the BATCH device. The device it batches on is constructed,
// through the registry, on first use.
func New() (*Plugin, error) {
	return &Plugin{virtual.NewDevice(DeviceName, "batch", propertySpecs())}, nil
}

func propertySpecs() []driver.PropertySpec {
	return append(driver.CommonSpecs(),
		driver.PropertySpec{
			Key: driver.KeyDevicePriorities, Mutable: true,
			Accepted: "one device with an optional batch size, e.g. GPU(4) or GPU.1",
			Parse: func(s string) (string, error) {
				if strings.TrimSpace(s) == "" {
					return "", nil
				}
				dev, n, err := parseTarget(s)
				if err != nil {
					return "", err
				}
				return formatTarget(dev, n), nil
			},
		},
		driver.IntSpec(KeyTimeout, defaultTimeoutMS, 0),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, "BATCH (automatic batching of concurrent requests)"),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, DeviceName),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, ""),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, "1 64 1"),
	)
}

// parseTarget splits "GPU(4)" into the device and the batch size (0 when
// not given).
func parseTarget(s string) (string, int, error) {
	s = strings.TrimSpace(s)
	dev, n := s, 0
	if open := strings.IndexByte(s, '('); open >= 0 {
		if !strings.HasSuffix(s, ")") {
			return "", 0, fmt.Errorf("%q: a batch size goes in parentheses at the end, e.g. GPU(4)", s)
		}
		v, err := strconv.Atoi(s[open+1 : len(s)-1])
		if err != nil || v < 1 {
			return "", 0, fmt.Errorf("%q: batch size %q is not an integer >= 1", s, s[open+1:len(s)-1])
		}
		dev, n = s[:open], v
	}
	name, _, prio, err := driver.ParseDeviceName(dev)
	if err != nil || prio != "" || strings.ContainsAny(dev, "()") {
		return "", 0, fmt.Errorf("%q: want one device, e.g. GPU(4) (BATCH batches on one device)", s)
	}
	if name == DeviceName {
		return "", 0, fmt.Errorf("%q: %s cannot batch on itself", s, DeviceName)
	}
	return dev, n, nil
}

func formatTarget(dev string, n int) string {
	if n == 0 {
		return dev
	}
	return dev + "(" + strconv.Itoa(n) + ")"
}

// setup is one compilation's configuration: BATCH's own properties, the
// device, the batch size and the properties the device gets.
type setup struct {
	cfg    *driver.Properties
	device string
	n      int
	dprops map[string]string
}

// config splits props into BATCH's keys and the device's: a key BATCH
// does not know goes to the device when the device supports it, and is an
// error wrapping driver.ErrNotFound otherwise.
func (p *Plugin) config(props map[string]string) (*setup, error) {
	own, extra := virtual.Split(p.Props(), props)
	cfg := p.Props().Clone()
	if err := cfg.Set(own); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	target, err := cfg.Get(driver.KeyDevicePriorities)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	if target == "" {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "batch: no device to batch on: use the device name %s:GPU(4) or set %s=GPU(4)", DeviceName, driver.KeyDevicePriorities)
	}
	dev, n, err := parseTarget(target)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "batch: %s=%q: %w", driver.KeyDevicePriorities, target, err)
	}
	if n == 0 {
		n = DefaultBatchSize
	}
	if _, err := p.Core.Plugin(dev); err != nil {
		return nil, fmt.Errorf("batch: device %s: %w", dev, err)
	}
	dprops, err := p.DeviceProps(cfg, dev, extra)
	if err != nil {
		return nil, err
	}
	if p.Supports(dev, driver.KeyAllowAutoBatching) {
		dprops[driver.KeyAllowAutoBatching] = "NO" // this is the batching
	}
	return &setup{cfg: cfg, device: dev, n: n, dprops: dprops}, nil
}

// QueryModel answers as the device BATCH batches on does.
func (p *Plugin) QueryModel(ctx context.Context, m *graph.Model, props map[string]string) (map[string]string, error) {
	if err := p.Start(ctx, "query", m); err != nil {
		return nil, err
	}
	s, err := p.config(props)
	if err != nil {
		return nil, err
	}
	answer, err := p.Core.QueryModel(ctx, m, s.device, s.dprops)
	if err != nil {
		return nil, fmt.Errorf("batch: query model %q on %s: %w", m.Name, s.device, err)
	}
	return answer, nil
}

// CompileModel finds the batch dimension of m, compiles it at batch N and
// at batch 1 on the device (see the package documentation) and returns the
// compiled model that gathers requests into batches.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := p.Start(ctx, "compile", m); err != nil {
		return nil, err
	}
	s, err := p.config(props)
	if err != nil {
		return nil, err
	}
	single, outOne, batched, err := batchModels(m, s.n)
	if err != nil {
		return nil, err
	}
	one, err := p.Core.CompileModel(ctx, single, s.device, s.dprops)
	if err != nil {
		return nil, fmt.Errorf("batch: compile model %q on %s: %w", m.Name, s.device, err)
	}
	var many driver.CompiledModel
	if batched != nil {
		if many, err = p.Core.CompileModel(ctx, batched, s.device, s.dprops); err != nil {
			return nil, errors.Join(fmt.Errorf("batch: compile model %q at batch %d on %s: %w", m.Name, s.n, s.device, err), one.Close())
		}
	}
	cm, err := newCompiledModel(m.Name, s, one, many, outOne)
	if err != nil {
		return nil, errors.Join(err, one.Close(), closeIf(many))
	}
	return cm, nil
}

func closeIf(cm driver.CompiledModel) error {
	if cm == nil {
		return nil
	}
	return cm.Close()
}
