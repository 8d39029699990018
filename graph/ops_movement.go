package graph

import "github.com/clinfer/clinfer/tensor"

func inferIdentity(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in := n.Inputs[0]
	if !in.Valid() {
		return n.Errorf("required input 0 is missing")
	}
	setOutput(n, 0, in.Type(), in.Shape().Clone())
	n.Outputs[0].Kind = in.Kind() // Identity passes sequences and optionals too
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
	if t := in.Type(); !t.IsFloat() && !t.IsFloat8() {
		return n.Errorf("input has element type %v, want a float type", t)
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

// inferTrilu is Trilu(input, k?): same type and shape, rank >= 2.
func inferTrilu(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if r := x.Shape().Rank(); r >= 0 && r < 2 {
		return n.Errorf("input has rank %d, want >= 2", r)
	}
	if k := n.Input(1); k.Valid() && !isIndexType(k.Type()) {
		return n.Errorf("k has element type %v, want i64", k.Type())
	}
	setOutput(n, 0, x.Type(), x.Shape().Clone())
	return nil
}

// inferSpaceDepth is DepthToSpace and SpaceToDepth on NCHW input with
// attribute blocksize.
func inferSpaceDepth(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	b := n.Attrs.Int("blocksize", 0)
	if b <= 0 {
		return n.Errorf("attribute blocksize must be positive, got %d", b)
	}
	if m := n.Attrs.String("mode", "DCR"); m != "DCR" && m != "CRD" {
		return n.Errorf("mode %q is not one of DCR, CRD", m)
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), dynamicShape(4))
		return nil
	}
	if len(xs.Dims) != 4 {
		return n.Errorf("input has shape %v, want rank 4 (N, C, H, W)", xs)
	}
	out := xs.Clone()
	scale := func(d Dim, mul bool) (Dim, error) {
		if !d.IsStatic() {
			return DynamicDim(""), nil
		}
		if mul {
			return StaticDim(d.Size * b), nil
		}
		if d.Size%b != 0 {
			return Dim{}, n.Errorf("dimension %d of %v is not divisible by blocksize %d", d.Size, xs, b)
		}
		return StaticDim(d.Size / b), nil
	}
	d2s := n.OpType == "DepthToSpace"
	c := xs.Dims[1]
	if c.IsStatic() {
		if d2s {
			if c.Size%(b*b) != 0 {
				return n.Errorf("channels %d of %v are not divisible by blocksize^2 = %d", c.Size, xs, b*b)
			}
			c = StaticDim(c.Size / (b * b))
		} else {
			c = StaticDim(c.Size * b * b)
		}
	}
	out.Dims[1] = c
	for i := 2; i < 4; i++ {
		if out.Dims[i], err = scale(xs.Dims[i], d2s); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// movementOps are the data-movement ops.
var movementOps = []OpSpec{
	{Name: "Reshape", Since: 5, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, ShapeMath: true, Infer: inferReshape},
	{Name: "Flatten", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferFlatten},
	{Name: "Transpose", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferTranspose},
	{Name: "Squeeze", Since: 13, MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, ShapeMath: true, Infer: inferSqueeze},
	{Name: "Unsqueeze", Since: 13, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, ShapeMath: true, Infer: inferUnsqueeze},
	{Name: "Concat", Since: 4, MinInputs: 1, MaxInputs: -1, ShapeMath: true, Infer: inferConcat},
	{Name: "Split", MinInputs: 1, MaxInputs: 2, HostInputs: []int{1}, Infer: inferSplit},
	{Name: "Slice", Since: 10, MinInputs: 3, MaxInputs: 5, HostInputs: []int{1, 2, 3, 4}, ShapeMath: true, Infer: inferSlice},
	{Name: "Expand", Since: 8, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, Infer: inferExpand},
	{Name: "Tile", Since: 6, MinInputs: 2, MaxInputs: 2, HostInputs: []int{1}, Infer: inferTile},
	{Name: "Pad", MinInputs: 2, MaxInputs: 4, HostInputs: []int{1, 2, 3}, Infer: inferPad},
	{Name: "Identity", Since: 1, MinInputs: 1, MaxInputs: 1, ShapeMath: true, Values: true, Infer: inferIdentity},
	{Name: "Dropout", MinInputs: 1, MaxInputs: 3, KeepOutputs: 1, Infer: inferDropout, Examples: []Example{
		// training_mode true at plan time, then known only when run: both
		// draw the mask from the node's seed (the random family's Philox).
		{Name: "training", Attrs: Attrs{"seed": int64(5)}, Outputs: 2,
			Inputs: []ExampleInput{{Shape: []int64{3, 40}}, {Floats: []float32{0.3}, Shape: []int64{}}, {Type: tensor.Bool, Ints: []int64{1}, Shape: []int64{}}}},
		{Name: "training_input", Attrs: Attrs{"seed": int64(2)}, Outputs: 2,
			Inputs: []ExampleInput{{Shape: []int64{2, 33}}, {Floats: []float32{0.6}, Shape: []int64{}}, {Type: tensor.Bool, Shape: []int64{}}}},
	}},
	{Name: "DepthToSpace", MinInputs: 1, MaxInputs: 1, Infer: inferSpaceDepth, Examples: []Example{
		{Name: "DCR", Attrs: Attrs{"blocksize": int64(2), "mode": "DCR"}, Inputs: []ExampleInput{{Shape: []int64{2, 8, 3, 4}}}},
		{Name: "CRD", Attrs: Attrs{"blocksize": int64(2), "mode": "CRD"}, Inputs: []ExampleInput{{Shape: []int64{1, 12, 2, 3}}}},
	}},
	{Name: "SpaceToDepth", Since: 1, MinInputs: 1, MaxInputs: 1, Infer: inferSpaceDepth, Examples: []Example{
		{Attrs: Attrs{"blocksize": int64(2)}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 4, 6}}}},
	}},
	{Name: "ReverseSequence", Since: 10, MinInputs: 2, MaxInputs: 2, Infer: inferReverseSequence, Examples: []Example{
		{Name: "time_first", Inputs: []ExampleInput{{Shape: []int64{4, 3, 2}}, {Shape: []int64{3}, Ints: []int64{4, 0, 2}}}},
		{Name: "batch_first", Attrs: Attrs{"batch_axis": int64(0), "time_axis": int64(1)},
			Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{2, 5}}, {Shape: []int64{2}, Ints: []int64{3, 9}}}},
	}},
	{Name: "Trilu", Since: 14, MinInputs: 1, MaxInputs: 2, Infer: inferTrilu, Examples: []Example{
		{Name: "upper_k0", Attrs: Attrs{"upper": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 4, 5}}, {Ints: []int64{0}}}},
		{Name: "upper_k1", Attrs: Attrs{"upper": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{3, 5, 4}}, {Ints: []int64{1}}}},
		{Name: "lower_k-1", Attrs: Attrs{"upper": int64(0)}, Inputs: []ExampleInput{{Shape: []int64{1, 6, 6}}, {Ints: []int64{-1}}}},
		{Name: "lower_k2", Attrs: Attrs{"upper": int64(0)}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 7}}, {Ints: []int64{2}}}},
		// k a runtime scalar (seeded in [-5, 5]), upper by default.
		{Name: "runtime_k_default_upper", Inputs: []ExampleInput{{Shape: []int64{4, 6}}, {Type: tensor.I64, Shape: []int64{}}}},
		{Name: "no_k", Attrs: Attrs{"upper": int64(0)}, Inputs: []ExampleInput{{Shape: []int64{5, 3}}}},
	}},
}

// ReverseSequenceAxes returns n's time and batch axes (0 and 1, in either
// order: time_axis and batch_axis).
func ReverseSequenceAxes(n *Node) (time, batch int, err error) {
	time, batch = int(n.Attrs.Int("time_axis", 0)), int(n.Attrs.Int("batch_axis", 1))
	if time < 0 || time > 1 || batch < 0 || batch > 1 || time == batch {
		return 0, 0, n.Errorf("time_axis %d and batch_axis %d must be 0 and 1", time, batch)
	}
	return time, batch, nil
}

// inferReverseSequence keeps the input's type and shape.
func inferReverseSequence(n *Node) error {
	_, batch, err := ReverseSequenceAxes(n)
	if err != nil {
		return err
	}
	x, lens := n.Inputs[0], n.Input(1)
	if !x.Valid() || !lens.Valid() {
		return n.Errorf("input and sequence_lens are required")
	}
	if lens.Type() != tensor.I64 {
		return n.Errorf("sequence_lens is %v, want i64", lens.Type())
	}
	s := x.Shape()
	if s.RankKnown && len(s.Dims) < 2 {
		return n.Errorf("input has rank %d, want at least 2", len(s.Dims))
	}
	if s.RankKnown && lens.Shape().RankKnown {
		if len(lens.Shape().Dims) != 1 {
			return n.Errorf("sequence_lens has shape %v, want [batch]", lens.Shape())
		}
		if _, ok := mergeDim(s.Dims[batch], lens.Shape().Dims[0]); !ok {
			return n.Errorf("sequence_lens has %v entries for batch %v", lens.Shape().Dims[0], s.Dims[batch])
		}
	}
	setOutput(n, 0, x.Type(), s.Clone())
	return nil
}
