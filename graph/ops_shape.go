package graph

import (
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// Inference for the data-movement and shape-manipulation ops: Reshape,
// Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather,
// Shape, Cast, ConstantOfShape, Expand, Tile, Pad, Range, Identity, Dropout,
// Where.

// shapeRange returns Shape's [start, end) over a rank, clamped as ONNX does.
func shapeRange(n *Node, rank int) (int, int) {
	clamp := func(v int64) int {
		if v < 0 {
			v += int64(rank)
		}
		return int(min(max(v, 0), int64(rank)))
	}
	lo := clamp(n.Attrs.Int("start", 0))
	hi := clamp(n.Attrs.Int("end", int64(rank)))
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// sliceBounds applies ONNX Slice clamping to one axis of size dim and returns
// the effective start, end and element count.
func sliceBounds(start, end, step, dim int64) (int64, int64, int64) {
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

func inferIdentity(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in := n.Inputs[0]
	if !in.Valid() {
		return n.Errorf("required input 0 is missing")
	}
	setOutput(n, 0, in.Type(), in.Shape().Clone())
	return nil
}

func inferDropout(n *Node) error {
	if err := checkOutputs(n, 1, 2); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	setOutput(n, 0, in.Type(), in.Shape().Clone())
	if len(n.Outputs) == 2 {
		setOutput(n, 1, tensor.Bool, in.Shape().Clone())
	}
	return nil
}

func inferReshape(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	shapeIn, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !shapeIn.Type().IsInteger() {
		return n.Errorf("shape input has element type %v, want i64", shapeIn.Type())
	}
	vals, ok := shapeVector(n, 1)
	if !ok {
		setOutput(n, 0, data.Type(), DynamicRank)
		return nil
	}
	allowZero := n.Attrs.Int("allowzero", 0) != 0
	in := data.Shape()
	out := PartialShape{Dims: make([]Dim, len(vals)), RankKnown: true}
	infer := -1
	for i, v := range vals {
		switch {
		case !v.known:
			out.Dims[i] = DynamicDim(v.name)
		case v.v == 0 && !allowZero:
			if in.RankKnown && i >= len(in.Dims) {
				return n.Errorf("shape %v copies dimension %d (0) but the input %v has rank %d", symString(vals), i, in, len(in.Dims))
			}
			if in.RankKnown {
				out.Dims[i] = in.Dims[i]
			} else {
				out.Dims[i] = DynamicDim("")
			}
		case v.v == -1:
			if infer >= 0 {
				return n.Errorf("shape %v has more than one -1", symString(vals))
			}
			infer = i
			out.Dims[i] = DynamicDim("")
		case v.v < -1:
			return n.Errorf("shape %v has negative dimension %d", symString(vals), v.v)
		default:
			out.Dims[i] = StaticDim(v.v)
		}
	}
	total, inStatic := staticProduct(in)
	known, outStatic := int64(1), true
	for i, d := range out.Dims {
		if i == infer {
			continue
		}
		if !d.IsStatic() {
			outStatic = false
			continue
		}
		known *= d.Size
	}
	if inStatic && outStatic {
		if infer >= 0 {
			if known == 0 || total%known != 0 {
				return n.Errorf("cannot reshape %v (%d elements) to %v", in, total, symString(vals))
			}
			out.Dims[infer] = StaticDim(total / known)
		} else if known != total {
			return n.Errorf("cannot reshape %v (%d elements) to %v (%d elements)", in, total, symString(vals), known)
		}
	} else if infer >= 0 && in.RankKnown {
		// Dims carried over unchanged (same dynamic dims on both sides)
		// cancel: Reshape([N,3,4], [N,-1]) is [N,12].
		if d, ok := inferRemaining(in, out, infer); ok {
			out.Dims[infer] = d
		}
	}
	setOutput(n, 0, data.Type(), out)
	return nil
}

// inferRemaining solves for the -1 of a reshape when the dynamic dims of
// the output are named dims of the input that cancel out.
func inferRemaining(in, out PartialShape, infer int) (Dim, bool) {
	inDyn := map[string]int{}
	inProd := int64(1)
	for _, d := range in.Dims {
		if d.IsStatic() {
			inProd *= d.Size
		} else if d.Name != "" {
			inDyn[d.Name]++
		} else {
			return Dim{}, false
		}
	}
	outProd := int64(1)
	for i, d := range out.Dims {
		if i == infer {
			continue
		}
		if d.IsStatic() {
			outProd *= d.Size
			continue
		}
		if d.Name == "" || inDyn[d.Name] == 0 {
			return Dim{}, false
		}
		inDyn[d.Name]--
	}
	for _, c := range inDyn {
		if c != 0 {
			return Dim{}, false
		}
	}
	if outProd == 0 || inProd%outProd != 0 {
		return Dim{}, false
	}
	return StaticDim(inProd / outProd), true
}

func symString(vals []symInt) string {
	p := PartialShape{Dims: make([]Dim, len(vals)), RankKnown: true}
	for i, v := range vals {
		if v.known {
			p.Dims[i] = Dim{Size: v.v}
			if v.v < 0 {
				p.Dims[i] = Dim{Size: -1, Name: "-1"}
			}
		} else {
			p.Dims[i] = DynamicDim(v.name)
		}
	}
	return p.String()
}

// staticProduct returns the number of elements of a static shape.
func staticProduct(p PartialShape) (int64, bool) {
	s, ok := p.ToShape()
	if !ok {
		return 0, false
	}
	return s.NumElements(), true
}

// productDim multiplies dims; dynamic when any is dynamic, except that a
// single dim passes through with its name.
func productDim(dims []Dim) Dim {
	if len(dims) == 1 {
		return dims[0]
	}
	p := int64(1)
	for _, d := range dims {
		if !d.IsStatic() {
			return DynamicDim("")
		}
		p *= d.Size
	}
	return StaticDim(p)
}

func inferFlatten(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	if !s.RankKnown {
		setOutput(n, 0, in.Type(), dynamicShape(2))
		return nil
	}
	r := len(s.Dims)
	axis := n.Attrs.Int("axis", 1)
	if axis < -int64(r) || axis > int64(r) {
		return n.Errorf("axis %d is out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += int64(r)
	}
	outer, inner := StaticDim(1), StaticDim(1)
	if axis > 0 {
		outer = productDim(s.Dims[:axis])
	}
	if int(axis) < r {
		inner = productDim(s.Dims[axis:])
	}
	setOutput(n, 0, in.Type(), PartialShape{Dims: []Dim{outer, inner}, RankKnown: true})
	return nil
}

func inferTranspose(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	perm := n.Attrs.Ints("perm", nil)
	if !s.RankKnown {
		if perm == nil {
			setOutput(n, 0, in.Type(), DynamicRank)
		} else {
			setOutput(n, 0, in.Type(), dynamicShape(len(perm)))
		}
		return nil
	}
	r := len(s.Dims)
	if perm == nil {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	if len(perm) != r {
		return n.Errorf("perm %v has %d entries for input rank %d", perm, len(perm), r)
	}
	seen := make([]bool, r)
	out := PartialShape{Dims: make([]Dim, r), RankKnown: true}
	for i, p := range perm {
		if p < 0 || p >= int64(r) || seen[p] {
			return n.Errorf("perm %v is not a permutation of 0..%d", perm, r-1)
		}
		seen[p] = true
		out.Dims[i] = s.Dims[p]
	}
	setOutput(n, 0, in.Type(), out)
	return nil
}

func inferSqueeze(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	if !present(n, 1) {
		if !s.RankKnown {
			setOutput(n, 0, in.Type(), DynamicRank)
			return nil
		}
		out := PartialShape{Dims: []Dim{}, RankKnown: true}
		for _, d := range s.Dims {
			if !d.IsStatic() {
				// A dynamic dim may or may not be 1.
				setOutput(n, 0, in.Type(), DynamicRank)
				return nil
			}
			if d.Size != 1 {
				out.Dims = append(out.Dims, d)
			}
		}
		setOutput(n, 0, in.Type(), out)
		return nil
	}
	axes, ok := n.ConstInts(1)
	if !ok || !s.RankKnown {
		setOutput(n, 0, in.Type(), DynamicRank)
		return nil
	}
	norm, err := normalizeAxes(n, axes, len(s.Dims))
	if err != nil {
		return err
	}
	drop := make([]bool, len(s.Dims))
	for _, a := range norm {
		if d := s.Dims[a]; d.IsStatic() && d.Size != 1 {
			return n.Errorf("cannot squeeze axis %d of shape %v: size is %d, not 1", a, s, d.Size)
		}
		drop[a] = true
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	for i, d := range s.Dims {
		if !drop[i] {
			out.Dims = append(out.Dims, d)
		}
	}
	setOutput(n, 0, in.Type(), out)
	return nil
}

func inferUnsqueeze(n *Node) error {
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
	s := in.Shape()
	axes, ok := n.ConstInts(1)
	if !ok || !s.RankKnown {
		setOutput(n, 0, in.Type(), DynamicRank)
		return nil
	}
	r := len(s.Dims) + len(axes)
	norm, err := normalizeAxes(n, axes, r)
	if err != nil {
		return err
	}
	ins := make([]bool, r)
	for _, a := range norm {
		ins[a] = true
	}
	out := PartialShape{Dims: make([]Dim, r), RankKnown: true}
	j := 0
	for i := range r {
		if ins[i] {
			out.Dims[i] = StaticDim(1)
			continue
		}
		out.Dims[i] = s.Dims[j]
		j++
	}
	setOutput(n, 0, in.Type(), out)
	return nil
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
			_, _, c := sliceBounds(starts[i], ends[i], steps[i], d.Size)
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

func inferGather(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	data, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	idx, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isIndexType(idx.Type()) {
		return n.Errorf("indices have element type %v, want i32 or i64", idx.Type())
	}
	ds, is := data.Shape(), idx.Shape()
	if !ds.RankKnown || !is.RankKnown {
		setOutput(n, 0, data.Type(), DynamicRank)
		return nil
	}
	if len(ds.Dims) == 0 {
		return n.Errorf("data must have rank >= 1, got a scalar")
	}
	axis, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(ds.Dims))
	if err != nil {
		return err
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	out.Dims = append(out.Dims, ds.Dims[:axis]...)
	out.Dims = append(out.Dims, is.Dims...)
	out.Dims = append(out.Dims, ds.Dims[axis+1:]...)
	setOutput(n, 0, data.Type(), out)
	return nil
}

func inferShape(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	s := in.Shape()
	if !s.RankKnown {
		setOutput(n, 0, tensor.I64, dynamicShape(1))
		return nil
	}
	lo, hi := shapeRange(n, len(s.Dims))
	setOutput(n, 0, tensor.I64, ShapeOf(int64(hi-lo)))
	return nil
}

func inferCast(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !n.Attrs.Has("to") {
		return n.Errorf("attribute to is required")
	}
	to := tensor.ElementType(n.Attrs.Int("to", 0))
	if !to.Valid() {
		return n.Errorf("attribute to=%d is not a clinfer element type", n.Attrs.Int("to", 0))
	}
	setOutput(n, 0, to, in.Shape().Clone())
	return nil
}

// shapeFromInput builds an output shape from a 1-D shape input (Expand,
// ConstantOfShape).
func shapeFromInput(n *Node, i int) (PartialShape, error) {
	in := n.Input(i)
	if in.Type() != tensor.I64 {
		return PartialShape{}, n.Errorf("shape input has element type %v, want i64", in.Type())
	}
	if r := in.Shape().Rank(); r > 1 {
		return PartialShape{}, n.Errorf("shape input has rank %d, want 1", r)
	}
	vals, ok := shapeVector(n, i)
	if !ok {
		return DynamicRank, nil
	}
	out := PartialShape{Dims: make([]Dim, len(vals)), RankKnown: true}
	for j, v := range vals {
		if v.known && v.v < 0 {
			return PartialShape{}, n.Errorf("shape %v has a negative dimension", symString(vals))
		}
		out.Dims[j] = symToDim(v)
	}
	return out, nil
}

func inferConstantOfShape(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if _, err := requiredInput(n, 0); err != nil {
		return err
	}
	t := tensor.F32
	if v := n.Attrs.Tensor("value"); v != nil {
		if v.NumElements() != 1 {
			return n.Errorf("value attribute has %d elements, want 1", v.NumElements())
		}
		t = v.Type()
	}
	s, err := shapeFromInput(n, 0)
	if err != nil {
		return err
	}
	setOutput(n, 0, t, s)
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

func inferRange(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	for i := range 3 {
		in := n.Input(i)
		if !in.Valid() {
			return n.Errorf("required input %d is missing", i)
		}
		if r := in.Shape().Rank(); r > 0 && !(r == 1 && in.Shape().Dims[0].Size == 1) {
			return n.Errorf("input %d has shape %v, want a scalar", i, in.Shape())
		}
	}
	start, ok1 := constFloats(n, 0)
	limit, ok2 := constFloats(n, 1)
	delta, ok3 := constFloats(n, 2)
	if !ok1 || !ok2 || !ok3 || len(start) != 1 || len(limit) != 1 || len(delta) != 1 {
		setOutput(n, 0, t, dynamicShape(1))
		return nil
	}
	if delta[0] == 0 {
		return n.Errorf("delta is 0")
	}
	cnt := int64(max(math.Ceil((limit[0]-start[0])/delta[0]), 0))
	setOutput(n, 0, t, ShapeOf(cnt))
	return nil
}

func inferWhere(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 3 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	if c := n.Inputs[0].Type(); c != tensor.Bool {
		return n.Errorf("condition has element type %v, want boolean", c)
	}
	t, err := sameTypes(n, 1, 2)
	if err != nil {
		return err
	}
	s, err := broadcastInputs(n, 0, 1, 2)
	if err != nil {
		return err
	}
	setOutput(n, 0, t, s)
	return nil
}
