package cliutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/tensor"
)

func TestRandomTensor(t *testing.T) {
	cases := []struct {
		name   string
		typ    tensor.ElementType
		lo, hi float64
	}{
		{"F32", tensor.F32, -1, 1},
		{"I64", tensor.I64, 0, 9},
		{"Bool", tensor.Bool, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := RandomTensor(tc.typ, tensor.Shape{4, 25}, 7)
			require.NoError(t, err)
			b, err := RandomTensor(tc.typ, tensor.Shape{4, 25}, 7)
			require.NoError(t, err)
			c, err := RandomTensor(tc.typ, tensor.Shape{4, 25}, 8)
			require.NoError(t, err)
			assert.Equal(t, a.Float64s(), b.Float64s(), "same seed, same data")
			assert.NotEqual(t, a.Float64s(), c.Float64s(), "another seed, other data")
			for _, v := range a.Float64s() {
				assert.GreaterOrEqual(t, v, tc.lo)
				assert.LessOrEqual(t, v, tc.hi)
			}
		})
	}
}

func TestParseShapesAndInputs(t *testing.T) {
	m, name, err := ReadModel("")
	require.NoError(t, err)
	assert.Contains(t, name, defaultmodel.Name)
	shapes, err := ParseShapes(m, []string{defaultmodel.InputName + "=[2,3,64,64]"})
	require.NoError(t, err)
	in, err := RandomInputs(m, shapes, 1)
	require.NoError(t, err)
	assert.Equal(t, tensor.Shape{2, 3, 64, 64}, in[defaultmodel.InputName].Shape())

	bad := []struct{ spec, mention string }{
		{"nosuch=[1]", "nosuch"},
		{"noequals", "NAME=VALUE"},
		{defaultmodel.InputName + "=[1,3]", "does not fit"},
		{defaultmodel.InputName + "=[x]", defaultmodel.InputName},
	}
	for _, b := range bad {
		t.Run(b.spec, func(t *testing.T) {
			_, err := ParseShapes(m, []string{b.spec})
			require.Error(t, err)
			assert.Contains(t, err.Error(), b.mention)
		})
	}
	props, err := Props("-p", []string{"A=1", "B=2", "A=3"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "3", "B": "2"}, props)
	_, _, err = ReadModel("/nonexistent.onnx")
	assert.ErrorContains(t, err, "/nonexistent.onnx")
}
