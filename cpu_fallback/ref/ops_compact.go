package ref

import (
	"cmp"
	"math"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// nonZeroKernel is NonZero: the i64 coordinates [rank, count] of the
// non-zero elements in row-major order (a scalar has rank 1).
func nonZeroKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	v := x.Float64s()
	shape := x.Shape()
	if len(shape) == 0 {
		shape = tensor.Shape{1}
	}
	var hits []int64
	for i, f := range v {
		if f != 0 {
			hits = append(hits, int64(i))
		}
	}
	r, k := int64(len(shape)), int64(len(hits))
	y, err := newOut(n, tensor.I64, tensor.Shape{r, k})
	if err != nil {
		return nil, err
	}
	out := y.I64()
	st := tensor.ContiguousStrides(shape)
	for j, flat := range hits {
		for d := range r {
			out[d*k+int64(j)] = flat / st[d] % shape[d]
		}
	}
	return one(y), nil
}

// axisItems views x as the items Compress and Unique select: its slices
// along the axis attribute, or its elements (the flattened input) without
// one.
func axisItems(n *graph.Node, x *tensor.Tensor) (tensor.Shape, int, error) {
	if !n.Attrs.Has("axis") {
		return tensor.Shape{x.NumElements()}, 0, nil
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), x.Rank())
	return x.Shape(), axis, err
}

// compressKernel is Compress: the slices along axis (of the flattened
// input without one) whose condition is true. A condition shorter than the
// axis keeps none of the slices past its end.
func compressKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	c, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	cond := c.Bool()
	shape, axis, err := axisItems(n, x)
	if err != nil {
		return nil, err
	}
	dim := shape[axis]
	var keep []int64
	for i, b := range cond {
		if !b {
			continue
		}
		if int64(i) >= dim {
			return nil, n.Errorf("%w: condition selects slice %d of an axis of %d", driver.ErrInvalidArgument, i, dim)
		}
		keep = append(keep, int64(i))
	}
	ys := shape.Clone()
	ys[axis] = int64(len(keep))
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	esz := int64(x.Type().Size())
	outer, inner := nnProd(shape[:axis]), nnProd(shape[axis+1:])*esz
	src, dst := x.Bytes(), y.Bytes()
	for o := range outer {
		for j, i := range keep {
			d := (o*int64(len(keep)) + int64(j)) * inner
			s := (o*dim + i) * inner
			copy(dst[d:d+inner], src[s:s+inner])
		}
	}
	return one(y), nil
}

// compareValues returns a three-way comparison of elements i and j of x by
// value, with NaNs equal to each other and after every number (numpy's
// order for unique).
func compareValues(x *tensor.Tensor) func(i, j int64) int {
	if x.Type().IsFloat() {
		v := x.Float64s()
		return func(i, j int64) int {
			a, b := v[i], v[j]
			if an, bn := math.IsNaN(a), math.IsNaN(b); an || bn {
				switch {
				case an && bn:
					return 0
				case an:
					return 1
				}
				return -1
			}
			return cmp.Compare(a, b)
		}
	}
	v := toI64s(x)
	return func(i, j int64) int { return cmp.Compare(v[i], v[j]) }
}

// uniqueKernel is Unique: the unique elements (or slices along axis) in
// ascending order (sorted=1, lexicographic for slices) or in the order of
// their first occurrence, the index of each one's first occurrence, each
// element's index among them and their counts.
func uniqueKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	shape, axis, err := axisItems(n, x)
	if err != nil {
		return nil, err
	}
	dim := shape[axis]
	outer, inner := nnProd(shape[:axis]), nnProd(shape[axis+1:])
	elem := compareValues(x)
	// Slices a and b compared lexicographically in row-major order.
	cmpSlices := func(a, b int64) int {
		for o := range outer {
			for i := range inner {
				if c := elem((o*dim+a)*inner+i, (o*dim+b)*inner+i); c != 0 {
					return c
				}
			}
		}
		return 0
	}
	order := make([]int64, dim)
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortStableFunc(order, cmpSlices) // first occurrences first among equals
	inverse := make([]int64, dim)
	var first, counts []int64
	for j, s := range order {
		if j == 0 || cmpSlices(order[j-1], s) != 0 {
			first, counts = append(first, s), append(counts, 0)
		}
		inverse[s] = int64(len(first) - 1)
		counts[len(counts)-1]++
	}
	if n.Attrs.Int("sorted", 1) == 0 {
		// Renumber the unique slices by first occurrence.
		rank := make([]int64, len(first))
		for i := range rank {
			rank[i] = int64(i)
		}
		slices.SortFunc(rank, func(a, b int64) int { return cmp.Compare(first[a], first[b]) })
		newID := make([]int64, len(first))
		f2, c2 := make([]int64, len(first)), make([]int64, len(first))
		for k, old := range rank {
			newID[old] = int64(k)
			f2[k], c2[k] = first[old], counts[old]
		}
		first, counts = f2, c2
		for i, u := range inverse {
			inverse[i] = newID[u]
		}
	}
	k := int64(len(first))
	ys := shape.Clone()
	ys[axis] = k
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	esz := int64(x.Type().Size())
	src, dst := x.Bytes(), y.Bytes()
	for o := range outer {
		for j, s := range first {
			d, from := (o*k+int64(j))*inner*esz, (o*dim+s)*inner*esz
			copy(dst[d:d+inner*esz], src[from:from+inner*esz])
		}
	}
	outs := []*tensor.Tensor{y}
	for i, v := range [][]int64{first, inverse, counts} {
		if i+1 >= len(n.Outputs) {
			break
		}
		t, err := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
		if err != nil {
			return nil, n.Errorf("output %d: %w", i+1, err)
		}
		outs = append(outs, t)
	}
	return outs, nil
}

// compactKernels are NonZero, Compress and Unique.
func compactKernels() map[string]Kernel {
	return map[string]Kernel{
		"NonZero":  nonZeroKernel,
		"Compress": compressKernel,
		"Unique":   uniqueKernel,
	}
}
