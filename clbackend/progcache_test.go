package clbackend

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// chainPrograms is how many distinct programs the cache model needs: the
// generated chain Relu -> Add -> Mul (twice, one program: a chain's source
// depends on its ops only), eltwise_binary's add and eltwise_unary's
// sigmoid.
const chainPrograms = 3

// cacheModel is chainModel with v = Mul(Add(Relu(w), c2), s2), a second
// chain of the same ops with other constants, and u = Sigmoid(x).
func cacheModel(t testing.TB) *graph.Model {
	t.Helper()
	m := chainModel(t)
	w := m.Parameters[1]
	cv, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	relu := graph.NewNode("Relu", "relu2", []graph.Output{w.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add2", []graph.Output{relu.Out(0), graph.NewConstant("c2", cv).Out(0)}, nil, 1)
	mul := graph.NewNode("Mul", "mul2", []graph.Output{graph.NewConstant("s2", tensor.Scalar(float32(3))).Out(0), add.Out(0)}, nil, 1)
	sig := graph.NewNode("Sigmoid", "sigmoid", []graph.Output{m.Parameters[0].Out(0)}, nil, 1)
	m.Results = append(m.Results, graph.NewResult("v", mul.Out(0)), graph.NewResult("u", sig.Out(0)))
	return m
}

// compileInfer compiles the cache model on p with props, runs it once and
// closes everything.
func compileInfer(t testing.TB, p *Plugin, props map[string]string) {
	t.Helper()
	cm, err := p.CompileModel(context.Background(), cacheModel(t), props)
	require.NoError(t, err)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, r.Infer(context.Background()))
	require.NoError(t, r.Close())
	require.NoError(t, cm.Close())
}

func TestProgramCacheMemory(t *testing.T) {
	p := newGPU(t)
	compileInfer(t, p, nil)
	s := p.ProgramCacheStats()
	assert.Equal(t, int64(chainPrograms), s.SourceBuilds, "first compile builds each program once: %+v", s)
	// The chain's program is used twice: the second use is a hit.
	hits := s.MemoryHits
	assert.Equal(t, int64(1), hits)
	compileInfer(t, p, nil)
	s = p.ProgramCacheStats()
	assert.Equal(t, int64(chainPrograms), s.SourceBuilds, "second compile builds nothing: %+v", s)
	assert.Equal(t, hits+chainPrograms+1, s.MemoryHits)
	assert.Zero(t, s.BinaryLoads+s.BinaryWrites, "no CACHE_DIR, no files")
}

func TestProgramCacheDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	// OPTIMIZE_SIZE (POCL's default) writes no binaries, and still loads
	// what is there.
	size := map[string]string{driver.KeyCacheDir: dir, driver.KeyCacheMode: driver.CacheModeOptimizeSize}
	p0 := newGPU(t)
	compileInfer(t, p0, size)
	s := p0.ProgramCacheStats()
	assert.Zero(t, s.BinaryWrites, "%+v", s)
	files, err := filepath.Glob(filepath.Join(dir, "clinfer-*.clbin"))
	require.NoError(t, err)
	assert.Empty(t, files)
	require.NoError(t, p0.Close())

	props := map[string]string{driver.KeyCacheDir: dir, driver.KeyCacheMode: driver.CacheModeOptimizeSpeed}

	p1 := newGPU(t)
	compileInfer(t, p1, props)
	s = p1.ProgramCacheStats()
	assert.Equal(t, int64(chainPrograms), s.SourceBuilds)
	assert.Equal(t, int64(chainPrograms), s.BinaryWrites, "%+v", s)
	files, err = filepath.Glob(filepath.Join(dir, "clinfer-*.clbin"))
	require.NoError(t, err)
	assert.Len(t, files, chainPrograms)
	tmp, _ := filepath.Glob(filepath.Join(dir, ".clinfer-*"))
	assert.Empty(t, tmp, "no temporary files left behind")
	require.NoError(t, p1.Close())

	// A fresh plugin loads every program from the binaries.
	p2 := newGPU(t)
	compileInfer(t, p2, props)
	s = p2.ProgramCacheStats()
	assert.Zero(t, s.SourceBuilds, "%+v", s)
	assert.Equal(t, int64(chainPrograms), s.BinaryLoads)
	require.NoError(t, p2.Close())

	// OPTIMIZE_SIZE loads the binaries that are there.
	p2s := newGPU(t)
	compileInfer(t, p2s, size)
	s = p2s.ProgramCacheStats()
	assert.Zero(t, s.SourceBuilds, "%+v", s)
	assert.Equal(t, int64(chainPrograms), s.BinaryLoads)
	require.NoError(t, p2s.Close())

	// A corrupted file is rebuilt from source and rewritten.
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(files[0], b, 0o644))
	require.NoError(t, os.WriteFile(files[1], []byte("garbage"), 0o644))
	p3 := newGPU(t)
	compileInfer(t, p3, props)
	s = p3.ProgramCacheStats()
	assert.Equal(t, int64(2), s.BinaryRejects, "%+v", s)
	assert.Equal(t, int64(2), s.SourceBuilds)
	assert.Equal(t, int64(chainPrograms-2), s.BinaryLoads)
	for _, f := range files[:2] {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = decodeBinary(b)
		assert.NoError(t, err, "%s was rewritten", f)
	}
}

// TestProgramKey: the disk key changes with every ingredient.
func TestProgramKey(t *testing.T) {
	d := &device{architecture: "arch", driver: "1.0"}
	base := programKey(d, "src", "-DX")
	assert.Len(t, base, 64)
	assert.NotEqual(t, base, programKey(d, "src2", "-DX"))
	assert.NotEqual(t, base, programKey(d, "src", "-DY"))
	assert.NotEqual(t, base, programKey(&device{architecture: "arch2", driver: "1.0"}, "src", "-DX"))
	assert.NotEqual(t, base, programKey(&device{architecture: "arch", driver: "1.1"}, "src", "-DX"))
	assert.Equal(t, base, programKey(&device{architecture: "arch", driver: "1.0"}, "src", "-DX"))
}

// TestNoLeaks: a compile/infer/close cycle leaves no OpenCL object behind,
// whichever order things are closed in.
func TestNoLeaks(t *testing.T) {
	needOpenCL(t)
	cases := []struct {
		name  string
		cycle func(t *testing.T)
	}{
		{"InOrder", func(t *testing.T) {
			p, err := New()
			require.NoError(t, err)
			compileInfer(t, p, map[string]string{driver.KeyEnableProfiling: "YES"})
			require.NoError(t, p.Close())
		}},
		{"PluginFirst", func(t *testing.T) {
			p, err := New()
			require.NoError(t, err)
			cm, err := p.CompileModel(context.Background(), chainModel(t), nil)
			require.NoError(t, err)
			require.NoError(t, p.Close())
			r, err := cm.CreateInferRequest() // the model outlives the plugin
			require.NoError(t, err)
			require.NoError(t, r.Infer(context.Background()))
			_, err = cm.CreateInferRequest() // left for cm.Close to release
			require.NoError(t, err)
			require.NoError(t, cm.Close())
		}},
		{"UnwritableCacheDir", func(t *testing.T) {
			p, err := New()
			require.NoError(t, err)
			// OPTIMIZE_SPEED: program binaries go to CACHE_DIR (POCL's
			// default, OPTIMIZE_SIZE, writes none there to fail).
			cm, err := p.CompileModel(context.Background(), chainModel(t), map[string]string{
				driver.KeyCacheDir: "/dev/null/x", driver.KeyCacheMode: driver.CacheModeOptimizeSpeed})
			require.NoError(t, err, "an unwritable CACHE_DIR does not fail the compile")
			// Close waits for the binaries, written in the background, and
			// returns what failed, naming the file.
			err = cm.Close()
			assert.ErrorContains(t, err, "writing the program binary /dev/null/x/")
			assert.Positive(t, p.ProgramCacheStats().WriteErrors)
			require.NoError(t, p.Close())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := cl.LiveObjects()
			tc.cycle(t)
			assert.Equal(t, before, cl.LiveObjects(), "live OpenCL objects after the cycle")
		})
	}
}

// BenchmarkProgramBuild compares building the relu program from source with
// loading it from a cached binary (POCL also keeps its own kernel cache; set
// POCL_KERNEL_CACHE=0 to measure a cold source build).
func BenchmarkProgramBuild(b *testing.B) {
	p := newGPU(b)
	d := p.devices[0]
	sc, err := d.context()
	require.NoError(b, err)
	defer sc.release()
	ctx := sc.cl
	k := kernels.MustLookup("relu_f32")
	src, err := k.Source()
	require.NoError(b, err)
	opts := buildOptions + " " + k.Options
	b.Run("source", func(b *testing.B) {
		for b.Loop() {
			prog, err := buildSource(d, ctx, k.File, src, opts)
			require.NoError(b, err)
			require.NoError(b, prog.Close())
		}
	})
	b.Run("cached-binary", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "prog.clbin")
		prog, err := buildSource(d, ctx, k.File, src, opts)
		require.NoError(b, err)
		require.NoError(b, writeBinary(prog, d, path))
		require.NoError(b, prog.Close())
		for b.Loop() {
			prog, err := loadBinary(d, ctx, path, opts)
			require.NoError(b, err)
			require.NoError(b, prog.Close())
		}
	})
}
