package driver_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// register registers f under a name unique to the test and removes it when
// the test ends.
func register(t *testing.T, name string, f driver.Factory) {
	t.Helper()
	driver.Register(name, f)
	t.Cleanup(func() { driver.Unregister(name) })
}

func TestRegisterPanics(t *testing.T) {
	ok := drivertest.Factory("X", drivertest.Faults{})
	register(t, "TESTDUP", ok)
	cases := []struct {
		name, device string
		f            driver.Factory
	}{
		{"nil factory", "TESTNIL", nil},
		{"empty name", "", ok},
		{"dot", "GPU.1", ok},
		{"colon", "HETERO:CPU", ok},
		{"comma", "A,B", ok},
		{"duplicate", "TESTDUP", ok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { driver.Register(tc.device, tc.f) })
		})
	}
	assert.NotContains(t, driver.Devices(), "TESTNIL")
}

func TestDevicesSorted(t *testing.T) {
	for _, n := range []string{"TESTZ", "TESTA", "TESTM"} {
		register(t, n, drivertest.Factory(n, drivertest.Faults{}))
	}
	var ours []string
	for _, d := range driver.Devices() {
		if d == "TESTZ" || d == "TESTA" || d == "TESTM" {
			ours = append(ours, d)
		}
	}
	assert.Equal(t, []string{"TESTA", "TESTM", "TESTZ"}, ours)
	assert.IsNonDecreasing(t, driver.Devices())
}

func TestUnknownDevice(t *testing.T) {
	cases := []struct{ device, msg string }{
		{"GPU", `plugin: unknown device "GPU" (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/clbackend?)`},
		{"GPU.1", `plugin: unknown device "GPU" (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/clbackend?)`},
		{"CPU", `plugin: unknown device "CPU" (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/cpu_fallback?)`},
		{"HETERO:GPU,CPU", `plugin: unknown device "HETERO" (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/hetero?)`},
		{"gpu", `plugin: unknown device "gpu"; did you mean GPU? (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/clbackend?)`},
		{"HETRO:GPU,CPU", `plugin: unknown device "HETRO"; did you mean HETERO? (forgotten import of github.com/clinfer/clinfer or github.com/clinfer/clinfer/hetero?)`},
	}
	core := driver.NewCore()
	defer core.Close()
	for _, tc := range cases {
		t.Run(tc.device, func(t *testing.T) {
			_, err := core.Plugin(tc.device)
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrNotFound)
			assert.EqualError(t, err, tc.msg)
			_, err = core.CompileModel(context.Background(), devicetest.ReluModel(), tc.device, nil)
			assert.ErrorIs(t, err, driver.ErrNotFound)
		})
	}
}

// recorder is a fake device that records what the Core passes it and
// counts constructions; it is not a Querier.
type recorder struct {
	name  string
	ids   string
	inner *drivertest.Plugin

	mu       sync.Mutex
	compiled []map[string]string
	set      []map[string]string
	closed   int
	closeErr error
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Property(key string) (string, error) {
	if key == driver.KeyAvailableDevices {
		return r.ids, nil
	}
	return r.inner.Property(key)
}
func (r *recorder) SetProperties(props map[string]string) error {
	r.mu.Lock()
	r.set = append(r.set, maps.Clone(props))
	r.mu.Unlock()
	delete(props, driver.KeyDeviceID)
	delete(props, driver.KeyDevicePriorities)
	return r.inner.SetProperties(props)
}
func (r *recorder) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	r.mu.Lock()
	r.compiled = append(r.compiled, maps.Clone(props))
	r.mu.Unlock()
	props = maps.Clone(props)
	delete(props, driver.KeyDeviceID)
	delete(props, driver.KeyDevicePriorities)
	return r.inner.CompileModel(ctx, m, props)
}
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed++
	return r.closeErr
}

func newRecorder(t *testing.T, name, ids string) (*recorder, *atomic.Int32) {
	t.Helper()
	rec := &recorder{name: name, ids: ids, inner: drivertest.New(name, drivertest.Faults{})}
	var n atomic.Int32
	register(t, name, func() (driver.Plugin, error) {
		n.Add(1)
		return rec, nil
	})
	return rec, &n
}

func TestCoreLazyAndCached(t *testing.T) {
	_, n := newRecorder(t, "TESTLAZY", "")
	core := driver.NewCore()
	defer core.Close()
	assert.Zero(t, n.Load(), "NewCore constructed a plugin")
	var wg sync.WaitGroup
	plugins := make([]driver.Plugin, 16)
	errs := make([]error, 16)
	for i := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plugins[i], errs[i] = core.Plugin("TESTLAZY.0")
		}()
	}
	wg.Wait()
	for i := range plugins {
		require.NoError(t, errs[i])
		assert.Same(t, plugins[0], plugins[i])
	}
	assert.EqualValues(t, 1, n.Load(), "constructed more than once")
}

var errNoDriver = errors.New("no OpenCL ICD (install ocl-icd-libopencl1 and a driver)")

func TestCoreFactoryError(t *testing.T) {
	var n atomic.Int32
	register(t, "TESTBROKEN", func() (driver.Plugin, error) {
		n.Add(1)
		return nil, fmt.Errorf("testbroken: %w", errNoDriver)
	})
	register(t, "TESTPANIC", func() (driver.Plugin, error) { panic("boom") })
	register(t, "TESTNILPLUGIN", func() (driver.Plugin, error) { return nil, nil })
	core := driver.NewCore()
	defer core.Close()
	for range 3 {
		_, err := core.Plugin("TESTBROKEN")
		require.Error(t, err)
		assert.ErrorIs(t, err, errNoDriver)
		assert.ErrorIs(t, err, driver.ErrDevice)
		assert.Contains(t, err.Error(), `"TESTBROKEN"`)
		assert.Contains(t, err.Error(), "ocl-icd-libopencl1")
	}
	assert.EqualValues(t, 1, n.Load(), "a failed factory is cached, not retried")
	_, err := driver.NewCore().Plugin("TESTBROKEN")
	assert.ErrorIs(t, err, errNoDriver)
	assert.EqualValues(t, 2, n.Load(), "a new Core retries")

	_, err = core.Plugin("TESTPANIC")
	assert.ErrorIs(t, err, driver.ErrDevice)
	assert.Contains(t, err.Error(), "boom")
	_, err = core.Plugin("TESTNILPLUGIN")
	assert.ErrorIs(t, err, driver.ErrDevice)

	assert.NotContains(t, core.AvailableDevices(), "TESTBROKEN")
	assert.NotContains(t, core.AvailableDevices(), "TESTPANIC")
}

func TestCoreCompileInjectsDevice(t *testing.T) {
	rec, _ := newRecorder(t, "TESTINJ", "0 1")
	core := driver.NewCore()
	defer core.Close()
	cases := []struct {
		device string
		props  map[string]string
		want   map[string]string
	}{
		{"TESTINJ", nil, map[string]string{}},
		{"TESTINJ.1", map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}, map[string]string{driver.KeyDeviceID: "1", driver.KeyPerformanceHint: "THROUGHPUT"}},
		{"TESTINJ:GPU.1,CPU", nil, map[string]string{driver.KeyDevicePriorities: "GPU.1,CPU"}},
		{"TESTINJ.1", map[string]string{driver.KeyDeviceID: "1"}, map[string]string{driver.KeyDeviceID: "1"}},
	}
	for i, tc := range cases {
		t.Run(tc.device, func(t *testing.T) {
			var orig map[string]string
			if tc.props != nil {
				orig = maps.Clone(tc.props)
			}
			cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), tc.device, tc.props)
			require.NoError(t, err)
			defer cm.Close()
			rec.mu.Lock()
			got := rec.compiled[i]
			rec.mu.Unlock()
			assert.Equal(t, tc.want, got)
			assert.Equal(t, orig, tc.props, "the caller's map was modified")
		})
	}
	_, err := core.CompileModel(context.Background(), devicetest.ReluModel(), "TESTINJ.1", map[string]string{driver.KeyDeviceID: "0"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "DEVICE_ID conflicting with the device name")
	_, err = core.CompileModel(context.Background(), nil, "TESTINJ", nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "nil model")
	_, err = core.CompileModel(context.Background(), devicetest.ReluModel(), "TESTINJ.", nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "bad device name")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := len(rec.compiled)
	_, err = core.CompileModel(ctx, devicetest.ReluModel(), "TESTINJ", nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, rec.compiled, before, "the plugin was called with a done context")

	require.NoError(t, core.SetProperties("TESTINJ.1", map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}))
	assert.Equal(t, map[string]string{driver.KeyDeviceID: "1", driver.KeyPerformanceHint: "THROUGHPUT"}, rec.set[0])
	v, err := core.Property("TESTINJ", driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "THROUGHPUT", v)
	err = core.SetProperties("TESTINJ", map[string]string{driver.KeyNumStreams: "-10"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "NUM_STREAMS")
}

func TestCoreProperty(t *testing.T) {
	newRecorder(t, "TESTPROP", "0 1")
	core := driver.NewCore()
	defer core.Close()
	v, err := core.Property("TESTPROP.1", driver.KeyFullDeviceName)
	require.NoError(t, err)
	assert.Equal(t, "clinfer fake device TESTPROP", v)
	_, err = core.Property("TESTPROP.7", driver.KeyFullDeviceName)
	assert.ErrorIs(t, err, driver.ErrNotFound)
	assert.Contains(t, err.Error(), `"7"`)
	_, err = core.Property("TESTPROP", "NOPE")
	assert.ErrorIs(t, err, driver.ErrNotFound)
}

type perDevice struct{ *recorder }

func (p perDevice) DeviceProperty(id, key string) (string, error) {
	return "device " + id + " " + key, nil
}

func TestCoreDevicePropertier(t *testing.T) {
	rec := &recorder{name: "TESTPERDEV", inner: drivertest.New("TESTPERDEV", drivertest.Faults{})}
	register(t, "TESTPERDEV", func() (driver.Plugin, error) { return perDevice{rec}, nil })
	core := driver.NewCore()
	defer core.Close()
	v, err := core.Property("TESTPERDEV.3", driver.KeyFullDeviceName)
	require.NoError(t, err)
	assert.Equal(t, "device 3 FULL_DEVICE_NAME", v)
}

func TestCoreAvailableDevices(t *testing.T) {
	newRecorder(t, "TESTAVMANY", "0 1 2")
	newRecorder(t, "TESTAVONE", "0")
	newRecorder(t, "TESTAVNONE", "")
	register(t, "TESTAVBROKEN", func() (driver.Plugin, error) { return nil, errNoDriver })
	core := driver.NewCore()
	defer core.Close()
	var ours []string
	for _, d := range core.AvailableDevices() {
		if len(d) > 6 && d[:6] == "TESTAV" {
			ours = append(ours, d)
		}
	}
	assert.Equal(t, []string{"TESTAVMANY.0", "TESTAVMANY.1", "TESTAVMANY.2", "TESTAVNONE", "TESTAVONE"}, ours)
}

func TestCoreQueryModel(t *testing.T) {
	newRecorder(t, "TESTNOQUERY", "")
	register(t, "TESTQUERY", drivertest.Factory("TESTQUERY", drivertest.Faults{}))
	core := driver.NewCore()
	defer core.Close()
	_, err := core.QueryModel(context.Background(), devicetest.ReluModel(), "TESTNOQUERY", nil)
	assert.ErrorIs(t, err, driver.ErrNotImplemented)
	assert.Contains(t, err.Error(), "TESTNOQUERY")
	got, err := core.QueryModel(context.Background(), devicetest.ReluModel(), "TESTQUERY", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x": "TESTQUERY", "relu": "TESTQUERY", "y": "TESTQUERY"}, got)
	_, err = core.QueryModel(context.Background(), nil, "TESTQUERY", nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

func TestCoreClose(t *testing.T) {
	a, _ := newRecorder(t, "TESTCLOSEA", "")
	b, _ := newRecorder(t, "TESTCLOSEB", "")
	c, nc := newRecorder(t, "TESTCLOSEC", "")
	b.closeErr = errors.New("driver hung")
	core := driver.NewCore()
	_, err := core.Plugin("TESTCLOSEA")
	require.NoError(t, err)
	_, err = core.Plugin("TESTCLOSEB")
	require.NoError(t, err)
	err = core.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TESTCLOSEB")
	assert.Contains(t, err.Error(), "driver hung")
	assert.Equal(t, 1, a.closed)
	assert.Equal(t, 1, b.closed)
	assert.Zero(t, c.closed)
	assert.Zero(t, nc.Load(), "Close constructed a plugin")
	assert.NoError(t, core.Close(), "second Close")
	assert.Equal(t, 1, a.closed, "closed twice")
	_, err = core.Plugin("TESTCLOSEA")
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, err = core.CompileModel(context.Background(), devicetest.ReluModel(), "TESTCLOSEA", nil)
	assert.ErrorIs(t, err, driver.ErrClosed)
}

// TestZeroValueCore: a driver.Core value works without NewCore (plugin.Core
// embeds one).
func TestZeroValueCore(t *testing.T) {
	register(t, "TESTZERO", drivertest.Factory("TESTZERO", drivertest.Faults{}))
	var c driver.Core
	require.NotPanics(t, func() {
		cm, err := c.CompileModel(context.Background(), devicetest.ReluModel(), "TESTZERO", nil)
		require.NoError(t, err)
		assert.NoError(t, cm.Close())
	})
	assert.NoError(t, c.Close())
	_, err := c.Plugin("TESTZERO")
	assert.ErrorIs(t, err, driver.ErrClosed)
}
