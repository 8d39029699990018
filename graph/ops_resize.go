package graph

import (
	"fmt"
	"math"
)

// ResizeSampling is the 1-D resampling of one axis by ONNX Resize: output
// coordinate j reads input indices Index[j*Taps+t] with weights
// Weight[j*Taps+t]. Indices are clamped to the input axis. Outside is nil
// unless the coordinate transformation mode is tf_crop_and_resize; then
// Outside[j] marks the outputs that lie outside the crop and take the
// extrapolation value instead.
type ResizeSampling struct {
	Taps    int
	Index   []int64
	Weight  []float32
	Outside []bool
}

// ResizeAxis computes the sampling of one axis of Resize node n from in to
// out elements at the given scale, with the node's mode,
// coordinate_transformation_mode, nearest_mode, cubic_coeff_a and
// exclude_outside attributes (ONNX reference semantics, opset 18/19).
// roiStart and roiEnd are the axis's crop, read only for
// tf_crop_and_resize. Every device computes its Resize taps here, so that
// they agree to the bit.
func ResizeAxis(n *Node, in, out int64, scale, roiStart, roiEnd float64) (*ResizeSampling, error) {
	mode := n.Attrs.String("mode", "nearest")
	ctm := n.Attrs.String("coordinate_transformation_mode", "half_pixel")
	nearest := n.Attrs.String("nearest_mode", "round_prefer_floor")
	cubicA := float64(n.Attrs.Float("cubic_coeff_a", -0.75))
	exclude := n.Attrs.Int("exclude_outside", 0) != 0
	s := &ResizeSampling{}
	switch mode {
	case "nearest":
		s.Taps = 1
	case "linear":
		s.Taps = 2
	case "cubic":
		s.Taps = 4
	default:
		return nil, n.Errorf("mode %q: want nearest, linear or cubic", mode)
	}
	s.Index = make([]int64, int(out)*s.Taps)
	s.Weight = make([]float32, int(out)*s.Taps)
	if ctm == "tf_crop_and_resize" {
		s.Outside = make([]bool, out)
	}
	clamp := func(i int64) int64 { return min(max(i, 0), in-1) }
	for j := int64(0); j < out; j++ {
		xo, outside, err := ResizeCoordinate(ctm, float64(j), in, out, scale, roiStart, roiEnd)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		if outside {
			s.Outside[j] = true
		}
		base := int(j) * s.Taps
		switch mode {
		case "nearest":
			i, err := ResizeNearest(nearest, xo)
			if err != nil {
				return nil, n.Errorf("%w", err)
			}
			s.Index[base], s.Weight[base] = clamp(int64(i)), 1
		case "linear":
			linearTaps(s, base, resizeCoordinateF32(ctm, float32(j), in, out, float32(scale), float32(roiStart), float32(roiEnd)), in)
		case "cubic":
			x0 := math.Floor(xo)
			c := ResizeCubicCoeffs(xo-x0, cubicA)
			sum := 0.0
			for k := range c {
				if i := int64(x0) - 1 + int64(k); exclude && (i < 0 || i >= in) {
					c[k] = 0
				}
				sum += c[k]
			}
			for k := range c {
				if exclude && sum != 0 {
					c[k] /= sum
				}
				s.Index[base+k], s.Weight[base+k] = clamp(int64(x0)-1+int64(k)), float32(c[k])
			}
		}
	}
	return s, nil
}

// linearTaps sets the two linear taps of output coordinate base/2 at
// source coordinate xo of an axis of in elements, in ONNX Runtime's
// arithmetic (its bilinear and trilinear kernels), so that a model whose
// quantization amplifies a last-bit difference (IS-Net's dynamic
// quantization) gives ONNX Runtime's result: the coordinate in f32,
// clamped to [0, in-1], the taps at its floor x1 and at x2 = min(x1+1,
// in-1) with the weights |x - x2| and |x - x1| in f32, or 1/2 and 1/2 when
// x1 = x2 (the last index).
func linearTaps(s *ResizeSampling, base int, xo float32, in int64) {
	xf := min(max(xo, 0), float32(in-1))
	x1 := min(int64(xf), in-1)
	x2 := min(x1+1, in-1)
	w1, w2 := float32(math.Abs(float64(xf-float32(x2)))), float32(math.Abs(float64(xf-float32(x1))))
	if x1 == x2 {
		w1, w2 = 0.5, 0.5
	}
	s.Index[base], s.Weight[base] = max(x1, 0), w1
	s.Index[base+1], s.Weight[base+1] = max(x2, 0), w2
}

// resizeCoordinateF32 is ResizeCoordinate in f32 arithmetic, each
// operation rounded to f32 as ONNX Runtime computes source coordinates
// (the caller has checked the mode); the crop is not reported.
func resizeCoordinateF32(ctm string, x float32, in, out int64, scale, roiStart, roiEnd float32) float32 {
	fin, fout := float32(in), float32(out)
	switch ctm {
	case "half_pixel_symmetric":
		adj := fout / float32(scale*fin)
		return float32(fin/2*float32(1-adj)) + float32((x+0.5)/scale) - 0.5
	case "pytorch_half_pixel":
		if out <= 1 {
			return 0
		}
		return float32((x+0.5)/scale) - 0.5
	case "align_corners":
		if flen := float32(fin * scale); flen != 1 && out > 1 {
			return float32(x*(fin-1)) / (flen - 1)
		}
		return 0
	case "asymmetric":
		return x / scale
	case "tf_half_pixel_for_nn":
		return (x + 0.5) / scale
	case "tf_crop_and_resize":
		if out > 1 {
			return float32(roiStart*(fin-1)) + float32(float32(x*(roiEnd-roiStart))*(fin-1))/(fout-1)
		}
		return float32(0.5*(roiStart+roiEnd)) * (fin - 1)
	}
	return float32((x+0.5)/scale) - 0.5 // half_pixel
}

// ResizeCoordinate maps output coordinate x of an axis resized from in to
// out elements at the given scale to its source coordinate in the input,
// for the ONNX coordinate_transformation_mode ctm. roiStart and roiEnd are
// the axis's normalised crop for tf_crop_and_resize, which alone can report
// outside: the source coordinate lies outside [0, in-1].
func ResizeCoordinate(ctm string, x float64, in, out int64, scale, roiStart, roiEnd float64) (src float64, outside bool, err error) {
	fin, fout := float64(in), float64(out)
	switch ctm {
	case "half_pixel":
		src = (x+0.5)/scale - 0.5
	case "half_pixel_symmetric":
		adj := fout / (scale * fin)
		src = fin/2*(1-adj) + (x+0.5)/scale - 0.5
	case "pytorch_half_pixel":
		if out > 1 {
			src = (x+0.5)/scale - 0.5
		}
	case "align_corners":
		// The resized length is in*scale, unrounded, as in the ONNX
		// reference: with scales it can differ from the output length.
		if flen := fin * scale; flen != 1 && out > 1 {
			src = x * (fin - 1) / (flen - 1)
		}
	case "asymmetric":
		src = x / scale
	case "tf_half_pixel_for_nn":
		src = (x + 0.5) / scale
	case "tf_crop_and_resize":
		if out > 1 {
			src = roiStart*(fin-1) + x*(roiEnd-roiStart)*(fin-1)/(fout-1)
		} else {
			src = 0.5 * (roiStart + roiEnd) * (fin - 1)
		}
		outside = src < 0 || src > fin-1
	default:
		return 0, false, fmt.Errorf("coordinate_transformation_mode %q: want half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize", ctm)
	}
	return src, outside, nil
}

// ResizeNearest rounds source coordinate x to an input index (unclamped)
// by the ONNX nearest_mode mode.
func ResizeNearest(mode string, x float64) (float64, error) {
	half := x == math.Floor(x)+0.5
	switch mode {
	case "round_prefer_floor":
		if half {
			return math.Floor(x), nil
		}
		return math.Round(x), nil
	case "round_prefer_ceil":
		if half {
			return math.Ceil(x), nil
		}
		return math.Round(x), nil
	case "floor":
		return math.Floor(x), nil
	case "ceil":
		return math.Ceil(x), nil
	}
	return 0, fmt.Errorf("nearest_mode %q: want round_prefer_floor, round_prefer_ceil, floor or ceil", mode)
}

// ResizeCubicCoeffs returns the weights of the four cubic taps at input
// indices floor(x)-1 .. floor(x)+2 for fractional offset t = x-floor(x),
// with the ONNX cubic_coeff_a a (Keys' kernel).
func ResizeCubicCoeffs(t, a float64) [4]float64 {
	return [4]float64{
		((a*(t+1)-5*a)*(t+1)+8*a)*(t+1) - 4*a,
		((a+2)*t-(a+3))*t*t + 1,
		((a+2)*(1-t)-(a+3))*(1-t)*(1-t) + 1,
		((a*(2-t)-5*a)*(2-t)+8*a)*(2-t) - 4*a,
	}
}

func inferResize(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	switch m := n.Attrs.String("mode", "nearest"); m {
	case "nearest", "linear", "cubic":
	default:
		return n.Errorf("mode %q is not one of nearest, linear, cubic", m)
	}
	switch c := n.Attrs.String("coordinate_transformation_mode", "half_pixel"); c {
	case "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn":
	default:
		return n.Errorf("coordinate_transformation_mode %q is not one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize, tf_half_pixel_for_nn", c)
	}
	switch m := n.Attrs.String("nearest_mode", "round_prefer_floor"); m {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return n.Errorf("nearest_mode %q is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", m)
	}
	switch p := n.Attrs.String("keep_aspect_ratio_policy", "stretch"); p {
	case "stretch", "not_larger", "not_smaller":
	default:
		return n.Errorf("keep_aspect_ratio_policy %q is not one of stretch, not_larger, not_smaller", p)
	}
	xs := x.Shape()
	// Old exporters pass an empty tensor for an unused scales or sizes.
	given := func(i int) bool {
		in := n.Input(i)
		if !in.Valid() {
			return false
		}
		s := in.Shape()
		return !(s.RankKnown && len(s.Dims) == 1 && s.Dims[0].Size == 0)
	}
	hasScales, hasSizes := given(2), given(3)
	if hasScales && hasSizes {
		return n.Errorf("only one of scales and sizes may be given")
	}
	if !hasScales && !hasSizes {
		return n.Errorf("one of scales and sizes is required")
	}
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	r := len(xs.Dims)
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if a := n.Attrs.Ints("axes", nil); a != nil {
		if axes, err = normalizeAxes(n, a, r); err != nil {
			return err
		}
	}
	out := xs.Clone()
	setDyn := func() {
		for _, a := range axes {
			out.Dims[a] = DynamicDim("")
		}
	}
	if hasScales {
		scales, ok := constFloats(n, 2)
		if !ok {
			setDyn()
			setOutput(n, 0, x.Type(), out)
			return nil
		}
		if len(scales) != len(axes) {
			return n.Errorf("scales has %d entries for %d axes", len(scales), len(axes))
		}
		for i, a := range axes {
			if scales[i] <= 0 {
				return n.Errorf("scales %v has a non-positive entry", scales)
			}
			if d := xs.Dims[a]; d.IsStatic() {
				out.Dims[a] = StaticDim(int64(math.Floor(float64(d.Size) * scales[i])))
			} else if scales[i] != 1 {
				out.Dims[a] = DynamicDim("")
			}
		}
		setOutput(n, 0, x.Type(), out)
		return nil
	}
	sizes, ok := n.ConstInts(3)
	if !ok {
		setDyn()
		setOutput(n, 0, x.Type(), out)
		return nil
	}
	if len(sizes) != len(axes) {
		return n.Errorf("sizes has %d entries for %d axes", len(sizes), len(axes))
	}
	policy := n.Attrs.String("keep_aspect_ratio_policy", "stretch")
	if policy == "stretch" {
		for i, a := range axes {
			out.Dims[a] = StaticDim(sizes[i])
		}
		setOutput(n, 0, x.Type(), out)
		return nil
	}
	scale := 0.0
	for i, a := range axes {
		d := xs.Dims[a]
		if !d.IsStatic() {
			setDyn()
			setOutput(n, 0, x.Type(), out)
			return nil
		}
		s := float64(sizes[i]) / float64(d.Size)
		if i == 0 || (policy == "not_larger" && s < scale) || (policy == "not_smaller" && s > scale) {
			scale = s
		}
	}
	for _, a := range axes {
		out.Dims[a] = StaticDim(int64(math.Round(scale * float64(xs.Dims[a].Size))))
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// inferGridSample is GridSample(X [N,C,D1..Dr], grid [N,O1..Or,r]) (opset
// 20): [N,C,O1..Or], X sampled at the grid's normalised coordinates (in
// [-1,1], x first) by mode linear, nearest or cubic (cubic: r = 2 only),
// outside X by padding_mode zeros, border or reflection; align_corners
// maps -1 and 1 to the centres of the corner elements instead of their
// outer edges.
func inferGridSample(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	grid, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) || !isFloat(grid.Type()) {
		return n.Errorf("X and grid have element types %v and %v, want floating-point types", x.Type(), grid.Type())
	}
	mode := n.Attrs.String("mode", "linear")
	switch mode {
	case "linear", "nearest", "cubic":
	default:
		return n.Errorf("mode %q is not linear, nearest or cubic", mode)
	}
	switch p := n.Attrs.String("padding_mode", "zeros"); p {
	case "zeros", "border", "reflection":
	default:
		return n.Errorf("padding_mode %q is not zeros, border or reflection", p)
	}
	xs, gs := x.Shape(), grid.Shape()
	if !xs.RankKnown || !gs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	r := len(xs.Dims) - 2
	if r < 1 || len(gs.Dims) != r+2 || (gs.Dims[r+1].IsStatic() && gs.Dims[r+1].Size != int64(r)) {
		return n.Errorf("X %v and grid %v: want X [N,C,D1..Dr] and grid [N,O1..Or,r]", xs, gs)
	}
	if mode == "cubic" && r != 2 {
		return n.Errorf("mode cubic samples 2-D images only, X is %v", xs)
	}
	nb, ok := mergeDim(xs.Dims[0], gs.Dims[0])
	if !ok {
		return n.Errorf("X %v and grid %v disagree on the batch", xs, gs)
	}
	out := PartialShape{RankKnown: true, Dims: append([]Dim{nb, xs.Dims[1]}, gs.Dims[1:r+1]...)}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// resizeOps are Resize and GridSample.
var resizeOps = []OpSpec{
	{Name: "Resize", MinInputs: 1, MaxInputs: 4, HostInputs: []int{1, 2, 3}, Infer: inferResize},
	{Name: "GridSample", Since: 20, MinInputs: 2, MaxInputs: 2, Infer: inferGridSample, Examples: []Example{
		{Name: "linear_zeros", Inputs: []ExampleInput{{Shape: []int64{2, 3, 5, 6}}, {Shape: []int64{2, 4, 7, 2}}}},
		{Name: "nearest_border_aligned", Attrs: Attrs{"mode": "nearest", "padding_mode": "border", "align_corners": int64(1)},
			Inputs: []ExampleInput{{Shape: []int64{1, 2, 6, 5}}, {Shape: []int64{1, 5, 5, 2}}}},
		{Name: "cubic_reflection", Attrs: Attrs{"mode": "cubic", "padding_mode": "reflection"},
			Inputs: []ExampleInput{{Shape: []int64{1, 3, 7, 8}}, {Shape: []int64{1, 6, 4, 2}}}},
		{Name: "cubic_zeros_aligned", Attrs: Attrs{"mode": "cubic", "align_corners": int64(1)},
			Inputs: []ExampleInput{{Shape: []int64{2, 2, 4, 5}}, {Shape: []int64{2, 3, 3, 2}}}},
		{Name: "linear_reflection_aligned_3d", Attrs: Attrs{"padding_mode": "reflection", "align_corners": int64(1)},
			Inputs: []ExampleInput{{Shape: []int64{1, 2, 3, 4, 5}}, {Shape: []int64{1, 2, 3, 4, 3}}}},
		{Name: "nearest_zeros_3d", Attrs: Attrs{"mode": "nearest"},
			Inputs: []ExampleInput{{Shape: []int64{2, 1, 4, 3, 5}}, {Shape: []int64{2, 3, 2, 2, 3}}}},
	}},
}
