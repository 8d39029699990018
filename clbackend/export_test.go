package clbackend

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/faultinject"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func gpuExport(t *testing.T, cm driver.CompiledModel) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, cm.(driver.Exporter).Export(&buf))
	return buf.Bytes()
}

// gpuRun infers once with seeded inputs and returns each output's bytes.
func gpuRun(t *testing.T, cm driver.CompiledModel) map[string][]byte {
	t.Helper()
	req, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer req.Close()
	rng := rand.New(rand.NewPCG(4, 2))
	for _, in := range cm.Inputs() {
		s, ok := in.Shape.ToShape()
		require.True(t, ok, "test models have static inputs")
		x := tensor.MustNew(in.Type, s)
		if in.Type == tensor.F32 {
			for i := range x.F32() {
				x.F32()[i] = rng.Float32()*2 - 1
			}
		}
		require.NoError(t, req.SetTensor(in.Name, x))
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

func gpuProp(t *testing.T, cm driver.CompiledModel, key string) string {
	t.Helper()
	v, err := cm.Property(key)
	require.NoError(t, err, key)
	return v
}

func TestGPUExportImport(t *testing.T) {
	ctx := context.Background()
	models := []struct {
		name string
		m    func(t testing.TB) *graph.Model
	}{
		{"chain", chainModel},
		{"parameter to result", func(testing.TB) *graph.Model {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 2))
			return graph.NewModel("identity", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", x.Out(0))})
		}},
		{"constant to result", func(t testing.TB) *graph.Model {
			v, err := tensor.FromF32(tensor.Shape{3}, []float32{1, -2, 3})
			require.NoError(t, err)
			c := graph.NewConstant("c", v)
			return graph.NewModel("const", nil, []*graph.Node{graph.NewResult("y", c.Out(0))})
		}},
	}
	speed := map[string]string{driver.KeyCacheMode: driver.CacheModeOptimizeSpeed}
	size := map[string]string{driver.KeyCacheMode: driver.CacheModeOptimizeSize}
	for _, tc := range models {
		// OPTIMIZE_SPEED: every program travels as a device binary.
		t.Run(tc.name+"/speed", func(t *testing.T) {
			src := newGPU(t)
			cm, err := src.CompileModel(ctx, tc.m(t), speed)
			require.NoError(t, err)
			defer cm.Close()
			blob := gpuExport(t, cm)

			// A fresh plugin has an empty program cache: the import must
			// take every program from the blob.
			dst := newGPU(t)
			im, err := dst.ImportModel(ctx, bytes.NewReader(blob), nil)
			require.NoError(t, err)
			defer im.Close()
			s := dst.ProgramCacheStats()
			assert.Zero(t, s.SourceBuilds, "import built programs from source: %+v", s)
			assert.Equal(t, src.ProgramCacheStats().SourceBuilds, s.BinaryLoads, "one binary per program: %+v", s)
			assert.Equal(t, driver.CacheModeOptimizeSpeed, gpuProp(t, im, driver.KeyCacheMode), "the mode travels in the blob")

			assert.Equal(t, cm.Inputs(), im.Inputs())
			assert.Equal(t, cm.Outputs(), im.Outputs())
			assert.Equal(t, "NO", gpuProp(t, cm, driver.KeyLoadedFromCache))
			assert.Equal(t, "YES", gpuProp(t, im, driver.KeyLoadedFromCache))
			assert.Equal(t, gpuRun(t, cm), gpuRun(t, im), "outputs must be identical")
		})
		// OPTIMIZE_SIZE: no device code, so the blob asks the driver for
		// nothing (POCL compiled every kernel again to hand out a
		// binary) and is the same bytes from every compile of the model;
		// the import builds the programs from source.
		t.Run(tc.name+"/size", func(t *testing.T) {
			src := newGPU(t)
			cm, err := src.CompileModel(ctx, tc.m(t), size)
			require.NoError(t, err)
			defer cm.Close()
			faultinject.ArmMatching("clGetProgramInfo(CL_PROGRAM_BINAR", 0, 0)
			blob := gpuExport(t, cm)
			asked, _ := faultinject.Disarm()
			assert.Zero(t, asked, "an OPTIMIZE_SIZE export asked the driver for program binaries")
			again, err := src.CompileModel(ctx, tc.m(t), size)
			require.NoError(t, err)
			defer again.Close()
			assert.Equal(t, blob, gpuExport(t, again), "two compiles of one model export different blobs")
			b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, src.devices[src.def].architecture)
			require.NoError(t, err)
			for _, sec := range b.Sections {
				assert.Contains(t, []string{graphSection, planSection, driver.PaddingSection}, sec.Name, "an OPTIMIZE_SIZE blob holds the graph and the plan (aligned), no device code")
			}

			dst := newGPU(t)
			im, err := dst.ImportModel(ctx, bytes.NewReader(blob), nil)
			require.NoError(t, err)
			defer im.Close()
			s := dst.ProgramCacheStats()
			assert.Zero(t, s.BinaryLoads, "%+v", s)
			assert.Equal(t, src.ProgramCacheStats().SourceBuilds, s.SourceBuilds, "each program built once from source: %+v", s)
			assert.Equal(t, driver.CacheModeOptimizeSize, gpuProp(t, im, driver.KeyCacheMode))
			assert.Equal(t, "YES", gpuProp(t, im, driver.KeyLoadedFromCache))
			assert.Equal(t, gpuRun(t, cm), gpuRun(t, im), "outputs must be identical")
		})
	}
}

// TestCacheModeDefault: CACHE_MODE is OPTIMIZE_SIZE where the driver makes
// binaries only on request (POCL), OPTIMIZE_SPEED elsewhere; a bad value
// is refused by name.
func TestCacheModeDefault(t *testing.T) {
	p := newGPU(t)
	d := p.devices[p.def]
	ver, err := d.cl.Version()
	require.NoError(t, err)
	want := driver.CacheModeOptimizeSpeed
	if strings.Contains(ver, "PoCL") {
		want = driver.CacheModeOptimizeSize
	}
	got, err := p.Property(driver.KeyCacheMode)
	require.NoError(t, err)
	assert.Equal(t, want, got, "device %s (%s)", d.fullName, ver)
	_, err = p.CompileModel(context.Background(), chainModel(t), map[string]string{driver.KeyCacheMode: "FASTEST"})
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), driver.KeyCacheMode)
	assert.Contains(t, err.Error(), driver.CacheModeOptimizeSize)
}

func TestGPUImportRejects(t *testing.T) {
	p := newGPU(t)
	cm, err := p.CompileModel(context.Background(), chainModel(t), map[string]string{driver.KeyCacheMode: driver.CacheModeOptimizeSpeed})
	require.NoError(t, err)
	defer cm.Close()
	blob := gpuExport(t, cm)
	d := p.devices[p.def]

	b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, d.architecture)
	require.NoError(t, err)
	b.Header.Architecture = "gfx0000"
	var other bytes.Buffer
	require.NoError(t, driver.WriteBlob(&other, b))
	_, err = p.ImportModel(context.Background(), bytes.NewReader(other.Bytes()), nil)
	require.ErrorIs(t, err, driver.ErrIncompatible)
	assert.Contains(t, err.Error(), `"gfx0000"`)
	assert.Contains(t, err.Error(), `"`+d.architecture+`"`)

	for n := 0; n < len(blob); n += 1 + len(blob)/200 {
		_, err := p.ImportModel(context.Background(), bytes.NewReader(blob[:n]), nil)
		require.ErrorIs(t, err, driver.ErrCorrupt, "prefix %d of %d", n, len(blob))
	}

	// A program binary the driver refuses is rebuilt from source.
	b.Header.Architecture = d.architecture
	for i := range b.Sections {
		if b.Sections[i].Name != graphSection {
			b.Sections[i].Data = append([]byte{0}, "not a binary"...)
		}
	}
	var bad bytes.Buffer
	require.NoError(t, driver.WriteBlob(&bad, b))
	fresh := newGPU(t)
	im, err := fresh.ImportModel(context.Background(), bytes.NewReader(bad.Bytes()), nil)
	require.NoError(t, err)
	defer im.Close()
	assert.Positive(t, fresh.ProgramCacheStats().SourceBuilds)
	assert.Equal(t, gpuRun(t, cm), gpuRun(t, im))
}

func TestGPUModelCache(t *testing.T) {
	needOpenCL(t)
	dir := t.TempDir()
	core := driver.NewCore()
	defer core.Close()
	props := plugin.Props(plugin.WithCacheDir(dir))
	m := chainModel(t)
	var outs []map[string][]byte
	for _, want := range []string{"NO", "YES"} {
		cm, err := core.CompileModel(context.Background(), m, DeviceName, props)
		require.NoError(t, err, "the GPU plugin needs an OpenCL device; for a CPU one run `apt-get install pocl-opencl-icd`")
		assert.Equal(t, want, gpuProp(t, cm, driver.KeyLoadedFromCache))
		outs = append(outs, gpuRun(t, cm))
		require.NoError(t, cm.Close())
	}
	assert.Equal(t, outs[0], outs[1])
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	require.Len(t, blobs, 1)

	require.NoError(t, os.WriteFile(blobs[0], []byte("garbage"), 0o644))
	cm, err := core.CompileModel(context.Background(), m, DeviceName, props)
	require.NoError(t, err)
	assert.Equal(t, "NO", gpuProp(t, cm, driver.KeyLoadedFromCache), "a corrupt blob is recompiled")
	require.NoError(t, cm.Close())
	cm, err = core.CompileModel(context.Background(), m, DeviceName, props)
	require.NoError(t, err)
	assert.Equal(t, "YES", gpuProp(t, cm, driver.KeyLoadedFromCache), "and replaced")
	require.NoError(t, cm.Close())
}
