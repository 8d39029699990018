package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSequencesAndOptionals checks the non-tensor values: construction
// checks, items, cloning, sizes, and that tensor-only operations refuse
// them with an error, never a panic (Bytes, a programmer error, panics).
func TestSequencesAndOptionals(t *testing.T) {
	a, err := FromF32(Shape{2}, []float32{1, 2})
	require.NoError(t, err)
	b, err := FromF32(Shape{1, 3}, []float32{3, 4, 5})
	require.NoError(t, err)
	seq, err := NewSequence(F32, []*Tensor{a, b})
	require.NoError(t, err)
	assert.Equal(t, KindSequence, seq.Kind())
	assert.Equal(t, F32, seq.Type())
	assert.Equal(t, Shape{2}, seq.Shape())
	assert.Len(t, seq.Items(), 2)
	assert.Equal(t, int64(20), seq.ByteSize())
	assert.Equal(t, "sequence<f32>(2)", seq.String())
	assert.True(t, seq.HasElement())

	empty, err := NewSequence(I64, nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Items())
	assert.Equal(t, I64, empty.Type())

	_, err = NewSequence(I64, []*Tensor{a})
	assert.ErrorIs(t, err, ErrType, "items must have the sequence's element type")
	_, err = NewSequence(F32, []*Tensor{seq})
	assert.ErrorIs(t, err, ErrType, "items must be tensors")

	c := seq.Clone()
	c.Items()[0].F32()[0] = 9
	assert.Equal(t, float32(1), a.F32()[0], "Clone is deep")
	assert.Equal(t, KindSequence, c.Kind())

	opt, err := NewOptional(KindOptional, F32, a)
	require.NoError(t, err)
	assert.True(t, opt.HasElement())
	assert.Same(t, a, opt.Items()[0])
	none, err := NewOptional(KindOptionalSequence, F32, nil)
	require.NoError(t, err)
	assert.False(t, none.HasElement())
	optSeq, err := NewOptional(KindOptionalSequence, F32, seq)
	require.NoError(t, err)
	assert.Equal(t, KindSequence, optSeq.Kind().Elem())
	_, err = NewOptional(KindOptional, F32, seq)
	assert.ErrorIs(t, err, ErrType, "an optional tensor cannot hold a sequence")
	_, err = NewOptional(KindSequence, F32, a)
	assert.ErrorIs(t, err, ErrType)

	for name, f := range map[string]func() error{
		"Convert": func() error { _, err := seq.Convert(F64); return err },
		"Data":    func() error { _, err := Data[float32](seq); return err },
		"View":    func() error { _, err := seq.View([]int64{0}, []int64{1}); return err },
		"Reshape": func() error { _, err := opt.Reshape(Shape{1}); return err },
		"CopyFrom": func() error {
			return MustNew(F32, Shape{2}).CopyFrom(seq)
		},
	} {
		assert.ErrorIs(t, f(), ErrType, name)
	}
	assert.Panics(t, func() { seq.Bytes() })
	assert.Equal(t, "optional<sequence<i64[2]>>", KindOptionalSequence.Describe(I64, "[2]"))
}
