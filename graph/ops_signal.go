package graph

// The spectral transforms take signals whose last axis holds one value
// (real) or two (real and imaginary) and return complex values as pairs
// (last axis of 2).

// complexLast checks that the last axis of input 0 is 1 or 2 and that the
// input has at least minRank axes; it returns the input's shape.
func complexLast(n *Node, minRank int) (PartialShape, error) {
	x, err := requiredInput(n, 0)
	if err != nil {
		return PartialShape{}, err
	}
	if !isFloat(x.Type()) {
		return PartialShape{}, n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	xs := x.Shape()
	if !xs.RankKnown {
		return xs, nil
	}
	if len(xs.Dims) < minRank {
		return PartialShape{}, n.Errorf("input has shape %v, want rank >= %d with a last axis of 1 (real) or 2 (complex)", xs, minRank)
	}
	if l := xs.Dims[len(xs.Dims)-1]; l.IsStatic() && l.Size != 1 && l.Size != 2 {
		return PartialShape{}, n.Errorf("input has shape %v, want a last axis of 1 (real) or 2 (complex)", xs)
	}
	return xs, nil
}

// scalarConst returns input i's one integer value when it is a constant.
func scalarConst(n *Node, i int) (int64, bool) {
	v, ok := n.ConstInts(i)
	if !ok || len(v) != 1 {
		return 0, false
	}
	return v[0], true
}

// DFTAxis returns the signal axis of a DFT node, counted from the front of
// a rank-r input: input 2 (default -2), which must be a constant, and must
// not be the last axis (the real/imaginary one).
func DFTAxis(n *Node, axis int64, r int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a >= int64(r)-1 {
		return 0, n.Errorf("axis %d is out of range for an input of rank %d (the last axis holds real and imaginary parts)", axis, r)
	}
	return int(a), nil
}

// inferDFT is DFT(input, dft_length?, axis?) (opset 20): the discrete
// Fourier transform of length dft_length (default: the axis; shorter
// signals are zero-padded, longer ones truncated) along axis, inverse
// (normalised by 1/length) when inverse=1; onesided=1 keeps the first
// length/2+1 frequencies. The output's last axis is 2.
func inferDFT(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	xs, err := complexLast(n, 2)
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		if in := n.Input(i); in.Valid() && !isIndexType(in.Type()) {
			return n.Errorf("input %d has element type %v, want i32 or i64", i, in.Type())
		}
	}
	if !xs.RankKnown {
		setOutput(n, 0, n.Inputs[0].Type(), DynamicRank)
		return nil
	}
	out := xs.Clone()
	out.Dims[len(out.Dims)-1] = StaticDim(2)
	axis := int64(-2)
	if present(n, 2) {
		a, ok := scalarConst(n, 2)
		if !ok {
			setOutput(n, 0, n.Inputs[0].Type(), dynamicShape(len(xs.Dims)))
			return nil
		}
		axis = a
	}
	ax, err := DFTAxis(n, axis, len(xs.Dims))
	if err != nil {
		return err
	}
	length := xs.Dims[ax]
	if present(n, 1) {
		length = DynamicDim("")
		if l, ok := scalarConst(n, 1); ok {
			if l < 1 {
				return n.Errorf("dft_length %d is not positive", l)
			}
			length = StaticDim(l)
		}
	}
	if n.Attrs.Int("onesided", 0) != 0 && length.IsStatic() {
		length = StaticDim(length.Size/2 + 1)
	} else if n.Attrs.Int("onesided", 0) != 0 {
		length = DynamicDim("")
	}
	out.Dims[ax] = length
	setOutput(n, 0, n.Inputs[0].Type(), out)
	return nil
}

// inferSTFT is STFT(signal [batch, length, 1|2], frame_step, window?,
// frame_length?): the DFT of frame_length samples of every window-weighted
// frame, [batch, frames, bins, 2], frames = 1 + (length-frame_length) /
// frame_step, bins = frame_length/2+1 when onesided (the default), else
// frame_length.
func inferSTFT(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	xs, err := complexLast(n, 3)
	if err != nil {
		return err
	}
	if xs.RankKnown && len(xs.Dims) != 3 {
		return n.Errorf("signal has shape %v, want [batch, length, 1 or 2]", xs)
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	out := PartialShape{Dims: []Dim{DynamicDim(""), DynamicDim(""), DynamicDim(""), StaticDim(2)}, RankKnown: true}
	if xs.RankKnown {
		out.Dims[0] = xs.Dims[0]
	}
	frame := DynamicDim("")
	switch {
	case present(n, 3):
		if l, ok := scalarConst(n, 3); ok {
			frame = StaticDim(l)
		}
	case present(n, 2):
		if ws := n.Inputs[2].Shape(); ws.RankKnown && len(ws.Dims) == 1 {
			frame = ws.Dims[0]
		}
	case xs.RankKnown:
		frame = xs.Dims[1]
	}
	if frame.IsStatic() {
		if frame.Size < 1 {
			return n.Errorf("frame_length %d is not positive", frame.Size)
		}
		out.Dims[2] = frame
		if n.Attrs.Int("onesided", 1) != 0 {
			out.Dims[2] = StaticDim(frame.Size/2 + 1)
		}
	}
	step, okStep := scalarConst(n, 1)
	if okStep && step < 1 {
		return n.Errorf("frame_step %d is not positive", step)
	}
	if okStep && frame.IsStatic() && xs.RankKnown && xs.Dims[1].IsStatic() {
		if xs.Dims[1].Size < frame.Size {
			return n.Errorf("signal of %d samples is shorter than a frame of %d", xs.Dims[1].Size, frame.Size)
		}
		out.Dims[1] = StaticDim(1 + (xs.Dims[1].Size-frame.Size)/step)
	}
	setOutput(n, 0, n.Inputs[0].Type(), out)
	return nil
}

// signalOps are the spectral transforms.
var signalOps = []OpSpec{
	{Name: "DFT", Since: 20, MinInputs: 1, MaxInputs: 3, HostInputs: []int{1, 2}, Infer: inferDFT, Examples: []Example{
		{Name: "real_pow2", Inputs: []ExampleInput{{Shape: []int64{2, 32, 1}}, {Omit: true}, {Ints: []int64{1}, Shape: []int64{}}}},
		{Name: "complex_inverse_mixed", Attrs: Attrs{"inverse": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{3, 12, 5, 2}}}},
		{Name: "onesided_padded", Attrs: Attrs{"onesided": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 10, 3, 1}},
			{Ints: []int64{16}, Shape: []int64{}}, {Ints: []int64{1}, Shape: []int64{}}}},
		{Name: "prime_truncated", Inputs: []ExampleInput{{Shape: []int64{4, 19, 2}}, {Ints: []int64{17}, Shape: []int64{}}}},
		{Name: "bluestein_inverse", Attrs: Attrs{"inverse": int64(1)}, Inputs: []ExampleInput{{Shape: []int64{2, 134, 1}}}},
		{Name: "radices_7_11", Inputs: []ExampleInput{{Shape: []int64{1, 2, 77, 2}}, {Omit: true}, {Ints: []int64{-2}, Shape: []int64{}}}},
	}},
	{Name: "STFT", Since: 17, MinInputs: 2, MaxInputs: 4, HostInputs: []int{1, 3}, Infer: inferSTFT, Examples: []Example{
		{Name: "window", Inputs: []ExampleInput{{Shape: []int64{2, 80, 1}}, {Ints: []int64{8}, Shape: []int64{}}, {Shape: []int64{16}},
			{Ints: []int64{16}, Shape: []int64{}}}},
		{Name: "complex_twosided", Attrs: Attrs{"onesided": int64(0)}, Inputs: []ExampleInput{{Shape: []int64{1, 45, 2}},
			{Ints: []int64{5}, Shape: []int64{}}, {Omit: true}, {Ints: []int64{12}, Shape: []int64{}}}},
	}},
}
