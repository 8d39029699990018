package ir

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importEmbeddingBagPacked reads EmbeddingBagPackedSum-3 (emb_table,
// indices [B, L], per_sample_weights? [B, L]): bag b is the sum of the
// rows indices[b] of the table, each times its weight.
func importEmbeddingBagPacked(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 3); err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	g, err := c.op("Gather", "rows", graph.Attrs{"axis": int64(0)}, c.in[0], idx)
	if err != nil {
		return nil, err
	}
	if g, err = c.weighRows(g, c.input(2), 2, r); err != nil {
		return nil, err
	}
	return one(c.op("ReduceSum", "", graph.Attrs{"keepdims": int64(0)}, g, c.constI64("bag_axis", false, 1)))
}

// importEmbeddingSegments reads EmbeddingSegmentsSum-3 (emb_table,
// indices, segment_ids, num_segments, default_index?,
// per_sample_weights?): segment s is the weighted sum of the rows whose
// segment_ids entry is s, the row default_index (or zeros) when none is.
func importEmbeddingSegments(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(4, 6); err != nil {
		return nil, err
	}
	seg, err := c.i64(2, "segment_ids_i64")
	if err != nil {
		return nil, err
	}
	n, err := c.i64(3, "num_segments_i64")
	if err != nil {
		return nil, err
	}
	if n, err = c.op("Reshape", "num_segments_1d", nil, n, c.constI64("one_dim", false, 1)); err != nil {
		return nil, err
	}
	return c.segmentSum(seg, n, c.input(4), c.input(5))
}

// importEmbeddingBagOffsets reads EmbeddingBagOffsetsSum-3 (emb_table,
// indices, offsets [B], default_index?, per_sample_weights?): bag b holds
// indices[offsets[b]:offsets[b+1]] (the last to the end), each index i in
// the bag counted by the offsets not after i, less one.
func importEmbeddingBagOffsets(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 5); err != nil {
		return nil, err
	}
	offsets, err := c.i64(2, "offsets_i64")
	if err != nil {
		return nil, err
	}
	count, err := c.op("Shape", "index_count", nil, c.in[1])
	if err != nil {
		return nil, err
	}
	if count, err = c.op("Squeeze", "index_count_scalar", nil, count, c.constI64("zero_axis", false, 0)); err != nil {
		return nil, err
	}
	pos, err := c.op("Range", "positions", nil, c.constI64("pos_start", true, 0), count, c.constI64("pos_step", true, 1))
	if err != nil {
		return nil, err
	}
	if pos, err = c.op("Unsqueeze", "positions_column", nil, pos, c.constI64("column_axis", false, 1)); err != nil {
		return nil, err
	}
	started, err := c.op("GreaterOrEqual", "bags_started", nil, pos, offsets)
	if err != nil {
		return nil, err
	}
	if started, err = c.castTo(started, tensor.I64, "bags_started_i64"); err != nil {
		return nil, err
	}
	seg, err := c.op("ReduceSum", "bags_started_count", graph.Attrs{"keepdims": int64(0)}, started, c.constI64("bags_axis", false, 1))
	if err != nil {
		return nil, err
	}
	if seg, err = c.op("Sub", "bag_of_index", nil, seg, c.constI64("one", true, 1)); err != nil {
		return nil, err
	}
	n, err := c.op("Shape", "bag_count", nil, offsets)
	if err != nil {
		return nil, err
	}
	return c.segmentSum(seg, n, c.input(3), c.input(4))
}

// weighRows multiplies gathered rows g (the table's rank r plus lead-1
// leading axes) by weights w of the leading axes, if w is given.
func (c *layerCtx) weighRows(g, w graph.Output, lead, r int) (graph.Output, error) {
	if !w.Valid() {
		return g, nil
	}
	var axes []int64
	for i := lead; i < lead+r-1; i++ {
		axes = append(axes, int64(i))
	}
	w, err := c.castTo(w, g.Type(), "weights_cast")
	if err != nil {
		return graph.Output{}, err
	}
	if len(axes) > 0 {
		if w, err = c.op("Unsqueeze", "weights_rows", nil, w, c.constI64("weights_axes", false, axes...)); err != nil {
			return graph.Output{}, err
		}
	}
	return c.op("Mul", "weighted", nil, g, w)
}

// segmentSum sums the (weighted) table rows of indices (input 1) into n
// (a 1-element i64) segments by seg, a segment without rows taking the
// row def (zeros if def is not given).
func (c *layerCtx) segmentSum(seg, n, def, weights graph.Output) ([]graph.Output, error) {
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	emb := c.in[0]
	idx, err := c.i64(1, "indices_i64")
	if err != nil {
		return nil, err
	}
	g, err := c.op("Gather", "rows", graph.Attrs{"axis": int64(0)}, emb, idx)
	if err != nil {
		return nil, err
	}
	if g, err = c.weighRows(g, weights, 1, r); err != nil {
		return nil, err
	}
	rowShape, err := c.op("Shape", "row_shape", graph.Attrs{"start": int64(1)}, emb)
	if err != nil {
		return nil, err
	}
	shape, err := c.op("Concat", "out_shape", graph.Attrs{"axis": int64(0)}, n, rowShape)
	if err != nil {
		return nil, err
	}
	zero, err := c.constOf("zero", emb.Type(), true, 0)
	if err != nil {
		return nil, err
	}
	zeros, err := c.op("Expand", "zeros", nil, zero, shape)
	if err != nil {
		return nil, err
	}
	at, err := c.op("Unsqueeze", "segment_index", nil, seg, c.constI64("index_axis", false, 1))
	if err != nil {
		return nil, err
	}
	if !def.Valid() {
		return one(c.op("ScatterND", "", graph.Attrs{"reduction": "add"}, zeros, at, g))
	}
	sum, err := c.op("ScatterND", "sums", graph.Attrs{"reduction": "add"}, zeros, at, g)
	if err != nil {
		return nil, err
	}
	segShape, err := c.op("Shape", "segment_shape", nil, seg)
	if err != nil {
		return nil, err
	}
	ones, err := c.op("Expand", "ones", nil, c.constI64("one_each", true, 1), segShape)
	if err != nil {
		return nil, err
	}
	noCounts, err := c.op("Expand", "count_zeros", nil, c.constI64("count_zero", true, 0), n)
	if err != nil {
		return nil, err
	}
	counts, err := c.op("ScatterND", "counts", graph.Attrs{"reduction": "add"}, noCounts, at, ones)
	if err != nil {
		return nil, err
	}
	empty, err := c.op("Equal", "empty", nil, counts, c.constI64("none", true, 0))
	if err != nil {
		return nil, err
	}
	if r > 1 {
		var axes []int64
		for i := 1; i < r; i++ {
			axes = append(axes, int64(i))
		}
		if empty, err = c.op("Unsqueeze", "empty_rows", nil, empty, c.constI64("empty_axes", false, axes...)); err != nil {
			return nil, err
		}
	}
	if def, err = c.castTo(def, tensor.I64, "default_i64"); err != nil {
		return nil, err
	}
	row, err := c.op("Gather", "default_row", graph.Attrs{"axis": int64(0)}, emb, def)
	if err != nil {
		return nil, err
	}
	return one(c.op("Where", "", nil, empty, row, sum))
}
