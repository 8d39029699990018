package clbackend

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/plugin/driver"
)

// runtimeRows returns each node's IMPL_TYPE, EXECUTION_ORDER and
// KERNEL_VARIANT in the runtime model of cm, by node name.
func runtimeRows(t *testing.T, cm driver.CompiledModel) map[string][3]string {
	t.Helper()
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	out := map[string][3]string{}
	for _, n := range nodes {
		out[n.Name] = [3]string{n.RT.Extra[driver.RuntimeImplType], n.RT.Extra[driver.RuntimeExecutionOrder], n.RT.Extra[KeyKernelVariant]}
	}
	return out
}

// TestGPUImportPlanRecord: an imported model runs the exported plan
// without planning again (the launch plan, the kernel choices and the
// packed weights come from the blob) and gives identical outputs.
func TestGPUImportPlanRecord(t *testing.T) {
	ctx := context.Background()
	models := []struct {
		name string
		m    func(t *testing.T) *graph.Model
	}{
		{"chain", func(t *testing.T) *graph.Model { return chainModel(t) }},
		{"hot families", func(t *testing.T) *graph.Model { m, _ := tuningModel(t); return m }},
		{"conv chain", func(t *testing.T) *graph.Model { return convChain(t, 3, graph.StaticDim(1)) }},
	}
	for _, tc := range models {
		for _, mode := range []string{driver.CacheModeOptimizeSpeed, driver.CacheModeOptimizeSize} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				props := map[string]string{driver.KeyCacheMode: mode}
				src := newGPU(t)
				cm, err := src.CompileModel(ctx, tc.m(t), props)
				require.NoError(t, err)
				defer cm.Close()
				blob := gpuExport(t, cm)
				b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, src.devices[src.def].architecture)
				require.NoError(t, err)
				_, ok := b.Section(planSection)
				require.True(t, ok, "the blob has no plan record")

				dst := newGPU(t)
				im, err := dst.ImportModel(ctx, bytes.NewReader(blob), nil)
				require.NoError(t, err)
				defer im.Close()
				s := dst.ProgramCacheStats()
				assert.Equal(t, int64(1), s.PlansRestored, "the import planned the model: %+v", s)
				assert.Zero(t, s.PlanRecordsRefused, "%+v", s)
				assert.Equal(t, runtimeRows(t, cm), runtimeRows(t, im), "the runtime model differs")
				assert.Equal(t, cm.(*CompiledModel).KernelChoices(), im.(*CompiledModel).KernelChoices())
				assert.Equal(t, gpuProp(t, cm, KeyActivationBytesPlanned), gpuProp(t, im, KeyActivationBytesPlanned))
				assert.Equal(t, gpuRun(t, cm), gpuRun(t, im), "outputs must be identical")

				// The imported model exported again (HETERO re-exports
				// its parts, which CACHE_DIR imported) restores as well.
				again := newGPU(t)
				im2, err := again.ImportModel(ctx, bytes.NewReader(gpuExport(t, im)), nil)
				require.NoError(t, err)
				defer im2.Close()
				s = again.ProgramCacheStats()
				assert.Equal(t, int64(1), s.PlansRestored, "the second import planned the model: %+v", s)
				assert.Zero(t, s.PlanRecordsRefused, "%+v", s)
				assert.Equal(t, gpuRun(t, cm), gpuRun(t, im2), "outputs must be identical")
			})
		}
	}
}

// TestGPUImportPlanRecordRefused: a plan record that is damaged, of
// another version or shapes, or would not be today's plan is refused by
// name and the model planned again, with identical outputs; a blob whose
// bytes were changed is refused by its checksum, and the model cache
// recompiles it.
func TestGPUImportPlanRecordRefused(t *testing.T) {
	ctx := context.Background()
	m, _ := tuningModel(t)
	src := newGPU(t)
	cm, err := src.CompileModel(ctx, m, nil)
	require.NoError(t, err)
	defer cm.Close()
	want := gpuRun(t, cm)
	blob := gpuExport(t, cm)
	arch := src.devices[src.def].architecture
	c := cm.(*CompiledModel)
	parts, _, err := c.planRecord()
	require.NoError(t, err)
	good := bytes.Join(parts, nil)

	// A record whose launch reads a value the plan does not have.
	badSlot := func() []byte {
		pl := *c.static
		pl.launches = slices.Clone(pl.launches)
		l := &pl.launches[len(pl.launches)-1]
		l.args = slices.Clone(l.args)
		for i, a := range l.args {
			if _, ok := a.(slotArg); ok {
				l.args[i] = slotArg(len(pl.values) + 7)
				break
			}
		}
		saved := c.static
		c.static = &pl
		defer func() { c.static = saved }()
		rec, _, err := c.planRecord()
		require.NoError(t, err)
		return bytes.Join(rec, nil)
	}
	// A record made for another source of one of its kernels (another
	// build of clinfer).
	l := c.static.launches[0]
	source, err := l.kernel.Source()
	require.NoError(t, err)
	kernel := slices.Clone(good)
	at := bytes.Index(kernel, []byte(programKey(c.run, source, l.options)))
	require.Positive(t, at, "the record names its programs")
	kernel[at] ^= 1 // another hex digit
	version := slices.Clone(good)
	binary.LittleEndian.PutUint32(version, planRecordVersion+1)
	cases := []struct {
		name  string
		rec   []byte
		props map[string]string
		warns bool
	}{
		{"truncated", good[:len(good)/2], nil, true},
		{"trailing bytes", append(slices.Clone(good), 0), nil, true},
		{"value out of range", badSlot(), nil, true},
		{"other version", version, nil, false},
		{"other kernel source", kernel, nil, false},
		{"other configuration", good, map[string]string{driver.KeyDisableTransformations: "YES"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, arch)
			require.NoError(t, err)
			for i := range b.Sections {
				if b.Sections[i].Name == planSection {
					b.Sections[i].Data = tc.rec
				}
			}
			var out bytes.Buffer
			require.NoError(t, driver.WriteBlob(&out, b))
			warned := captureWarnings(t)
			dst := newGPU(t)
			im, err := dst.ImportModel(ctx, bytes.NewReader(out.Bytes()), tc.props)
			require.NoError(t, err)
			defer im.Close()
			s := dst.ProgramCacheStats()
			assert.Zero(t, s.PlansRestored, "%+v", s)
			assert.Equal(t, int64(1), s.PlanRecordsRefused, "%+v", s)
			if tc.warns {
				require.NotEmpty(t, *warned, "a damaged record is reported")
				assert.Contains(t, (*warned)[0], "plan record")
			} else {
				assert.Empty(t, *warned)
			}
			assert.Equal(t, want, gpuRun(t, im), "outputs must be identical")
		})
	}

	t.Run("changed bytes", func(t *testing.T) {
		b, err := driver.ReadBlob(bytes.NewReader(blob), DeviceName, arch)
		require.NoError(t, err)
		var out bytes.Buffer
		require.NoError(t, driver.WriteBlob(&out, b))
		raw := out.Bytes()
		i := bytes.Index(raw, good[:64])
		require.Positive(t, i, "the record is in the blob")
		raw[i+len(good)/2] ^= 0x40
		_, err = src.ImportModel(ctx, bytes.NewReader(raw), nil)
		require.ErrorIs(t, err, driver.ErrCorrupt)
		assert.Contains(t, err.Error(), "checksum")

		dir := t.TempDir()
		core := driver.NewCore()
		defer core.Close()
		props := plugin.Props(plugin.WithCacheDir(dir))
		first, err := core.CompileModel(ctx, m, DeviceName, props)
		require.NoError(t, err)
		require.NoError(t, first.Close())
		blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
		require.NoError(t, err)
		require.Len(t, blobs, 1)
		cached, err := os.ReadFile(blobs[0])
		require.NoError(t, err)
		j := bytes.Index(cached, good[:64])
		require.Positive(t, j)
		cached[j+len(good)/2] ^= 0x40
		require.NoError(t, os.WriteFile(blobs[0], cached, 0o644))
		again, err := core.CompileModel(ctx, m, DeviceName, props)
		require.NoError(t, err)
		defer again.Close()
		assert.Equal(t, "NO", gpuProp(t, again, driver.KeyLoadedFromCache), "a changed blob is compiled again")
		assert.Equal(t, want, gpuRun(t, again))
	})
}
