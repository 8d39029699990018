package ir

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importCTCGreedySeqLen reads CTCGreedyDecoderSeqLen-6 (logits [N, T, C],
// sequence_length [N], blank_index? (C-1 when absent)): the best class
// per step within the length, repeats merged (merge_repeated, default
// true) before blanks are removed, the kept classes moved to the front
// of each row and the rest -1; outputs the classes ([N, T],
// classes_index_type) and their counts ([N], sequence_length_type),
// both i32 by default.
func importCTCGreedySeqLen(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 3); err != nil {
		return nil, err
	}
	merge, err := c.boolean("merge_repeated", true)
	if err != nil {
		return nil, err
	}
	ct, err := c.elemType("classes_index_type", tensor.I32)
	if err != nil {
		return nil, err
	}
	lt, err := c.elemType("sequence_length_type", tensor.I32)
	if err != nil {
		return nil, err
	}
	lens, err := c.i64(1, "lengths_i64")
	if err != nil {
		return nil, err
	}
	var blank graph.Output
	if len(c.in) == 3 {
		if blank, err = c.i64(2, "blank_i64"); err != nil {
			return nil, err
		}
		if blank, err = c.op("Reshape", "blank_scalar", nil, blank, c.constI64("scalar_shape", false)); err != nil {
			return nil, err
		}
	}
	dec, n, err := c.ctcGreedy(c.in[0], lens, blank, merge)
	if err != nil {
		return nil, err
	}
	if dec, err = c.castTo(dec, ct, "classes"); err != nil {
		return nil, err
	}
	if n, err = c.castTo(n, lt, "lengths"); err != nil {
		return nil, err
	}
	return []graph.Output{dec, n}, nil
}

// importCTCGreedy reads CTCGreedyDecoder-1 (logits [T, N, C],
// seq_indicators [T, N]: 1 for the steps of each sequence, which start
// it): as CTCGreedyDecoderSeqLen of the transposed logits, the lengths
// the indicators' sums, blank C-1, ctc_merge_repeated (default true); the
// output [N, T, 1, 1] in the logits' type.
func importCTCGreedy(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	merge, err := c.boolean("ctc_merge_repeated", true)
	if err != nil {
		return nil, err
	}
	x, err := c.op("Transpose", "batch_first", graph.Attrs{"perm": []int64{1, 0, 2}}, c.in[0])
	if err != nil {
		return nil, err
	}
	lens, err := c.castTo(c.in[1], tensor.I64, "indicators_i64")
	if err != nil {
		return nil, err
	}
	if lens, err = c.op("ReduceSum", "lengths", graph.Attrs{"keepdims": int64(0)}, lens, c.constI64("time_axis", false, 0)); err != nil {
		return nil, err
	}
	dec, _, err := c.ctcGreedy(x, lens, graph.Output{}, merge)
	if err != nil {
		return nil, err
	}
	if dec, err = c.castTo(dec, c.in[0].Type(), "classes_float"); err != nil {
		return nil, err
	}
	return one(c.op("Unsqueeze", "", nil, dec, c.constI64("unit_axes", false, 2, 3)))
}

// ctcGreedy decodes logits x [N, T, C] (lengths lens [N], blank a scalar
// or, absent, C-1): the classes [N, T] (i64, -1 past each row's count)
// and the counts [N].
func (c *layerCtx) ctcGreedy(x, lens, blank graph.Output, merge bool) (graph.Output, graph.Output, error) {
	var zero graph.Output
	cls, err := c.op("ArgMax", "best", graph.Attrs{"axis": int64(2), "keepdims": int64(0)}, x)
	if err != nil {
		return zero, zero, err
	}
	if !blank.Valid() {
		nc, err := c.op("Shape", "class_count", graph.Attrs{"start": int64(2), "end": int64(3)}, x)
		if err != nil {
			return zero, zero, err
		}
		if blank, err = c.op("Sub", "last_class", nil, nc, c.constI64("one", true, 1)); err != nil {
			return zero, zero, err
		}
	}
	steps, err := c.op("Shape", "step_count", graph.Attrs{"start": int64(1), "end": int64(2)}, x)
	if err != nil {
		return zero, zero, err
	}
	ts, err := c.op("Squeeze", "step_count_scalar", nil, steps, c.constI64("zero_axis", false, 0))
	if err != nil {
		return zero, zero, err
	}
	t, err := c.op("Range", "steps", nil, c.constI64("steps_start", true, 0), ts, c.constI64("steps_step", true, 1))
	if err != nil {
		return zero, zero, err
	}
	if t, err = c.op("Unsqueeze", "steps_row", nil, t, c.constI64("row_axis", false, 0)); err != nil {
		return zero, zero, err
	}
	lc, err := c.op("Unsqueeze", "lengths_column", nil, lens, c.constI64("column_axis", false, 1))
	if err != nil {
		return zero, zero, err
	}
	keep, err := c.op("Less", "in_sequence", nil, t, lc)
	if err != nil {
		return zero, zero, err
	}
	isBlank, err := c.op("Equal", "is_blank", nil, cls, blank)
	if err != nil {
		return zero, zero, err
	}
	if isBlank, err = c.op("Not", "not_blank", nil, isBlank); err != nil {
		return zero, zero, err
	}
	if keep, err = c.op("And", "kept_class", nil, keep, isBlank); err != nil {
		return zero, zero, err
	}
	if merge {
		prev, err := c.op("Pad", "previous", nil, cls, c.constI64("previous_pads", false, 0, 1, 0, -1), c.constI64("no_class", true, -1))
		if err != nil {
			return zero, zero, err
		}
		same, err := c.op("Equal", "repeated", nil, cls, prev)
		if err != nil {
			return zero, zero, err
		}
		if same, err = c.op("Not", "not_repeated", nil, same); err != nil {
			return zero, zero, err
		}
		if keep, err = c.op("And", "kept", nil, keep, same); err != nil {
			return zero, zero, err
		}
	}
	// Kept steps score 2T-t, the others -t: a TopK of all T puts the kept
	// ones first, in order.
	twice, err := c.op("Mul", "twice_steps", nil, ts, c.constI64("two", true, 2))
	if err != nil {
		return zero, zero, err
	}
	up, err := c.op("Sub", "kept_score", nil, twice, t)
	if err != nil {
		return zero, zero, err
	}
	down, err := c.op("Neg", "dropped_score", nil, t)
	if err != nil {
		return zero, zero, err
	}
	score, err := c.op("Where", "score", nil, keep, up, down)
	if err != nil {
		return zero, zero, err
	}
	top, err := c.node("TopK", "front", []graph.Output{score, steps}, graph.Attrs{"axis": int64(1), "largest": int64(1), "sorted": int64(1)}, 2)
	if err != nil {
		return zero, zero, err
	}
	front, err := c.op("GatherElements", "front_classes", graph.Attrs{"axis": int64(1)}, cls, top.Out(1))
	if err != nil {
		return zero, zero, err
	}
	counts, err := c.castTo(keep, tensor.I64, "kept_i64")
	if err != nil {
		return zero, zero, err
	}
	if counts, err = c.op("ReduceSum", "counts", graph.Attrs{"keepdims": int64(0)}, counts, c.constI64("steps_axis", false, 1)); err != nil {
		return zero, zero, err
	}
	cc, err := c.op("Unsqueeze", "counts_column", nil, counts, c.constI64("counts_axis", false, 1))
	if err != nil {
		return zero, zero, err
	}
	filled, err := c.op("Less", "filled", nil, t, cc)
	if err != nil {
		return zero, zero, err
	}
	dec, err := c.op("Where", "decoded", nil, filled, front, c.constI64("none", true, -1))
	if err != nil {
		return zero, zero, err
	}
	return dec, counts, nil
}
