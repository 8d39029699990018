package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func concatKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, n.Errorf("%w: needs at least one input", driver.ErrInvalidArgument)
	}
	first := in[0]
	rank := first.Rank()
	if rank == 0 {
		return nil, n.Errorf("%w: cannot concatenate scalars", tensor.ErrShape)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), rank)
	if err != nil {
		return nil, err
	}
	shape := first.Shape().Clone()
	shape[axis] = 0
	for i, x := range in {
		if x == nil {
			return nil, n.Errorf("%w: input %d is missing", driver.ErrInvalidArgument, i)
		}
		if x.Type() != first.Type() {
			return nil, n.Errorf("%w: input %d is %v, input 0 is %v", tensor.ErrType, i, x, first)
		}
		if x.Rank() != rank {
			return nil, n.Errorf("%w: input %d has shape %v, input 0 has %v", tensor.ErrShape, i, x.Shape(), first.Shape())
		}
		for d := range rank {
			if d != axis && x.Shape()[d] != shape[d] {
				return nil, n.Errorf("%w: input %d has shape %v, input 0 has %v (only axis %d may differ)", tensor.ErrShape, i, x.Shape(), first.Shape(), axis)
			}
		}
		shape[axis] += x.Shape()[axis]
	}
	y, err := newOut(n, first.Type(), shape)
	if err != nil {
		return nil, err
	}
	outer := tensor.Shape(shape[:axis]).NumElements()
	esz := int64(first.Type().Size())
	innerBytes := tensor.Shape(shape[axis+1:]).NumElements() * esz
	dst := y.Bytes()
	rowBytes := shape[axis] * innerBytes
	at := int64(0)
	for _, x := range in {
		chunk := x.Shape()[axis] * innerBytes
		src := x.Bytes()
		for o := range outer {
			copy(dst[o*rowBytes+at:o*rowBytes+at+chunk], src[o*chunk:(o+1)*chunk])
		}
		at += chunk
	}
	return one(y), nil
}

// splitKernel is Split: sizes from the split input, else num_outputs
// (ceil-sized chunks, the last smaller) or an equal split over the node's
// outputs.
func splitKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, n.Errorf("%w: cannot split a scalar", tensor.ErrShape)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), x.Rank())
	if err != nil {
		return nil, err
	}
	dim := x.Shape()[axis]
	k := len(n.Outputs)
	var sizes []int64
	switch {
	case opt(in, 1) != nil:
		if sizes, err = intsOf(n, in[1], "split"); err != nil {
			return nil, err
		}
	case n.Attrs.Has("split"):
		sizes = n.Attrs.Ints("split", nil)
	case n.Attrs.Has("num_outputs"):
		num := n.Attrs.Int("num_outputs", 0)
		if num <= 0 {
			return nil, n.Errorf("%w: num_outputs=%d", driver.ErrInvalidArgument, num)
		}
		chunk := (dim + num - 1) / num
		for i := range num {
			sizes = append(sizes, max(0, min(chunk, dim-i*chunk)))
		}
	default:
		if k == 0 || dim%int64(k) != 0 {
			return nil, n.Errorf("%w: axis %d of size %d does not split evenly into %d outputs", tensor.ErrShape, axis, dim, k)
		}
		for range k {
			sizes = append(sizes, dim/int64(k))
		}
	}
	if len(sizes) != k {
		return nil, n.Errorf("%w: %d split sizes %v for %d outputs", driver.ErrInvalidArgument, len(sizes), sizes, k)
	}
	total := int64(0)
	for _, s := range sizes {
		if s < 0 {
			return nil, n.Errorf("%w: negative split size in %v", driver.ErrInvalidArgument, sizes)
		}
		total += s
	}
	if total != dim {
		return nil, n.Errorf("%w: split sizes %v sum to %d, axis %d has size %d", tensor.ErrShape, sizes, total, axis, dim)
	}
	shape := x.Shape()
	outer := tensor.Shape(shape[:axis]).NumElements()
	innerBytes := tensor.Shape(shape[axis+1:]).NumElements() * int64(x.Type().Size())
	src := x.Bytes()
	rowBytes := dim * innerBytes
	outs := make([]*tensor.Tensor, k)
	at := int64(0)
	for i, s := range sizes {
		os := shape.Clone()
		os[axis] = s
		y, err := newOut(n, x.Type(), os)
		if err != nil {
			return nil, err
		}
		chunk := s * innerBytes
		dst := y.Bytes()
		for o := range outer {
			copy(dst[o*chunk:(o+1)*chunk], src[o*rowBytes+at:o*rowBytes+at+chunk])
		}
		at += chunk
		outs[i] = y
	}
	return outs, nil
}

// sliceKernel is Slice with starts, ends and optional axes and steps
// inputs: negative indices count from the end, out-of-range ones are
// clamped, negative steps walk backwards.
func sliceKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	var lists [4][]int64
	for i, name := range []string{"starts", "ends", "axes", "steps"} {
		t := opt(in, i+1)
		if t == nil {
			if i < 2 {
				return nil, n.Errorf("%w: input %s is required", driver.ErrInvalidArgument, name)
			}
			continue
		}
		if lists[i], err = intsOf(n, t, name); err != nil {
			return nil, err
		}
	}
	starts, ends, axes, steps := lists[0], lists[1], lists[2], lists[3]
	if len(ends) != len(starts) {
		return nil, n.Errorf("%w: %d starts and %d ends", driver.ErrInvalidArgument, len(starts), len(ends))
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		steps = make([]int64, len(starts))
		fill(steps, 1)
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, n.Errorf("%w: starts, ends, axes, steps have lengths %d, %d, %d, %d", driver.ErrInvalidArgument, len(starts), len(ends), len(axes), len(steps))
	}
	shape := x.Shape()
	rank := x.Rank()
	if _, err := normAxes(n, axes, rank); err != nil {
		return nil, err
	}
	out := shape.Clone()
	begin := make([]int64, rank)
	step := make([]int64, rank)
	fill(step, 1)
	for i, ax := range axes {
		a, _ := normAxis(n, ax, rank)
		if steps[i] == 0 {
			return nil, n.Errorf("%w: step 0 on axis %d", driver.ErrInvalidArgument, ax)
		}
		b, _, cnt := graph.SliceBounds(starts[i], ends[i], steps[i], shape[a])
		begin[a], step[a], out[a] = b, steps[i], cnt
	}
	y, err := newOut(n, x.Type(), out)
	if err != nil {
		return nil, err
	}
	st := tensor.ContiguousStrides(shape)
	base := int64(0)
	for d := range rank {
		base += begin[d] * st[d]
		st[d] *= step[d]
	}
	if y.NumElements() > 0 {
		stridedCopy(y.Bytes(), x.Bytes(), x.Type().Size(), out, st, base)
	}
	return one(y), nil
}

// expandKernel is Expand: the output shape is the broadcast of the input's
// shape and the shape input.
func expandKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	s, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	spec, err := intsOf(n, s, "shape")
	if err != nil {
		return nil, err
	}
	out, err := broadcastShape(x.Shape(), tensor.Shape(spec))
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	y, err := newOut(n, x.Type(), out)
	if err != nil {
		return nil, err
	}
	if y.NumElements() > 0 {
		stridedCopy(y.Bytes(), x.Bytes(), x.Type().Size(), out, alignedStrides(out, x.Shape())[0], 0)
	}
	return one(y), nil
}

// tileKernel is Tile. The output, seen as shape [r0,d0,r1,d1,...], reads
// the input with stride 0 along each repeat axis.
func tileKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	rt, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	reps, err := intsOf(n, rt, "repeats")
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	if len(reps) != len(shape) {
		return nil, n.Errorf("%w: %d repeats for a rank-%d input", driver.ErrInvalidArgument, len(reps), len(shape))
	}
	out := make(tensor.Shape, len(shape))
	split := make(tensor.Shape, 0, 2*len(shape))
	inSt := tensor.ContiguousStrides(shape)
	st := make([]int64, 0, 2*len(shape))
	for i, r := range reps {
		if r < 0 {
			return nil, n.Errorf("%w: negative repeat %d on axis %d", driver.ErrInvalidArgument, r, i)
		}
		out[i] = shape[i] * r
		split = append(split, r, shape[i])
		st = append(st, 0, inSt[i])
	}
	y, err := newOut(n, x.Type(), out)
	if err != nil {
		return nil, err
	}
	if y.NumElements() > 0 {
		stridedCopy(y.Bytes(), x.Bytes(), x.Type().Size(), split, st, 0)
	}
	return one(y), nil
}
