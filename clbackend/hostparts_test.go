package clbackend

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// hostPartsModel is x f32[2,3] -> Relu -> Cast(string) -> Cast(f32) ->
// Mul(s) -> y, with a string input passed through to an output: device,
// host, device parts, and host values at the model's edges.
func hostPartsModel(t testing.TB) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	words := graph.NewParameter("words", tensor.String, graph.ShapeOf(2))
	sv, err := tensor.FromF32(tensor.Shape{}, []float32{-2})
	require.NoError(t, err)
	s := graph.NewConstant("s", sv)
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	toStr := graph.NewNode("Cast", "to_string", []graph.Output{relu.Out(0)}, graph.Attrs{"to": int64(tensor.String)}, 1)
	back := graph.NewNode("Cast", "back", []graph.Output{toStr.Out(0)}, graph.Attrs{"to": int64(tensor.F32)}, 1)
	mul := graph.NewNode("Mul", "mul", []graph.Output{back.Out(0), s.Out(0)}, nil, 1)
	return graph.NewModel("hostparts", []*graph.Node{x, words},
		[]*graph.Node{graph.NewResult("y", mul.Out(0)), graph.NewResult("text", toStr.Out(0)), graph.NewResult("words_out", words.Out(0))})
}

// TestHostParts compiles a model with string values on the GPU: the
// planner places the string nodes in a host part between two device
// parts, says so in the runtime model, and the results, profile and an
// export/import round trip are right.
func TestHostParts(t *testing.T) {
	p := newGPU(t)
	ctx := context.Background()
	cm, err := p.CompileModel(ctx, hostPartsModel(t), map[string]string{driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cm.Close() })
	hp, ok := cm.(*HostParts)
	require.True(t, ok, "a model with string values compiles with host parts, got %T", cm)
	require.Len(t, hp.parts, 3)
	assert.Equal(t, []bool{false, true, false}, []bool{hp.parts[0].host, hp.parts[1].host, hp.parts[2].host})
	n, err := cm.Property(KeyHostParts)
	require.NoError(t, err)
	assert.Equal(t, "1", n)

	run := func(cm driver.CompiledModel) {
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer req.Close()
		x, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{1.5, -1, 0.25, 3, -2, 0})
		require.NoError(t, err)
		w, err := tensor.FromStrings(tensor.Shape{2}, []string{"a", "bc"})
		require.NoError(t, err)
		require.NoError(t, req.SetTensor("x", x))
		require.NoError(t, req.SetTensor("words", w))
		require.NoError(t, req.Infer(ctx))
		y, err := req.Tensor("y")
		require.NoError(t, err)
		assert.InDeltaSlice(t, []float32{-3, 0, -0.5, -6, 0, 0}, y.F32(), 0)
		text, err := req.Tensor("text")
		require.NoError(t, err)
		assert.Equal(t, []string{"1.5", "0.0", "0.25", "3.0", "0.0", "0.0"}, text.Strings())
		wo, err := req.Tensor("words_out")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "bc"}, wo.Strings())
		prof := req.ProfilingInfo()
		var host, dev bool
		for _, e := range prof {
			host = host || (e.NodeName == "to_string" && e.ExecType == "host:ref_cast")
			dev = dev || e.NodeName == "part0/relu"
		}
		assert.True(t, host && dev, "profile names host nodes and device parts: %+v", prof)
	}
	run(cm)

	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	places := map[string]string{}
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		places[n.Name] = n.RT.Extra[KeyPlacement]
	}
	assert.Equal(t, "GPU part 0", places["relu"])
	assert.Equal(t, "host part 1: output 0 is a string tensor", places["to_string"])
	assert.Equal(t, "host part 1: input 0 is a string tensor", places["back"])
	assert.Equal(t, "GPU part 2", places["mul"])

	var buf bytes.Buffer
	require.NoError(t, cm.(driver.Exporter).Export(&buf))
	im, err := p.ImportModel(ctx, &buf, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = im.Close() })
	_, ok = im.(*HostParts)
	require.True(t, ok)
	loaded, err := im.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", loaded)
	run(im)
}

// TestHostPartsRefuseDeviceOps checks that host parts are only for host
// values: an op with no GPU kernel on tensors stays unsupported.
func TestHostPartsRefuseDeviceOps(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2))
	n := graph.NewNode("Relu", "r", []graph.Output{x.Out(0)}, nil, 1)
	assert.Empty(t, hostPartReason(n), "a tensor op is not placed on the host")
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", n.Out(0))})
	assert.False(t, needsHostParts(m))
}
