package ir

import (
	"github.com/clinfer/clinfer/graph"
)

// spaceBlocks reads the constant block_shape (first entry 1) and the two
// constant pads or crops of SpaceToBatch-2 / BatchToSpace-2, one entry per
// dim of a static input.
func (c *layerCtx) spaceBlocks(what string) (dims, block, begin, end []int64, err error) {
	if err := c.inputs(4, 4); err != nil {
		return nil, nil, nil, nil, err
	}
	s := c.in[0].Shape()
	if !s.RankKnown || !s.IsStatic() {
		return nil, nil, nil, nil, c.errorf(ErrUnsupportedAttribute, "the reader needs the input's shape static (%v)", s)
	}
	dims = make([]int64, s.Rank())
	for i, d := range s.Dims {
		dims[i] = d.Size
	}
	lists := make([][]int64, 3)
	for i, name := range []string{"block_shape", what + "_begin", what + "_end"} {
		if lists[i], err = c.ints(i+1, name); err != nil {
			return nil, nil, nil, nil, err
		}
		if len(lists[i]) != len(dims) {
			return nil, nil, nil, nil, c.errorf(ErrInvalidModel, "%s has %d values for an input of rank %d", name, len(lists[i]), len(dims))
		}
	}
	block = lists[0]
	for i, b := range block {
		if b < 1 || (i == 0 && b != 1) {
			return nil, nil, nil, nil, c.errorf(ErrInvalidModel, "block_shape %v: want positive blocks, the first 1", block)
		}
	}
	return dims, block, lists[1], lists[2], nil
}

// importSpaceToBatch reads SpaceToBatch-2: the input zero-padded, each
// spatial dim split into (dim/block, block), the blocks moved in front of
// the batch and merged into it.
func importSpaceToBatch(c *layerCtx) ([]graph.Output, error) {
	dims, block, begin, end, err := c.spaceBlocks("pads")
	if err != nil {
		return nil, err
	}
	n := len(dims)
	x, err := c.op("Pad", "padded", nil, c.in[0], c.constI64("pads", false, append(append([]int64{}, begin...), end...)...))
	if err != nil {
		return nil, err
	}
	split := []int64{dims[0] + begin[0] + end[0]}
	batch := split[0]
	var perm, spatial []int64
	for i := 1; i < n; i++ {
		d := dims[i] + begin[i] + end[i]
		if d%block[i] != 0 {
			return nil, c.errorf(ErrInvalidModel, "padded dim %d is %d, not a multiple of block %d", i, d, block[i])
		}
		split = append(split, d/block[i], block[i])
		perm = append(perm, int64(2*i))
		spatial = append(spatial, d/block[i])
		batch *= block[i]
	}
	perm = append(perm, 0)
	for i := 1; i < n; i++ {
		perm = append(perm, int64(2*i-1))
	}
	if x, err = c.op("Reshape", "split", nil, x, c.constI64("split_shape", false, split...)); err != nil {
		return nil, err
	}
	if x, err = c.op("Transpose", "blocks_first", graph.Attrs{"perm": perm}, x); err != nil {
		return nil, err
	}
	return one(c.op("Reshape", "", nil, x, c.constI64("shape", false, append([]int64{batch}, spatial...)...)))
}

// importBatchToSpace reads BatchToSpace-2: the batch split into the
// blocks and the rest, each block interleaved after its spatial dim, then
// cropped.
func importBatchToSpace(c *layerCtx) ([]graph.Output, error) {
	dims, block, begin, end, err := c.spaceBlocks("crops")
	if err != nil {
		return nil, err
	}
	n := len(dims)
	prod := int64(1)
	for _, b := range block[1:] {
		prod *= b
	}
	if dims[0]%prod != 0 {
		return nil, c.errorf(ErrInvalidModel, "batch %d is not a multiple of the blocks' product %d", dims[0], prod)
	}
	split := append(append([]int64{}, block[1:]...), dims[0]/prod)
	split = append(split, dims[1:]...)
	perm := []int64{int64(n - 1)}
	merged := []int64{dims[0] / prod}
	for i := 1; i < n; i++ {
		perm = append(perm, int64(n-1+i), int64(i-1))
		merged = append(merged, dims[i]*block[i])
	}
	x, err := c.op("Reshape", "split", nil, c.in[0], c.constI64("split_shape", false, split...))
	if err != nil {
		return nil, err
	}
	if x, err = c.op("Transpose", "interleaved", graph.Attrs{"perm": perm}, x); err != nil {
		return nil, err
	}
	if x, err = c.op("Reshape", "merged", nil, x, c.constI64("merged_shape", false, merged...)); err != nil {
		return nil, err
	}
	stops := make([]int64, n)
	for i := range stops {
		stops[i] = merged[i] - end[i]
	}
	return one(c.op("Slice", "", nil, x, c.constI64("crop_begin", false, begin...), c.constI64("crop_end", false, stops...)))
}
