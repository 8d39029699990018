package clbackend

import (
	"bytes"
	"context"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// packedModel is two 3x3 convolutions of 32 channels on 24x24 (weights
// of 36 KiB, over elideMin), which the planner repacks for its
// convolution kernels, and a small pointwise one.
func packedModel(t *testing.T) *graph.Model {
	f := &fastBuilder{t: t, values: map[string]*tensor.Tensor{}}
	x := f.x("x", 1, 32, 24, 24)
	pads := graph.Attrs{"pads": []int64{1, 1, 1, 1}}
	c1 := graph.NewNode("Conv", "conv1", []graph.Output{x, f.c(32, 32, 3, 3), f.c(32)}, pads, 1)
	c2 := graph.NewNode("Conv", "conv2", []graph.Output{c1.Out(0), f.c(32, 32, 3, 3), f.c(32)}, pads, 1)
	pw := graph.NewNode("Conv", "pointwise", []graph.Output{c2.Out(0), f.c(8, 32, 1, 1)}, nil, 1)
	return graph.NewModel("packed", f.params, []*graph.Node{graph.NewResult("y", pw.Out(0))})
}

// elidedNodes decodes a blob's graph and returns how many of its
// Constants are elided.
func elidedNodes(t *testing.T, blob []byte, arch string) int {
	t.Helper()
	b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, arch)
	require.NoError(t, err)
	data, ok := b.Section(graphSection)
	require.True(t, ok)
	var m graph.Model
	require.NoError(t, m.UnmarshalBinary(data))
	nodes, err := m.Nodes()
	require.NoError(t, err)
	n := 0
	for _, nd := range nodes {
		if nd.Elided() {
			n++
		}
	}
	return n
}

// TestGPUModelCacheElided: the model cache's blob leaves out the weights
// the plan record holds packed, imports with its record (identical
// outputs, the same runtime model, exported and imported again), and a
// record that cannot be used on such a blob is an ErrIncompatible import
// and a compile again through the model cache, which replaces the blob.
func TestGPUModelCacheElided(t *testing.T) {
	ctx := context.Background()
	m := packedModel(t)
	src := newGPU(t)
	arch := src.devices[src.def].architecture
	cm, err := src.CompileModel(ctx, m, nil)
	require.NoError(t, err)
	defer cm.Close()
	want := gpuRun(t, cm)
	full := gpuExport(t, cm)
	var lean bytes.Buffer
	require.NoError(t, cm.(driver.CacheExporter).ExportCached(&lean))
	assert.Zero(t, elidedNodes(t, full, arch), "Export keeps every weight")
	require.Positive(t, elidedNodes(t, lean.Bytes(), arch), "the cache blob leaves the packed weights out")
	assert.Less(t, lean.Len()+2*32*32*9*4-1024, len(full), "the cache blob is smaller by the weights left out")

	im, err := newGPU(t).ImportModel(ctx, bytes.NewReader(lean.Bytes()), nil)
	require.NoError(t, err)
	defer im.Close()
	assert.Equal(t, want, gpuRun(t, im), "outputs must be identical")
	assert.Equal(t, runtimeRows(t, cm), runtimeRows(t, im))
	again := gpuExport(t, im) // HETERO re-exports imported parts
	assert.Positive(t, elidedNodes(t, again, arch))
	im2, err := newGPU(t).ImportModel(ctx, bytes.NewReader(again), nil)
	require.NoError(t, err)
	defer im2.Close()
	assert.Equal(t, want, gpuRun(t, im2), "outputs must be identical")

	// Without its record the blob cannot be planned: another
	// configuration, or a record of another version.
	_, err = newGPU(t).ImportModel(ctx, bytes.NewReader(lean.Bytes()), map[string]string{driver.KeyDisableTransformations: "YES"})
	require.ErrorIs(t, err, driver.ErrIncompatible)
	assert.Contains(t, err.Error(), "compile the model again")
	stale := func(blob []byte) []byte {
		b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, arch)
		require.NoError(t, err)
		for i := range b.Sections {
			if b.Sections[i].Name == planSection {
				rec := bytes.Clone(b.Sections[i].Data)
				binary.LittleEndian.PutUint32(rec, planRecordVersion+1)
				b.Sections[i].Data = rec
			}
		}
		var out bytes.Buffer
		require.NoError(t, driver.WriteBlob(&out, b))
		return out.Bytes()
	}
	dst := newGPU(t)
	_, err = dst.ImportModel(ctx, bytes.NewReader(stale(lean.Bytes())), nil)
	require.ErrorIs(t, err, driver.ErrIncompatible)
	assert.Equal(t, int64(1), dst.ProgramCacheStats().PlanRecordsRefused)
	// Export's blob plans again instead.
	im3, err := dst.ImportModel(ctx, bytes.NewReader(stale(full)), nil)
	require.NoError(t, err)
	defer im3.Close()
	assert.Equal(t, want, gpuRun(t, im3), "outputs must be identical")

	// Through the model cache: the blob is the lean one; a stale one is
	// compiled again and replaced.
	dir := t.TempDir()
	core := driver.NewCore()
	defer core.Close()
	props := plugin.Props(plugin.WithCacheDir(dir))
	compile := func(loaded string) {
		t.Helper()
		c, err := core.CompileModel(ctx, m, DeviceName, props)
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, loaded, gpuProp(t, c, driver.KeyLoadedFromCache))
		assert.Equal(t, want, gpuRun(t, c), "outputs must be identical")
	}
	compile("NO")
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	require.Len(t, blobs, 1)
	cached, err := os.ReadFile(blobs[0])
	require.NoError(t, err)
	require.Positive(t, elidedNodes(t, cached, arch), "CACHE_DIR holds the lean blob")
	compile("YES")
	require.NoError(t, os.WriteFile(blobs[0], stale(cached), 0o600))
	compile("NO")
	compile("YES")
}

// TestGPUImportWeightsInPlace: on a device that shares host memory the
// imported plan's packed weights are used where the import mapped them
// (CL_MEM_USE_HOST_PTR), elsewhere copied; either way removing the blob's
// file, or replacing it as the model cache does (a new file renamed over
// it), changes nothing, and a weight another model shares outlives the
// model whose import read it.
func TestGPUImportWeightsInPlace(t *testing.T) {
	needOpenCL(t)
	ctx := context.Background()
	m := packedModel(t)
	dir := t.TempDir()
	core := driver.NewCore()
	defer core.Close()
	props := plugin.Props(plugin.WithCacheDir(dir))
	first, err := core.CompileModel(ctx, m, DeviceName, props)
	require.NoError(t, err)
	want := gpuRun(t, first)
	require.NoError(t, first.Close())
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	require.Len(t, blobs, 1)
	blob, err := os.ReadFile(blobs[0])
	require.NoError(t, err)

	a, err := core.CompileModel(ctx, m, DeviceName, props)
	require.NoError(t, err)
	assert.Equal(t, "YES", gpuProp(t, a, driver.KeyLoadedFromCache))
	pl, err := core.Plugin(DeviceName)
	require.NoError(t, err)
	gpu := pl.(*Plugin)
	cc := a.(*CompiledModel).ctx
	inPlace := 0
	cc.mu.Lock()
	for _, ws := range cc.weights {
		for _, w := range ws {
			if w.mem != nil {
				inPlace++
				assert.NotZero(t, w.buf.Flags()&cl.MemUseHostPtr)
			}
		}
	}
	cc.mu.Unlock()
	if gpu.devices[gpu.def].inPlace > 0 {
		assert.Positive(t, inPlace, "%s shares host memory: the packed weights are used in place", gpu.devices[gpu.def].name())
	} else {
		assert.Zero(t, inPlace, "%s copies its weights", gpu.devices[gpu.def].name())
	}

	require.NoError(t, os.WriteFile(blobs[0]+".new", bytes.Repeat([]byte{0xff}, len(blob)), 0o600))
	require.NoError(t, os.Rename(blobs[0]+".new", blobs[0]))
	runtime.GC()
	assert.Equal(t, want, gpuRun(t, a), "the replaced file is not read after the import")
	require.NoError(t, os.Remove(blobs[0]))
	runtime.GC()
	assert.Equal(t, want, gpuRun(t, a), "the removed file is not read after the import")

	b, err := gpu.ImportModel(ctx, bytes.NewReader(blob), nil)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	runtime.GC()
	runtime.GC()
	assert.Equal(t, want, gpuRun(t, b), "the weights b shares outlive a")
	require.NoError(t, b.Close())
	assert.Empty(t, cc.weights, "every weight released")
	assert.Zero(t, cc.weightBytes.Load())
}

// TestGPUImportInPlaceLeakedModel: a model whose weights are used in
// place and that is dropped without Close leaks its record's memory; the
// garbage collector finding its Pinner still pinned was a fatal panic.
// The blob is read into memory (an import from a reader); a model
// imported from the model cache maps the file and pins nothing, and
// leaking it (mapped) leaks the mapping.
func TestGPUImportInPlaceLeakedModel(t *testing.T) {
	needOpenCL(t)
	ctx := context.Background()
	m := packedModel(t)
	dir := t.TempDir()
	pinned := func() int {
		n := 0
		pinnedHost.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := pinned()
	func() {
		core := driver.NewCore()
		props := plugin.Props(plugin.WithCacheDir(dir))
		first, err := core.CompileModel(ctx, m, DeviceName, props)
		require.NoError(t, err)
		require.NoError(t, first.Close())
		blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
		require.NoError(t, err)
		require.Len(t, blobs, 1)
		data, err := os.ReadFile(blobs[0])
		require.NoError(t, err)
		a, err := core.ImportModel(ctx, bytes.NewReader(data), DeviceName, nil)
		require.NoError(t, err)
		require.Nil(t, a.(*CompiledModel).blob, "read: not mapped")
		// Shares a's weights (the same content): maps, pins nothing.
		mapped, err := core.CompileModel(ctx, m, DeviceName, props)
		require.NoError(t, err)
		require.Equal(t, "YES", gpuProp(t, mapped, driver.KeyLoadedFromCache))
		require.NotNil(t, mapped.(*CompiledModel).blob, "imported from the model cache: mapped")
		pl, err := core.Plugin(DeviceName)
		require.NoError(t, err)
		if d := pl.(*Plugin).devices[pl.(*Plugin).def]; d.inPlace <= 0 {
			t.Skipf("%s does not share host memory (CL_DEVICE_HOST_UNIFIED_MEMORY): no weights are used in place; POCL (make deps) does", d.name())
		}
		_ = core.Close() // a and mapped are never closed
	}()
	for range 3 {
		runtime.GC()
	}
	assert.Greater(t, pinned(), before, "the leaked model's record stays pinned, reachable")
}

// TestGPUModelCacheRuntimeOnlyKeys: a key that changes how requests run
// but not what compiling makes (GPU_WAIT_SPIN_US, GPU_COMMAND_BUFFERS)
// stays out of the model cache's key and of the recorded plan's check: a
// model compiled under one value imports from the cache, with its plan
// record, under another, and runs with the value in force now (given to
// CompileModel or set on the device); a key that changes compilation
// still compiles anew. CACHING_PROPERTIES lists the keys that count.
func TestGPUModelCacheRuntimeOnlyKeys(t *testing.T) {
	ctx := context.Background()
	m := packedModel(t)
	dir := t.TempDir()
	core, gpu := coreGPU(t)

	caching, err := core.Property(DeviceName, driver.KeyCachingProperties)
	require.NoError(t, err)
	keys := strings.Fields(caching)
	assert.Contains(t, keys, driver.KeyInferencePrecisionHint)
	assert.Contains(t, keys, driver.KeyDisableTransformations)
	for _, k := range []string{KeyWaitSpin, KeyCommandBuffers, driver.KeyPerformanceHint, driver.KeyCacheDir} {
		assert.NotContains(t, keys, k)
	}

	var want map[string][]byte
	compile := func(props map[string]string, loaded, spin string) {
		t.Helper()
		before := gpu.ProgramCacheStats()
		all := plugin.Props(plugin.WithCacheDir(dir))
		maps.Copy(all, props)
		c, err := core.CompileModel(ctx, m, DeviceName, all)
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, loaded, gpuProp(t, c, driver.KeyLoadedFromCache), "%v", props)
		assert.Equal(t, spin, gpuProp(t, c, KeyWaitSpin), "the value in force now, not the blob's")
		got := gpuRun(t, c)
		if want == nil {
			want = got
		}
		assert.Equal(t, want, got, "outputs must be identical")
		if loaded == "YES" {
			after := gpu.ProgramCacheStats()
			assert.Equal(t, before.PlansRestored+1, after.PlansRestored, "the recorded plan is used")
			assert.Equal(t, before.PlanRecordsRefused, after.PlanRecordsRefused)
		}
	}
	blobs := func() int {
		t.Helper()
		b, err := filepath.Glob(filepath.Join(dir, "*.blob"))
		require.NoError(t, err)
		return len(b)
	}
	compile(map[string]string{KeyWaitSpin: "0", KeyCommandBuffers: "YES"}, "NO", "0")
	compile(map[string]string{KeyWaitSpin: "500", KeyCommandBuffers: "NO"}, "YES", "500")
	require.NoError(t, core.SetProperties(DeviceName, map[string]string{KeyWaitSpin: "250"}))
	compile(nil, "YES", "250")
	assert.Equal(t, 1, blobs(), "one blob serves every runtime-only value")
	compile(map[string]string{driver.KeyDisableTransformations: "YES"}, "NO", "250")
	assert.Equal(t, 2, blobs(), "a key that changes compilation keys another blob")
}

// TestGPUModelCacheBackground: with an empty CACHE_DIR and
// CACHE_MODE=OPTIMIZE_SPEED the program binaries and the model cache's
// blob are written after CompileModel returns, while the model already
// runs inferences; Close waits for them, and the next compile imports the
// blob and loads every program.
func TestGPUModelCacheBackground(t *testing.T) {
	ctx := context.Background()
	m := packedModel(t)
	dir := t.TempDir()
	core, gpu := coreGPU(t)
	props := plugin.Props(plugin.WithCacheDir(dir))
	props[driver.KeyCacheMode] = driver.CacheModeOptimizeSpeed

	cm, err := core.CompileModel(ctx, m, DeviceName, props)
	require.NoError(t, err)
	want := gpuRun(t, cm) // beside the background work
	for range 3 {
		assert.Equal(t, want, gpuRun(t, cm))
	}
	require.NoError(t, cm.Close())
	s := gpu.ProgramCacheStats()
	assert.Positive(t, s.SourceBuilds)
	assert.Equal(t, s.SourceBuilds, s.BinaryWrites, "every program's binary written by Close: %+v", s)
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	require.NoError(t, err)
	assert.Len(t, blobs, 1, "the blob is in place when Close returns")
	tmp, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, tmp)

	fresh := driver.NewCore()
	defer fresh.Close()
	im, err := fresh.CompileModel(ctx, m, DeviceName, props)
	require.NoError(t, err)
	defer im.Close()
	assert.Equal(t, "YES", gpuProp(t, im, driver.KeyLoadedFromCache))
	assert.Equal(t, want, gpuRun(t, im), "outputs must be identical")
}

// coreGPU returns a Core, closed when the test ends, and its GPU plugin.
func coreGPU(t *testing.T) (*driver.Core, *Plugin) {
	t.Helper()
	needOpenCL(t)
	core := driver.NewCore()
	t.Cleanup(func() { core.Close() })
	pl, err := core.Plugin(DeviceName)
	require.NoError(t, err)
	return core, pl.(*Plugin)
}
