package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// TestRandomChecks checks that the random-output checks accept what the
// ops define and catch what they do not.
func TestRandomChecks(t *testing.T) {
	f32 := func(v ...float32) *tensor.Tensor {
		x, err := tensor.FromF32(tensor.Shape{int64(len(v))}, v)
		require.NoError(t, err)
		return x
	}
	p := f32(0, 1, 0.5, 0.5)
	want := f32(0, 1, 0, 0)
	assert.NoError(t, checkBernoulli([]*tensor.Tensor{p}, []*tensor.Tensor{f32(0, 1, 1, 0)}, []*tensor.Tensor{want}))
	assert.ErrorIs(t, checkBernoulli([]*tensor.Tensor{p}, []*tensor.Tensor{f32(0, 1, 2, 0)}, []*tensor.Tensor{want}), ErrMismatch, "not 0 or 1")
	assert.ErrorIs(t, checkBernoulli([]*tensor.Tensor{p}, []*tensor.Tensor{f32(1, 1, 1, 0)}, []*tensor.Tensor{want}), ErrMismatch, "p = 0 drew 1")
	assert.ErrorIs(t, checkBernoulli([]*tensor.Tensor{p}, []*tensor.Tensor{f32(0, 1, 1)}, []*tensor.Tensor{want}), ErrMismatch, "shape")

	x := make([]float32, 100)
	kept := make([]float32, 100)
	mask := make([]bool, 100)
	for i := range x {
		x[i] = float32(i + 1)
		if i%2 == 0 {
			kept[i], mask[i] = x[i]*2, true
		}
	}
	ratio, train := f32(0.5), tensor.MustNew(tensor.Bool, tensor.Shape{})
	m, err := tensor.FromBool(tensor.Shape{100}, mask)
	require.NoError(t, err)
	ins := []*tensor.Tensor{f32(x...), ratio, train}
	wants := []*tensor.Tensor{f32(x...), m}
	assert.NoError(t, checkTrainingDropout(ins, []*tensor.Tensor{f32(kept...), m}, wants))
	bad := append([]float32(nil), kept...)
	bad[0] = x[0]
	assert.ErrorIs(t, checkTrainingDropout(ins, []*tensor.Tensor{f32(bad...), m}, wants), ErrMismatch, "kept without scaling")
	flipped := append([]bool(nil), mask...)
	flipped[1] = true
	fm, err := tensor.FromBool(tensor.Shape{100}, flipped)
	require.NoError(t, err)
	assert.ErrorIs(t, checkTrainingDropout(ins, []*tensor.Tensor{f32(kept...), fm}, wants), ErrMismatch, "the mask disagrees")
	assert.ErrorIs(t, checkTrainingDropout(ins, []*tensor.Tensor{f32(x...), m}, wants), ErrMismatch, "nothing dropped with ratio 0.5")
}
