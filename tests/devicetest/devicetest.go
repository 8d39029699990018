package devicetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Names of the tiny model's ports and nodes.
const (
	InputName  = "x"
	ReluName   = "relu"
	OutputName = "y"
)

// NewPlugin constructs a fresh plugin for one test; it should register
// cleanup (t.Cleanup) for anything beyond the plugin's Close, which the
// suite calls.
type NewPlugin func(t *testing.T) driver.Plugin

// ReluModel returns Parameter "x" f32[1,4] -> Relu "relu" -> Result "y",
// with the Relu's output type and shape filled in (so it does not depend on
// the op table).
func ReluModel() *graph.Model {
	x := graph.NewParameter(InputName, tensor.F32, graph.ShapeOf(1, 4))
	relu := graph.NewNode("Relu", ReluName, []graph.Output{x.Out(0)}, nil, 1)
	relu.Outputs[0].Type = tensor.F32
	relu.Outputs[0].Shape = graph.ShapeOf(1, 4)
	y := graph.NewResult(OutputName, relu.Out(0))
	return graph.NewModel("devicetest_relu", []*graph.Node{x}, []*graph.Node{y})
}

// IdentityModel returns Parameter "x" f32[1,4] -> Result "y".
func IdentityModel() *graph.Model {
	x := graph.NewParameter(InputName, tensor.F32, graph.ShapeOf(1, 4))
	y := graph.NewResult(OutputName, x.Out(0))
	return graph.NewModel("devicetest_identity", []*graph.Node{x}, []*graph.Node{y})
}

// Run runs every part of the suite as subtests.
func Run(t *testing.T, newPlugin NewPlugin) {
	t.Run("Properties", func(t *testing.T) { Properties(t, newPlugin) })
	t.Run("InferRequestBasics", func(t *testing.T) { InferRequestBasics(t, newPlugin) })
	t.Run("Cancellation", func(t *testing.T) { Cancellation(t, newPlugin) })
	t.Run("Async", func(t *testing.T) { Async(t, newPlugin) })
	t.Run("DynamicInputs", func(t *testing.T) { DynamicInputs(t, newPlugin) })
	t.Run("UseAfterClose", func(t *testing.T) { UseAfterClose(t, newPlugin) })
	t.Run("Capabilities", func(t *testing.T) { Capabilities(t, newPlugin) })
	t.Run("ConcurrentInfer", func(t *testing.T) { ConcurrentInfer(t, newPlugin) })
	t.Run("CloseDuringInfer", func(t *testing.T) { CloseDuringInfer(t, newPlugin) })
	t.Run("FirstUse", func(t *testing.T) { FirstUse(t, newPlugin) })
	t.Run("MutatedShapes", func(t *testing.T) { MutatedShapes(t, newPlugin) })
	t.Run("Remote", func(t *testing.T) { Remote(t, newPlugin) })
}

// open constructs a plugin and closes it when the test ends.
func open(t *testing.T, newPlugin NewPlugin) driver.Plugin {
	t.Helper()
	p := newPlugin(t)
	require.NotNil(t, p, "newPlugin returned nil")
	t.Cleanup(func() { assert.NoError(t, p.Close(), "closing plugin %s", p.Name()) })
	return p
}

// compile compiles the Relu model, falling back to the identity model when
// the device does not support Relu. It reports whether Relu is in the model.
func compile(t *testing.T, p driver.Plugin, props map[string]string) (driver.CompiledModel, bool) {
	t.Helper()
	cm, err := p.CompileModel(context.Background(), ReluModel(), props)
	relu := true
	if errors.Is(err, driver.ErrUnsupported) {
		t.Logf("device %s cannot run Relu yet (%v); testing on Parameter -> Result", p.Name(), err)
		cm, err = p.CompileModel(context.Background(), IdentityModel(), props)
		relu = false
	}
	require.NoError(t, err, "compiling the test model on %s", p.Name())
	require.NotNil(t, cm)
	t.Cleanup(func() { assert.NoError(t, cm.Close(), "closing compiled model") })
	return cm, relu
}

// supported reads and parses SUPPORTED_PROPERTIES.
func supported(t *testing.T, get func(string) (string, error)) ([]string, map[string]bool) {
	t.Helper()
	s, err := get(driver.KeySupportedProperties)
	require.NoError(t, err, "reading %s", driver.KeySupportedProperties)
	keys, rw, err := driver.ParseSupportedProperties(s)
	require.NoError(t, err)
	require.NotEmpty(t, keys, "%s is empty", driver.KeySupportedProperties)
	return keys, rw
}

// snapshot reads every supported key.
func snapshot(t *testing.T, p driver.Plugin, keys []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range keys {
		v, err := p.Property(k)
		require.NoError(t, err, "reading property %s", k)
		m[k] = v
	}
	return m
}

// volatile are read-only keys whose value may change between reads.
var volatile = map[string]bool{"DEVICE_THERMAL": true, "GPU_MEMORY_STATISTICS": true}

func stable(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !volatile[k] {
			out[k] = v
		}
	}
	return out
}

// Properties checks the property contract of a plugin and of the models it
// compiles; see the package documentation.
func Properties(t *testing.T, newPlugin NewPlugin) {
	t.Run("SupportedPropertiesReadable", func(t *testing.T) {
		p := open(t, newPlugin)
		keys, rw := supported(t, p.Property)
		assert.Contains(t, keys, driver.KeySupportedProperties)
		assert.False(t, rw[driver.KeySupportedProperties], "%s must be read-only", driver.KeySupportedProperties)
		for _, k := range []string{driver.KeyPerformanceHint, driver.KeyNumStreams, driver.KeyEnableProfiling, driver.KeyInferencePrecisionHint, driver.KeyFullDeviceName} {
			assert.Contains(t, keys, k, "every device supports %s", k)
		}
		for _, k := range []string{driver.KeyPerformanceHint, driver.KeyNumStreams, driver.KeyEnableProfiling} {
			assert.True(t, rw[k], "%s must be read-write", k)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			assert.False(t, seen[k], "%s listed twice in %s", k, driver.KeySupportedProperties)
			seen[k] = true
			_, err := p.Property(k)
			assert.NoError(t, err, "reading supported property %s", k)
		}
	})

	t.Run("SetBackWhatWasRead", func(t *testing.T) {
		p := open(t, newPlugin)
		keys, rw := supported(t, p.Property)
		before := snapshot(t, p, keys)
		for _, k := range keys {
			if !rw[k] {
				continue
			}
			require.NoError(t, p.SetProperties(map[string]string{k: before[k]}), "setting %s back to %q", k, before[k])
			got, err := p.Property(k)
			require.NoError(t, err)
			assert.Equal(t, before[k], got, "%s after setting it to what was read", k)
		}
		assert.Equal(t, stable(before), stable(snapshot(t, p, keys)), "setting values back changed properties")
	})

	t.Run("SetChangesValue", func(t *testing.T) {
		p := open(t, newPlugin)
		cur, err := p.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		want := otherHint(cur)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyPerformanceHint: want}))
		got, err := p.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyEnableProfiling: "true"}))
		got, err = p.Property(driver.KeyEnableProfiling)
		require.NoError(t, err)
		assert.Equal(t, "YES", got, "ENABLE_PROFILING=true reads back normalised")
	})

	t.Run("BadValues", func(t *testing.T) {
		cases := []struct {
			name     string
			props    map[string]string
			sentinel error
			mention  []string
		}{
			{"UnknownKey", map[string]string{"DEVICETEST_NO_SUCH_KEY": "1"}, driver.ErrNotFound, []string{"DEVICETEST_NO_SUCH_KEY", driver.KeyPerformanceHint}},
			{"MisspeltKey", map[string]string{"PERFORMANCE_HNT": "LATENCY"}, driver.ErrNotFound, []string{"PERFORMANCE_HNT", "did you mean PERFORMANCE_HINT?"}},
			{"LowerCaseKey", map[string]string{"num_streams": "1"}, driver.ErrNotFound, []string{"num_streams", "did you mean NUM_STREAMS?"}},
			{"NegativeStreams", map[string]string{driver.KeyNumStreams: "-10"}, driver.ErrInvalidArgument, []string{driver.KeyNumStreams, "-10", "AUTO"}},
			{"ZeroStreams", map[string]string{driver.KeyNumStreams: "0"}, driver.ErrInvalidArgument, []string{driver.KeyNumStreams, `"0"`, "AUTO"}},
			{"NumaStreams", map[string]string{driver.KeyNumStreams: "NUMA"}, driver.ErrInvalidArgument, []string{driver.KeyNumStreams, "NUMA", "AUTO"}},
			{"NumericHint", map[string]string{driver.KeyPerformanceHint: "-1"}, driver.ErrInvalidArgument, []string{driver.KeyPerformanceHint, "-1", "LATENCY", "THROUGHPUT"}},
			{"MaybeProfiling", map[string]string{driver.KeyEnableProfiling: "maybe"}, driver.ErrInvalidArgument, []string{driver.KeyEnableProfiling, "maybe", "YES", "NO"}},
			{"ReadOnlyKey", map[string]string{driver.KeyFullDeviceName: "x"}, driver.ErrInvalidArgument, []string{driver.KeyFullDeviceName}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := open(t, newPlugin)
				keys, _ := supported(t, p.Property)
				before := snapshot(t, p, keys)
				err := p.SetProperties(tc.props)
				require.Error(t, err, "SetProperties(%v)", tc.props)
				assert.ErrorIs(t, err, tc.sentinel)
				for _, s := range tc.mention {
					assert.Contains(t, err.Error(), s, "the error should mention %q", s)
				}
				assert.Equal(t, stable(before), stable(snapshot(t, p, keys)), "a failed SetProperties changed properties")
			})
		}
		t.Run("UnknownKeyRead", func(t *testing.T) {
			p := open(t, newPlugin)
			_, err := p.Property("DEVICETEST_NO_SUCH_KEY")
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrNotFound)
			assert.Contains(t, err.Error(), "DEVICETEST_NO_SUCH_KEY")
		})
	})

	t.Run("FailedSetIsAtomic", func(t *testing.T) {
		p := open(t, newPlugin)
		keys, _ := supported(t, p.Property)
		before := snapshot(t, p, keys)
		err := p.SetProperties(map[string]string{
			driver.KeyPerformanceHint: otherHint(before[driver.KeyPerformanceHint]),
			driver.KeyEnableProfiling: otherBool(before[driver.KeyEnableProfiling]),
			driver.KeyNumStreams:      "-10",
		})
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Equal(t, stable(before), stable(snapshot(t, p, keys)), "a failed SetProperties applied some of its values")
	})

	t.Run("CompileProperties", func(t *testing.T) {
		p := open(t, newPlugin)
		hint, err := p.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		prof, err := p.Property(driver.KeyEnableProfiling)
		require.NoError(t, err)
		// The plugin's own setting reaches the compiled model...
		pluginHint := otherHint(hint)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyPerformanceHint: pluginHint}))
		keys, _ := supported(t, p.Property)
		before := snapshot(t, p, keys)
		// ...and compile-time properties override it without leaking back.
		compileProf := otherBool(prof)
		cm, _ := compile(t, p, map[string]string{driver.KeyEnableProfiling: compileProf})
		got, err := cm.Property(driver.KeyEnableProfiling)
		require.NoError(t, err)
		assert.Equal(t, compileProf, got, "compiled model's %s", driver.KeyEnableProfiling)
		got, err = cm.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		assert.Equal(t, pluginHint, got, "compiled model's %s comes from the plugin", driver.KeyPerformanceHint)
		assert.Equal(t, stable(before), stable(snapshot(t, p, keys)), "CompileModel's properties changed the plugin's")

		cm2, _ := compile(t, p, map[string]string{driver.KeyPerformanceHint: otherHint(pluginHint)})
		got, err = cm2.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		assert.Equal(t, otherHint(pluginHint), got, "compile-time %s overrides the plugin's", driver.KeyPerformanceHint)
		got, err = cm.Property(driver.KeyPerformanceHint)
		require.NoError(t, err)
		assert.Equal(t, pluginHint, got, "compiling a second model changed the first one's properties")

		_, err = cm.Property("DEVICETEST_NO_SUCH_KEY")
		assert.ErrorIs(t, err, driver.ErrNotFound, "compiled model, unknown key")
	})

	t.Run("CompiledStreamsResolved", func(t *testing.T) {
		p := open(t, newPlugin)
		for _, hint := range []driver.PerformanceHint{driver.HintLatency, driver.HintThroughput} {
			cm, _ := compile(t, p, map[string]string{driver.KeyNumStreams: "AUTO", driver.KeyPerformanceHint: hint.String()})
			v, err := cm.Property(driver.KeyNumStreams)
			require.NoError(t, err)
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "a compiled model reports the %s it resolved AUTO to, not %q (%s)", driver.KeyNumStreams, v, hint)
			assert.Positive(t, n, "%s of a compiled model (%s)", driver.KeyNumStreams, hint)
		}
	})

	t.Run("StreamsHonouredOrRefused", func(t *testing.T) { streamsHonouredOrRefused(t, newPlugin) })

	t.Run("CompileBadProperties", func(t *testing.T) {
		cases := []struct {
			name     string
			props    map[string]string
			sentinel error
		}{
			{"UnknownKey", map[string]string{"DEVICETEST_NO_SUCH_KEY": "1"}, driver.ErrNotFound},
			{"NegativeStreams", map[string]string{driver.KeyNumStreams: "-10"}, driver.ErrInvalidArgument},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := open(t, newPlugin)
				cm, err := p.CompileModel(context.Background(), ReluModel(), tc.props)
				if cm != nil {
					assert.NoError(t, cm.Close())
				}
				require.Error(t, err, "CompileModel with %v", tc.props)
				assert.ErrorIs(t, err, tc.sentinel)
				for k := range tc.props {
					assert.Contains(t, err.Error(), k)
				}
			})
		}
	})
}

// otherHint returns a valid PERFORMANCE_HINT different from cur.
func otherHint(cur string) string {
	if cur == driver.HintThroughput.String() {
		return driver.HintLatency.String()
	}
	return driver.HintThroughput.String()
}

// otherBool returns YES for NO and NO for anything else.
func otherBool(cur string) string {
	if cur == "NO" {
		return "YES"
	}
	return "NO"
}

// InferRequestBasics checks SetTensor's checks, that Infer leaves inputs
// alone and computes the outputs, and profiling on and off.
func InferRequestBasics(t *testing.T, newPlugin NewPlugin) {
	newRequest := func(t *testing.T, props map[string]string) (driver.CompiledModel, driver.InferRequest, bool) {
		t.Helper()
		p := open(t, newPlugin)
		cm, relu := compile(t, p, props)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		require.NotNil(t, r)
		t.Cleanup(func() { assert.NoError(t, r.Close(), "closing request") })
		return cm, r, relu
	}

	t.Run("Ports", func(t *testing.T) {
		cm, _, _ := newRequest(t, nil)
		in, out := cm.Inputs(), cm.Outputs()
		require.Len(t, in, 1)
		require.Len(t, out, 1)
		assert.Equal(t, InputName, in[0].Name)
		assert.Equal(t, tensor.F32, in[0].Type)
		assert.Equal(t, "[1,4]", in[0].Shape.String())
		assert.Equal(t, OutputName, out[0].Name)
		assert.Equal(t, tensor.F32, out[0].Type)
		assert.Equal(t, "[1,4]", out[0].Shape.String())
	})

	t.Run("SetTensorErrors", func(t *testing.T) {
		cases := []struct {
			name     string
			port     string
			tensor   *tensor.Tensor
			sentinel error
			mention  []string
		}{
			{"UnknownName", "devicetest_no_such_port", tensor.MustNew(tensor.F32, tensor.Shape{1, 4}), driver.ErrNotFound, []string{"devicetest_no_such_port", InputName}},
			{"WrongType", InputName, tensor.MustNew(tensor.I32, tensor.Shape{1, 4}), driver.ErrInvalidArgument, []string{InputName, "f32", "i32"}},
			{"WrongShape", InputName, tensor.MustNew(tensor.F32, tensor.Shape{1, 5}), driver.ErrInvalidArgument, []string{InputName, "[1,4]", "[1,5]"}},
			{"WrongRank", InputName, tensor.MustNew(tensor.F32, tensor.Shape{4}), driver.ErrInvalidArgument, []string{InputName}},
			{"Nil", InputName, nil, driver.ErrInvalidArgument, []string{InputName}},
			{"WrongOutputShape", OutputName, tensor.MustNew(tensor.F32, tensor.Shape{2, 4}), driver.ErrInvalidArgument, []string{OutputName}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, r, _ := newRequest(t, nil)
				err := r.SetTensor(tc.port, tc.tensor)
				require.Error(t, err)
				assert.ErrorIs(t, err, tc.sentinel)
				for _, s := range tc.mention {
					assert.Contains(t, err.Error(), s)
				}
			})
		}
		t.Run("UnknownTensor", func(t *testing.T) {
			_, r, _ := newRequest(t, nil)
			_, err := r.Tensor("devicetest_no_such_port")
			assert.ErrorIs(t, err, driver.ErrNotFound)
		})
		t.Run("MisspeltPortNames", func(t *testing.T) {
			_, r, _ := newRequest(t, nil)
			upper := strings.ToUpper(InputName)
			err := r.SetTensor(upper, loadInput(20))
			assert.ErrorIs(t, err, driver.ErrNotFound)
			assert.ErrorContains(t, err, fmt.Sprintf("no port %q; did you mean %s?", upper, InputName), "a misspelt input name")
			require.NoError(t, r.Infer(context.Background()))
			_, err = r.Tensor(OutputName + OutputName)
			assert.ErrorIs(t, err, driver.ErrNotFound)
			assert.ErrorContains(t, err, fmt.Sprintf("did you mean %s?", OutputName), "a misspelt output name")
		})
	})

	t.Run("InferLeavesInputAlone", func(t *testing.T) {
		_, r, relu := newRequest(t, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		in := make([]float32, 4)
		for i := range in {
			in[i] = float32(rng.NormFloat64())
		}
		in[0], in[1] = -1.5, 2.25 // one of each sign, whatever the RNG does
		x, err := tensor.FromF32(tensor.Shape{1, 4}, in)
		require.NoError(t, err)
		orig := x.Clone()
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.Infer(context.Background()))
		assert.Equal(t, orig.F32(), x.F32(), "Infer modified its input")
		got, err := r.Tensor(InputName)
		require.NoError(t, err)
		assert.Equal(t, orig.F32(), got.Contiguous().F32(), "input tensor after Infer")

		y, err := r.Tensor(OutputName)
		require.NoError(t, err)
		require.Equal(t, tensor.F32, y.Type())
		require.Equal(t, tensor.Shape{1, 4}, y.Shape())
		ys := y.Contiguous().F32()
		for i, v := range orig.F32() {
			want := v
			if relu {
				want = float32(math.Max(float64(v), 0))
			}
			assert.InDelta(t, want, ys[i], 1e-6, "output element %d", i)
		}

		// A second run with new values recomputes.
		for i := range in {
			in[i] = -in[i]
		}
		x2, err := tensor.FromF32(tensor.Shape{1, 4}, in)
		require.NoError(t, err)
		require.NoError(t, r.SetTensor(InputName, x2))
		require.NoError(t, r.Infer(context.Background()))
		y, err = r.Tensor(OutputName)
		require.NoError(t, err)
		ys = y.Contiguous().F32()
		for i, v := range in {
			want := v
			if relu {
				want = float32(math.Max(float64(v), 0))
			}
			assert.InDelta(t, want, ys[i], 1e-6, "second run, output element %d", i)
		}
	})

	t.Run("Profiling", func(t *testing.T) {
		for _, on := range []bool{true, false} {
			t.Run(driver.FormatBool(on), func(t *testing.T) {
				_, r, relu := newRequest(t, map[string]string{driver.KeyEnableProfiling: driver.FormatBool(on)})
				x, err := tensor.FromF32(tensor.Shape{1, 4}, []float32{-1, 0, 1, 2})
				require.NoError(t, err)
				require.NoError(t, r.SetTensor(InputName, x))
				require.NoError(t, r.Infer(context.Background()))
				prof := r.ProfilingInfo()
				if !on {
					assert.Empty(t, prof, "profiling entries with ENABLE_PROFILING=NO")
					return
				}
				require.NotEmpty(t, prof, "no profiling entries with ENABLE_PROFILING=YES")
				ops := 0
				for _, e := range prof {
					assert.NotEmpty(t, e.NodeName, "profiling entry %+v has no node name", e)
					assert.NotEmpty(t, e.NodeType, "profiling entry %+v has no node type", e)
					assert.GreaterOrEqual(t, e.RealTime, time.Duration(0), "negative real time in %+v", e)
					assert.GreaterOrEqual(t, e.CPUTime, time.Duration(0), "negative CPU time in %+v", e)
					if e.NodeType != "Stage" {
						ops++
					}
				}
				if relu {
					assert.Positive(t, ops, "no per-op profiling entries, only stages: %+v", prof)
				}
			})
		}
	})
}

// Cancellation checks that Infer with a done context returns its error.
func Cancellation(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	cm, _ := compile(t, p, nil)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	x, err := tensor.FromF32(tensor.Shape{1, 4}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	require.NoError(t, r.SetTensor(InputName, x))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = r.Infer(ctx)
	require.Error(t, err, "Infer with a cancelled context")
	assert.ErrorIs(t, err, context.Canceled)

	_, err = p.CompileModel(ctx, ReluModel(), nil)
	require.Error(t, err, "CompileModel with a cancelled context")
	assert.ErrorIs(t, err, context.Canceled)
	// The request still works afterwards.
	require.NoError(t, r.Infer(context.Background()))
}
