package hetero

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// inferOn runs one inference of cm on inputs and returns copies of the
// outputs by name.
func inferOn(t testing.TB, cm driver.CompiledModel, inputs map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	for name, x := range inputs {
		require.NoError(t, r.SetTensor(name, x))
	}
	require.NoError(t, r.Infer(context.Background()))
	out := map[string]*tensor.Tensor{}
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		require.NoError(t, err)
		out[o.Name] = y.Clone()
	}
	return out
}

func export(t testing.TB, cm driver.CompiledModel) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, cm.(driver.Exporter).Export(&buf))
	return buf.Bytes()
}

// exportCase is a model, the devices it is split across and its inputs.
type exportCase struct {
	name    string
	model   func(t *testing.T) *graph.Model
	devices string
	inputs  map[string]*tensor.Tensor
	subs    string // NUMBER_OF_SUBMODELS
}

func exportCases(t *testing.T) []exportCase {
	diamond := func(t *testing.T) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 4))
		a := graph.NewNode("Abs", "a", []graph.Output{x.Out(0)}, nil, 1)
		b := graph.NewNode("Relu", "b", []graph.Output{a.Out(0)}, nil, 1)
		c := graph.NewNode("Add", "c", []graph.Output{a.Out(0), b.Out(0)}, nil, 1)
		d := graph.NewNode("Neg", "d", []graph.Output{x.Out(0)}, nil, 1)
		m := graph.NewModel("diamond", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", c.Out(0)), graph.NewResult("z", d.Out(0))})
		require.NoError(t, m.InferShapes())
		return m
	}
	pinned := func(t *testing.T) *graph.Model {
		m := chain(t, static(2, 4)...)
		for _, n := range []string{"add", "relu"} {
			m.Node(n).RT.Affinity = "CPU"
		}
		for _, n := range []string{"mul", "sub"} {
			m.Node(n).RT.Affinity = testDevice
		}
		return m
	}
	paramOnly := func(t *testing.T) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
		m := graph.NewModel("param_result", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", x.Out(0))})
		require.NoError(t, m.InferShapes())
		return m
	}
	constOnly := func(t *testing.T) *graph.Model {
		cv, err := tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3})
		require.NoError(t, err)
		m := graph.NewModel("const_result", nil, []*graph.Node{graph.NewResult("k", graph.NewConstant("c", cv).Out(0))})
		require.NoError(t, m.InferShapes())
		return m
	}
	dyn := []graph.Dim{graph.DynamicDim("n"), graph.StaticDim(4)}
	return []exportCase{
		{"ChainStatic", func(t *testing.T) *graph.Model { return chain(t, static(2, 4)...) }, testDevice + ",CPU",
			map[string]*tensor.Tensor{"x": input(t, 1, tensor.Shape{2, 4})}, "3"},
		{"ChainDynamic", func(t *testing.T) *graph.Model { return chain(t, dyn...) }, testDevice + ",CPU",
			map[string]*tensor.Tensor{"x": input(t, 2, tensor.Shape{3, 4})}, "3"},
		{"Cycle", diamond, testDevice + ",CPU", map[string]*tensor.Tensor{"x": input(t, 3, tensor.Shape{1, 4})}, "3"},
		{"PinnedHalfHalf", pinned, "CPU," + testDevice, map[string]*tensor.Tensor{"x": input(t, 4, tensor.Shape{2, 4})}, "2"},
		{"ParameterResultOnly", paramOnly, testDevice + ",CPU", map[string]*tensor.Tensor{"x": input(t, 5, tensor.Shape{2, 3})}, "1"},
		{"ConstantResultOnly", constOnly, testDevice + ",CPU", nil, "1"},
	}
}

// TestExportImportRoundTrip exports split models and imports them on a
// fresh HETERO device: ports, split and outputs are kept, and exporting
// the imported model gives the same bytes.
func TestExportImportRoundTrip(t *testing.T) {
	for _, tc := range exportCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{driver.KeyDevicePriorities: tc.devices}
			cm, want := run(t, newHetero(t), tc.model(t), props, tc.inputs)
			assert.Equal(t, "NO", prop(t, cm, driver.KeyLoadedFromCache))
			blob := export(t, cm)

			imported, err := newHetero(t).ImportModel(context.Background(), bytes.NewReader(blob), nil)
			require.NoError(t, err)
			defer func() { assert.NoError(t, imported.Close()) }()
			assert.Equal(t, cm.Inputs(), imported.Inputs())
			assert.Equal(t, cm.Outputs(), imported.Outputs())
			assert.Equal(t, "YES", prop(t, imported, driver.KeyLoadedFromCache))
			for _, k := range []string{KeyNumberOfSubmodels, driver.KeyExecutionDevices, driver.KeyDevicePriorities, driver.KeyNetworkName} {
				assert.Equal(t, prop(t, cm, k), prop(t, imported, k), "%s", k)
			}
			assert.Equal(t, tc.subs, prop(t, imported, KeyNumberOfSubmodels))
			wantDevs, _ := cm.(*CompiledModel).Submodels()
			devs, subs := imported.(*CompiledModel).Submodels()
			assert.Equal(t, wantDevs, devs)
			for i, s := range subs {
				assert.Equal(t, "YES", prop(t, s, driver.KeyLoadedFromCache), "submodel %d", i)
			}
			assertSame(t, want, inferOn(t, imported, tc.inputs))
			assert.Equal(t, blob, export(t, imported), "export of the imported model")

			// The runtime model still speaks in the user's node names.
			rm, err := imported.RuntimeModel()
			require.NoError(t, err)
			nodes, err := rm.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				assert.NotEmpty(t, n.RT.Affinity, "node %q", n.Name)
			}
		})
	}
}

// heteroBlob compiles the static chain (three subgraphs) and exports it.
func heteroBlob(t testing.TB) []byte {
	t.Helper()
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	cm, err := p.CompileModel(context.Background(), chainTB(t), map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"})
	require.NoError(t, err)
	defer cm.Close()
	return export(t, cm)
}

// chainTB is chain(t, static(2, 4)...) for fuzz targets too.
func chainTB(t testing.TB) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 4))
	cv, err := tensor.FromF32(tensor.Shape{4}, []float32{0.5, -1, 2, -3})
	require.NoError(t, err)
	c := graph.NewConstant("c", cv)
	add := graph.NewNode("Add", "add", []graph.Output{x.Out(0), c.Out(0)}, nil, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{add.Out(0)}, nil, 1)
	mul := graph.NewNode("Mul", "mul", []graph.Output{relu.Out(0), c.Out(0)}, nil, 1)
	sub := graph.NewNode("Sub", "sub", []graph.Output{mul.Out(0), x.Out(0)}, nil, 1)
	m := graph.NewModel("chain", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", mul.Out(0)), graph.NewResult("z", sub.Out(0))})
	require.NoError(t, m.InferShapes())
	return m
}

// rewrite reads a HETERO blob, lets edit change it and writes it again
// with valid checksums, so the import gets past them.
func rewrite(t testing.TB, blob []byte, edit func(b *driver.Blob)) []byte {
	t.Helper()
	b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, DeviceName)
	require.NoError(t, err)
	edit(b)
	var buf bytes.Buffer
	require.NoError(t, driver.WriteBlob(&buf, b))
	return buf.Bytes()
}

func setSection(b *driver.Blob, name string, data []byte) {
	for i := range b.Sections {
		if b.Sections[i].Name == name {
			b.Sections[i].Data = data
		}
	}
}

// importBlob imports data on p and closes what it returns.
func importBlob(p *Plugin, data []byte) error {
	cm, err := p.ImportModel(context.Background(), bytes.NewReader(data), nil)
	if err == nil {
		return cm.Close()
	}
	return err
}

func TestImportRejects(t *testing.T) {
	blob := heteroBlob(t)
	good, err := decodeSplit(func() []byte {
		b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, DeviceName)
		require.NoError(t, err)
		s, _ := b.Section(splitSection)
		return s
	}())
	require.NoError(t, err)
	require.Len(t, good, 3)
	withSplit := func(edit func(subs []*subgraph)) []byte {
		subs, err := decodeSplit(encodeSplit(good))
		require.NoError(t, err)
		edit(subs)
		return rewrite(t, blob, func(b *driver.Blob) { setSection(b, splitSection, encodeSplit(subs)) })
	}
	subArch := rewrite(t, blob, func(b *driver.Blob) {
		data, _ := b.Section(subSectionPrefix + "1")
		sb, err := driver.ReadBlob(bytes.NewReader(data), "CPU", cpuArch(t))
		require.NoError(t, err)
		sb.Header.Architecture = "other-cpu"
		var buf bytes.Buffer
		require.NoError(t, driver.WriteBlob(&buf, sb))
		setSection(b, subSectionPrefix+"1", buf.Bytes())
	})
	cpuBlob := func() []byte {
		p := newHetero(t)
		cpu, err := p.core.Plugin("CPU")
		require.NoError(t, err)
		cm, err := cpu.CompileModel(context.Background(), chain(t, static(2, 4)...), nil)
		require.NoError(t, err)
		defer cm.Close()
		return export(t, cm)
	}()
	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"CPUBlob", cpuBlob, driver.ErrIncompatible, `device "CPU"`},
		{"SubgraphOfAnotherArchitecture", subArch, driver.ErrIncompatible, "other-cpu"},
		{"Empty", nil, driver.ErrCorrupt, "truncated"},
		{"Truncated", blob[:len(blob)-5], driver.ErrCorrupt, "truncated"},
		{"NoSplit", rewrite(t, blob, func(b *driver.Blob) { b.Sections[1].Name = "other" }), driver.ErrCorrupt, splitSection},
		{"NoSubgraph", rewrite(t, blob, func(b *driver.Blob) { b.Sections = b.Sections[:3] }), driver.ErrCorrupt, "subgraph1"},
		{"ExtraSection", rewrite(t, blob, func(b *driver.Blob) {
			b.Sections = append(b.Sections, driver.BlobSection{Name: "extra"})
		}), driver.ErrCorrupt, "sections"},
		{"BadModel", rewrite(t, blob, func(b *driver.Blob) { setSection(b, modelSection, []byte("junk")) }), driver.ErrCorrupt, ""},
		{"SplitTrailingBytes", rewrite(t, blob, func(b *driver.Blob) {
			setSection(b, splitSection, append(encodeSplit(good), 0))
		}), driver.ErrCorrupt, "trailing"},
		{"ReadsLaterSubgraph", withSplit(func(s []*subgraph) { s[1].inputs[0].from.sub = 2 }), driver.ErrCorrupt, "subgraph"},
		{"ReadsMissingModelInput", withSplit(func(s []*subgraph) { s[0].inputs[0].from.input = 7 }), driver.ErrCorrupt, "model input 7"},
		{"ReadsUnlinkedValue", withSplit(func(s []*subgraph) { s[1].inputs[0].from.name = "nope" }), driver.ErrCorrupt, "nope"},
		{"UnknownInput", withSplit(func(s []*subgraph) { s[0].inputs[0].name = "nope" }), driver.ErrCorrupt, "nope"},
		{"OutputOutOfRange", withSplit(func(s []*subgraph) { s[2].outputs[0].index = 9 }), driver.ErrCorrupt, "model output 9"},
		{"OutputTwice", withSplit(func(s []*subgraph) { s[2].outputs = append(s[2].outputs, s[2].outputs[0]) }), driver.ErrCorrupt, ""},
		{"OutputMissing", withSplit(func(s []*subgraph) { s[2].outputs = nil }), driver.ErrCorrupt, "produces"},
		{"BadDevice", withSplit(func(s []*subgraph) { s[0].device = "HETERO" }), driver.ErrCorrupt, "bad device"},
	}
	p := newHetero(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := importBlob(p, tc.data)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	t.Run("EveryTruncation", func(t *testing.T) {
		for n := 0; n < len(blob); n += max(1, len(blob)/300) {
			err := importBlob(p, blob[:n])
			require.Error(t, err, "truncated to %d of %d bytes", n, len(blob))
			assert.ErrorIs(t, err, driver.ErrCorrupt, "truncated to %d bytes", n)
		}
	})
	t.Run("FlippedBytes", func(t *testing.T) {
		for i := 0; i < len(blob); i += max(1, len(blob)/300) {
			bad := bytes.Clone(blob)
			bad[i] ^= 0x5a
			assert.Error(t, importBlob(p, bad), "byte %d flipped", i)
		}
	})
	t.Run("StillImports", func(t *testing.T) { require.NoError(t, importBlob(p, blob)) })
}

// cpuArch is the CPU device's DEVICE_ARCHITECTURE.
func cpuArch(t testing.TB) string {
	t.Helper()
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	cpu, err := p.core.Plugin("CPU")
	require.NoError(t, err)
	a, err := cpu.Property(driver.KeyDeviceArchitecture)
	require.NoError(t, err)
	return a
}

// FuzzImportHetero imports arbitrary bytes: it must return an error or a
// working compiled model, never panic.
func FuzzImportHetero(f *testing.F) {
	blob := heteroBlob(f)
	f.Add(blob)
	f.Add(blob[:len(blob)/2])
	p, err := New()
	require.NoError(f, err)
	defer p.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = importBlob(p, data)
	})
}

// FuzzImportHeteroSplit puts arbitrary bytes in the split section of a
// valid blob, with valid checksums, so that the split's decoding and its
// checks against the imported subgraphs are what is fuzzed. A model that
// imports must run.
func FuzzImportHeteroSplit(f *testing.F) {
	blob := heteroBlob(f)
	b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, DeviceName)
	require.NoError(f, err)
	split, _ := b.Section(splitSection)
	f.Add(split)
	p, err := New()
	require.NoError(f, err)
	defer p.Close()
	x, err := tensor.FromF32(tensor.Shape{2, 4}, []float32{1, -2, 3, -4, 5, -6, 7, -8})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		bad := rewrite(t, blob, func(b *driver.Blob) { setSection(b, splitSection, data) })
		cm, err := p.ImportModel(context.Background(), bytes.NewReader(bad), nil)
		if err != nil {
			return
		}
		defer cm.Close()
		r, err := cm.CreateInferRequest()
		if err != nil {
			return
		}
		defer r.Close()
		_ = r.SetTensor("x", x)
		_ = r.Infer(context.Background())
	})
}

// TestModelCache compiles through a Core with CACHE_DIR: the first
// compilation stores one blob, the second imports it, and a corrupt blob
// is recompiled and replaced.
func TestModelCache(t *testing.T) {
	dir := t.TempDir()
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	m := chain(t, static(2, 4)...)
	inputs := map[string]*tensor.Tensor{"x": input(t, 9, tensor.Shape{2, 4})}
	props := map[string]string{driver.KeyCacheDir: dir}
	device := "HETERO:" + testDevice + ",CPU"
	compile := func(loaded string) map[string]*tensor.Tensor {
		t.Helper()
		cm, err := core.CompileModel(context.Background(), m, device, props)
		require.NoError(t, err)
		defer func() { assert.NoError(t, cm.Close()) }()
		assert.Equal(t, loaded, prop(t, cm, driver.KeyLoadedFromCache))
		assert.Equal(t, "3", prop(t, cm, KeyNumberOfSubmodels))
		return inferOn(t, cm, inputs)
	}
	blobs := func() []string {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		require.NoError(t, err)
		return files
	}
	want := compile("NO")
	files := blobs()
	require.Len(t, files, 1, "one blob per model+device+config")
	path, err := core.CacheBlobPath(dir, m, device, props)
	require.NoError(t, err)
	assert.Equal(t, path, files[0])
	assertSame(t, want, compile("YES"))
	assert.Len(t, blobs(), 1)

	// A corrupt blob is not trusted: recompiled, replaced, then imported.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
	assertSame(t, want, compile("NO"))
	assert.Len(t, blobs(), 1)
	assertSame(t, want, compile("YES"))
}

// noExportDevice is the CPU device whose compiled models cannot export.
const noExportDevice = "HNOEXPORT"

func init() {
	registerCPUAs(noExportDevice, func(p *cpufallback.Plugin) driver.Plugin { return &noExport{Plugin: p} })
}

type noExport struct{ *cpufallback.Plugin }

func (p *noExport) Name() string { return noExportDevice }

// CompileModel hides the compiled model's Export behind the interface.
func (p *noExport) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	cm, err := p.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return struct{ driver.CompiledModel }{cm}, nil
}

func TestExportErrors(t *testing.T) {
	p := newHetero(t)
	cm, _ := run(t, p, chain(t, static(2, 4)...), map[string]string{driver.KeyDevicePriorities: noExportDevice + ",CPU"}, map[string]*tensor.Tensor{"x": input(t, 1, tensor.Shape{2, 4})})
	err := cm.(driver.Exporter).Export(&bytes.Buffer{})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrNotImplemented)
	assert.Contains(t, err.Error(), noExportDevice)

	cm, _ = run(t, p, chain(t, static(2, 4)...), map[string]string{driver.KeyDevicePriorities: testDevice + ",CPU"}, map[string]*tensor.Tensor{"x": input(t, 1, tensor.Shape{2, 4})})
	require.NoError(t, cm.Close())
	assert.ErrorIs(t, cm.(driver.Exporter).Export(&bytes.Buffer{}), driver.ErrClosed)

	require.NoError(t, p.Close())
	_, err = p.ImportModel(context.Background(), bytes.NewReader(nil), nil)
	assert.ErrorIs(t, err, driver.ErrClosed)
}

// TestImportCancelled: a cancelled ctx stops the import.
func TestImportCancelled(t *testing.T) {
	blob := heteroBlob(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newHetero(t).ImportModel(ctx, bytes.NewReader(blob), nil)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestImportPropsOverride: props given to ImportModel override the
// exported configuration, and reach the compiled model.
func TestImportPropsOverride(t *testing.T) {
	blob := heteroBlob(t)
	cm, err := newHetero(t).ImportModel(context.Background(), bytes.NewReader(blob), map[string]string{driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	assert.Equal(t, "YES", prop(t, cm, driver.KeyEnableProfiling))
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	require.NoError(t, r.SetTensor("x", input(t, 2, tensor.Shape{2, 4})))
	require.NoError(t, r.Infer(context.Background()))
	prof := r.ProfilingInfo()
	require.NotEmpty(t, prof)
	assert.True(t, strings.HasPrefix(prof[0].NodeName, "subgraph0/"), "%q", prof[0].NodeName)

	_, err = newHetero(t).ImportModel(context.Background(), bytes.NewReader(blob), map[string]string{"NO_SUCH_KEY": "1"})
	assert.ErrorIs(t, err, driver.ErrNotFound)
}

// TestModelCacheKeysInnerDevices: a setting made on a device HETERO splits
// across (SetDeviceProperties) changes the cache key, so the model is
// compiled anew under that setting instead of reusing a blob made without it.
func TestModelCacheKeysInnerDevices(t *testing.T) {
	dir := t.TempDir()
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	m := chain(t, static(2, 4)...)
	props := map[string]string{driver.KeyCacheDir: dir}
	device := "HETERO:" + testDevice + ",CPU"
	loaded := func() string {
		t.Helper()
		cm, err := core.CompileModel(context.Background(), m, device, props)
		require.NoError(t, err)
		defer func() { assert.NoError(t, cm.Close()) }()
		return prop(t, cm, driver.KeyLoadedFromCache)
	}
	assert.Equal(t, "NO", loaded())
	assert.Equal(t, "YES", loaded())

	hp, err := core.Plugin("HETERO")
	require.NoError(t, err)
	require.NoError(t, hp.(*Plugin).SetDeviceProperties("CPU", map[string]string{driver.KeyDisableTransformations: "YES"}))
	assert.Equal(t, "NO", loaded(), "an inner device's new setting must not reuse the old blob")
	assert.Equal(t, "YES", loaded())
	files, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	assert.Len(t, files, 2, "one blob per configuration")
}
