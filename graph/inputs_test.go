package graph

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/tensor"
)

// convNet is x f32[1,1,?,?] -> Conv 3x3 -> MaxPool 2x2/2 -> Conv 3x3 -> y:
// it takes height and width from 8 up.
func convNet() *Model {
	x := NewParameter("x", tensor.F32, shp(1, 1, -1, -1))
	w := NewConstant("w", tensor.MustNew(tensor.F32, tensor.Shape{1, 1, 3, 3}))
	c1 := NewNode("Conv", "conv1", []Output{x.Out(0), w.Out(0)}, nil, 1)
	p := NewNode("MaxPool", "pool", []Output{c1.Out(0)}, Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}, 1)
	c2 := NewNode("Conv", "conv2", []Output{p.Out(0), w.Out(0)}, nil, 1)
	return NewModel("convnet", []*Node{x}, []*Node{NewResult("y", c2.Out(0))})
}

func TestFitInputs(t *testing.T) {
	m := convNet()
	require.NoError(t, m.InferShapes())
	out, err := m.FitInputs([]tensor.Shape{{1, 1, 8, 10}}, nil)
	require.NoError(t, err)
	got, ok := out.Results[0].Inputs[0].Shape().ToShape()
	require.True(t, ok)
	assert.Equal(t, tensor.Shape{1, 1, 1, 2}, got)
	assert.Same(t, m.Node("w").Value, out.Node("w").Value, "the copy shares the constants")

	cases := []struct {
		name  string
		shape tensor.Shape
		dims  []int
		fits  []int64
		msg   string
	}{
		{"HeightTooSmall", tensor.Shape{1, 1, 4, 9}, []int{2}, []int64{8},
			`input "x" of shape [1,1,4,9] does not fit the model (declared as [1,1,?,?]): dimension 2 is 4: too small, the smallest size that fits there is 8`},
		{"BothTooSmall", tensor.Shape{1, 1, 0, 5}, []int{2, 3}, []int64{8, 8},
			`input "x" of shape [1,1,0,5] does not fit the model (declared as [1,1,?,?]): dimension 2 is 0: too small, the smallest size that fits there is 8; dimension 3 is 5: too small, the smallest size that fits there is 8 ([1,1,8,8] fits)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.FitInputs([]tensor.Shape{tc.shape}, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInputShape)
			assert.ErrorIs(t, err, sentinel.ErrInvalidArgument)
			assert.NotErrorIs(t, err, ErrInvalidModel, "the inputs are at fault, not the model")
			var ie *InputShapeError
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, 0, ie.Input)
			assert.Equal(t, tc.dims, ie.Dims)
			assert.Equal(t, tc.fits, ie.Fits)
			assert.Equal(t, tc.msg, err.Error())
		})
	}
}

func TestReshape(t *testing.T) {
	m := convNet()
	require.NoError(t, m.InferShapes())
	require.NoError(t, m.Reshape(map[string]PartialShape{"x": shp(1, 1, 16, -1)}))
	assert.Equal(t, shp(1, 1, 16, -1), m.Inputs()[0].Shape, "some dimensions fixed, the others dynamic")
	assert.Equal(t, "[1,1,5,?]", m.Outputs()[0].Shape.String(), "shapes inferred through the graph")

	err := m.Reshape(map[string]PartialShape{"x": shp(1, 1, 6, 6)})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInputShape)
	assert.ErrorIs(t, err, sentinel.ErrInvalidArgument)
	assert.Contains(t, err.Error(), `graph: reshape model "convnet": input "x" of shape [1,1,6,6] does not fit the model (declared as [1,1,16,?])`)
	assert.Equal(t, shp(1, 1, 16, -1), m.Inputs()[0].Shape, "a failed Reshape changes nothing")

	err = m.Reshape(map[string]PartialShape{"X": shp(1, 1, 8, 8)})
	require.Error(t, err)
	assert.ErrorIs(t, err, sentinel.ErrNotFound)
	assert.Contains(t, err.Error(), `no input "X"; did you mean x? (inputs: x)`)
}

func TestParsePartialShape(t *testing.T) {
	for in, want := range map[string]PartialShape{
		"[1,3,?,?]":   shp(1, 3, -1, -1),
		"1,3,-1,224":  shp(1, 3, -1, 224),
		"[N,3]":       shp("N", 3),
		"[]":          shp(),
		"[...]":       DynamicRank,
		" [ 2 , 4 ] ": shp(2, 4),
	} {
		got, err := ParsePartialShape(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"[1,-2]", "[1,,2]", "[1, 2 3]"} {
		_, err := ParsePartialShape(bad)
		assert.Error(t, err, bad)
	}
}
