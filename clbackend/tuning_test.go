package clbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/tune"
	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// tuningModel is a small model with a node of three hot families: a 3x3
// convolution, a GEMM (1x1 convolution) and a broadcast Add.
func tuningModel(t *testing.T) (*graph.Model, map[string]*tensor.Tensor) {
	f := &fastBuilder{t: t, values: map[string]*tensor.Tensor{}}
	x := f.x("x", 1, 4, 13, 17)
	conv := graph.NewNode("Conv", "conv", []graph.Output{x, f.c(8, 4, 3, 3), f.c(8)}, graph.Attrs{"pads": []int64{1, 1, 1, 1}}, 1)
	pw := graph.NewNode("Conv", "pointwise", []graph.Output{conv.Out(0), f.c(12, 8, 1, 1)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{pw.Out(0), f.x("b", 12, 1, 1)}, nil, 1)
	return graph.NewModel("tuning", f.params, []*graph.Node{graph.NewResult("y", add.Out(0))}), f.values
}

// choices returns the kernel choices of cm by node name.
func choices(t *testing.T, cm driver.CompiledModel) map[string]TunedOp {
	t.Helper()
	out := map[string]TunedOp{}
	for _, c := range cm.(*CompiledModel).KernelChoices() {
		out[c.Node] = c
	}
	return out
}

// captureWarnings replaces warnf for the test and returns what it saw.
func captureWarnings(t *testing.T) *[]string {
	var mu sync.Mutex
	var got []string
	old := warnf
	warnf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf(format, args...))
	}
	t.Cleanup(func() { warnf = old })
	return &got
}

// forgetTuningFiles drops the process's open tuning caches, as a new
// process would start without them.
func forgetTuningFiles() {
	dbs.Lock()
	dbs.m = nil
	dbs.Unlock()
}

// TestTuningRecordsAndReuses tunes a model (GPU_TUNING_MODE=FAST): every
// hot node's choice is timed on the device, the outputs match the CPU,
// and the choices land in the tuning file; a later compile with no
// tuning property (a new process: the file read afresh) runs the same
// variants from the file without timing anything.
func TestTuningRecordsAndReuses(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m, ins := tuningModel(t)
	want, _ := inferAll(t, cpu, m, ins)
	file := filepath.Join(t.TempDir(), "tuning.json")

	got, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningMode: "FAST", KeyTuningFile: file})
	assertOutputsClose(t, want, got, 1e-4, 1e-3)
	tuned := choices(t, cm)
	for _, node := range []string{"conv", "pointwise", "add"} {
		c, ok := tuned[node]
		require.True(t, ok, "node %s made no kernel choice", node)
		assert.Equal(t, "tuned", c.Source, node)
		assert.Positive(t, c.Ms, node)
		assert.GreaterOrEqual(t, c.Tried, 2, "%s: more than the heuristic was timed", node)
		assert.LessOrEqual(t, c.Tried, tune.Fast.Budget().Candidates, node)
	}
	assert.Equal(t, "conv", strings.Fields(tuned["conv"].Key)[0])
	db, err := tune.Open(file, tuningDevice(gpu.devices[gpu.def]))
	require.NoError(t, err, "the tuning file is valid")
	assert.Equal(t, 3, db.Len())

	forgetTuningFiles()
	got, cm = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: file})
	assertOutputsClose(t, want, got, 1e-4, 1e-3)
	for node, c := range choices(t, cm) {
		assert.Equal(t, "recorded", c.Source, node)
		assert.Equal(t, tuned[node].Variant, c.Variant, node)
		assert.Zero(t, c.Tried, "%s: nothing timed", node)
	}
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	assert.Equal(t, tuned["add"].Variant, rm.Node("add").RT.Extra[KeyKernelVariant])
}

// TestTuningUnderCacheDir keeps the tuning file under CACHE_DIR, named by
// the device, and a later compile with CACHE_DIR alone uses it.
func TestTuningUnderCacheDir(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	dir := t.TempDir()
	_, _ = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningMode: "FAST", driver.KeyCacheDir: dir})
	path := tune.FileName(dir, tuningDevice(gpu.devices[gpu.def]))
	require.FileExists(t, path)
	forgetTuningFiles()
	_, cm := inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyCacheDir: dir})
	for node, c := range choices(t, cm) {
		assert.Equal(t, "recorded", c.Source, node)
	}
}

// TestTuningFileReportedOnce checks that a corrupt tuning file is reported
// once per process (not at every compile), never trusted, and rebuilt by
// the next tuning.
func TestTuningFileReportedOnce(t *testing.T) {
	gpu := newGPU(t)
	warnings := captureWarnings(t)
	forgetTuningFiles()
	m, ins := tuningModel(t)
	file := filepath.Join(t.TempDir(), "tuning.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"format": "clinfer-tuning-1", "device": {"arch`), 0o644))
	for range 2 {
		_, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: file})
		for node, c := range choices(t, cm) {
			assert.Equal(t, "heuristic", c.Source, node)
		}
	}
	require.Len(t, *warnings, 1, "reported once: %v", *warnings)
	assert.Contains(t, (*warnings)[0], file)
	assert.Contains(t, (*warnings)[0], "corrupt or truncated")
	_, _ = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: file, KeyTuningMode: "FAST"})
	db, err := tune.Open(file, tuningDevice(gpu.devices[gpu.def]))
	require.NoError(t, err, "tuning rebuilt the file")
	assert.Equal(t, 3, db.Len())
}

// TestTunerRefusesUnlaunchable simulates a device whose kernels take work
// groups of at most 128 items (CL_KERNEL_WORK_GROUP_SIZE): exhaustive
// tuning refuses the 256-item tiled variants instead of failing the
// compile, and a forced or recorded variant the device cannot launch falls
// back to the heuristic one.
func TestTunerRefusesUnlaunchable(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	kernelGroupLimit = 128
	t.Cleanup(func() { kernelGroupLimit = 0 })
	f := &fastBuilder{t: t, values: map[string]*tensor.Tensor{}}
	m := f.node("MatMul", nil, nil, f.x("a", 37, 29), f.c(29, 41))
	want, _ := inferAll(t, cpu, m, f.values)
	var refused []string
	tuneTrace = func(v kernels.Variant, _ float64, err error) {
		if err != nil && strings.Contains(err.Error(), "CL_KERNEL_WORK_GROUP_SIZE") {
			refused = append(refused, v.String())
		}
	}
	t.Cleanup(func() { tuneTrace = nil })
	file := filepath.Join(t.TempDir(), "tuning.json")
	// On the worker threads, as TestVariantsMatchCPU runs the GEMM
	// variants (pinned): POCL builds a program once per OpenCL device.
	got, cm := inferAllWith(t, gpu, m, f.values, map[string]string{KeyTuningMode: "EXHAUSTIVE", KeyTuningFile: file, KeyInThread: inThreadNo})
	assertOutputsClose(t, want, got, 1e-4, 1e-3)
	c := choices(t, cm)["node"]
	assert.Equal(t, "tuned", c.Source)
	assert.NotContains(t, c.Variant, "tiled")
	assert.Positive(t, c.Refused)
	assert.NotEmpty(t, refused, "the 256-item tiled variants were refused")
	for _, v := range refused {
		assert.Contains(t, v, "gemm/tiled", "only variants over the limit are refused")
	}
	tiled := "gemm/tiled:TS_M=64,TS_N=64,TS_K=16,WPT_M=4,WPT_N=4,VW=4"
	got, cm = inferAllWith(t, gpu, m, f.values, pinned(tiled))
	assertOutputsClose(t, want, got, 1e-4, 1e-3)
	assert.Equal(t, "heuristic", choices(t, cm)["node"].Source, "the forced tiled variant fell back")
}

// TestTuningProgress checks that a tuning compile reports every node of
// the plan, in order, through WithTuneProgress.
func TestTuningProgress(t *testing.T) {
	gpu := newGPU(t)
	m, _ := tuningModel(t)
	var seen []TuneProgress
	ctx := WithTuneProgress(context.Background(), func(p TuneProgress) { seen = append(seen, p) })
	cm, err := gpu.CompileModel(ctx, m, map[string]string{KeyTuningMode: "FAST", KeyTuningFile: filepath.Join(t.TempDir(), "t.json"),
		driver.KeyDisableTransformations: "YES"})
	require.NoError(t, err)
	defer cm.Close()
	require.NotEmpty(t, seen)
	last := seen[len(seen)-1]
	assert.Equal(t, last.Total, last.Done)
	tunedNodes := 0
	for i, p := range seen {
		if i > 0 {
			assert.Greater(t, p.Done, seen[i-1].Done)
		}
		if p.Tuned {
			tunedNodes++
		}
	}
	assert.Equal(t, 3, tunedNodes)
}

// TestTuningProperties checks the tuning properties' values and errors.
func TestTuningProperties(t *testing.T) {
	gpu := newGPU(t)
	m, _ := tuningModel(t)
	for _, c := range []struct{ key, value, want string }{
		{KeyTuningMode, "SLOW", "NONE, FAST, EXHAUSTIVE"},
		{KeyKernelVariants, "gemm/direct:VW=3", "gemm/direct"},
		{KeyKernelVariants, "gemm/direct:VW=4,MR=4,NV=2,WG=1;gemm/direct:VW=8,MR=4,NV=2,WG=1", "two variants of family gemm"},
	} {
		_, err := gpu.CompileModel(context.Background(), m, map[string]string{c.key: c.value})
		require.Error(t, err, c.value)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), c.key)
		assert.Contains(t, err.Error(), c.want)
	}
	require.NoError(t, gpu.SetProperties(map[string]string{KeyTuningMode: "fast"}))
	v, err := gpu.Property(KeyTuningMode)
	require.NoError(t, err)
	assert.Equal(t, "FAST", v)
	require.NoError(t, gpu.SetProperties(map[string]string{KeyTuningMode: "NONE"}))
}

// TestCompilerOutputQuiet checks that kernels are built with -w (no
// compiler warnings on the user's terminal) unless LOG_LEVEL asks for
// warnings, and that -w does silence a warning in the build log.
func TestCompilerOutputQuiet(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	for _, c := range []struct {
		level string
		quiet bool
	}{{"", true}, {"LOG_ERROR", true}, {"LOG_WARNING", false}, {"LOG_DEBUG", false}} {
		props := map[string]string{}
		if c.level != "" {
			props[driver.KeyLogLevel] = c.level
		}
		_, cm := inferAllWith(t, gpu, m, ins, props)
		pl := cm.(*CompiledModel).static
		require.NotNil(t, pl)
		for _, l := range pl.launches {
			assert.Equal(t, c.quiet, strings.Contains(" "+l.options+" ", " -w "), "LOG_LEVEL %q: %s built with %q", c.level, l.kernel.Name, l.options)
		}
	}
	d := gpu.devices[gpu.def]
	ctx, err := d.context()
	require.NoError(t, err)
	defer ctx.release()
	src := "#warning clinfer-test-warning\n__kernel void k(__global float* x) { x[0] = 1.0f; }\n"
	for _, c := range []struct {
		opts string
		warn bool
	}{{"-w", false}, {"", true}} {
		prog, err := buildSource(d, ctx.cl, "warning.cl", src, c.opts)
		require.NoError(t, err)
		log, err := prog.BuildLog(d.cl)
		require.NoError(t, err)
		assert.Equal(t, c.warn, strings.Contains(log, "clinfer-test-warning"), "options %q: log %q", c.opts, log)
		require.NoError(t, prog.Close())
	}
}

// TestShippedTuningUnderTheUsers gives the device a shipped database
// (kernels/tuning's format) with a record for the model's convolution: a
// compile without a tuning file of its own runs the shipped variant (source
// "shipped") and computes what the CPU does; the user's own record for the
// key wins over it; GPU_SHIPPED_TUNING=NO leaves it out (the heuristics).
func TestShippedTuningUnderTheUsers(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m, ins := tuningModel(t)
	want, _ := inferAll(t, cpu, m, ins)
	d := gpu.devices[gpu.def]
	noFile := func() string { return filepath.Join(t.TempDir(), "tuning.json") }
	_, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: noFile(), KeyShippedTuning: "NO"})
	heur := choices(t, cm)["conv"]
	require.Equal(t, "heuristic", heur.Source)
	shippedV, userV := "conv/direct:VW=4,MR=8,NV=1,WG=1", "conv/direct:VW=4,MR=16,NV=1,WG=1"
	require.NotEqual(t, shippedV, heur.Variant, "pick a shipped variant the heuristics do not")

	b, err := json.Marshal(tune.ShippedFile{Format: tune.ShippedFormat, Device: tuningDevice(d), Name: d.fullName, Vendor: d.vendor,
		Match: []string{d.fullName}, Source: "test", Entries: map[string]tune.Record{heur.Key: {Variant: shippedV, Ms: 1, Mode: "EXHAUSTIVE"}}})
	require.NoError(t, err)
	d.shippedOnce.Do(func() {
		d.shipped, err = tune.ChooseShippedFrom([]string{"test.json"}, [][]byte{b}, d.fullName, d.driver)
	})
	require.NoError(t, err)
	require.NotNil(t, d.shipped)

	got, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: noFile()})
	assertOutputsClose(t, want, got, 1e-4, 1e-3)
	c := choices(t, cm)["conv"]
	assert.Equal(t, "shipped", c.Source)
	assert.Equal(t, shippedV, c.Variant)
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	assert.Equal(t, shippedV, rm.Node("conv").RT.Extra[KeyKernelVariant])

	user := noFile()
	db, err := tune.Open(user, tuningDevice(d))
	require.NoError(t, err)
	db.Put(heur.Key, tune.Record{Variant: userV, Ms: 2, Mode: "FAST"})
	require.NoError(t, db.Save())
	forgetTuningFiles()
	_, cm = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: user})
	c = choices(t, cm)["conv"]
	assert.Equal(t, [2]string{"recorded", userV}, [2]string{c.Source, c.Variant}, "the user's record wins")

	_, cm = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: noFile(), KeyShippedTuning: "NO"})
	c = choices(t, cm)["conv"]
	assert.Equal(t, [2]string{"heuristic", heur.Variant}, [2]string{c.Source, c.Variant})
}

// TestRecordKeepingHeuristics: a record whose variant is its heuristic
// (the tuner, or cmd/tune's model-level confirmation, found nothing
// faster) runs what the heuristics pick today, even when it names an
// older heuristic choice, and is reported as the record's.
func TestRecordKeepingHeuristics(t *testing.T) {
	gpu := newGPU(t)
	m, ins := tuningModel(t)
	d := gpu.devices[gpu.def]
	_, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: filepath.Join(t.TempDir(), "tuning.json"), KeyShippedTuning: "NO"})
	heur := choices(t, cm)["conv"]
	require.Equal(t, "heuristic", heur.Source)
	old := "conv/direct:VW=4,MR=16,NV=1,WG=1"
	require.NotEqual(t, old, heur.Variant, "pick an old heuristic choice the heuristics no longer make")

	file := filepath.Join(t.TempDir(), "tuning.json")
	db, err := tune.Open(file, tuningDevice(d))
	require.NoError(t, err)
	db.Put(heur.Key, tune.Record{Variant: old, Heuristic: old, Ms: 2, HeuristicMs: 2, Mode: "FAST"})
	require.NoError(t, db.Save())
	forgetTuningFiles()
	_, cm = inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningFile: file, KeyShippedTuning: "NO", KeyTuningMode: "FAST"})
	c := choices(t, cm)["conv"]
	assert.Equal(t, [2]string{"recorded", heur.Variant}, [2]string{c.Source, c.Variant}, "today's heuristics, not retuned")
	assert.Zero(t, c.Tried)
}
