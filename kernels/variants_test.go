package kernels_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/kernels"
)

// TestVariantTables checks the variant tables are well formed: every
// family has algorithms whose entry points are catalogue kernels, named
// parameters with values, at least one point, and points that round-trip
// through their String form; the GPU-shaped forms ask for work groups of
// 64-256 items; the default algorithm of every family has points on a
// device with the narrowest vectors.
func TestVariantTables(t *testing.T) {
	entries := map[string]bool{}
	for _, k := range kernels.All() {
		entries[k.Entry] = true
	}
	require.NotEmpty(t, kernels.Families())
	assert.Subset(t, kernels.FamilyNames(), []string{"gemm", "conv", "dwconv", "deconv", "resize", "eltwise", "reduce", "se"})
	for _, f := range kernels.Families() {
		t.Run(f.Name, func(t *testing.T) {
			require.NotEmpty(t, f.Algorithms)
			assert.NotEmpty(t, f.Ops)
			got, ok := kernels.LookupFamily(f.Name)
			require.True(t, ok)
			assert.Equal(t, f.Name, got.Name)
			narrow := f.AlgorithmVariants(f.Algorithms[0].Name, kernels.Limits{VectorWidth: 1, MaxWorkGroup: 256, LocalMem: 16 << 10})
			assert.NotEmpty(t, narrow, "the default algorithm has no point on a device with scalar floats, 256-item groups and 16 KiB of local memory")
			var names []string
			for _, a := range f.Algorithms {
				assert.NotContains(t, names, a.Name, "algorithm names are unique")
				names = append(names, a.Name)
				assert.NotEmpty(t, a.Doc, "%s/%s has no Doc", f.Name, a.Name)
				require.NotEmpty(t, a.Entries, "%s/%s launches nothing", f.Name, a.Name)
				for _, e := range a.Entries {
					assert.True(t, entries[e], "%s/%s names entry point %s, which no catalogue kernel has", f.Name, a.Name, e)
				}
				var params []string
				for _, p := range a.Params {
					assert.NotContains(t, params, p.Name, "%s/%s: parameter names are unique", f.Name, a.Name)
					params = append(params, p.Name)
					assert.NotEmpty(t, p.Values, "%s/%s: parameter %s has no values", f.Name, a.Name, p.Name)
					assert.NotEmpty(t, p.Doc)
				}
				vs := f.AlgorithmVariants(a.Name, kernels.Limits{})
				require.NotEmpty(t, vs, "%s/%s declares no valid point", f.Name, a.Name)
				for _, v := range vs {
					back, err := kernels.ParseVariant(v.String())
					require.NoError(t, err)
					assert.True(t, back.Equal(v), "%s round-trips as %s", v, back)
					assert.Equal(t, a.Entries[0], v.Entry())
					for _, d := range strings.Fields(v.Defines()) {
						assert.True(t, strings.HasPrefix(d, "-D"), "%s: define %q", v, d)
					}
					if a.GPUShaped {
						wg := v.WorkGroup()
						assert.True(t, wg >= 64 && wg <= 256, "%s is GPU-shaped but asks for %d items per group", v, wg)
					}
				}
			}
		})
	}
}

// TestVariantFits checks the device limits a variant is refused under.
func TestVariantFits(t *testing.T) {
	tiled, err := kernels.ParseVariant("gemm/tiled:TS_M=64,TS_N=64,TS_K=16,WPT_M=4,WPT_N=4,VW=4")
	require.NoError(t, err)
	direct, err := kernels.ParseVariant("gemm/direct:VW=16,MR=8,NV=2,WG=1")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		v    kernels.Variant
		lim  kernels.Limits
		why  string
	}{
		{"fits", tiled, kernels.Limits{VectorWidth: 1, MaxWorkGroup: 1024, LocalMem: 48 << 10}, ""},
		{"group_too_large", tiled, kernels.Limits{MaxWorkGroup: 128}, "CL_DEVICE_MAX_WORK_GROUP_SIZE"},
		{"local_memory", tiled, kernels.Limits{LocalMem: 4096}, "CL_DEVICE_LOCAL_MEM_SIZE"},
		{"vector_too_wide", direct, kernels.Limits{VectorWidth: 8}, "wider than the device's 8"},
		{"vector_fits", direct, kernels.Limits{VectorWidth: 16}, ""},
		{"vector_four_everywhere", direct.With("VW", 4), kernels.Limits{VectorWidth: 1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := c.v.Fits(c.lim)
			if c.why == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, c.why)
			}
		})
	}
	assert.Equal(t, 256, tiled.WorkGroup())
	assert.Equal(t, int64(4*16*128), tiled.LocalMem())
	assert.Equal(t, []int{16, 16, 1}, kernels.TiledLocalSize(tiled))
	assert.Equal(t, "-DTS_M=64 -DTS_N=64 -DTS_K=16 -DWPT_M=4 -DWPT_N=4 -DVW=4", tiled.Defines())
	assert.Equal(t, "-DVW=16 -DMR=8 -DNV=2", direct.Defines(), "WG is a launch parameter, not a define")
}

// TestParseVariantErrors checks that a variant the tables do not declare
// is refused, naming what is wrong.
func TestParseVariantErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gemm", "family/algorithm"},
		{"nosuch/direct:VW=4", "no family"},
		{"gemm/nosuch:VW=4", "no algorithm"},
		{"gemm/direct:VW=4", "takes 4 parameters"},
		{"gemm/direct:VW=4,MR=8,NV=2,XX=1", "parameter 3 is WG"},
		{"gemm/direct:VW=5,MR=8,NV=2,WG=1", "not a point of the declared space"},
		{"gemm/tiled:TS_M=32,TS_N=64,TS_K=16,WPT_M=4,WPT_N=4,VW=4", "not a point"},
	} {
		_, err := kernels.ParseVariant(c.in)
		require.Error(t, err, c.in)
		assert.ErrorIs(t, err, kernels.ErrVariant)
		assert.Contains(t, err.Error(), c.want, c.in)
	}
	fam, ok := kernels.FamilyOfEntry("se_residual")
	require.True(t, ok)
	assert.Equal(t, "se", fam.Name)
	_, ok = kernels.FamilyOfEntry("copy_words")
	assert.False(t, ok)
	assert.True(t, slices.Contains(kernels.FamilyNames(), "gemm"))
}
