package driver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func coreModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(3)}})
	r := graph.NewNode("Relu", "r", []graph.Output{x.Out(0)}, nil, 1)
	r.Outputs[0].Type, r.Outputs[0].Shape = tensor.F32, x.Outputs[0].Shape.Clone()
	y := graph.NewResult("y", r.Out(0))
	y.Outputs[0].Type, y.Outputs[0].Shape = tensor.F32, x.Outputs[0].Shape.Clone()
	return graph.NewModel("m", []*graph.Node{x}, []*graph.Node{y})
}

// TestModelCore: ports from the model, copies that callers cannot change,
// properties, closing once, and profiled times.
func TestModelCore(t *testing.T) {
	var c driver.ModelCore
	c.Init("dev", coreModel(), driver.NewProperties(driver.ReadOnlySpec(driver.KeyNetworkName, "m")))
	in := c.Inputs()
	require.Len(t, in, 1)
	assert.Equal(t, "x", in[0].Name)
	assert.Equal(t, "[N,3]", in[0].Shape.String())
	in[0].Shape.Dims[1] = graph.StaticDim(7)
	assert.Equal(t, "[N,3]", c.Inputs()[0].Shape.String(), "Inputs returns a copy")
	assert.Equal(t, "y", c.Outputs()[0].Name)
	assert.Equal(t, "y", c.Output(0).Name)

	v, err := c.Property(driver.KeyNetworkName)
	require.NoError(t, err)
	assert.Equal(t, "m", v)
	_, err = c.Property("NO_SUCH_KEY")
	assert.ErrorIs(t, err, driver.ErrNotFound)
	assert.ErrorContains(t, err, "dev: ")

	_, ok := c.PerfCounter("r")
	assert.False(t, ok)
	c.RecordPerf([]driver.ProfilingInfo{{NodeName: "r", NodeType: "Relu", RealTime: 1500 * time.Microsecond}, {NodeName: "infer", NodeType: "Stage", RealTime: time.Second}})
	us, ok := c.PerfCounter("r")
	assert.True(t, ok)
	assert.Equal(t, "1500", us)
	_, ok = c.PerfCounter("infer")
	assert.False(t, ok, "stages are not nodes")

	assert.NoError(t, c.Check())
	assert.True(t, c.MarkClosed())
	assert.False(t, c.MarkClosed(), "the second close finds it closed")
	err = c.Check()
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorContains(t, err, `dev: compiled model "m"`)
	_, err = c.Property(driver.KeyNetworkName)
	assert.ErrorIs(t, err, driver.ErrClosed)
}

// TestRequestCoreBegin: the prologue of an inference on every device.
func TestRequestCoreBegin(t *testing.T) {
	m := coreModel()
	var mc driver.ModelCore
	mc.Init("dev", m, driver.NewProperties())
	newCore := func() *driver.RequestCore {
		rc := &driver.RequestCore{}
		rc.Init("dev", mc.Inputs(), mc.Outputs())
		x, err := tensor.FromF32(tensor.Shape{2, 3}, make([]float32, 6))
		require.NoError(t, err)
		require.NoError(t, rc.SetTensor("x", x))
		return rc
	}
	ok := func() error { return nil }

	rc := newCore()
	ran := false
	in, out, user, err := rc.Begin(context.Background(), "m", ok, func() error { ran = true; return nil })
	require.NoError(t, err)
	assert.True(t, ran)
	require.Len(t, in, 1)
	assert.Equal(t, tensor.Shape{2, 3}, in[0].Shape())
	assert.Len(t, out, 1)
	assert.Equal(t, []bool{false}, user)

	boom := errors.New("boom")
	_, _, _, err = rc.Begin(context.Background(), "m", ok, func() error { return boom })
	assert.ErrorIs(t, err, boom)
	_, _, _, err = rc.Begin(context.Background(), "m", mc.Check, nil)
	assert.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err = rc.Begin(ctx, "m", ok, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `dev: infer "m"`)

	closedModel := func() error { return driver.ErrClosed }
	_, _, _, err = rc.Begin(context.Background(), "m", closedModel, nil)
	assert.ErrorIs(t, err, driver.ErrClosed)

	rc.Mu.Lock()
	rc.Closed = true
	rc.Mu.Unlock()
	_, _, _, err = rc.Begin(context.Background(), "m", ok, func() error { t.Error("locked ran on a closed request"); return nil })
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorContains(t, err, "dev: infer request")
}
