//go:build cgo && !noopencl

package tests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// randomModel has every random op: RandomUniform and RandomNormal without
// a seed (they draw from the request's), RandomUniformLike and
// RandomNormalLike of x, Bernoulli of x's probabilities with a seed of
// its own, Multinomial of x's rows, and Dropout in training mode.
func randomModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4, 50))
	p := graph.NewParameter("p", tensor.F32, graph.ShapeOf(4, 50))
	train := graph.NewParameter("train", tensor.Bool, graph.ShapeOf())
	ratio, _ := tensor.FromF32(tensor.Shape{}, []float32{0.25})
	nodes := []*graph.Node{
		graph.NewNode("RandomUniform", "uniform", nil, graph.Attrs{"shape": []int64{3, 33}, "low": float32(-1), "high": float32(3)}, 1),
		graph.NewNode("RandomNormal", "normal", nil, graph.Attrs{"shape": []int64{65}, "scale": float32(2)}, 1),
		graph.NewNode("RandomUniformLike", "uniform_like", []graph.Output{x.Out(0)}, graph.Attrs{"dtype": int64(tensor.F64)}, 1),
		graph.NewNode("RandomNormalLike", "normal_like", []graph.Output{x.Out(0)}, nil, 1),
		graph.NewNode("Bernoulli", "bernoulli", []graph.Output{p.Out(0)}, graph.Attrs{"seed": float32(5)}, 1),
		graph.NewNode("Multinomial", "multinomial", []graph.Output{x.Out(0)}, graph.Attrs{"sample_size": int64(20), "dtype": int64(tensor.I64)}, 1),
		graph.NewNode("Dropout", "dropout", []graph.Output{x.Out(0), graph.NewConstant("ratio", ratio).Out(0), train.Out(0)}, nil, 2),
	}
	var results []*graph.Node
	for _, n := range nodes {
		for i := range n.Outputs {
			name := n.Name
			if i > 0 {
				name += "_mask"
			}
			results = append(results, graph.NewResult(name, n.Out(i)))
		}
	}
	return graph.NewModel("random", []*graph.Node{x, p, train}, results)
}

// TestRandomSeedsAcrossDevices checks the random ops' reproducibility: one
// seed (the request's, WithRandomSeed, or the compiled model's
// RANDOM_SEED) gives the same tensors on CPU and GPU (uniform, Bernoulli,
// Multinomial and the dropout mask bit for bit, normals to 1e-5), an
// inference repeated with its seed repeats, another seed draws anew, and a
// node's own seed ignores the request's.
func TestRandomSeedsAcrossDevices(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { _ = core.Close() })
	x, err := tensor.FromFloat64s(tensor.F32, tensor.Shape{4, 50}, seededValues(200, -2, 2))
	require.NoError(t, err)
	p, err := tensor.FromFloat64s(tensor.F32, tensor.Shape{4, 50}, seededValues(200, 0, 1))
	require.NoError(t, err)
	train, err := tensor.FromBool(tensor.Shape{}, []bool{true})
	require.NoError(t, err)
	run := func(device string, props map[string]string, ctx context.Context) map[string]*tensor.Tensor {
		t.Helper()
		cm, err := core.CompileModel(context.Background(), randomModel(), device, props)
		require.NoError(t, err)
		defer cm.Close()
		req, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer req.Close()
		require.NoError(t, req.SetTensor("x", x))
		require.NoError(t, req.SetTensor("p", p))
		require.NoError(t, req.SetTensor("train", train))
		require.NoError(t, req.Infer(ctx))
		out := map[string]*tensor.Tensor{}
		for _, o := range cm.Outputs() {
			v, err := req.Tensor(o.Name)
			require.NoError(t, err)
			out[o.Name] = v.Clone()
		}
		return out
	}
	seeded := driver.WithRandomSeed(context.Background(), 123)
	cpu := run("CPU", nil, seeded)
	gpu := run("GPU", nil, seeded)
	for name, want := range cpu {
		got := gpu[name]
		require.Equal(t, want.Type(), got.Type(), name)
		require.Equal(t, want.Shape(), got.Shape(), name)
		if name == "normal" || name == "normal_like" || name == "dropout" {
			assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-5, "%s: CPU and GPU", name)
			continue
		}
		assert.Equal(t, want.Float64s(), got.Float64s(), "%s: CPU and GPU bit for bit", name)
	}
	again := run("GPU", map[string]string{driver.KeyRandomSeed: "123"}, context.Background())
	assert.Equal(t, gpu["uniform"].Float64s(), again["uniform"].Float64s(), "RANDOM_SEED=123 draws as WithRandomSeed(123)")
	other := run("CPU", nil, driver.WithRandomSeed(context.Background(), 124))
	assert.NotEqual(t, cpu["uniform"].Float64s(), other["uniform"].Float64s(), "another seed draws anew")
	assert.NotEqual(t, cpu["dropout_mask"].Float64s(), other["dropout_mask"].Float64s(), "another seed draws anew")
	assert.Equal(t, cpu["bernoulli"].Float64s(), other["bernoulli"].Float64s(), "a node's own seed ignores the request's")
	assert.NotEqual(t, cpu["uniform_like"].Float64s()[:50], cpu["normal_like"].Float64s()[:50], "nodes draw their own streams")
}

// seededValues are n values in [lo, hi) of a fixed sequence.
func seededValues(n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	s := uint32(12345)
	for i := range v {
		s = s*1664525 + 1013904223
		v[i] = lo + (hi-lo)*float64(s>>8)/(1<<24)
	}
	return v
}
