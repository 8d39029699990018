package cpufallback

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// exportCase is a model and inputs to run it on.
type exportCase struct {
	name   string
	model  func() *graph.Model
	inputs func() map[string]*tensor.Tensor
	props  map[string]string
}

func exportCases() []exportCase {
	netInputs := func() map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"x": reftest.RandF32(rand.New(rand.NewPCG(21, 22)), 1, 3, 8, 8)}
	}
	net := func() *graph.Model { m, _ := buildNet(rand.New(rand.NewPCG(9, 10))); return m }
	return []exportCase{
		{name: "fused net", model: net, inputs: netInputs},
		{name: "unfused net with profiling", model: net, inputs: netInputs,
			props: plugin.Props(plugin.WithDisableTransformations(true), plugin.WithProfiling(true))},
		{name: "parameter to result", model: func() *graph.Model {
			x := graph.NewParameter("in", tensor.I64, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("n"), graph.StaticDim(2)}})
			return graph.NewModel("identity", []*graph.Node{x}, []*graph.Node{graph.NewResult("out", x.Out(0))})
		}, inputs: func() map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"in": nnI64(tensor.Shape{3, 2}, []int64{1, -2, 3, -4, 5, 1 << 40})}
		}},
		{name: "constant to result", model: func() *graph.Model {
			v, _ := tensor.FromF32(tensor.Shape{2, 2}, []float32{1.5, -2, 3, 4})
			c := graph.NewConstant("c", v)
			return graph.NewModel("const", nil, []*graph.Node{graph.NewResult("out", c.Out(0))})
		}, inputs: func() map[string]*tensor.Tensor { return nil }},
	}
}

// runOnce infers once and returns every output's raw bytes by name.
func runOnce(t *testing.T, cm driver.CompiledModel, inputs map[string]*tensor.Tensor) map[string][]byte {
	t.Helper()
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	for name, v := range inputs {
		require.NoError(t, req.SetTensor(name, v))
	}
	require.NoError(t, req.Infer(context.Background()))
	out := map[string][]byte{}
	for _, o := range cm.Outputs() {
		v, err := req.Tensor(o.Name)
		require.NoError(t, err)
		out[o.Name] = bytes.Clone(v.Contiguous().Bytes())
	}
	return out
}

func exportBlob(t *testing.T, cm driver.CompiledModel) []byte {
	t.Helper()
	ex, ok := cm.(driver.Exporter)
	require.True(t, ok, "CPU compiled model must implement driver.Exporter")
	var buf bytes.Buffer
	require.NoError(t, ex.Export(&buf))
	return buf.Bytes()
}

func prop(t *testing.T, cm driver.CompiledModel, key string) string {
	t.Helper()
	v, err := cm.Property(key)
	require.NoError(t, err, key)
	return v
}

func layerTypes(t *testing.T, cm driver.CompiledModel) []string {
	t.Helper()
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name+":"+n.RT.Extra["LAYER_TYPE"]+":"+n.RT.Extra["IMPL_TYPE"]+":"+n.RT.Extra["ORIGINAL_NAMES"])
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	for _, tc := range exportCases() {
		t.Run(tc.name, func(t *testing.T) {
			cm, err := p.CompileModel(ctx, tc.model(), tc.props)
			require.NoError(t, err)
			defer cm.Close()
			blob := exportBlob(t, cm)

			im, err := p.ImportModel(ctx, bytes.NewReader(blob), nil)
			require.NoError(t, err)
			defer im.Close()

			assert.Equal(t, cm.Inputs(), im.Inputs())
			assert.Equal(t, cm.Outputs(), im.Outputs())
			assert.Equal(t, "NO", prop(t, cm, driver.KeyLoadedFromCache))
			assert.Equal(t, "YES", prop(t, im, driver.KeyLoadedFromCache))
			for _, k := range []string{driver.KeyNetworkName, driver.KeyEnableProfiling, driver.KeyDisableTransformations, driver.KeyPerformanceHint} {
				assert.Equal(t, prop(t, cm, k), prop(t, im, k), "property %s survives export", k)
			}
			assert.Equal(t, layerTypes(t, cm), layerTypes(t, im), "import rebuilds the same plan")
			assert.Equal(t, runOnce(t, cm, tc.inputs()), runOnce(t, im, tc.inputs()), "outputs must be identical")

			again := exportBlob(t, im)
			assert.Equal(t, blob, again, "re-export of an imported model is byte-identical")
		})
	}
}

func TestImportPropsOverride(t *testing.T) {
	ctx := context.Background()
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	m, _ := buildNet(rand.New(rand.NewPCG(1, 1)))
	cm, err := p.CompileModel(ctx, m, plugin.Props(plugin.WithProfiling(true)))
	require.NoError(t, err)
	defer cm.Close()
	blob := exportBlob(t, cm)
	im, err := p.ImportModel(ctx, bytes.NewReader(blob), plugin.Props(plugin.WithProfiling(false)))
	require.NoError(t, err)
	defer im.Close()
	assert.Equal(t, "NO", prop(t, im, driver.KeyEnableProfiling))

	_, err = p.ImportModel(ctx, bytes.NewReader(blob), map[string]string{"NO_SUCH_KEY": "1"})
	require.ErrorIs(t, err, driver.ErrNotFound)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.ImportModel(cctx, bytes.NewReader(blob), nil)
	require.ErrorIs(t, err, context.Canceled)
}

// retag rewrites a valid blob through f and writes it back with valid
// checksums: the tampering a corrupt disk cannot do, but another build or
// another machine does.
func retag(t *testing.T, blob []byte, f func(b *driver.Blob)) []byte {
	t.Helper()
	b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, deviceArchitecture())
	require.NoError(t, err)
	f(b)
	var buf bytes.Buffer
	require.NoError(t, driver.WriteBlob(&buf, b))
	return buf.Bytes()
}

func netBlob(t *testing.T, p *Plugin) []byte {
	t.Helper()
	m, _ := buildNet(rand.New(rand.NewPCG(3, 3)))
	cm, err := p.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	return exportBlob(t, cm)
}

func TestImportRejectsIncompatible(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	blob := netBlob(t, p)
	arch := deviceArchitecture()

	otherVersion := bytes.Clone(blob)
	binary.LittleEndian.PutUint32(otherVersion[8:], driver.ExportFormatVersion+1)

	cases := []struct {
		name string
		blob []byte
		want []string
	}{
		{"other architecture", retag(t, blob, func(b *driver.Blob) { b.Header.Architecture = "riscv64 v" }),
			[]string{`"riscv64 v"`, `"` + arch + `"`}},
		{"other device", retag(t, blob, func(b *driver.Blob) { b.Header.Device = "GPU" }),
			[]string{`"GPU"`, `"CPU"`}},
		{"other format version", otherVersion,
			[]string{fmt.Sprintf("version %d", driver.ExportFormatVersion+1), fmt.Sprintf("reads version %d", driver.ExportFormatVersion)}},
		{"unknown property", retag(t, blob, func(b *driver.Blob) { b.Header.Config["GPU_ONLY_KEY"] = "1" }),
			[]string{"GPU_ONLY_KEY"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.ImportModel(context.Background(), bytes.NewReader(tc.blob), nil)
			require.ErrorIs(t, err, driver.ErrIncompatible)
			require.ErrorIs(t, err, driver.ErrInvalidArgument)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestImportCorrupt(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	blob := netBlob(t, p)
	ctx := context.Background()

	t.Run("truncated", func(t *testing.T) {
		for n := range len(blob) {
			_, err := p.ImportModel(ctx, bytes.NewReader(blob[:n]), nil)
			require.ErrorIs(t, err, driver.ErrCorrupt, "prefix of %d of %d bytes", n, len(blob))
		}
	})
	t.Run("every byte flipped", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 5))
		for i := range blob {
			c := bytes.Clone(blob)
			c[i] ^= byte(1 + rng.IntN(255))
			_, err := p.ImportModel(ctx, bytes.NewReader(c), nil)
			require.Error(t, err, "flip at byte %d of %d imported", i, len(blob))
		}
	})
	bad := []struct {
		name string
		f    func(b *driver.Blob)
		want string
	}{
		{"no graph section", func(b *driver.Blob) { b.Sections = nil }, `no "graph" section`},
		{"graph not decodable", func(b *driver.Blob) { b.Sections[0].Data = []byte("garbage") }, "bad model encoding"},
		{"ports disagree", func(b *driver.Blob) { b.Header.Inputs[0].Name = "renamed" }, "renamed"},
		{"unknown op", func(b *driver.Blob) {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1))
			n := graph.NewNode("NoSuchOp", "bad", []graph.Output{x.Out(0)}, nil, 1)
			m := graph.NewModel("bad", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", n.Out(0))})
			enc, err := m.MarshalBinary()
			require.NoError(t, err)
			b.Sections[0].Data = enc
		}, "NoSuchOp"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.ImportModel(ctx, bytes.NewReader(retag(t, blob, tc.f)), nil)
			require.ErrorIs(t, err, driver.ErrCorrupt)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestModelCache(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	core := driver.NewCore()
	defer core.Close()
	m, _ := buildNet(rand.New(rand.NewPCG(13, 14)))
	in := map[string]*tensor.Tensor{"x": reftest.RandF32(rand.New(rand.NewPCG(15, 16)), 1, 3, 8, 8)}
	props := plugin.Props(plugin.WithCacheDir(dir))

	compile := func(props map[string]string) (driver.CompiledModel, string) {
		t.Helper()
		cm, err := core.CompileModel(ctx, m, "CPU", props)
		require.NoError(t, err)
		t.Cleanup(func() { cm.Close() })
		return cm, prop(t, cm, driver.KeyLoadedFromCache)
	}

	first, loaded := compile(props)
	assert.Equal(t, "NO", loaded, "first compile")
	path, err := core.CacheBlobPath(dir, m, "CPU", props)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Base(path)}, blobFiles(t, dir), "exactly one blob, no temporary files")

	second, loaded := compile(props)
	assert.Equal(t, "YES", loaded, "second compile")
	assert.Equal(t, []string{filepath.Base(path)}, blobFiles(t, dir))
	want := runOnce(t, first, in)
	assert.Equal(t, want, runOnce(t, second, in), "cached model gives identical outputs")

	t.Run("another config has its own blob", func(t *testing.T) {
		other := plugin.Props(plugin.WithCacheDir(dir), plugin.WithProfiling(true))
		_, loaded := compile(other)
		assert.Equal(t, "NO", loaded)
		assert.Len(t, blobFiles(t, dir), 2)
		_, loaded = compile(other)
		assert.Equal(t, "YES", loaded)
		otherPath, err := core.CacheBlobPath(dir, m, "CPU", other)
		require.NoError(t, err)
		require.NoError(t, os.Remove(otherPath))
	})

	damage := []struct {
		name string
		f    func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped byte", func(b []byte) []byte { b[len(b)/3] ^= 0xff; return b }},
		{"empty", func([]byte) []byte { return nil }},
		{"stale architecture", func(b []byte) []byte {
			return retag(t, b, func(b *driver.Blob) { b.Header.Architecture = "old-cpu" })
		}},
	}
	for _, tc := range damage {
		t.Run(tc.name, func(t *testing.T) {
			good, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tc.f(bytes.Clone(good)), 0o644))
			cm, loaded := compile(props)
			assert.Equal(t, "NO", loaded, "a damaged blob must be recompiled, not trusted")
			assert.Equal(t, want, runOnce(t, cm, in))
			replaced, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, good, replaced, "the blob is replaced by a good one")
			assert.Equal(t, []string{filepath.Base(path)}, blobFiles(t, dir))
			_, loaded = compile(props)
			assert.Equal(t, "YES", loaded)
		})
	}

	t.Run("plugin CACHE_DIR", func(t *testing.T) {
		dir2 := t.TempDir()
		c2 := driver.NewCore()
		defer c2.Close()
		require.NoError(t, c2.SetProperties("CPU", plugin.Props(plugin.WithCacheDir(dir2))))
		for _, want := range []string{"NO", "YES"} {
			cm, err := c2.CompileModel(ctx, m, "CPU", nil)
			require.NoError(t, err)
			assert.Equal(t, want, prop(t, cm, driver.KeyLoadedFromCache))
			require.NoError(t, cm.Close())
		}
		assert.Len(t, blobFiles(t, dir2), 1)
	})
}

func TestCoreImportModel(t *testing.T) {
	core := driver.NewCore()
	defer core.Close()
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	cm, err := core.ImportModel(context.Background(), bytes.NewReader(netBlob(t, p)), "CPU", nil)
	require.NoError(t, err)
	defer cm.Close()
	assert.Equal(t, "YES", prop(t, cm, driver.KeyLoadedFromCache))
	assert.Equal(t, "x", cm.Inputs()[0].Name)
}

// FuzzImport: a truncated or corrupted blob, or a well-formed blob around
// an arbitrary graph section, gives an error or a working model, never a
// panic. With wrap set, data is the graph section of an otherwise valid
// blob, so the fuzzer reaches the plan builder past the checksums.
func FuzzImport(f *testing.F) {
	p, err := New()
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var template *driver.Blob
	for _, tc := range exportCases() {
		cm, err := p.CompileModel(ctx, tc.model(), tc.props)
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := cm.(driver.Exporter).Export(&buf); err != nil {
			f.Fatal(err)
		}
		cm.Close()
		f.Add(buf.Bytes(), false)
		b, err := driver.ReadBlob(bytes.NewReader(buf.Bytes()), DeviceName, deviceArchitecture())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b.Sections[0].Data, true)
		template = b
	}
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			b := *template
			b.Sections = []driver.BlobSection{{Name: graphSection, Data: data}}
			var buf bytes.Buffer
			require.NoError(t, driver.WriteBlob(&buf, &b))
			data = buf.Bytes()
		}
		cm, err := p.ImportModel(ctx, bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		require.NoError(t, cm.Close())
	})
}
