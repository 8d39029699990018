package fusion_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// recordingPass appends its name to log when it runs.
func recordingPass(name string, log *[]string) fusion.Pass {
	return fusion.Pass{Name: name, Run: func(context.Context, *graph.Model, *fusion.Options) (int, error) {
		*log = append(*log, name)
		return 0, nil
	}}
}

func smallModel(t *testing.T) *graph.Model {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 8, 8)
	return b.model(b.op("Relu", nil, b.bn(b.conv(x, 3, 4), 4)))
}

func TestManagerOrderingAndRegistration(t *testing.T) {
	var log []string
	m := fusion.NewManager(recordingPass("b", &log), recordingPass("d", &log))
	require.NoError(t, m.RegisterBefore("b", recordingPass("a", &log)))
	require.NoError(t, m.RegisterAfter("b", recordingPass("c", &log)))
	require.NoError(t, m.Register(recordingPass("e", &log)))
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, m.Names())

	err := m.Register(recordingPass("c", &log))
	assert.ErrorContains(t, err, `"c" is registered twice`)
	assert.Error(t, m.Register(fusion.Pass{Name: "norun"}))
	err = m.RegisterBefore("zz", recordingPass("f", &log))
	assert.ErrorIs(t, err, fusion.ErrUnknownPass)
	assert.ErrorContains(t, err, `"zz"`)

	_, err = m.Run(context.Background(), smallModel(t), fusion.Options{Disabled: []string{"b", "d"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c", "e"}, log)

	_, err = m.Run(context.Background(), smallModel(t), fusion.Options{Disabled: []string{"nope"}})
	assert.ErrorIs(t, err, fusion.ErrUnknownPass)
	assert.ErrorContains(t, err, "a, b, c, d, e", "the error lists the passes there are")
}

func TestManagerDisableAll(t *testing.T) {
	m := smallModel(t)
	before, _, err := fusion.CountNodes(m)
	require.NoError(t, err)
	rep, err := fusion.Default().Run(context.Background(), m, fusion.Options{DisableAll: true})
	require.NoError(t, err)
	after, _, err := fusion.CountNodes(m)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	for _, p := range rep.Passes {
		assert.True(t, p.Skipped, "pass %s ran", p.Name)
	}
	assert.Equal(t, 1, opCount(t, m, "BatchNormalization"))
}

func TestManagerDisableOnePass(t *testing.T) {
	m := smallModel(t)
	rep, err := fusion.Transform(context.Background(), m, map[string]string{fusion.KeyDisabledTransformations: "FuseConv"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, opCount(t, m, "BatchNormalization"), "FoldBatchNorm still ran")
	assert.Equal(t, 1, opCount(t, m, "Conv"), "FuseConv was disabled")
	assert.Equal(t, 0, opCount(t, m, graph.OpFusedConv))
	var skipped []string
	for _, p := range rep.Passes {
		if p.Skipped {
			skipped = append(skipped, p.Name)
		}
	}
	assert.Equal(t, []string{fusion.PassFuseConv}, skipped)
}

func TestManagerDump(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dumps")
	m := smallModel(t)
	mgr := fusion.NewManager(fusion.FoldBatchNorm(), fusion.FuseConv())
	_, err := mgr.Run(context.Background(), m, fusion.Options{DumpDir: dir})
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"00_input.dot", "00_input.txt", "01_FoldBatchNorm.dot", "01_FoldBatchNorm.txt", "02_FuseConv.dot", "02_FuseConv.txt"}, names)
	txt, err := os.ReadFile(filepath.Join(dir, "02_FuseConv.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(txt), "FusedConv")
	assert.Contains(t, string(txt), "fused=[", "the text dump shows fused names")
	in, err := os.ReadFile(filepath.Join(dir, "00_input.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(in), "BatchNormalization")
	dot, err := os.ReadFile(filepath.Join(dir, "01_FoldBatchNorm.dot"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(dot), "digraph"))
}

func TestManagerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fusion.Default().Run(ctx, smallModel(t), fusion.Options{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestManagerPassErrorNamesPass(t *testing.T) {
	boom := errors.New("boom")
	m := fusion.NewManager(fusion.Pass{Name: "Broken", Run: func(context.Context, *graph.Model, *fusion.Options) (int, error) {
		return 0, boom
	}})
	_, err := m.Run(context.Background(), smallModel(t), fusion.Options{})
	assert.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "pass Broken")
}

func TestParseOptions(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  fusion.Options
		err   string
	}{
		{"empty", nil, fusion.Options{}, ""},
		{"all", map[string]string{driver.KeyDisableTransformations: "YES"}, fusion.Options{DisableAll: true}, ""},
		{"list", map[string]string{fusion.KeyDisabledTransformations: "FuseConv, DivToMul;FoldBatchNorm"},
			fusion.Options{Disabled: []string{"FuseConv", "DivToMul", "FoldBatchNorm"}}, ""},
		{"dump", map[string]string{fusion.KeyDumpGraphsDir: "/tmp/x", "PERFORMANCE_HINT": "LATENCY"}, fusion.Options{DumpDir: "/tmp/x"}, ""},
		{"bad bool", map[string]string{driver.KeyDisableTransformations: "maybe"}, fusion.Options{}, driver.KeyDisableTransformations},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fusion.ParseOptions(tc.props)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	p := driver.NewProperties(append(driver.CommonSpecs(), fusion.PropertySpecs()...)...)
	require.NoError(t, p.Set(map[string]string{fusion.KeyDisabledTransformations: "FuseConv", driver.KeyDisableTransformations: "NO"}))
	got, err := fusion.OptionsFromProperties(p)
	require.NoError(t, err)
	assert.Equal(t, fusion.Options{Disabled: []string{"FuseConv"}}, got)
	require.NoError(t, p.Set(map[string]string{fusion.KeyDisabledTransformations: " DivToMul ,FuseConv"}))
	v, err := p.Get(fusion.KeyDisabledTransformations)
	require.NoError(t, err)
	assert.Equal(t, "DivToMul,FuseConv", v)
	err = p.Set(map[string]string{fusion.KeyDisabledTransformations: "FuseConv,Bogus"})
	assert.ErrorContains(t, err, fusion.KeyDisabledTransformations)
	assert.ErrorContains(t, err, "Bogus")
}

func TestDefaultPassNames(t *testing.T) {
	assert.Equal(t, []string{
		fusion.PassConvertF16ToF32, fusion.PassConvertF16Weights, fusion.PassRemoveIdentity, fusion.PassConstantFolding, fusion.PassFoldControlFlow, fusion.PassCollapseReshapeTranspose,
		fusion.PassEliminateDoubleRelu, fusion.PassRecognizeHardActivations, fusion.PassFuseLayerNorm, fusion.PassFoldBatchNorm,
		fusion.PassFoldConvScaleShift, fusion.PassFoldInputScaleShift, fusion.PassDivToMul, fusion.PassFuseQuantized, fusion.PassFuseConv, fusion.PassFuseFullyConnected,
		fusion.PassFuseQuantizeChains, fusion.PassFuseDenseChain, fusion.PassFuseSEResidual, fusion.PassFuseFCLayerNormRelu, fusion.PassFuseLayerNormRelu, fusion.PassFuseSEBlock, fusion.PassFuseDeconvActivation, fusion.PassFuseElementwiseChains, fusion.PassDeadCodeRemoval,
	}, fusion.Default().Names())
	for _, p := range fusion.DefaultPasses() {
		assert.NotEmpty(t, p.Doc, "pass %s has no doc line", p.Name)
	}
}

// TestPassOps: a pattern pass lists the op types its patterns match, which
// the op support matrix reports; other passes list none.
func TestPassOps(t *testing.T) {
	ops := map[string][]string{}
	for _, p := range fusion.DefaultPasses() {
		ops[p.Name] = p.Ops
	}
	for _, c := range []struct {
		pass string
		want []string
	}{
		{fusion.PassEliminateDoubleRelu, []string{"Relu"}},
		{fusion.PassFuseSEResidual, []string{"Add", "Mul"}},
		{fusion.PassFuseLayerNormRelu, []string{"LayerNormalization", "Relu"}},
		{fusion.PassConstantFolding, nil},
	} {
		assert.Equal(t, c.want, ops[c.pass], c.pass)
	}
	assert.Subset(t, ops[fusion.PassFuseConv], []string{"Conv", "Add", "Relu", "HardSwish"})
	for name, list := range ops {
		for _, op := range list {
			_, ok := graph.Lookup(op)
			assert.True(t, ok, "pass %s matches op %s, which is not in the op set", name, op)
		}
	}
}
