package driver_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tensor"
)

func sampleBlob() *driver.Blob {
	return &driver.Blob{
		Header: driver.BlobHeader{
			Device:       "TESTDEV",
			Architecture: "arch-1",
			Config:       map[string]string{"PERFORMANCE_HINT": "THROUGHPUT", "ENABLE_PROFILING": "YES"},
			Inputs: []driver.PortInfo{
				{Name: "x", Type: tensor.F32, Shape: graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("batch"), graph.StaticDim(3)}}},
				{Name: "any", Type: tensor.I64, Shape: graph.DynamicRank},
			},
			Outputs: []driver.PortInfo{{Name: "y", Type: tensor.F16, Shape: graph.ShapeOf(1, 2)}},
		},
		Sections: []driver.BlobSection{{Name: "graph", Data: []byte("abc")}, {Name: "program:conv", Data: []byte{}}, {Name: "", Data: []byte{0, 1, 2}}},
	}
}

func encodeBlob(t *testing.T, b *driver.Blob) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, driver.WriteBlob(&buf, b))
	return buf.Bytes()
}

func TestBlobRoundTrip(t *testing.T) {
	b := sampleBlob()
	data := encodeBlob(t, b)
	got, err := driver.ReadBlob(bytes.NewReader(data), "TESTDEV", "arch-1")
	require.NoError(t, err)
	want := *b
	want.Header.FormatVersion = driver.ExportFormatVersion
	assert.Equal(t, want.Header, got.Header)
	require.Len(t, got.Sections, 3)
	for i, s := range b.Sections {
		assert.Equal(t, s.Name, got.Sections[i].Name)
		assert.Equal(t, s.Data, got.Sections[i].Data)
	}
	d, ok := got.Section("program:conv")
	assert.True(t, ok)
	assert.Empty(t, d)
	_, ok = got.Section("missing")
	assert.False(t, ok)

	// A blob followed by other data in one stream reads only its own part.
	r := bytes.NewReader(append(bytes.Clone(data), "tail"...))
	_, err = driver.ReadBlob(r, "TESTDEV", "arch-1")
	require.NoError(t, err)
	rest, _ := io.ReadAll(r)
	assert.Equal(t, "tail", string(rest))
}

func TestBlobRejects(t *testing.T) {
	data := encodeBlob(t, sampleBlob())
	v2 := bytes.Clone(data)
	binary.LittleEndian.PutUint32(v2[8:], 7)
	cases := []struct {
		name, device, arch string
		data               []byte
		sentinel           error
		want               []string
	}{
		{"other architecture", "TESTDEV", "arch-2", data, driver.ErrIncompatible, []string{`"arch-1"`, `"arch-2"`}},
		{"other device", "OTHER", "arch-1", data, driver.ErrIncompatible, []string{`"TESTDEV"`, `"OTHER"`}},
		{"other version", "TESTDEV", "arch-1", v2, driver.ErrIncompatible, []string{"version 7", "reads version 2"}},
		{"bad magic", "TESTDEV", "arch-1", append([]byte("ONNXBLOB"), data[8:]...), driver.ErrCorrupt, []string{"bad magic"}},
		{"empty", "TESTDEV", "arch-1", nil, driver.ErrCorrupt, []string{"truncated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := driver.ReadBlob(bytes.NewReader(tc.data), tc.device, tc.arch)
			require.ErrorIs(t, err, tc.sentinel)
			require.ErrorIs(t, err, driver.ErrInvalidArgument)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestBlobTruncatedAndFlipped(t *testing.T) {
	data := encodeBlob(t, sampleBlob())
	for n := range len(data) {
		_, err := driver.ReadBlob(bytes.NewReader(data[:n]), "TESTDEV", "arch-1")
		require.ErrorIs(t, err, driver.ErrCorrupt, "prefix %d of %d", n, len(data))
	}
	for i := range data {
		c := bytes.Clone(data)
		c[i] ^= 0x5a
		_, err := driver.ReadBlob(bytes.NewReader(c), "TESTDEV", "arch-1")
		require.Error(t, err, "flip at %d", i)
	}
}

func TestBlobForgedLengthIsBounded(t *testing.T) {
	data := encodeBlob(t, sampleBlob())[:12]
	data = binary.LittleEndian.AppendUint64(data, 1<<62) // a header "of 4 EiB"
	data = append(data, 1, 2, 3)
	_, err := driver.ReadBlob(bytes.NewReader(data), "TESTDEV", "arch-1")
	require.ErrorIs(t, err, driver.ErrCorrupt)
	assert.Contains(t, err.Error(), "truncated")
}

func TestCheckPorts(t *testing.T) {
	ports := sampleBlob().Header.Inputs
	require.NoError(t, driver.CheckPorts("input", ports, ports))
	other := []driver.PortInfo{ports[0], {Name: "any", Type: tensor.I32, Shape: graph.DynamicRank}}
	err := driver.CheckPorts("input", ports, other)
	require.ErrorIs(t, err, driver.ErrCorrupt)
	assert.Contains(t, err.Error(), "input 1")
	require.ErrorIs(t, driver.CheckPorts("output", ports, ports[:1]), driver.ErrCorrupt)
}

func TestExportImportConfig(t *testing.T) {
	dev := driver.NewProperties(append(driver.CommonSpecs(), driver.ReadOnlySpec(driver.KeyDeviceArchitecture, "a"))...)
	cm := dev.Clone()
	require.NoError(t, cm.Set(map[string]string{driver.KeyPerformanceHint: "THROUGHPUT", driver.KeyCacheDir: "/tmp/c"}))
	cfg := driver.ExportConfig(cm)
	assert.Equal(t, "THROUGHPUT", cfg[driver.KeyPerformanceHint])
	assert.NotContains(t, cfg, driver.KeyCacheDir)
	assert.NotContains(t, cfg, driver.KeyDeviceArchitecture, "read-only facts are not configuration")

	h := driver.BlobHeader{Device: "D", Config: cfg}
	got, err := driver.ImportConfig(dev, h, map[string]string{driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	v, _ := got.Get(driver.KeyPerformanceHint)
	assert.Equal(t, "THROUGHPUT", v)
	v, _ = got.Get(driver.KeyEnableProfiling)
	assert.Equal(t, "YES", v)
	v, _ = dev.Get(driver.KeyPerformanceHint)
	assert.Equal(t, "LATENCY", v, "the device's configuration is unchanged")

	_, err = driver.ImportConfig(dev, driver.BlobHeader{Device: "D", Config: map[string]string{"ALIEN": "1"}}, nil)
	require.ErrorIs(t, err, driver.ErrIncompatible)
	assert.Contains(t, err.Error(), "ALIEN")
}

// exportable wraps the fake device with export and import: the blob holds
// the model's encoding, and import compiles it again (counted apart).
type exportable struct {
	*drivertest.Plugin
	compiles, imports atomic.Int32
}

type exportableModel struct {
	driver.CompiledModel
	model  *graph.Model
	loaded bool
}

func (c *exportableModel) Property(key string) (string, error) {
	if key == driver.KeyLoadedFromCache {
		return driver.FormatBool(c.loaded), nil
	}
	return c.CompiledModel.Property(key)
}

func (c *exportableModel) Export(w io.Writer) error {
	enc, err := c.model.MarshalBinary()
	if err != nil {
		return err
	}
	return driver.WriteBlob(w, &driver.Blob{
		Header:   driver.BlobHeader{Device: "TESTEXP", Architecture: "fake", Inputs: c.Inputs(), Outputs: c.Outputs()},
		Sections: []driver.BlobSection{{Name: "graph", Data: enc}},
	})
}

func (p *exportable) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	p.compiles.Add(1)
	cm, err := p.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &exportableModel{CompiledModel: cm, model: m.Clone()}, nil
}

func (p *exportable) ImportModel(ctx context.Context, r io.Reader, props map[string]string) (driver.CompiledModel, error) {
	b, err := driver.ReadBlob(r, "TESTEXP", "fake")
	if err != nil {
		return nil, err
	}
	data, _ := b.Section("graph")
	m := &graph.Model{}
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	p.imports.Add(1)
	cm, err := p.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &exportableModel{CompiledModel: cm, model: m, loaded: true}, nil
}

func reluModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2))
	r := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	return graph.NewModel("relu", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
}

func TestCoreCacheConcurrent(t *testing.T) {
	dev := &exportable{Plugin: drivertest.New("TESTEXP", drivertest.Faults{})}
	register(t, "TESTEXP", func() (driver.Plugin, error) { return dev, nil })
	core := driver.NewCore()
	defer core.Close()
	dir := t.TempDir()
	props := plugin.Props(plugin.WithCacheDir(dir))
	m := reluModel()

	cm, err := core.CompileModel(context.Background(), m, "TESTEXP", props)
	require.NoError(t, err)
	require.NoError(t, cm.Close())
	require.EqualValues(t, 1, dev.compiles.Load())

	var wg sync.WaitGroup
	errs := make([]error, 8)
	loaded := make([]string, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm, err := core.CompileModel(context.Background(), m, "TESTEXP", props)
			if err != nil {
				errs[i] = err
				return
			}
			loaded[i], errs[i] = cm.Property(driver.KeyLoadedFromCache)
			cm.Close()
		}()
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i])
		assert.Equal(t, "YES", loaded[i])
	}
	assert.EqualValues(t, 1, dev.compiles.Load(), "cached compiles must not compile")
	assert.EqualValues(t, 8, dev.imports.Load())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1)

	// Racing first compiles: each writes its own temporary file and renames
	// it into place, so exactly one blob remains and none is partial.
	race := t.TempDir()
	rprops := plugin.Props(plugin.WithCacheDir(race))
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cm, err := core.CompileModel(context.Background(), m, "TESTEXP", rprops); err == nil {
				cm.Close()
			}
		}()
	}
	wg.Wait()
	ents, err = os.ReadDir(race)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, ".blob", filepath.Ext(ents[0].Name()))
	cm, err = core.CompileModel(context.Background(), m, "TESTEXP", rprops)
	require.NoError(t, err)
	v, err := cm.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", v)
	require.NoError(t, cm.Close())
}

func TestCoreCacheErrorsAndOptOuts(t *testing.T) {
	register(t, "TESTNOEXP", drivertest.Factory("TESTNOEXP", drivertest.Faults{}))
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()

	t.Run("device without import compiles uncached", func(t *testing.T) {
		dir := t.TempDir()
		cm, err := core.CompileModel(ctx, reluModel(), "TESTNOEXP", plugin.Props(plugin.WithCacheDir(dir)))
		require.NoError(t, err)
		require.NoError(t, cm.Close())
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, ents)
		_, err = core.ImportModel(ctx, bytes.NewReader(nil), "TESTNOEXP", nil)
		require.ErrorIs(t, err, driver.ErrNotImplemented)
	})

	t.Run("unusable cache dir", func(t *testing.T) {
		dev := &exportable{Plugin: drivertest.New("TESTEXP2", drivertest.Faults{})}
		register(t, "TESTEXP2", func() (driver.Plugin, error) { return dev, nil })
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err := core.CompileModel(ctx, reluModel(), "TESTEXP2", plugin.Props(plugin.WithCacheDir(filepath.Join(file, "sub"))))
		require.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "CACHE_DIR")
	})
}

// TestBlobReaders: ReadBlob reads the same blob from a reader that knows
// its length (bytes.Reader), a file (sized by Stat and Seek: one
// allocation per section) and a plain stream (grown as bytes arrive), and
// reports a truncated one as corrupt from each.
func TestBlobReaders(t *testing.T) {
	data := encodeBlob(t, sampleBlob())
	dir := t.TempDir()
	readers := map[string]func(b []byte) io.Reader{
		"bytes":  func(b []byte) io.Reader { return bytes.NewReader(b) },
		"stream": func(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} },
		"file": func(b []byte) io.Reader {
			f, err := os.CreateTemp(dir, "blob")
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			_, err = f.Write(b)
			require.NoError(t, err)
			_, err = f.Seek(0, io.SeekStart)
			require.NoError(t, err)
			return f
		},
	}
	for name, open := range readers {
		t.Run(name, func(t *testing.T) {
			got, err := driver.ReadBlob(open(data), "TESTDEV", "arch-1")
			require.NoError(t, err)
			require.Len(t, got.Sections, 3)
			assert.Equal(t, []byte{0, 1, 2}, got.Sections[2].Data)
			for _, n := range []int{len(data) / 2, len(data) - 1} {
				_, err = driver.ReadBlob(open(data[:n]), "TESTDEV", "arch-1")
				assert.ErrorIs(t, err, driver.ErrCorrupt, "prefix %d of %d", n, len(data))
			}
		})
	}
}

// backgrounded is exportable whose compiled models run background work
// (driver.BackgroundRunner): each task waits for gate, and fail makes the
// export fail.
type backgrounded struct {
	*exportable
	gate chan struct{}
	fail error
}

type bgModel struct {
	*exportableModel
	p    *backgrounded
	wg   sync.WaitGroup
	errs []error
}

func (c *bgModel) Background(_ string, f func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-c.p.gate
		if err := f(); err != nil {
			c.errs = append(c.errs, err)
		}
	}()
}

func (c *bgModel) Export(w io.Writer) error {
	if c.p.fail != nil {
		return c.p.fail
	}
	return c.exportableModel.Export(w)
}

func (c *bgModel) Close() error {
	c.wg.Wait()
	return errors.Join(append(c.errs, c.exportableModel.Close())...)
}

func (p *backgrounded) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	cm, err := p.exportable.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &bgModel{exportableModel: cm.(*exportableModel), p: p}, nil
}

// TestCoreCacheBackground: a compiled model that runs background work
// gets the model cache's blob written there: CompileModel returns before
// the blob exists (a temporary file only), Close waits for it, and the
// next compile imports it; an export that fails leaves no blob and no
// temporary file, and Close returns its error.
func TestCoreCacheBackground(t *testing.T) {
	dev := &backgrounded{exportable: &exportable{Plugin: drivertest.New("TESTEXP", drivertest.Faults{})}}
	register(t, "TESTEXP", func() (driver.Plugin, error) { return dev, nil })
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	files := func(dir, pattern string) int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		return len(m)
	}

	dir := t.TempDir()
	props := plugin.Props(plugin.WithCacheDir(dir))
	dev.gate = make(chan struct{})
	cm, err := core.CompileModel(ctx, reluModel(), "TESTEXP", props)
	require.NoError(t, err, "the compile returns while the blob is not written")
	assert.Zero(t, files(dir, "*.blob"))
	assert.Equal(t, 1, files(dir, "*.tmp"))
	close(dev.gate)
	require.NoError(t, cm.Close())
	assert.Equal(t, 1, files(dir, "*.blob"), "Close waited for the blob")
	assert.Zero(t, files(dir, "*.tmp"))
	cm, err = core.CompileModel(ctx, reluModel(), "TESTEXP", props)
	require.NoError(t, err)
	v, err := cm.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", v)
	require.NoError(t, cm.Close())

	failed := t.TempDir()
	dev.fail = errors.New("disk full")
	cm, err = core.CompileModel(ctx, reluModel(), "TESTEXP", plugin.Props(plugin.WithCacheDir(failed)))
	require.NoError(t, err)
	err = cm.Close()
	require.ErrorIs(t, err, driver.ErrDevice)
	assert.ErrorIs(t, err, dev.fail, "the background error is returned, not lost")
	assert.Zero(t, files(failed, "*"), "no blob, no temporary file")
}

// TestCoreCacheWaitsForInFlightBlob: a second CompileModel of a model
// whose first compilation is still writing its blob in the background
// waits for that write and imports the blob instead of compiling the
// model again (one device compile, the second LOADED_FROM_CACHE); a
// waiter whose ctx ends first returns ctx's error.
func TestCoreCacheWaitsForInFlightBlob(t *testing.T) {
	dev := &backgrounded{exportable: &exportable{Plugin: drivertest.New("TESTINFLIGHT", drivertest.Faults{})}}
	register(t, "TESTINFLIGHT", func() (driver.Plugin, error) { return dev, nil })
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	props := plugin.Props(plugin.WithCacheDir(t.TempDir()))
	dev.gate = make(chan struct{})
	first, err := core.CompileModel(ctx, reluModel(), "TESTINFLIGHT", props)
	require.NoError(t, err)
	defer first.Close()

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = core.CompileModel(short, reluModel(), "TESTINFLIGHT", props)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the waiter's ctx ends the wait")

	type result struct {
		cm  driver.CompiledModel
		err error
	}
	second := make(chan result, 1)
	go func() {
		cm, err := core.CompileModel(ctx, reluModel(), "TESTINFLIGHT", props)
		second <- result{cm, err}
	}()
	select {
	case r := <-second:
		if r.cm != nil {
			_ = r.cm.Close()
		}
		t.Fatalf("the second CompileModel returned (err %v) while the first's blob was still being written", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(dev.gate)
	r := <-second
	require.NoError(t, r.err)
	defer r.cm.Close()
	v, err := r.cm.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", v, "the second compile imported the first's blob")
	assert.Equal(t, int32(1), dev.compiles.Load(), "the model was compiled once")
	assert.Equal(t, int32(1), dev.imports.Load())
}
