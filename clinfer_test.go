package clinfer_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// TestEveryDeviceRegistered: importing the root package alone registers
// CPU, GPU, HETERO, AUTO and BATCH, and its names are plugin's.
func TestEveryDeviceRegistered(t *testing.T) {
	assert.Subset(t, clinfer.Devices(), []string{"CPU", "GPU", "HETERO", "AUTO", "BATCH"})
	assert.Equal(t, plugin.Devices(), clinfer.Devices())
	var core *plugin.Core = clinfer.NewCore() // the same type
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	assert.Contains(t, core.AvailableDevices(), "CPU")
	assert.Equal(t, plugin.ErrClosed, clinfer.ErrClosed)
	assert.Equal(t, plugin.Props(plugin.WithProfiling(true), plugin.WithNumStreams(2)),
		clinfer.Props(clinfer.WithProfiling(true), clinfer.WithNumStreams(2)))
}

// TestZeroValueCoreRoot: `var c clinfer.Core` compiles and runs a model.
func TestZeroValueCoreRoot(t *testing.T) {
	var c clinfer.Core
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	m, err := c.ReadModel("internal/defaultmodel/smallcnn.onnx")
	require.NoError(t, err)
	cm, err := c.CompileModel(context.Background(), m, "CPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	out, err := cm.Infer(context.Background(), map[string]*tensor.Tensor{"image": tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 64, 64})})
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{1, 10}, out["probs"].Shape())
}

// TestBatchStats: concurrent Infer calls on a BATCH model are gathered
// into one batched inference, which BatchStats counts; a model compiled on
// a device that does not batch has none.
func TestBatchStats(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	m, err := core.ReadModel("internal/defaultmodel/smallcnn.onnx")
	require.NoError(t, err)
	ctx := context.Background()

	plain, err := core.CompileModel(ctx, m, "CPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, plain.Close()) })
	st, ok := plain.BatchStats()
	assert.False(t, ok)
	assert.Equal(t, clinfer.BatchStats{}, st)

	// Two requests exist before either infers, so a batch of two can fill
	// (with fewer live requests than the batch size, BATCH runs each alone
	// at once); the timeout is long, so only a missing partner could
	// dissolve the group. CompiledModel.Infer's pool is not used: whether
	// it makes a second request depends on timing.
	cm, err := core.CompileModel(ctx, m, "BATCH:CPU(2)", clinfer.Props(clinfer.WithProperty("AUTO_BATCH_TIMEOUT", "60000")))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	var reqs [2]*clinfer.InferRequest
	for i := range reqs {
		reqs[i], err = cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, reqs[i].Close()) })
		require.NoError(t, reqs[i].SetTensor("image", tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 64, 64})))
	}
	errs := make(chan error, len(reqs))
	for _, r := range reqs {
		go func() { errs <- r.Infer(ctx) }() // exits when Infer returns
	}
	for range reqs {
		require.NoError(t, <-errs)
	}
	st, ok = cm.BatchStats()
	assert.True(t, ok)
	assert.Equal(t, clinfer.BatchStats{Size: 2, Batches: 1}, st, "the two inferences ran as one batch")
	assert.Zero(t, st.Gathering)
}

// exportedWith lists the exported With* functions declared in the Go files
// (not tests) of dir.
func exportedWith(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() && strings.HasPrefix(fn.Name.Name, "With") {
				names = append(names, fn.Name.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// TestEveryOptionReexported: the root package re-exports every With option
// of plugin (WithNumRequests was missing), so the two cannot drift.
func TestEveryOptionReexported(t *testing.T) {
	pluginOpts := exportedWith(t, "plugin")
	require.NotEmpty(t, pluginOpts)
	assert.Equal(t, pluginOpts, exportedWith(t, "."), "the With options of plugin and of the root package")
	assert.Equal(t, plugin.Props(plugin.WithNumRequests(3), plugin.WithMaxHostMemory(1<<20), plugin.WithDeviceID("1")),
		clinfer.Props(clinfer.WithNumRequests(3), clinfer.WithMaxHostMemory(1<<20), clinfer.WithDeviceID("1")))
}

// TestUnknownDeviceDidYouMean: with the root package linked every device is
// registered, so a misspelt name gets the nearest one, not "forgotten
// import?".
func TestUnknownDeviceDidYouMean(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	m, err := core.ReadModel(smallModel)
	require.NoError(t, err)
	for device, want := range map[string]string{"gpu": "GPU", "Cpu": "CPU", "HETRO:GPU,CPU": "HETERO", "AUTO:gpu": "GPU"} {
		_, err := core.CompileModel(context.Background(), m, device, nil)
		require.Error(t, err, device)
		assert.ErrorIs(t, err, clinfer.ErrNotFound, device)
		assert.Contains(t, err.Error(), "did you mean "+want+"?", device)
		assert.NotContains(t, err.Error(), "forgotten import", device)
	}
}

// TestTimeline: which devices served when is reachable from the user API:
// AUTO's switches, and one entry on other devices.
func TestTimeline(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	m, err := core.ReadModel(smallModel)
	require.NoError(t, err)
	for _, device := range []string{"AUTO:CPU", "CPU"} {
		cm, err := core.CompileModel(context.Background(), m, device, nil)
		require.NoError(t, err, device)
		tl, err := cm.Timeline()
		require.NoError(t, err, device)
		require.NotEmpty(t, tl, device)
		assert.Equal(t, "CPU", tl[len(tl)-1].Devices, device)
		require.NoError(t, cm.Close())
		_, err = cm.Timeline()
		assert.ErrorIs(t, err, clinfer.ErrClosed, "%s: after Close", device)
	}
}
