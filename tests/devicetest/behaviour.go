package devicetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// DynamicReluModel returns Parameter "x" f32[?,4] -> Relu "relu" -> Result
// "y" f32[?,4]: a model whose batch dimension the caller chooses.
func DynamicReluModel() *graph.Model {
	shape := graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("batch"), graph.StaticDim(4)}}
	x := graph.NewParameter(InputName, tensor.F32, shape)
	relu := graph.NewNode("Relu", ReluName, []graph.Output{x.Out(0)}, nil, 1)
	relu.Outputs[0].Type = tensor.F32
	relu.Outputs[0].Shape = shape.Clone()
	y := graph.NewResult(OutputName, relu.Out(0))
	return graph.NewModel("devicetest_dynamic_relu", []*graph.Node{x}, []*graph.Node{y})
}

// batchInput returns a seeded f32[n,4] input.
func batchInput(t *testing.T, seed uint32, n int64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.From(tensor.Shape{n, 4}, seeded.Float32s(seed, int(n*4), -2, 2))
	require.NoError(t, err)
	return x
}

// DynamicInputs checks a model with a dynamic batch dimension: Infer on
// an input that was never bound fails naming it (no device may invent a
// tensor), SetTensor rejects a wrong element type, rank or static
// dimension, any batch runs (batch 0 included: an empty batch gives empty
// outputs of the model's shape, on every device alike), and batches of
// different sizes run one after another on one request.
func DynamicInputs(t *testing.T, newPlugin NewPlugin) {
	ctx := context.Background()
	newRequest := func(t *testing.T) driver.InferRequest {
		t.Helper()
		p := open(t, newPlugin)
		cm, err := p.CompileModel(ctx, DynamicReluModel(), nil)
		require.NoError(t, err, "compiling the dynamic model on %s", p.Name())
		t.Cleanup(func() { assert.NoError(t, cm.Close()) })
		in := cm.Inputs()
		require.Len(t, in, 1)
		assert.Equal(t, int64(-1), in[0].Shape.Dims[0].Size, "input %s keeps its dynamic batch", in[0].Shape)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		return r
	}

	t.Run("UnsetInput", func(t *testing.T) {
		r := newRequest(t)
		err := r.Infer(ctx)
		require.Error(t, err, "Infer with the dynamic input never bound")
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), `"`+InputName+`"`)
		assert.Contains(t, err.Error(), "SetTensor")
		_, err = r.Tensor(InputName)
		assert.ErrorIs(t, err, driver.ErrNotFound, "Tensor of an input never bound")
		_, err = r.Tensor(OutputName)
		assert.ErrorIs(t, err, driver.ErrNotFound, "Tensor of an output before a successful Infer")
	})

	t.Run("WrongTensor", func(t *testing.T) {
		cases := []struct {
			name string
			x    *tensor.Tensor
		}{
			{"Type", tensor.MustNew(tensor.I64, tensor.Shape{2, 4})},
			{"Rank", tensor.MustNew(tensor.F32, tensor.Shape{2, 4, 1})},
			{"StaticDim", tensor.MustNew(tensor.F32, tensor.Shape{2, 5})},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := newRequest(t)
				err := r.SetTensor(InputName, tc.x)
				require.Error(t, err)
				assert.ErrorIs(t, err, driver.ErrInvalidArgument)
				assert.Contains(t, err.Error(), InputName)
				assert.ErrorIs(t, r.Infer(ctx), driver.ErrInvalidArgument, "the rejected tensor must not be bound")
			})
		}
	})

	t.Run("Batches", func(t *testing.T) {
		r := newRequest(t)
		for i, n := range []int64{3, 1, 0, 5, 0, 2} {
			x := batchInput(t, uint32(10+i), n)
			require.NoError(t, r.SetTensor(InputName, x), "batch %d", n)
			require.NoError(t, r.Infer(ctx), "batch %d", n)
			y, err := r.Tensor(OutputName)
			require.NoError(t, err)
			require.Equal(t, tensor.Shape{n, 4}, y.Shape(), "output of batch %d", n)
			got, err := tensor.Data[float32](y.Contiguous())
			require.NoError(t, err)
			assert.InDeltaSlice(t, want(x, true), got, 1e-6, "batch %d", n)
		}
	})

	t.Run("FreshOutputs", func(t *testing.T) {
		r := newRequest(t)
		x1 := batchInput(t, 20, 2)
		require.NoError(t, r.SetTensor(InputName, x1))
		require.NoError(t, r.Infer(ctx))
		y1, err := r.Tensor(OutputName)
		require.NoError(t, err)
		keep := y1.Clone()
		require.NoError(t, r.SetTensor(InputName, batchInput(t, 21, 2)))
		require.NoError(t, r.Infer(ctx))
		assert.Equal(t, keep.Contiguous().F32(), y1.Contiguous().F32(), "the next inference wrote into an output tensor already handed out")
	})
}

// UseAfterClose checks that every method of a closed request, compiled
// model and plugin that returns an error returns one wrapping ErrClosed
// (ProfilingInfo returns nothing), and that Close again returns nil.
func UseAfterClose(t *testing.T, newPlugin NewPlugin) {
	ctx := context.Background()
	x4 := batchInput(t, 30, 1)

	t.Run("InferRequest", func(t *testing.T) {
		p := open(t, newPlugin)
		cm, _ := compile(t, p, map[string]string{driver.KeyEnableProfiling: "YES"})
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		require.NoError(t, r.SetTensor(InputName, x4))
		require.NoError(t, r.Infer(ctx))
		require.NoError(t, r.Close())
		assertClosed(t, map[string]error{
			"SetTensor":      r.SetTensor(InputName, x4),
			"Tensor(input)":  second(r.Tensor(InputName)),
			"Tensor(output)": second(r.Tensor(OutputName)),
			"Infer":          r.Infer(ctx),
		})
		assert.Empty(t, r.ProfilingInfo(), "ProfilingInfo after Close")
		assert.NoError(t, r.Close(), "second Close")
	})

	t.Run("AsyncInferRequest", func(t *testing.T) {
		_, _, r, _ := newAsync(t, newPlugin)
		require.NoError(t, r.SetTensor(InputName, x4))
		require.NoError(t, r.StartAsync(ctx))
		require.NoError(t, r.Wait(waitCtx(t)))
		require.NoError(t, r.Close())
		done, waitForErr := r.WaitFor(0)
		assert.True(t, done, "WaitFor after Close")
		assertClosed(t, map[string]error{
			"SetTensor":  r.SetTensor(InputName, x4),
			"Tensor":     second(r.Tensor(OutputName)),
			"StartAsync": r.StartAsync(ctx),
			"Wait":       r.Wait(ctx),
			"WaitFor":    waitForErr,
			"Infer":      r.Infer(ctx),
		})
		assert.Empty(t, r.ProfilingInfo(), "ProfilingInfo after Close")
		assert.NoError(t, r.Close(), "second Close")
	})

	t.Run("CompiledModel", func(t *testing.T) {
		p := open(t, newPlugin)
		cm, err := p.CompileModel(ctx, ReluModel(), nil)
		if errors.Is(err, driver.ErrUnsupported) {
			cm, err = p.CompileModel(ctx, IdentityModel(), nil)
		}
		require.NoError(t, err)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		require.NoError(t, r.SetTensor(InputName, x4))
		require.NoError(t, cm.Close())
		errs := map[string]error{
			"CreateInferRequest":       second(cm.CreateInferRequest()),
			"Property":                 second(cm.Property(driver.KeyNetworkName)),
			"RuntimeModel":             second(cm.RuntimeModel()),
			"Infer of an open request": r.Infer(ctx),
		}
		if ac, ok := cm.(driver.AsyncCompiledModel); ok {
			errs["CreateAsyncInferRequest"] = second(ac.CreateAsyncInferRequest())
		}
		if ex, ok := cm.(driver.Exporter); ok {
			errs["Export"] = ex.Export(&bytes.Buffer{})
		}
		assertClosed(t, errs)
		assert.NoError(t, cm.Close(), "second Close")
	})

	t.Run("Plugin", func(t *testing.T) {
		p := newPlugin(t)
		require.NoError(t, p.Close())
		errs := map[string]error{
			"Property":      second(p.Property(driver.KeyFullDeviceName)),
			"SetProperties": p.SetProperties(map[string]string{driver.KeyEnableProfiling: "YES"}),
			"CompileModel":  second(p.CompileModel(ctx, ReluModel(), nil)),
		}
		if q, ok := p.(driver.Querier); ok {
			errs["QueryModel"] = second(q.QueryModel(ctx, ReluModel(), nil))
		}
		if im, ok := p.(driver.Importer); ok {
			errs["ImportModel"] = second(im.ImportModel(ctx, bytes.NewReader(nil), nil))
		}
		assertClosed(t, errs)
		assert.NoError(t, p.Close(), "second Close")
	})
}

// second returns the error of a two-result call.
func second[T any](_ T, err error) error { return err }

// assertClosed checks that every call's error wraps ErrClosed.
func assertClosed(t *testing.T, errs map[string]error) {
	t.Helper()
	for name, err := range errs {
		assert.ErrorIs(t, err, driver.ErrClosed, "%s after Close", name)
	}
}

// Capabilities checks that OPTIMIZATION_CAPABILITIES claims only what the
// device accepts: FP16 and BF16 only with that INFERENCE_PRECISION_HINT
// accepted by SetProperties and CompileModel (and the model then running
// within half-precision tolerance), EXPORT_IMPORT only with a compiled
// model that exports and a plugin that imports it back, INT8 only with a
// quantized model whose product runs in 8-bit integers (checkINT8), and no
// claim clinfer has no op for (BIN: the op set has no binary op).
func Capabilities(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	v, err := p.Property(driver.KeyOptimizationCapabilities)
	require.NoError(t, err)
	caps := strings.Fields(v)
	precision := map[string]tensor.ElementType{"FP32": tensor.F32, "FP16": tensor.F16, "BF16": tensor.BF16}
	for _, c := range caps {
		t.Run(c, func(t *testing.T) {
			if prec, ok := precision[c]; ok {
				checkPrecision(t, newPlugin, prec)
				return
			}
			switch c {
			case "EXPORT_IMPORT":
				checkExportImport(t, newPlugin)
			case "INT8":
				checkINT8(t, newPlugin, caps)
			default:
				t.Errorf("%s claims %s in %s: clinfer's op set has no op for it (claims: %q)", p.Name(), c, driver.KeyOptimizationCapabilities, v)
			}
		})
	}
}

// checkPrecision runs the Relu model with INFERENCE_PRECISION_HINT=prec.
func checkPrecision(t *testing.T, newPlugin NewPlugin, prec tensor.ElementType) {
	p := open(t, newPlugin)
	props := map[string]string{driver.KeyInferencePrecisionHint: prec.String()}
	require.NoError(t, p.SetProperties(props), "the device claims %s", prec)
	cm, relu := compile(t, p, props)
	got, err := cm.Property(driver.KeyInferencePrecisionHint)
	require.NoError(t, err)
	assert.Equal(t, prec.String(), got)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	x := loadInput(40)
	require.NoError(t, r.SetTensor(InputName, x))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor(OutputName)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want(x, relu), y.Contiguous().F32(), 2e-2, "output at %s", prec)
}

// checkExportImport exports a compiled model and imports it back.
func checkExportImport(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	im, ok := p.(driver.Importer)
	require.True(t, ok, "%s claims EXPORT_IMPORT but its plugin (%T) does not implement driver.Importer", p.Name(), p)
	cm, relu := compile(t, p, nil)
	ex, ok := cm.(driver.Exporter)
	require.True(t, ok, "%s claims EXPORT_IMPORT but its compiled model (%T) does not implement driver.Exporter", p.Name(), cm)
	var blob bytes.Buffer
	require.NoError(t, ex.Export(&blob))
	back, err := im.ImportModel(context.Background(), &blob, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, back.Close()) })
	r, err := back.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	x := loadInput(41)
	require.NoError(t, r.SetTensor(InputName, x))
	require.NoError(t, r.Infer(context.Background()))
	checkOutput(t, r, x, relu, "imported model")
}

// ConcurrentInfer checks one request used from several goroutines at once:
// each Infer either runs or fails with ErrBusy (never anything else, never
// a data race), at least one runs, SetTensor during a run is accepted or
// ErrBusy, and the request's output afterwards is the model's output for
// the input bound last.
func ConcurrentInfer(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	cm, relu := compile(t, p, nil)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	x := loadInput(50)
	require.NoError(t, r.SetTensor(InputName, x))

	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := range workers {
		wg.Add(1)
		go func() { // exits after its rounds
			defer wg.Done()
			for range rounds {
				errs <- r.Infer(context.Background())
				if w%2 == 0 {
					errs <- r.SetTensor(InputName, x)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	ran := 0
	for err := range errs {
		if err == nil {
			ran++
			continue
		}
		assert.ErrorIs(t, err, driver.ErrBusy, "a concurrent call on one request either runs or is busy")
	}
	assert.Positive(t, ran)
	require.NoError(t, r.Infer(context.Background()))
	checkOutput(t, r, x, relu, "after concurrent use")
}
