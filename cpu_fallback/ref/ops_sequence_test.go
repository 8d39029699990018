package ref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestSequenceKernels checks the sequence family's kernels on a sequence
// of three tensors: positions (negative, out of range), insertion and
// erasure, splitting and concatenating both ways, and optionals.
func TestSequenceKernels(t *testing.T) {
	a, b, c := tF32(tensor.Shape{2}, 1, 2), tF32(tensor.Shape{1}, 3), tF32(tensor.Shape{3}, 4, 5, 6)
	seq := run1(t, "SequenceConstruct", nil, a, b, c)
	require.Equal(t, tensor.KindSequence, seq.Kind())
	require.Len(t, seq.Items(), 3)

	assert.Same(t, c, run1(t, "SequenceAt", nil, seq, tI64(tensor.Shape{}, -1)))
	assert.Same(t, b, run1(t, "SequenceAt", nil, seq, tI32(tensor.Shape{1}, 1)), "a one-element position")
	_, err := runOp("SequenceAt", nil, 1, seq, tI64(tensor.Shape{}, 3))
	assert.ErrorContains(t, err, "out of range")

	ins := run1(t, "SequenceInsert", nil, seq, tF32(tensor.Shape{1}, 9), tI64(tensor.Shape{}, 0))
	assert.Equal(t, []float32{9}, ins.Items()[0].F32())
	assert.Len(t, seq.Items(), 3, "the input sequence is unchanged")
	end := run1(t, "SequenceInsert", nil, seq, tF32(tensor.Shape{1}, 8))
	assert.Equal(t, []float32{8}, end.Items()[3].F32(), "no position appends")
	er := run1(t, "SequenceErase", nil, seq)
	assert.Len(t, er.Items(), 2, "no position erases the last")
	er = run1(t, "SequenceErase", nil, seq, tI64(tensor.Shape{}, -3))
	assert.Same(t, b, er.Items()[0])
	assert.Equal(t, []int64{3}, run1(t, "SequenceLength", nil, seq).I64())
	empty := run1(t, "SequenceEmpty", graph.Attrs{"dtype": int64(tensor.I32)})
	assert.Equal(t, tensor.I32, empty.Type())
	assert.Empty(t, empty.Items())
	_, err = runOp("SequenceErase", nil, 1, empty)
	assert.Error(t, err)

	x := tF32(tensor.Shape{2, 5}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	parts := run1(t, "SplitToSequence", graph.Attrs{"axis": int64(1)}, x, tI64(tensor.Shape{}, 2))
	require.Len(t, parts.Items(), 3)
	assert.Equal(t, tensor.Shape{2, 1}, parts.Items()[2].Shape(), "a scalar split leaves a shorter last piece")
	assert.Equal(t, []float32{4, 9}, parts.Items()[2].F32())
	sized := run1(t, "SplitToSequence", graph.Attrs{"axis": int64(1)}, x, tI64(tensor.Shape{2}, 1, 4))
	assert.Equal(t, []float32{1, 2, 3, 4, 6, 7, 8, 9}, sized.Items()[1].F32())
	rows := run1(t, "SplitToSequence", graph.Attrs{"keepdims": int64(0)}, x)
	require.Len(t, rows.Items(), 2)
	assert.Equal(t, tensor.Shape{5}, rows.Items()[1].Shape(), "keepdims=0 drops the axis")
	_, err = runOp("SplitToSequence", graph.Attrs{"axis": int64(1)}, 1, x, tI64(tensor.Shape{2}, 1, 3))
	assert.ErrorContains(t, err, "add up to")

	back := run1(t, "ConcatFromSequence", graph.Attrs{"axis": int64(1)}, parts)
	assert.Equal(t, x.F32(), back.F32())
	assert.Equal(t, tensor.Shape{2, 5}, back.Shape())
	stacked := run1(t, "ConcatFromSequence", graph.Attrs{"axis": int64(-1), "new_axis": int64(1)}, rows)
	assert.Equal(t, tensor.Shape{5, 2}, stacked.Shape())
	assert.Equal(t, []float32{0, 5, 1, 6, 2, 7, 3, 8, 4, 9}, stacked.F32())

	opt := run1(t, "Optional", nil, a)
	assert.Equal(t, tensor.KindOptional, opt.Kind())
	assert.Equal(t, []bool{true}, run1(t, "OptionalHasElement", nil, opt).Bool())
	assert.Same(t, a, run1(t, "OptionalGetElement", nil, opt))
	none := run1(t, "Optional", graph.Attrs{"dtype": int64(tensor.F32), graph.AttrValueKind: int64(tensor.KindOptionalSequence)})
	assert.Equal(t, tensor.KindOptionalSequence, none.Kind())
	assert.Equal(t, []bool{false}, run1(t, "OptionalHasElement", nil, none).Bool())
	_, err = runOp("OptionalGetElement", nil, 1, none)
	assert.ErrorContains(t, err, "empty")
	assert.Same(t, seq, run1(t, "OptionalGetElement", nil, seq), "a sequence passes through")
	hasNothing, err := runOp("OptionalHasElement", nil, 1, nil)
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, hasNothing[0].Bool(), "an omitted input has no element")
}
