//go:build cgo && !noopencl

package tests

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// sileroCase returns the named Silero case (tests/testdata/silero).
func sileroCase(t *testing.T, name string) *conformance.SileroCase {
	t.Helper()
	cases, err := conformance.SileroCases()
	require.NoError(t, err)
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no Silero case %q", name)
	return nil
}

// TestSileroBodiesThroughThePath: Silero v4's If (LSTMs in its branches,
// Ifs nested in them) goes the whole way as one node: QueryModel answers in
// the user's top-level names (the If whole, no body node), a GPU op disabled
// inside a branch takes the whole If to the CPU under HETERO (and out of
// the GPU's QueryModel), DUMP_GRAPHS_DIR writes the bodies, and CACHE_DIR
// gives back a model loaded from the cache that streams the same.
func TestSileroBodiesThroughThePath(t *testing.T) {
	c := sileroCase(t, "v4_16k")
	m, err := conformance.SileroModel(c)
	require.NoError(t, err)
	nodes, err := m.Nodes()
	require.NoError(t, err)
	var ifName string
	top := map[string]bool{}
	for _, n := range nodes {
		top[n.Name] = true
		if n.OpType == graph.OpIf {
			ifName = n.Name
		}
	}
	require.NotEmpty(t, ifName)
	ctx := context.Background()

	t.Run("QueryModel", func(t *testing.T) {
		core := driver.NewCore()
		defer core.Close()
		for _, dev := range []string{"CPU", "GPU", heteroGPUCPU} {
			q, err := core.QueryModel(ctx, m, dev, nil)
			require.NoError(t, err, dev)
			assert.Contains(t, q, ifName, dev)
			for name := range q {
				assert.True(t, top[name], "%s answers %q, not a top-level node", dev, name)
			}
		}
		q, err := core.QueryModel(ctx, m, "GPU", map[string]string{clbackend.KeyDisabledOps: "LSTM"})
		require.NoError(t, err)
		assert.NotContains(t, q, ifName, "an LSTM disabled in the branches takes the If off the GPU")
		_, err = core.CompileModel(ctx, m, "GPU", map[string]string{clbackend.KeyDisabledOps: "LSTM"})
		assert.ErrorIs(t, err, driver.ErrUnsupported)
	})

	t.Run("HeteroPlacesTheIfWhole", func(t *testing.T) {
		core := newHeteroCore(t, "LSTM")
		defer core.Close()
		cm, err := core.CompileModel(ctx, m, heteroGPUCPU, nil)
		require.NoError(t, err)
		defer cm.Close()
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		rn, err := rm.Nodes()
		require.NoError(t, err)
		var devs []string
		for _, n := range rn {
			if n.Name == ifName {
				assert.Equal(t, "CPU", n.RT.Affinity, "the If")
			}
			if !slices.Contains(devs, n.RT.Affinity) {
				devs = append(devs, n.RT.Affinity)
			}
		}
		assert.Contains(t, devs, "GPU", "the rest of the model stays on the GPU")
		s, err := conformance.StreamCompiled(ctx, cm, c, 20, false)
		require.NoError(t, err)
		_, _, err = conformance.CheckSilero(c, s)
		assert.NoError(t, err)
	})

	t.Run("DumpGraphsDir", func(t *testing.T) {
		dir := t.TempDir()
		core := driver.NewCore()
		defer core.Close()
		_, err := conformance.StreamSilero(ctx, core, "GPU", c, 1, false, map[string]string{"DUMP_GRAPHS_DIR": dir})
		require.NoError(t, err)
		txt, err := filepath.Glob(filepath.Join(dir, "*_FoldControlFlow.txt"))
		require.NoError(t, err)
		require.Len(t, txt, 1)
		b, err := os.ReadFile(txt[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), "LSTM", "the branches' nodes are in the dump")
	})

	t.Run("CacheDir", func(t *testing.T) {
		props := map[string]string{"CACHE_DIR": t.TempDir()}
		for i, want := range []string{"NO", "YES"} {
			core := driver.NewCore()
			cm, err := core.CompileModel(ctx, m, "GPU", props)
			require.NoError(t, err)
			v, err := cm.Property(driver.KeyLoadedFromCache)
			require.NoError(t, err)
			assert.Equal(t, want, v, "compile %d", i)
			s, err := conformance.StreamCompiled(ctx, cm, c, 20, false)
			require.NoError(t, err)
			_, _, err = conformance.CheckSilero(c, s)
			assert.NoError(t, err, "compile %d", i)
			require.NoError(t, cm.Close())
			require.NoError(t, core.Close())
		}
	})
}
