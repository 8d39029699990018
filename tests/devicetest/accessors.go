package devicetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
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
