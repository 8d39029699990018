package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// identityKernel copies its input.
func identityKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	return one(x.Clone()), nil
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
				return nil, n.Errorf("%w: shape %v has more than one -1", driver.ErrInvalidArgument, spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= x.Rank() {
				return nil, n.Errorf("%w: shape %v copies dimension %d of a rank-%d input", driver.ErrInvalidArgument, spec, i, x.Rank())
			}
			d = x.Shape()[i]
		case d < 0:
			return nil, n.Errorf("%w: shape %v has a negative dimension", driver.ErrInvalidArgument, spec)
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
		return nil, n.Errorf("%w: axis %d is out of range for rank %d", driver.ErrInvalidArgument, n.Attrs.Int("axis", 1), r)
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
		return nil, n.Errorf("%w: perm %v for a rank-%d input", driver.ErrInvalidArgument, perm, r)
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
	axes, err := axesOf(n, in)
	if err != nil {
		return nil, err
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
	axes, err := axesOf(n, in)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, n.Errorf("%w: axes are required", driver.ErrInvalidArgument)
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

// dropoutKernel is Dropout: at inference (training_mode false or absent)
// Y is a copy of X and the optional mask is all true; in training mode it
// drops elements at random (dropoutTrainKernel, random.go).
func dropoutKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	own, _ := splitSeed(n, in) // the request seed follows the node's inputs

	if tm := opt(own, 2); tm != nil && tm.NumElements() == 1 && toF64s(tm)[0] != 0 {
		ratio := float32(0.5)
		if r := opt(own, 1); r != nil {
			if r.NumElements() != 1 {
				return nil, n.Errorf("%w: ratio %v, want one value", driver.ErrInvalidArgument, r)
			}
			ratio = float32(toF64s(r)[0])
		}
		return dropoutTrainKernel(n, in, ratio)
	}
	out := []*tensor.Tensor{x.Clone()}
	if len(n.Outputs) > 1 {
		mask, err := newOut(n, tensor.Bool, x.Shape())
		if err != nil {
			return nil, err
		}
		mb := mask.Bool()
		for i := range mb {
			mb[i] = true
		}
		out = append(out, mask)
	}
	return out, nil
}

// triluKernel is Trilu: keeps the upper (upper=1, j-i >= k) or lower
// (j-i <= k) triangle of the last two axes and zeroes the rest.
func triluKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() < 2 {
		return nil, n.Errorf("%w: input %v has rank < 2", tensor.ErrShape, x)
	}
	k, _, err := scalarInt(n, in, 1, "k")
	if err != nil {
		return nil, err
	}
	upper := n.Attrs.Int("upper", 1) != 0
	y := x.Clone()
	xs := x.Shape()
	rows, cols := xs[len(xs)-2], xs[len(xs)-1]
	esz := int64(x.Type().Size())
	B := y.Bytes()
	mats := xs.NumElements() / max(rows*cols, 1)
	for m := int64(0); m < mats; m++ {
		for i := int64(0); i < rows; i++ {
			for j := int64(0); j < cols; j++ {
				keep := j-i >= k
				if !upper {
					keep = j-i <= k
				}
				if !keep {
					off := ((m*rows+i)*cols + j) * esz
					clear(B[off : off+esz])
				}
			}
		}
	}
	return one(y), nil
}

// spaceDepthKernel is DepthToSpace (mode DCR or CRD) and SpaceToDepth on
// NCHW data.
func spaceDepthKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	b := n.Attrs.Int("blocksize", 0)
	xs := x.Shape()
	if x.Rank() != 4 || b <= 0 {
		return nil, n.Errorf("%w: want NCHW input and blocksize > 0, got %v and %d", tensor.ErrShape, x, b)
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	d2s := n.OpType == "DepthToSpace"
	crd := n.Attrs.String("mode", "DCR") == "CRD"
	var ys tensor.Shape
	if d2s {
		if C%(b*b) != 0 {
			return nil, n.Errorf("%w: channels of %v are not divisible by blocksize^2", tensor.ErrShape, x)
		}
		ys = tensor.Shape{N, C / (b * b), H * b, W * b}
	} else {
		if H%b != 0 || W%b != 0 {
			return nil, n.Errorf("%w: spatial dims of %v are not divisible by blocksize", tensor.ErrShape, x)
		}
		ys = tensor.Shape{N, C * b * b, H / b, W / b}
	}
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	esz := int64(x.Type().Size())
	X, Y := x.Bytes(), y.Bytes()
	// Walk the space side (small C, big H, W) and map it to the depth side.
	sC, sH, sW := ys[1], ys[2], ys[3] // space-side shape for DepthToSpace
	if !d2s {
		sC, sH, sW = C, H, W
	}
	dC, dH, dW := sC*b*b, sH/b, sW/b
	for nn := int64(0); nn < N; nn++ {
		for c := int64(0); c < sC; c++ {
			for h := int64(0); h < sH; h++ {
				for w := int64(0); w < sW; w++ {
					bh, bw := h%b, w%b
					dc := (bh*b+bw)*sC + c
					if crd {
						dc = c*b*b + bh*b + bw
					}
					sOff := ((nn*sC+c)*sH+h)*sW + w
					dOff := ((nn*dC+dc)*dH+h/b)*dW + w/b
					if d2s {
						copy(Y[sOff*esz:(sOff+1)*esz], X[dOff*esz:])
					} else {
						copy(Y[dOff*esz:(dOff+1)*esz], X[sOff*esz:])
					}
				}
			}
		}
	}
	return one(y), nil
}

// movementKernels are the data-movement ops. They work on raw bytes with the
// element size, so every element type is supported.
func movementKernels() map[string]Kernel {
	return map[string]Kernel{
		"Reshape":         reshapeKernel,
		"Flatten":         flattenKernel,
		"Transpose":       transposeKernel,
		"Squeeze":         squeezeKernel,
		"Unsqueeze":       unsqueezeKernel,
		"Identity":        identityKernel,
		"Dropout":         dropoutKernel,
		"DepthToSpace":    spaceDepthKernel,
		"SpaceToDepth":    spaceDepthKernel,
		"Trilu":           triluKernel,
		"ReverseSequence": reverseSequenceKernel,
		// ops_movement_slice.go, ops_movement_pad.go
		"Concat": concatKernel,
		"Split":  splitKernel,
		"Slice":  sliceKernel,
		"Expand": expandKernel,
		"Tile":   tileKernel,
		"Pad":    padKernel,
	}
}

// reverseSequenceKernel reverses, for each batch entry b, its first
// lens[b] slices along the time axis (ReverseSequence), moving elements as
// bytes.
func reverseSequenceKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	timeAx, _, err := graph.ReverseSequenceAxes(n)
	if err != nil {
		return nil, err
	}
	x, lens := in[0], toI64s(in[1])
	s := x.Shape()
	if len(s) < 2 {
		return nil, n.Errorf("input has rank %d, want at least 2", len(s))
	}
	steps, batch := s[0], s[1]
	if timeAx == 1 {
		steps, batch = batch, steps
	}
	if int64(len(lens)) != batch {
		return nil, n.Errorf("sequence_lens has %d entries for batch %d", len(lens), batch)
	}
	y, err := newOut(n, x.Type(), s)
	if err != nil {
		return nil, err
	}
	inner := s[2:].NumElements() * int64(x.Type().Size())
	src, dst := x.Bytes(), y.Bytes()
	for b := int64(0); b < batch; b++ {
		l := min(max(lens[b], 0), steps)
		for t := int64(0); t < steps; t++ {
			from := t
			if t < l {
				from = l - 1 - t
			}
			row := func(t int64) int64 {
				if timeAx == 0 {
					return (t*batch + b) * inner
				}
				return (b*steps + t) * inner
			}
			copy(dst[row(t):row(t)+inner], src[row(from):row(from)+inner])
		}
	}
	return one(y), nil
}
