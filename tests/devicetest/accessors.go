package devicetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

// MutatedShapes changes every slice the API hands out (Tensor.Shape and
// Strides of bound inputs and of outputs, the ports' dimensions) the way a
// Go user may, although they are documented as not to be modified: no
// change may make the device panic or compute on a shape other than the
// tensor's, since accessors hand out copies.
func MutatedShapes(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	cm, relu := compile(t, p, nil)
	for _, ports := range [][]graph.Port{cm.Inputs(), cm.Outputs()} {
		for _, port := range ports {
			for i := range port.Shape.Dims {
				port.Shape.Dims[i] = graph.StaticDim(1 << 20)
			}
			port.Shape.Dims = append(port.Shape.Dims, graph.StaticDim(7))
		}
	}
	assert.Equal(t, ReluModel().Inputs()[0].Shape, cm.Inputs()[0].Shape, "the compiled model's input after its copy was changed")
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	x := loadInput(80)
	require.NoError(t, r.SetTensor(InputName, x))
	mutate := func(s []int64) {
		for i := range s {
			s[i] *= 2
		}
	}
	mutate(x.Shape())
	mutate(x.Strides())
	require.NotPanics(t, func() { require.NoError(t, r.Infer(context.Background())) }, "Infer after the input's Shape() and Strides() were changed")
	checkOutput(t, r, x, relu, "after changing the input's Shape()")

	y, err := r.Tensor(OutputName)
	require.NoError(t, err)
	mutate(y.Shape())
	mutate(y.Strides())
	require.NoError(t, r.SetTensor(OutputName, y), "binding the output whose Shape() was changed")
	require.NotPanics(t, func() { require.NoError(t, r.Infer(context.Background())) }, "Infer into an output whose Shape() was changed")
	checkOutput(t, r, x, relu, "after changing the output's Shape()")
}

// ConvModel returns x f32[1,1,?,?] -> Conv 3x3 "conv1" -> MaxPool 2x2/2
// "pool" -> Conv 3x3 "conv2" -> Result "y": it takes heights and widths
// from 8 up, so smaller inputs fit its port but not the model.
func ConvModel() *graph.Model {
	x := graph.NewParameter(InputName, tensor.F32, graph.ShapeOf(1, 1, -1, -1))
	w, err := tensor.FromF32(tensor.Shape{1, 1, 3, 3}, seeded.Float32s(90, 9, -1, 1))
	if err != nil {
		panic(err) // a fixed, valid shape: cannot fail
	}
	wc := graph.NewConstant("w", w)
	c1 := graph.NewNode("Conv", "conv1", []graph.Output{x.Out(0), wc.Out(0)}, nil, 1)
	p := graph.NewNode("MaxPool", "pool", []graph.Output{c1.Out(0)}, graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}, 1)
	c2 := graph.NewNode("Conv", "conv2", []graph.Output{p.Out(0), wc.Out(0)}, nil, 1)
	return graph.NewModel("devicetest_conv", []*graph.Node{x}, []*graph.Node{graph.NewResult(OutputName, c2.Out(0))})
}
