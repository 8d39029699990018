package cpufallback

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// movementKernels are the data-movement ops. They work on raw bytes with the
// element size, so every element type is supported.
func movementKernels() map[string]kernel {
	return guardAll(map[string]kernel{
		"Concat":          concatKernel,
		"Split":           splitKernel,
		"Slice":           sliceKernel,
		"Reshape":         reshapeKernel,
		"Flatten":         flattenKernel,
		"Transpose":       transposeKernel,
		"Squeeze":         squeezeKernel,
		"Unsqueeze":       unsqueezeKernel,
		"Gather":          gatherKernel,
		"Shape":           shapeKernel,
		"Size":            sizeKernel,
		"ConstantOfShape": constantOfShapeKernel,
		"Expand":          expandKernel,
		"Tile":            tileKernel,
		"Range":           rangeKernel,
	})
}

// reshaped returns a copy of x's elements with a new shape.
func reshaped(n *graph.Node, x *tensor.Tensor, shape tensor.Shape) (*tensor.Tensor, error) {
	if shape.NumElements() != x.NumElements() {
		return nil, n.Errorf("%w: cannot reshape %v (%d elements) to %v (%d elements)", tensor.ErrShape, x.Shape(), x.NumElements(), shape, shape.NumElements())
	}
	y, err := newOut(n, x.Type(), shape)
	if err != nil {
		return nil, err
	}
	copy(y.Bytes(), x.Bytes())
	return y, nil
}

func concatKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, n.Errorf("%w: needs at least one input", plugin.ErrInvalidArgument)
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
			return nil, n.Errorf("%w: input %d is missing", plugin.ErrInvalidArgument, i)
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
			return nil, n.Errorf("%w: num_outputs=%d", plugin.ErrInvalidArgument, num)
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
		return nil, n.Errorf("%w: %d split sizes %v for %d outputs", plugin.ErrInvalidArgument, len(sizes), sizes, k)
	}
	total := int64(0)
	for _, s := range sizes {
		if s < 0 {
			return nil, n.Errorf("%w: negative split size in %v", plugin.ErrInvalidArgument, sizes)
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
				return nil, n.Errorf("%w: input %s is required", plugin.ErrInvalidArgument, name)
			}
			continue
		}
		if lists[i], err = intsOf(n, t, name); err != nil {
			return nil, err
		}
	}
	starts, ends, axes, steps := lists[0], lists[1], lists[2], lists[3]
	if len(ends) != len(starts) {
		return nil, n.Errorf("%w: %d starts and %d ends", plugin.ErrInvalidArgument, len(starts), len(ends))
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
		return nil, n.Errorf("%w: starts, ends, axes, steps have lengths %d, %d, %d, %d", plugin.ErrInvalidArgument, len(starts), len(ends), len(axes), len(steps))
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
			return nil, n.Errorf("%w: step 0 on axis %d", plugin.ErrInvalidArgument, ax)
		}
		b, cnt := sliceRange(starts[i], ends[i], steps[i], shape[a])
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

// sliceRange resolves one axis of Slice to its first index and element count.
func sliceRange(start, end, step, dim int64) (first, count int64) {
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start = min(max(start, 0), dim)
		end = min(max(end, 0), dim)
		if end <= start {
			return start, 0
		}
		return start, (end - start + step - 1) / step
	}
	start = min(max(start, 0), dim-1)
	end = min(max(end, -1), dim-1)
	if end >= start {
		return 0, 0
	}
	return start, (start - end - step - 1) / -step
}

// reshapeKernel is Reshape: 0 copies the input's dimension unless
// allowzero, -1 is inferred.
func reshapeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	st, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	spec, err := intsOf(n, st, "shape")
	if err != nil {
		return nil, err
	}
	allowZero := n.Attrs.Int("allowzero", 0) != 0
	shape := make(tensor.Shape, len(spec))
	infer := -1
	known := int64(1)
	for i, d := range spec {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, n.Errorf("%w: shape %v has more than one -1", plugin.ErrInvalidArgument, spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= x.Rank() {
				return nil, n.Errorf("%w: shape %v copies dimension %d of a rank-%d input", plugin.ErrInvalidArgument, spec, i, x.Rank())
			}
			d = x.Shape()[i]
		case d < 0:
			return nil, n.Errorf("%w: shape %v has a negative dimension", plugin.ErrInvalidArgument, spec)
		}
		shape[i] = d
		known *= d
	}
	if infer >= 0 {
		if known == 0 || x.NumElements()%known != 0 {
			return nil, n.Errorf("%w: cannot reshape %v to %v", tensor.ErrShape, x.Shape(), spec)
		}
		shape[infer] = x.NumElements() / known
	}
	y, err := reshaped(n, x, shape)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

func flattenKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	axis := n.Attrs.Int("axis", 1)
	r := int64(x.Rank())
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis > r {
		return nil, n.Errorf("%w: axis %d is out of range for rank %d", plugin.ErrInvalidArgument, n.Attrs.Int("axis", 1), r)
	}
	s := x.Shape()
	y, err := reshaped(n, x, tensor.Shape{s[:axis].NumElements(), s[axis:].NumElements()})
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// transposeKernel is Transpose; perm defaults to reversing the axes.
func transposeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	r := x.Rank()
	perm := n.Attrs.Ints("perm", nil)
	if perm == nil {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	if len(perm) != r {
		return nil, n.Errorf("%w: perm %v for a rank-%d input", plugin.ErrInvalidArgument, perm, r)
	}
	if _, err := normAxes(n, perm, r); err != nil {
		return nil, err
	}
	inSt := tensor.ContiguousStrides(x.Shape())
	out := make(tensor.Shape, r)
	st := make([]int64, r)
	for i, p := range perm {
		a, _ := normAxis(n, p, r)
		out[i] = x.Shape()[a]
		st[i] = inSt[a]
	}
	y, err := newOut(n, x.Type(), out)
	if err != nil {
		return nil, err
	}
	if y.NumElements() > 0 {
		stridedCopy(y.Bytes(), x.Bytes(), x.Type().Size(), out, st, 0)
	}
	return one(y), nil
}

// squeezeKernel is Squeeze; without axes it removes every dimension of 1.
func squeezeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	var axes []int64
	if a := opt(in, 1); a != nil {
		if axes, err = intsOf(n, a, "axes"); err != nil {
			return nil, err
		}
	} else {
		axes = n.Attrs.Ints("axes", nil)
	}
	shape := x.Shape()
	mask := make([]bool, len(shape))
	if len(axes) == 0 {
		for i, d := range shape {
			mask[i] = d == 1
		}
	} else {
		if mask, err = normAxes(n, axes, len(shape)); err != nil {
			return nil, err
		}
		for i, m := range mask {
			if m && shape[i] != 1 {
				return nil, n.Errorf("%w: cannot squeeze axis %d of size %d in %v", tensor.ErrShape, i, shape[i], shape)
			}
		}
	}
	out := tensor.Shape{}
	for i, d := range shape {
		if !mask[i] {
			out = append(out, d)
		}
	}
	y, err := reshaped(n, x, out)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

func unsqueezeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	var axes []int64
	if a := opt(in, 1); a != nil {
		if axes, err = intsOf(n, a, "axes"); err != nil {
			return nil, err
		}
	} else {
		axes = n.Attrs.Ints("axes", nil)
	}
	if len(axes) == 0 {
		return nil, n.Errorf("%w: axes are required", plugin.ErrInvalidArgument)
	}
	r := x.Rank() + len(axes)
	mask, err := normAxes(n, axes, r)
	if err != nil {
		return nil, err
	}
	out := make(tensor.Shape, r)
	j := 0
	for i := range out {
		if mask[i] {
			out[i] = 1
			continue
		}
		out[i] = x.Shape()[j]
		j++
	}
	y, err := reshaped(n, x, out)
	if err != nil {
		return nil, err
	}
	return one(y), nil
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
			return nil, n.Errorf("%w: index %d (position %d) is out of range for axis %d of size %d", plugin.ErrInvalidArgument, v, i, axis, l)
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

// shapeKernel is Shape with optional start and end attributes (negative
// ones count from the end, both clamped).
func shapeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	r := int64(x.Rank())
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return min(max(v, 0), r)
	}
	start, end := clamp(n.Attrs.Int("start", 0)), clamp(n.Attrs.Int("end", r))
	dims := []int64{}
	if end > start {
		dims = x.Shape()[start:end]
	}
	y, err := tensor.FromI64(tensor.Shape{int64(len(dims))}, dims)
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(y), nil
}

func sizeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := tensor.FromI64(tensor.Shape{}, []int64{x.NumElements()})
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(y), nil
}

// constantOfShapeKernel fills a tensor of the shape given by its input with
// the one-element value attribute (default f32 0).
func constantOfShapeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	shape, err := intsOf(n, s, "shape")
	if err != nil {
		return nil, err
	}
	val := n.Attrs.Tensor("value")
	if val == nil {
		val = tensor.Scalar(0)
	}
	if val.NumElements() != 1 {
		return nil, n.Errorf("%w: value must hold one element, got %v", plugin.ErrInvalidArgument, val)
	}
	y, err := newOut(n, val.Type(), tensor.Shape(shape))
	if err != nil {
		return nil, err
	}
	v := val.Contiguous().Bytes()
	dst := y.Bytes()
	if len(dst) > 0 {
		copy(dst, v)
		for filled := len(v); filled < len(dst); filled *= 2 {
			copy(dst[filled:], dst[:filled])
		}
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
		return nil, n.Errorf("%w: %d repeats for a rank-%d input", plugin.ErrInvalidArgument, len(reps), len(shape))
	}
	out := make(tensor.Shape, len(shape))
	split := make(tensor.Shape, 0, 2*len(shape))
	inSt := tensor.ContiguousStrides(shape)
	st := make([]int64, 0, 2*len(shape))
	for i, r := range reps {
		if r < 0 {
			return nil, n.Errorf("%w: negative repeat %d on axis %d", plugin.ErrInvalidArgument, r, i)
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

// rangeKernel is Range: start, limit and delta scalars of one type (f32,
// f64, i16, i32, i64); max(ceil((limit-start)/delta), 0) elements.
func rangeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var xs [3]*tensor.Tensor
	for i := range xs {
		var err error
		if xs[i], err = need(n, in, i); err != nil {
			return nil, err
		}
		if xs[i].NumElements() != 1 {
			return nil, n.Errorf("%w: input %d must be a scalar, got %v", tensor.ErrShape, i, xs[i])
		}
	}
	if err := sameType(n, xs[:]...); err != nil {
		return nil, err
	}
	t := xs[0].Type()
	if !isNumeric(t) {
		return nil, n.Errorf("%w: Range on %v", plugin.ErrUnsupported, t)
	}
	if t.IsInteger() {
		start, limit, delta := toI64s(xs[0])[0], toI64s(xs[1])[0], toI64s(xs[2])[0]
		if delta == 0 {
			return nil, n.Errorf("%w: delta is 0", plugin.ErrInvalidArgument)
		}
		cnt := int64(0)
		if d := limit - start; (d > 0) == (delta > 0) && d != 0 {
			cnt = (d + delta - sign(delta)) / delta
		}
		y, err := newOut(n, t, tensor.Shape{cnt})
		if err != nil {
			return nil, err
		}
		v := make([]int64, cnt)
		for i := range v {
			v[i] = start + int64(i)*delta
		}
		storeI64(y, v)
		return one(y), nil
	}
	start, limit, delta := toF64s(xs[0])[0], toF64s(xs[1])[0], toF64s(xs[2])[0]
	if delta == 0 {
		return nil, n.Errorf("%w: delta is 0", plugin.ErrInvalidArgument)
	}
	c := math.Ceil((limit - start) / delta)
	if math.IsNaN(c) || math.IsInf(c, 0) || c > 1<<40 {
		return nil, n.Errorf("%w: range(%v, %v, %v) is not finite", plugin.ErrInvalidArgument, start, limit, delta)
	}
	cnt := max(int64(c), 0)
	y, err := newOut(n, t, tensor.Shape{cnt})
	if err != nil {
		return nil, err
	}
	v := make([]float64, cnt)
	for i := range v {
		v[i] = start + float64(i)*delta
	}
	storeF64(y, v)
	return one(y), nil
}

func sign(v int64) int64 {
	if v < 0 {
		return -1
	}
	return 1
}
