package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// TestReadValue decodes sequences and optionals as ONNX's test data
// stores them (SequenceProto, OptionalProto).
func TestReadValue(t *testing.T) {
	i64 := func(dims []int64, v ...int64) []byte {
		p := pb(nil)
		for _, d := range dims {
			p = p.varint(1, d)
		}
		p = p.varint(2, dtInt64)
		for _, x := range v {
			p = p.varint(7, x)
		}
		return p
	}
	seq := pb(nil).str(1, "s").varint(2, valueTensor).bytes(3, i64([]int64{2}, 1, 2)).bytes(3, i64([]int64{1}, 3))
	v, name, err := ReadValue(seq, tensor.KindSequence, tensor.F32)
	require.NoError(t, err)
	assert.Equal(t, "s", name)
	require.Equal(t, tensor.KindSequence, v.Kind())
	assert.Equal(t, tensor.I64, v.Type(), "items decide the element type")
	require.Len(t, v.Items(), 2)
	assert.Equal(t, []int64{3}, v.Items()[1].I64())

	empty, _, err := ReadValue(pb(nil).str(1, "e").varint(2, valueTensor), tensor.KindSequence, tensor.F32)
	require.NoError(t, err)
	assert.Empty(t, empty.Items())
	assert.Equal(t, tensor.F32, empty.Type(), "an empty sequence takes the port's type")

	opt, _, err := ReadValue(pb(nil).str(1, "o").varint(2, valueTensor).bytes(3, i64(nil, 7)), tensor.KindOptional, tensor.I64)
	require.NoError(t, err)
	assert.True(t, opt.HasElement())
	assert.Equal(t, []int64{7}, opt.Items()[0].I64())

	none, _, err := ReadValue(pb(nil).str(1, "o").varint(2, valueUndefined), tensor.KindOptional, tensor.F32)
	require.NoError(t, err)
	assert.False(t, none.HasElement())

	optSeq, _, err := ReadValue(pb(nil).str(1, "os").varint(2, valueSequence).bytes(5, seq), tensor.KindOptionalSequence, tensor.I64)
	require.NoError(t, err)
	require.True(t, optSeq.HasElement())
	assert.Len(t, optSeq.Items()[0].Items(), 2)

	_, _, err = ReadValue(pb(nil).str(1, "o").varint(2, valueTensor).bytes(3, i64(nil, 7)), tensor.KindOptionalSequence, tensor.I64)
	assert.ErrorIs(t, err, ErrInvalidModel, "a tensor where the port wants a sequence")
	_, _, err = ReadValue(pb(nil).str(1, "m").varint(2, 4).bytes(6, nil), tensor.KindSequence, tensor.F32)
	assert.ErrorIs(t, err, ErrUnsupportedType, "a sequence of maps")
	_, _, err = ReadValue(pb(nil).str(1, "s").bytes(3, i64([]int64{1}, 1)).bytes(3, pb(nil).varint(1, 1).varint(2, dtFloat).f32(4, 1)), tensor.KindSequence, tensor.I64)
	assert.ErrorIs(t, err, ErrInvalidModel, "items of two types")
}
