package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// scalarInt reads input i as one integer (a 0-D or one-element tensor);
// ok is false when it is omitted.
func scalarInt(n *graph.Node, in []*tensor.Tensor, i int, what string) (int64, bool, error) {
	x := opt(in, i)
	if x == nil {
		return 0, false, nil
	}
	if !x.Type().IsInteger() || x.NumElements() != 1 {
		return 0, false, n.Errorf("%w: %s must be one integer, got %v", driver.ErrInvalidArgument, what, x)
	}
	return toI64s(x)[0], true, nil
}

// oneHotKernel is OneHot(indices, depth, values): values[1] where the new
// axis equals the index (negative indices count from depth), values[0]
// elsewhere; out-of-range indices give an all-off fibre.
func oneHotKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ind, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	dt, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	vals, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	if dt.NumElements() != 1 || vals.NumElements() != 2 {
		return nil, n.Errorf("%w: depth %v must have one element and values %v two", driver.ErrInvalidArgument, dt, vals)
	}
	depth := int64(dt.Float64s()[0])
	if depth < 0 {
		return nil, n.Errorf("%w: depth %d is negative", driver.ErrInvalidArgument, depth)
	}
	is := ind.Shape()
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(is)+1)
	if err != nil {
		return nil, err
	}
	shape := append(append(append(tensor.Shape{}, is[:axis]...), depth), is[axis:]...)
	y, err := newOut(n, vals.Type(), shape)
	if err != nil {
		return nil, err
	}
	esz := int64(vals.Type().Size())
	off, on := vals.Bytes()[:esz], vals.Bytes()[esz:2*esz]
	Y := y.Bytes()
	for o := int64(0); o < shape.NumElements(); o++ {
		copy(Y[o*esz:], off)
	}
	outer, inner := nnProd(is[:axis]), nnProd(is[axis:])
	I := ind.Float64s()
	for o := int64(0); o < outer; o++ {
		for i := int64(0); i < inner; i++ {
			k := int64(I[o*inner+i])
			if k < 0 {
				k += depth
			}
			if k < 0 || k >= depth {
				continue
			}
			copy(Y[((o*depth+k)*inner+i)*esz:], on)
		}
	}
	return one(y), nil
}

// indexAt reads indices as int64, wrapping negative ones by dim and
// checking the range.
func indexAt(n *graph.Node, v, dim int64) (int64, error) {
	if v < 0 {
		v += dim
	}
	if v < 0 || v >= dim {
		return 0, n.Errorf("%w: index %d is out of range for a dimension of %d", driver.ErrInvalidArgument, v, dim)
	}
	return v, nil
}

// elementsPlan returns the normalised axis and, for each element of the
// indices tensor, the flat offset in data of that element with its axis
// coordinate replaced by the index.
func elementsPlan(n *graph.Node, data, ind *tensor.Tensor) ([]int64, error) {
	ds, is := data.Shape(), ind.Shape()
	if len(ds) != len(is) || len(ds) == 0 {
		return nil, n.Errorf("%w: data %v and indices %v need the same rank >= 1", tensor.ErrShape, data, ind)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), len(ds))
	if err != nil {
		return nil, err
	}
	dst := tensor.ContiguousStrides(ds)
	I := toI64s(ind)
	offs := make([]int64, len(I))
	idx := make([]int64, len(is))
	for e := range I {
		var off int64
		for d := range is {
			c := idx[d]
			if d == axis {
				if c, err = indexAt(n, I[e], ds[d]); err != nil {
					return nil, err
				}
			} else if c >= ds[d] {
				return nil, n.Errorf("%w: indices %v exceed data %v along axis %d", tensor.ErrShape, ind, data, d)
			}
			off += c * dst[d]
		}
		offs[e] = off
		for d := len(is) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < is[d] {
				break
			}
			idx[d] = 0
		}
	}
	return offs, nil
}

// gatherElementsKernel is GatherElements.
func gatherElementsKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	offs, err := elementsPlan(n, data, ind)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, data.Type(), ind.Shape())
	if err != nil {
		return nil, err
	}
	esz := int64(data.Type().Size())
	D, Y := data.Bytes(), y.Bytes()
	for e, off := range offs {
		copy(Y[int64(e)*esz:int64(e+1)*esz], D[off*esz:])
	}
	return one(y), nil
}

// ndPlan returns, for each index tuple of a GatherND/ScatterND indices
// tensor [..., k], the flat element offset of the slice it selects in data
// (after batch_dims leading axes), and the slice length.
func ndPlan(n *graph.Node, data, ind *tensor.Tensor, batch int) ([]int64, int64, error) {
	ds, is := data.Shape(), ind.Shape()
	if len(is) == 0 || batch < 0 || batch >= len(is) {
		return nil, 0, n.Errorf("%w: indices %v with batch_dims %d", tensor.ErrShape, ind, batch)
	}
	k := int(is[len(is)-1])
	if batch+k > len(ds) {
		return nil, 0, n.Errorf("%w: indices %v index %d axes of data %v after %d batch axes", tensor.ErrShape, ind, k, data, batch)
	}
	for d := 0; d < batch; d++ {
		if ds[d] != is[d] {
			return nil, 0, n.Errorf("%w: batch axis %d differs between data %v and indices %v", tensor.ErrShape, d, data, ind)
		}
	}
	dst := tensor.ContiguousStrides(ds)
	slice := nnProd(ds[batch+k:])
	batchSize := nnProd(ds[:batch])
	perBatch := nnProd(ds[batch:])
	tuples := nnProd(is[:len(is)-1])
	perBatchTuples := tuples / max(batchSize, 1)
	I := toI64s(ind)
	offs := make([]int64, tuples)
	for t := int64(0); t < tuples; t++ {
		off := (t / max(perBatchTuples, 1)) * perBatch
		for j := 0; j < k; j++ {
			c, err := indexAt(n, I[t*int64(k)+int64(j)], ds[batch+j])
			if err != nil {
				return nil, 0, err
			}
			off += c * dst[batch+j]
		}
		offs[t] = off
	}
	return offs, slice, nil
}

// gatherNDKernel is GatherND with batch_dims.
func gatherNDKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	batch := int(n.Attrs.Int("batch_dims", 0))
	offs, slice, err := ndPlan(n, data, ind, batch)
	if err != nil {
		return nil, err
	}
	is := ind.Shape()
	k := int(is[len(is)-1])
	shape := append(append(tensor.Shape{}, is[:len(is)-1]...), data.Shape()[batch+k:]...)
	y, err := newOut(n, data.Type(), shape)
	if err != nil {
		return nil, err
	}
	esz := int64(data.Type().Size())
	D, Y := data.Bytes(), y.Bytes()
	for t, off := range offs {
		copy(Y[int64(t)*slice*esz:int64(t+1)*slice*esz], D[off*esz:(off+slice)*esz])
	}
	return one(y), nil
}

// scatterInto writes updates (element u goes to data offset dst(u)) into a
// copy of data with the reduction attribute (none, add, mul, max, min).
func scatterInto(n *graph.Node, data, upd *tensor.Tensor, dst func(u int64) int64) ([]*tensor.Tensor, error) {
	if upd.Type() != data.Type() {
		return nil, n.Errorf("%w: updates %v and data %v differ in type", tensor.ErrType, upd, data)
	}
	red := n.Attrs.String("reduction", "none")
	total := upd.NumElements()
	if red == "none" {
		y := data.Clone()
		esz := int64(data.Type().Size())
		Y, U := y.Bytes(), upd.Bytes()
		for u := int64(0); u < total; u++ {
			o := dst(u)
			copy(Y[o*esz:(o+1)*esz], U[u*esz:])
		}
		return one(y), nil
	}
	var f func(a, b float64) float64
	switch red {
	case "add":
		f = func(a, b float64) float64 { return a + b }
	case "mul":
		f = func(a, b float64) float64 { return a * b }
	case "max":
		f = math.Max
	case "min":
		f = math.Min
	default:
		return nil, n.Errorf("%w: reduction %q is not one of none, add, mul, max, min", driver.ErrInvalidArgument, red)
	}
	Y, U := data.Float64s(), upd.Float64s()
	for u := int64(0); u < total; u++ {
		o := dst(u)
		Y[o] = f(Y[o], U[u])
	}
	y, err := fromF64(n, data.Type(), data.Shape(), Y)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// scatterElementsKernel is ScatterElements (and the older Scatter).
func scatterElementsKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	upd, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	if !upd.Shape().Equal(ind.Shape()) {
		return nil, n.Errorf("%w: updates %v and indices %v differ in shape", tensor.ErrShape, upd, ind)
	}
	offs, err := elementsPlan(n, data, ind)
	if err != nil {
		return nil, err
	}
	return scatterInto(n, data, upd, func(u int64) int64 { return offs[u] })
}

// scatterNDKernel is ScatterND.
func scatterNDKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	upd, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	offs, slice, err := ndPlan(n, data, ind, 0)
	if err != nil {
		return nil, err
	}
	if upd.NumElements() != int64(len(offs))*slice {
		return nil, n.Errorf("%w: updates %v do not match indices %v and data %v", tensor.ErrShape, upd, ind, data)
	}
	return scatterInto(n, data, upd, func(u int64) int64 { return offs[u/slice] + u%slice })
}

// gatherKernel is Gather along axis with i32 or i64 indices (negative ones
// count from the end) on any data type.
func gatherKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	idx, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if idx.Type() != tensor.I32 && idx.Type() != tensor.I64 {
		return nil, n.Errorf("%w: indices must be i32 or i64, got %v", tensor.ErrType, idx)
	}
	if x.Rank() == 0 {
		return nil, n.Errorf("%w: cannot gather from a scalar", tensor.ErrShape)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), x.Rank())
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	out := append(append(shape[:axis:axis].Clone(), idx.Shape()...), shape[axis+1:]...)
	y, err := newOut(n, x.Type(), out)
	if err != nil {
		return nil, err
	}
	ix := toI64s(idx)
	l := shape[axis]
	for i, v := range ix {
		if v < -l || v >= l {
			return nil, n.Errorf("%w: index %d (position %d) is out of range for axis %d of size %d", driver.ErrInvalidArgument, v, i, axis, l)
		}
		if v < 0 {
			ix[i] = v + l
		}
	}
	outer := tensor.Shape(shape[:axis]).NumElements()
	inner := tensor.Shape(shape[axis+1:]).NumElements() * int64(x.Type().Size())
	src, dst := x.Bytes(), y.Bytes()
	ni := int64(len(ix))
	for o := range outer {
		for j, v := range ix {
			d := (o*ni + int64(j)) * inner
			s := (o*l + v) * inner
			copy(dst[d:d+inner], src[s:s+inner])
		}
	}
	return one(y), nil
}

// indexKernels gather and scatter by index tensors, and OneHot.
func indexKernels() map[string]Kernel {
	return map[string]Kernel{
		"Gather":          gatherKernel,
		"GatherElements":  gatherElementsKernel,
		"GatherND":        gatherNDKernel,
		"ScatterElements": scatterElementsKernel,
		"ScatterND":       scatterNDKernel,
		"OneHot":          oneHotKernel,
	}
}
