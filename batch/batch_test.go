package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/batch"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
)

// TestDeviceBehaviour runs the shared device suite on BATCH over the CPU
// with batches of 4.
func TestDeviceBehaviour(t *testing.T) {
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		p, err := batch.New()
		require.NoError(t, err)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: "CPU(4)"}))
		return p
	})
}

// denseModel is x f32[batch,8] -> MatMul W[8,4] -> Add b[4] -> Relu -> y,
// with seeded weights; batch is the declared axis 0 (-1 for dynamic).
func denseModel(batchDim int64) *graph.Model {
	shape := graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.StaticDim(batchDim), graph.StaticDim(8)}}
	if batchDim < 0 {
		shape.Dims[0] = graph.DynamicDim("N")
	}
	x := graph.NewParameter("x", tensor.F32, shape)
	w := graph.NewConstant("w", mustTensor(tensor.FromF32(tensor.Shape{8, 4}, seeded.Float32s(7, 32, -1, 1))))
	b := graph.NewConstant("b", mustTensor(tensor.FromF32(tensor.Shape{4}, seeded.Float32s(8, 4, -1, 1))))
	mm := graph.NewNode("MatMul", "mm", []graph.Output{x.Out(0), w.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{mm.Out(0), b.Out(0)}, nil, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{add.Out(0)}, nil, 1)
	y := graph.NewResult("y", relu.Out(0))
	return graph.NewModel("dense", []*graph.Node{x}, []*graph.Node{y})
}

// input is the i-th seeded input of denseModel.
func input(i int) *tensor.Tensor {
	return mustTensor(tensor.FromF32(tensor.Shape{1, 8}, seeded.Float32s(uint32(100+i), 8, -2, 2)))
}

// reference computes denseModel on the CPU device, one request per input.
func reference(t *testing.T, core *driver.Core, n int) [][]float32 {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), denseModel(1), "CPU", nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	out := make([][]float32, n)
	for i := range out {
		require.NoError(t, r.SetTensor("x", input(i)))
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor("y")
		require.NoError(t, err)
		out[i] = append([]float32(nil), y.Contiguous().F32()...)
	}
	return out
}

// compileBatch compiles denseModel on BATCH with props and returns its
// compiled model, closed when the test ends.
func compileBatch(t *testing.T, core *driver.Core, device string, props map[string]string) *batch.CompiledModel {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), denseModel(-1), device, props)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	bc, ok := cm.(*batch.CompiledModel)
	require.True(t, ok, "compiled model is %T, want *batch.CompiledModel", cm)
	return bc
}

// requests creates n requests with input(i) bound to request i, closed
// when the test ends.
func requests(t *testing.T, cm driver.CompiledModel, n int) []driver.InferRequest {
	t.Helper()
	rs := make([]driver.InferRequest, n)
	for i := range rs {
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		require.NoError(t, r.SetTensor("x", input(i)))
		rs[i] = r
	}
	return rs
}

// TestDynamicBatchKeepsItsPorts: a model with a dynamic axis 0 keeps it on
// BATCH (as on its device, so implicit batching changes no port); requests
// of batch 1 gather into batches and the others run alone, each with the
// device's answer.
func TestDynamicBatchKeepsItsPorts(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm := compileBatch(t, core, "BATCH:CPU(2)", map[string]string{batch.KeyTimeout: "3600000"})
	assert.Equal(t, "[N,8]", cm.Inputs()[0].Shape.String())
	assert.Equal(t, "[N,4]", cm.Outputs()[0].Shape.String())
	ref, err := core.CompileModel(context.Background(), denseModel(-1), "CPU", nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, ref.Close()) }()
	rr, err := ref.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, rr.Close()) }()
	rs := requests(t, cm, 2)
	for _, n := range []int64{3, 0} {
		x := mustTensor(tensor.FromF32(tensor.Shape{n, 8}, seeded.Float32s(uint32(200+n), int(n*8), -2, 2)))
		require.NoError(t, rs[0].SetTensor("x", x))
		require.NoError(t, rs[0].Infer(context.Background()), "batch %d", n)
		require.NoError(t, rr.SetTensor("x", x))
		require.NoError(t, rr.Infer(context.Background()))
		got, err := rs[0].Tensor("y")
		require.NoError(t, err)
		want, err := rr.Tensor("y")
		require.NoError(t, err)
		require.Equal(t, want.Shape(), got.Shape(), "batch %d", n)
		assert.InDeltaSlice(t, want.Contiguous().F32(), got.Contiguous().F32(), 1e-6, "batch %d", n)
	}
	assert.Equal(t, batch.Stats{Alone: 2}, cm.Stats(), "batches other than 1 run alone")
	require.NoError(t, rs[0].SetTensor("x", input(0)))
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { // exits when Infer returns
			defer wg.Done()
			assert.NoError(t, r.Infer(context.Background()))
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), cm.Stats().Batches, "two requests of batch 1 make one batch")
}

// TestBatchedEqualsUnbatched runs n concurrent requests through BATCH of
// size b; every request must get what the CPU computes for its own input,
// and all of them must have been served by full batches.
func TestBatchedEqualsUnbatched(t *testing.T) {
	cases := []struct {
		name      string
		size, req int
		rounds    int
	}{
		{"2x2", 2, 2, 3},
		{"4x4", 4, 4, 3},
		{"4x8", 4, 8, 2},
		{"8x8", 8, 8, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core := driver.NewCore()
			defer func() { assert.NoError(t, core.Close()) }()
			want := reference(t, core, tc.req*tc.rounds)
			// A timeout long enough that only full batches run.
			cm := compileBatch(t, core, fmt.Sprintf("BATCH:CPU(%d)", tc.size), map[string]string{batch.KeyTimeout: "600000"})
			got, err := cm.Property(batch.KeyOptimalBatchSize)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(tc.size), got)
			rs := requests(t, cm, tc.req)
			for round := range tc.rounds {
				var wg sync.WaitGroup
				errs := make([]error, len(rs))
				for i, r := range rs {
					wg.Add(1)
					go func() { // exits when the inference returns
						defer wg.Done()
						k := round*tc.req + i
						if errs[i] = r.SetTensor("x", input(k)); errs[i] == nil {
							errs[i] = r.Infer(context.Background())
						}
					}()
				}
				wg.Wait()
				for i, r := range rs {
					require.NoError(t, errs[i], "request %d", i)
					y, err := r.Tensor("y")
					require.NoError(t, err)
					assert.Equal(t, tensor.Shape{1, 4}, y.Shape())
					assert.InDeltaSlice(t, want[round*tc.req+i], y.Contiguous().F32(), 1e-5, "round %d request %d", round, i)
				}
			}
			st := cm.Stats()
			assert.Equal(t, int64(tc.req*tc.rounds/tc.size), st.Batches, "batched inferences")
			assert.Zero(t, st.Alone, "inferences that ran alone")
		})
	}
}

// TestLoneRequestRunsAfterTimeout: with enough requests for a batch but
// only one inferring, the batch never fills; the request runs alone once
// AUTO_BATCH_TIMEOUT has passed.
func TestLoneRequestRunsAfterTimeout(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	want := reference(t, core, 1)
	cm := compileBatch(t, core, "BATCH:CPU(4)", map[string]string{batch.KeyTimeout: "20"})
	rs := requests(t, cm, 4)
	require.NoError(t, rs[0].SetTensor("x", input(0)))
	require.NoError(t, rs[0].Infer(context.Background()))
	y, err := rs[0].Tensor("y")
	require.NoError(t, err)
	assert.InDeltaSlice(t, want[0], y.Contiguous().F32(), 1e-5)
	assert.Equal(t, batch.Stats{Alone: 1}, cm.Stats())
}

// TestFewerRequestsThanBatchRunAtOnce: with fewer live requests than the
// batch size a batch can never fill, so even an hour's timeout does not
// hold the inference.
func TestFewerRequestsThanBatchRunAtOnce(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm := compileBatch(t, core, "BATCH:CPU(4)", map[string]string{batch.KeyTimeout: "3600000"})
	rs := requests(t, cm, 3)
	for _, r := range rs {
		require.NoError(t, r.Infer(context.Background()))
	}
	assert.Equal(t, batch.Stats{Alone: 3}, cm.Stats())
}

// waitGathering polls until n inferences wait in the open batch.
func waitGathering(t *testing.T, cm *batch.CompiledModel, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return cm.Stats().Gathering == n }, 20*time.Second, time.Millisecond, "waiting for %d inferences to gather", n)
}

// TestCancelWhileGathering: an inference cancelled while it waits for
// company leaves the batch; the next full batch runs without it.
func TestCancelWhileGathering(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	want := reference(t, core, 2)
	cm := compileBatch(t, core, "BATCH:CPU(2)", map[string]string{batch.KeyTimeout: "3600000"})
	rs := requests(t, cm, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rs[0].Infer(ctx) }() // exits when Infer returns
	waitGathering(t, cm, 1)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, batch.Stats{}, cm.Stats(), "the cancelled inference left the batch")

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range rs {
		require.NoError(t, r.SetTensor("x", input(i)))
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = r.Infer(context.Background()) }() // exits when Infer returns
	}
	wg.Wait()
	for i, r := range rs {
		require.NoError(t, errs[i])
		y, err := r.Tensor("y")
		require.NoError(t, err)
		assert.InDeltaSlice(t, want[i], y.Contiguous().F32(), 1e-5)
	}
	assert.Equal(t, batch.Stats{Batches: 1}, cm.Stats())
}

// TestClosingRequestDissolvesBatch: when a request closes and fewer live
// requests than the batch size remain, the gathering batch cannot fill; its
// members run alone at once instead of waiting for the timeout.
func TestClosingRequestDissolvesBatch(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm := compileBatch(t, core, "BATCH:CPU(2)", map[string]string{batch.KeyTimeout: "3600000"})
	a, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	require.NoError(t, a.SetTensor("x", input(0)))
	b, err := cm.CreateInferRequest()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Infer(context.Background()) }() // exits when Infer returns
	waitGathering(t, cm, 1)
	require.NoError(t, b.Close())
	require.NoError(t, <-done)
	assert.Equal(t, batch.Stats{Alone: 1}, cm.Stats())
}

// TestCloseEndsGathering: closing the compiled model while an inference
// waits for company ends the wait with driver.ErrClosed.
func TestCloseEndsGathering(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm, err := core.CompileModel(context.Background(), denseModel(1), "BATCH:CPU(2)", map[string]string{batch.KeyTimeout: "3600000"})
	require.NoError(t, err)
	bc := cm.(*batch.CompiledModel)
	rs := make([]driver.InferRequest, 2)
	for i := range rs {
		rs[i], err = cm.CreateInferRequest()
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() { done <- rs[0].Infer(context.Background()) }() // exits when Infer returns
	waitGathering(t, bc, 1)
	require.NoError(t, cm.Close())
	assert.ErrorIs(t, <-done, driver.ErrClosed)
	for _, r := range rs {
		assert.NoError(t, r.Close())
	}
	assert.ErrorIs(t, rs[1].Infer(context.Background()), driver.ErrClosed)
}

// TestUnbatchableModels: a model whose batch axis cannot be found is an
// error wrapping driver.ErrUnsupported that names the input or output and
// why.
func TestUnbatchableModels(t *testing.T) {
	param := func(name string, shape graph.PartialShape) *graph.Node {
		return graph.NewParameter(name, tensor.F32, shape)
	}
	relu := func(x *graph.Node) *graph.Model {
		r := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
		return graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
	}
	cases := []struct {
		name    string
		model   func() *graph.Model
		mention []string
	}{
		{"StaticBatch2", func() *graph.Model { return relu(param("x", graph.ShapeOf(2, 8))) }, []string{`input "x"`, "axis 0 is 2"}},
		{"Scalar", func() *graph.Model { return relu(param("x", graph.ShapeOf())) }, []string{`input "x"`, "no axis 0"}},
		{"DynamicWidth", func() *graph.Model {
			return relu(param("x", graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.StaticDim(1), graph.DynamicDim("W")}}))
		}, []string{`input "x"`, "axis 1 is dynamic", "Model.Reshape", "-shape x=[1,224]"}},
		{"FlattenedBatch", func() *graph.Model {
			x := param("x", graph.ShapeOf(1, 8))
			shape := graph.NewConstant("shape", mustTensor(tensor.FromI64(tensor.Shape{1}, []int64{-1})))
			r := graph.NewNode("Reshape", "flatten", []graph.Output{x.Out(0), shape.Out(0)}, nil, 1)
			return graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
		}, []string{`output "y"`, "[8] at batch 1"}},
		{"HardcodedBatch", func() *graph.Model {
			x := param("x", graph.ShapeOf(1, 8))
			shape := graph.NewConstant("shape", mustTensor(tensor.FromI64(tensor.Shape{2}, []int64{1, -1})))
			r := graph.NewNode("Reshape", "flatten", []graph.Output{x.Out(0), shape.Out(0)}, nil, 1)
			return graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
		}, []string{`output "y"`, "[1,8] at batch 1 but [1,32] at batch 4"}},
		{"ReducedBatch", func() *graph.Model {
			x := param("x", graph.ShapeOf(1, 8))
			axes := graph.NewConstant("axes", mustTensor(tensor.FromI64(tensor.Shape{1}, []int64{0})))
			r := graph.NewNode("ReduceSum", "sum", []graph.Output{x.Out(0), axes.Out(0)}, nil, 1)
			return graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
		}, []string{`output "y"`, "at batch 4"}},
	}
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm, err := core.CompileModel(context.Background(), tc.model(), "BATCH:CPU(4)", nil)
			if cm != nil {
				assert.NoError(t, cm.Close())
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrUnsupported)
			assert.Contains(t, err.Error(), "cannot be batched")
			for _, s := range tc.mention {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestReshapeThenBatch: the model BATCH refuses for its dynamic width is
// batched once Model.Reshape, which the refusal points to, gives the width
// a size (the batch axis may stay dynamic).
func TestReshapeThenBatch(t *testing.T) {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(-1, -1))
	r := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	_, err := core.CompileModel(context.Background(), m, "BATCH:CPU(4)", nil)
	require.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), "Model.Reshape")

	require.NoError(t, m.Reshape(map[string]graph.PartialShape{"x": graph.ShapeOf(-1, 8)}))
	cm, err := core.CompileModel(context.Background(), m, "BATCH:CPU(4)", nil)
	require.NoError(t, err, "after Reshape")
	assert.NoError(t, cm.Close())
}

// TestDeviceConfig: DEVICE_PRIORITIES (and its OpenVINO alias) take one
// device and an optional batch size; anything else names the key.
func TestDeviceConfig(t *testing.T) {
	cases := []struct {
		value string
		want  string // "" for an error
	}{
		{"CPU(4)", "CPU(4)"},
		{" GPU.1(8) ", "GPU.1(8)"},
		{"CPU", "CPU"},
		{"CPU(0)", ""},
		{"CPU(x)", ""},
		{"CPU(4", ""},
		{"GPU,CPU", ""},
		{"BATCH(2)", ""},
	}
	for _, tc := range cases {
		for _, key := range []string{driver.KeyDevicePriorities, "AUTO_BATCH_DEVICE_CONFIG"} {
			t.Run(key+"="+tc.value, func(t *testing.T) {
				p, err := batch.New()
				require.NoError(t, err)
				defer func() { assert.NoError(t, p.Close()) }()
				err = p.SetProperties(map[string]string{key: tc.value})
				if tc.want == "" {
					require.Error(t, err)
					assert.ErrorIs(t, err, driver.ErrInvalidArgument)
					assert.Contains(t, err.Error(), key)
					return
				}
				require.NoError(t, err)
				got, err := p.Property(driver.KeyDevicePriorities)
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			})
		}
	}
}

// TestDeviceKeysPassThrough: a key BATCH does not know goes to the device
// when the device has it, and is an error naming it otherwise.
func TestDeviceKeysPassThrough(t *testing.T) {
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm, err := core.CompileModel(context.Background(), denseModel(1), "BATCH:CPU(2)", map[string]string{"PERF_COUNT": "YES", driver.KeyNumStreams: "1"})
	require.NoError(t, err)
	got, err := cm.Property(driver.KeyEnableProfiling)
	assert.NoError(t, err)
	assert.Equal(t, "YES", got)
	require.NoError(t, cm.Close())

	_, err = core.CompileModel(context.Background(), denseModel(1), "BATCH:CPU(2)", map[string]string{"BATCH_NO_SUCH_KEY": "1"})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrNotFound)
	assert.Contains(t, err.Error(), "BATCH_NO_SUCH_KEY")
	assert.False(t, errors.Is(err, driver.ErrUnsupported))
}

// mustTensor unwraps a tensor constructor on fixed, valid shapes.
func mustTensor(x *tensor.Tensor, err error) *tensor.Tensor {
	if err != nil {
		panic(err) // a fixed, valid shape: cannot fail
	}
	return x
}

// TestDefaults: OpenVINO's defaults.
func TestDefaults(t *testing.T) {
	p, err := batch.New()
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	for key, want := range map[string]string{batch.KeyTimeout: "1000", driver.KeyDevicePriorities: ""} {
		got, err := p.Property(key)
		require.NoError(t, err)
		assert.Equal(t, want, got, key)
	}
}
