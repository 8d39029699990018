package plugin_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// fakeDevice is the fake device of drivertest, registered for this
// package's tests.
const fakeDevice = "PLUGINFAKE"

func init() {
	driver.Register(fakeDevice, drivertest.Factory(fakeDevice, drivertest.Faults{}))
}

// TestZeroValueCore: a Core declared as a value works without NewCore, as
// a sync.Mutex does (it panicked with "assignment to entry in nil map").
func TestZeroValueCore(t *testing.T) {
	cases := []struct {
		name string
		use  func(c *plugin.Core) error
	}{
		{"CompileModel", func(c *plugin.Core) error {
			cm, err := c.CompileModel(context.Background(), devicetest.ReluModel(), fakeDevice, nil)
			if err == nil {
				err = cm.Close()
			}
			return err
		}},
		{"QueryModel", func(c *plugin.Core) error {
			_, err := c.QueryModel(context.Background(), devicetest.ReluModel(), fakeDevice, nil)
			return err
		}},
		{"Property", func(c *plugin.Core) error {
			_, err := c.Property(fakeDevice, plugin.KeyFullDeviceName)
			return err
		}},
		{"SetProperties", func(c *plugin.Core) error {
			return c.SetProperties(fakeDevice, plugin.Props(plugin.WithProfiling(true)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c plugin.Core
			require.NotPanics(t, func() { assert.NoError(t, tc.use(&c)) })
			assert.Contains(t, c.AvailableDevices(), fakeDevice)
			assert.NoError(t, c.Close())
		})
	}
}

// TestCoreAfterClose: every method of a closed Core returns an error
// wrapping ErrClosed (ReadModel and ReadModelFrom, which reach no device,
// included: they read models after Close); Close again returns nil.
func TestCoreAfterClose(t *testing.T) {
	model := filepath.Join(t.TempDir(), "smallcnn.onnx")
	require.NoError(t, os.WriteFile(model, defaultmodel.ONNX, 0o644))
	c := plugin.NewCore()
	require.NoError(t, c.Close())
	ctx := context.Background()
	calls := map[string]func() error{
		"ReadModel": func() error {
			_, err := c.ReadModel(model)
			return err
		},
		"ReadModelFrom": func() error {
			_, err := c.ReadModelFrom(bytes.NewReader(defaultmodel.ONNX))
			return err
		},
		"CompileModel": func() error {
			_, err := c.CompileModel(ctx, devicetest.ReluModel(), fakeDevice, nil)
			return err
		},
		"ImportModel": func() error {
			_, err := c.ImportModel(ctx, bytes.NewReader(nil), fakeDevice, nil)
			return err
		},
		"QueryModel": func() error {
			_, err := c.QueryModel(ctx, devicetest.ReluModel(), fakeDevice, nil)
			return err
		},
		"Property": func() error {
			_, err := c.Property(fakeDevice, plugin.KeyFullDeviceName)
			return err
		},
		"SetProperties": func() error { return c.SetProperties(fakeDevice, nil) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, call(), plugin.ErrClosed)
		})
	}
	assert.Empty(t, c.AvailableDevices())
	assert.NoError(t, c.Close())
}

// TestReadModel: the embedded small CNN reads from a file and from a
// reader with its ports described; bad files wrap plugin's sentinels and
// onnx's.
func TestReadModel(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "smallcnn.onnx")
	require.NoError(t, os.WriteFile(good, defaultmodel.ONNX, 0o644))
	bad := filepath.Join(dir, "bad.onnx")
	require.NoError(t, os.WriteFile(bad, []byte("not a model"), 0o644))

	var c plugin.Core
	m, err := c.ReadModel(good)
	require.NoError(t, err)
	m2, err := c.ReadModelFrom(bytes.NewReader(defaultmodel.ONNX))
	require.NoError(t, err)
	assert.Equal(t, m.Inputs(), m2.Inputs())
	assert.Equal(t, m.Outputs(), m2.Outputs())
	require.NotEmpty(t, m.Inputs())
	require.NotEmpty(t, m.Outputs())
	for _, p := range append(m.Inputs(), m.Outputs()...) {
		assert.NotEmpty(t, p.Name)
		assert.True(t, p.Shape.RankKnown, "port %s", p.Name)
	}

	cases := []struct {
		name      string
		read      func() error
		sentinels []error
	}{
		{"Missing", func() error { _, err := c.ReadModel(filepath.Join(dir, "missing.onnx")); return err }, []error{plugin.ErrNotFound, fs.ErrNotExist}},
		{"Garbage", func() error { _, err := c.ReadModel(bad); return err }, []error{plugin.ErrInvalidArgument, onnx.ErrInvalidModel}},
		{"GarbageReader", func() error { _, err := c.ReadModelFrom(bytes.NewReader([]byte("xx"))); return err }, []error{plugin.ErrInvalidArgument, onnx.ErrInvalidModel}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			require.Error(t, err)
			for _, s := range tc.sentinels {
				assert.ErrorIs(t, err, s)
			}
			assert.Regexp(t, `^onnx: `, err.Error())
		})
	}
}
