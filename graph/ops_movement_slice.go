package graph

import (
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// sliceBounds applies ONNX Slice clamping to one axis of size dim and returns
// the effective start, end and element count.
func SliceBounds(start, end, step, dim int64) (int64, int64, int64) {
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start = min(max(start, 0), dim)
		end = min(max(end, 0), dim)
		return start, end, max(0, ceilDiv(end-start, step))
	}
	start = min(max(start, 0), dim-1)
	end = min(max(end, -1), dim-1)
	return start, end, max(0, ceilDiv(start-end, -step))
}

func inferConcat(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if !n.Attrs.Has("axis") {
		return n.Errorf("attribute axis is required")
	}
	t, err := sameTypes(n, allInputs(n)...)
	if err != nil {
		return err
	}
	var out PartialShape
	rank := -1
	for i, in := range n.Inputs {
		if !in.Valid() {
			return n.Errorf("input %d is missing", i)
		}
		s := in.Shape()
		if !s.RankKnown {
			continue
		}
		if rank < 0 {
			rank = len(s.Dims)
			continue
		}
		if len(s.Dims) != rank {
			return n.Errorf("input %d has shape %v of rank %d, input 0 rank %d", i, s, len(s.Dims), rank)
		}
	}
	if rank < 0 {
		setOutput(n, 0, t, DynamicRank)
		return nil
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), rank)
	if err != nil {
		return err
	}
	out = PartialShape{Dims: make([]Dim, rank), RankKnown: true}
	for i := range out.Dims {
		out.Dims[i] = DynamicDim("")
	}
	sum, sumKnown, first := int64(0), true, true
	for i, in := range n.Inputs {
		s := in.Shape()
		if !s.RankKnown {
			sumKnown = false
			continue
		}
		for d := range s.Dims {
			if d == axis {
				continue
			}
			if first {
				out.Dims[d] = s.Dims[d]
				continue
			}
			m, ok := mergeDim(out.Dims[d], s.Dims[d])
			if !ok {
				return n.Errorf("input %d has shape %v, which differs from the other inputs on axis %d (%v)", i, s, d, out.Dims[d])
			}
			out.Dims[d] = m
		}
		first = false
		if ad := s.Dims[axis]; ad.IsStatic() {
			sum += ad.Size
		} else {
			sumKnown = false
		}
	}
	if sumKnown {
		out.Dims[axis] = StaticDim(sum)
	} else if len(n.Inputs) == 1 {
		out.Dims[axis] = n.Inputs[0].Shape().Dims[axis]
	}
	setOutput(n, 0, t, out)
	return nil
}

func inferSplit(n *Node) error {
	if len(n.Outputs) < 1 {
		return n.Errorf("has no outputs")
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	k := len(n.Outputs)
	if num := n.Attrs.Int("num_outputs", 0); n.Attrs.Has("num_outputs") && int(num) != k {
		return n.Errorf("num_outputs is %d but the node has %d outputs", num, k)
	}
	var split []int64
	if present(n, 1) {
		if v, ok := n.ConstInts(1); ok {
			split = v
			if len(split) != k {
				return n.Errorf("split %v has %d entries for %d outputs", split, len(split), k)
			}
		}
	}
	if !s.RankKnown {
		for i := range n.Outputs {
			setOutput(n, i, in.Type(), DynamicRank)
		}
		return nil
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(s.Dims))
	if err != nil {
		return err
	}
	d := s.Dims[axis]
	sizes := make([]Dim, k)
	switch {
	case split != nil:
		sum := int64(0)
		for i, v := range split {
			if v < 0 {
				return n.Errorf("split %v has a negative size", split)
			}
			sum += v
			sizes[i] = StaticDim(v)
		}
		if d.IsStatic() && sum != d.Size {
			return n.Errorf("split %v sums to %d but axis %d of %v has size %d", split, sum, axis, s, d.Size)
		}
	case present(n, 1) || !d.IsStatic():
		for i := range sizes {
			sizes[i] = DynamicDim("")
		}
	default:
		// Equal split; with num_outputs the last chunk may be smaller
		// (ONNX opset 18).
		chunk := ceilDiv(d.Size, int64(k))
		if !n.Attrs.Has("num_outputs") && d.Size%int64(k) != 0 {
			return n.Errorf("axis %d of %v (size %d) cannot be split evenly into %d outputs", axis, s, d.Size, k)
		}
		rest := d.Size
		for i := range sizes {
			c := min(chunk, rest)
			sizes[i] = StaticDim(c)
			rest -= c
		}
	}
	for i := range n.Outputs {
		o := s.Clone()
		o.Dims[axis] = sizes[i]
		setOutput(n, i, in.Type(), o)
	}
	return nil
}

func inferSlice(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		in, err := requiredInput(n, i)
		if err != nil {
			return err
		}
		if !isIndexType(in.Type()) {
			return n.Errorf("input %d has element type %v, want i32 or i64", i, in.Type())
		}
	}
	s := data.Shape()
	if !s.RankKnown {
		setOutput(n, 0, data.Type(), DynamicRank)
		return nil
	}
	r := len(s.Dims)
	starts, ok1 := n.ConstInts(1)
	ends, ok2 := n.ConstInts(2)
	var axes []int
	axesKnown := true
	if present(n, 3) {
		a, ok := n.ConstInts(3)
		if ok {
			if axes, err = normalizeAxes(n, a, r); err != nil {
				return err
			}
		} else {
			axesKnown = false
		}
	}
	out := s.Clone()
	if !axesKnown {
		setOutput(n, 0, data.Type(), dynamicShape(r))
		return nil
	}
	if !ok1 || !ok2 {
		if axes == nil {
			setOutput(n, 0, data.Type(), dynamicShape(r))
			return nil
		}
		for _, a := range axes {
			out.Dims[a] = DynamicDim("")
		}
		setOutput(n, 0, data.Type(), out)
		return nil
	}
	if len(starts) != len(ends) {
		return n.Errorf("starts %v and ends %v differ in length", starts, ends)
	}
	if axes == nil {
		if len(starts) > r {
			return n.Errorf("starts %v has more entries than the input rank %d", starts, r)
		}
		axes = make([]int, len(starts))
		for i := range axes {
			axes[i] = i
		}
	}
	if len(axes) != len(starts) {
		return n.Errorf("axes has %d entries but starts has %d", len(axes), len(starts))
	}
	steps := make([]int64, len(starts))
	for i := range steps {
		steps[i] = 1
	}
	if present(n, 4) {
		st, ok := n.ConstInts(4)
		if !ok {
			for _, a := range axes {
				out.Dims[a] = DynamicDim("")
			}
			setOutput(n, 0, data.Type(), out)
			return nil
		}
		if len(st) != len(starts) {
			return n.Errorf("steps has %d entries but starts has %d", len(st), len(starts))
		}
		steps = st
	}
	for i, a := range axes {
		if steps[i] == 0 {
			return n.Errorf("step on axis %d is 0", a)
		}
		d := s.Dims[a]
		if d.IsStatic() {
			_, _, c := SliceBounds(starts[i], ends[i], steps[i], d.Size)
			out.Dims[a] = StaticDim(c)
			continue
		}
		// A whole-axis slice keeps a dynamic dim (and its name).
		if steps[i] == 1 && starts[i] == 0 && ends[i] >= math.MaxInt32 {
			continue
		}
		out.Dims[a] = DynamicDim("")
	}
	setOutput(n, 0, data.Type(), out)
	return nil
}

func inferExpand(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	target, err := shapeFromInput(n, 1)
	if err != nil {
		return err
	}
	if !target.RankKnown {
		setOutput(n, 0, in.Type(), DynamicRank)
		return nil
	}
	// An unknown target entry may be 1 or the input's dim: like a dynamic
	// dim under broadcasting.
	out, err := BroadcastShapes(in.Shape(), target)
	if err != nil {
		return n.Errorf("%w", err)
	}
	setOutput(n, 0, in.Type(), out)
	return nil
}

func inferTile(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	rep, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if rep.Type() != tensor.I64 {
		return n.Errorf("repeats have element type %v, want i64", rep.Type())
	}
	s := in.Shape()
	if !s.RankKnown {
		setOutput(n, 0, in.Type(), DynamicRank)
		return nil
	}
	reps, ok := n.ConstInts(1)
	if !ok {
		setOutput(n, 0, in.Type(), dynamicShape(len(s.Dims)))
		return nil
	}
	if len(reps) != len(s.Dims) {
		return n.Errorf("repeats %v has %d entries for input rank %d", reps, len(reps), len(s.Dims))
	}
	out := s.Clone()
	for i, r := range reps {
		switch {
		case r < 0:
			return n.Errorf("repeats %v has a negative entry", reps)
		case r == 1:
		case out.Dims[i].IsStatic():
			out.Dims[i] = StaticDim(out.Dims[i].Size * r)
		case r == 0:
			out.Dims[i] = StaticDim(0)
		default:
			out.Dims[i] = DynamicDim("")
		}
	}
	setOutput(n, 0, in.Type(), out)
	return nil
}

func inferPad(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	padsIn, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if padsIn.Type() != tensor.I64 {
		return n.Errorf("pads have element type %v, want i64", padsIn.Type())
	}
	switch m := n.Attrs.String("mode", "constant"); m {
	case "constant", "reflect", "edge", "wrap":
	default:
		return n.Errorf("mode %q is not one of constant, reflect, edge, wrap", m)
	}
	if cv := n.Input(2); cv.Valid() && cv.Type() != in.Type() {
		return n.Errorf("constant_value has element type %v, want %v like the data", cv.Type(), in.Type())
	}
	s := in.Shape()
	if !s.RankKnown {
		setOutput(n, 0, in.Type(), DynamicRank)
		return nil
	}
	r := len(s.Dims)
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if present(n, 3) {
		a, ok := n.ConstInts(3)
		if !ok {
			setOutput(n, 0, in.Type(), dynamicShape(r))
			return nil
		}
		if axes, err = normalizeAxes(n, a, r); err != nil {
			return err
		}
	}
	pads, ok := n.ConstInts(1)
	if !ok {
		out := s.Clone()
		for _, a := range axes {
			out.Dims[a] = DynamicDim("")
		}
		setOutput(n, 0, in.Type(), out)
		return nil
	}
	if len(pads) != 2*len(axes) {
		return n.Errorf("pads %v has %d entries, want %d (2 per padded axis)", pads, len(pads), 2*len(axes))
	}
	out := s.Clone()
	for i, a := range axes {
		d := s.Dims[a]
		p := pads[i] + pads[i+len(axes)]
		if !d.IsStatic() {
			if p != 0 {
				out.Dims[a] = DynamicDim("")
			}
			continue
		}
		if d.Size+p < 0 {
			return n.Errorf("pads %v make axis %d of %v negative", pads, a, s)
		}
		out.Dims[a] = StaticDim(d.Size + p)
	}
	setOutput(n, 0, in.Type(), out)
	return nil
}
