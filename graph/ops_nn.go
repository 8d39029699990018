package graph

import (
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// Inference for the neural-network ops: convolutions, pooling,
// normalisations, MatMul, Gemm, Resize and the reductions.

// AutoPads returns the begin and end padding (pads[0:k] begin, pads[k:2k]
// end, ONNX order) that auto_pad SAME_UPPER or SAME_LOWER gives for the
// spatial sizes in, so output size is ceil(in/stride). For NOTSET it returns
// explicit (or zeros), for VALID zeros. Devices use it to resolve auto_pad
// the way inference did.
func AutoPads(autoPad string, in, kernel, strides, dilations, explicit []int64) []int64 {
	k := len(kernel)
	pads := make([]int64, 2*k)
	switch autoPad {
	case "SAME_UPPER", "SAME_LOWER":
		for i := range k {
			s, d := at(strides, i, 1), at(dilations, i, 1)
			out := ceilDiv(in[i], s)
			total := max((out-1)*s+(kernel[i]-1)*d+1-in[i], 0)
			small, big := total/2, total-total/2
			if autoPad == "SAME_UPPER" {
				pads[i], pads[i+k] = small, big
			} else {
				pads[i], pads[i+k] = big, small
			}
		}
	case "VALID":
	default:
		copy(pads, explicit)
	}
	return pads
}

// at returns v[i] or def when v is shorter.
func at(v []int64, i int, def int64) int64 {
	if i < len(v) {
		return v[i]
	}
	return def
}

// windowParams reads and checks kernel_shape, strides, dilations, pads and
// auto_pad for k spatial axes.
type windowParams struct {
	kernel, strides, dilations, pads []int64
	autoPad                          string
}

func readWindow(n *Node, k int, kernel []int64) (windowParams, error) {
	w := windowParams{kernel: kernel, autoPad: n.Attrs.String("auto_pad", "NOTSET")}
	switch w.autoPad {
	case "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID":
	default:
		return w, n.Errorf("auto_pad %q is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", w.autoPad)
	}
	if len(w.kernel) != k {
		return w, n.Errorf("kernel_shape %v has %d entries for %d spatial axes", w.kernel, len(w.kernel), k)
	}
	list := func(name string, want int, def int64) ([]int64, error) {
		v := n.Attrs.Ints(name, nil)
		if v == nil {
			v = make([]int64, want)
			for i := range v {
				v[i] = def
			}
			return v, nil
		}
		if len(v) != want {
			return nil, n.Errorf("%s %v has %d entries, want %d", name, v, len(v), want)
		}
		return v, nil
	}
	var err error
	if w.strides, err = list("strides", k, 1); err != nil {
		return w, err
	}
	if w.dilations, err = list("dilations", k, 1); err != nil {
		return w, err
	}
	if w.pads, err = list("pads", 2*k, 0); err != nil {
		return w, err
	}
	for i := range k {
		if w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1 {
			return w, n.Errorf("kernel_shape %v, strides %v and dilations %v must be positive", w.kernel, w.strides, w.dilations)
		}
	}
	for _, p := range w.pads {
		if p < 0 {
			return w, n.Errorf("pads %v has a negative entry", w.pads)
		}
	}
	return w, nil
}

// outDims computes the spatial output sizes of a convolution or pooling
// window over in (dynamic dims stay dynamic).
func (w windowParams) outDims(n *Node, in []Dim, ceilMode bool) ([]Dim, error) {
	k := len(w.kernel)
	out := make([]Dim, k)
	for i := range k {
		d := in[i]
		if !d.IsStatic() {
			out[i] = DynamicDim("")
			continue
		}
		ext := (w.kernel[i]-1)*w.dilations[i] + 1
		s := w.strides[i]
		var o int64
		switch w.autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			o = ceilDiv(d.Size, s)
		case "VALID":
			o = floorDiv(d.Size-ext, s) + 1
		default:
			span := d.Size + w.pads[i] + w.pads[i+k] - ext
			if ceilMode {
				o = ceilDiv(span, s) + 1
				// The last window must start inside the input or the
				// begin padding (as PyTorch and onnxruntime do).
				if (o-1)*s >= d.Size+w.pads[i] {
					o--
				}
			} else {
				o = floorDiv(span, s) + 1
			}
		}
		if o < 1 {
			return nil, n.Errorf("spatial axis %d of size %d is too small for kernel %d (dilation %d, pads %v)", i, d.Size, w.kernel[i], w.dilations[i], w.pads)
		}
		out[i] = StaticDim(o)
	}
	return out, nil
}

func inferConv(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	wIn, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	xs, ws := x.Shape(), wIn.Shape()
	group := n.Attrs.Int("group", 1)
	if group < 1 {
		return n.Errorf("group %d must be positive", group)
	}
	rank := xs.Rank()
	if rank < 0 {
		rank = ws.Rank()
	}
	if rank < 0 {
		setOutput(n, 0, t, DynamicRank)
		return nil
	}
	if rank < 3 {
		return n.Errorf("input has rank %d, want >= 3 (N, C, spatial...)", rank)
	}
	if xs.RankKnown && ws.RankKnown && len(ws.Dims) != len(xs.Dims) {
		return n.Errorf("input %v and weights %v differ in rank", xs, ws)
	}
	if !xs.RankKnown {
		xs = dynamicShape(rank)
	}
	if !ws.RankKnown {
		ws = dynamicShape(rank)
	}
	k := rank - 2
	kernel := n.Attrs.Ints("kernel_shape", nil)
	if kernel == nil {
		kernel = make([]int64, k)
		for i := range k {
			d := ws.Dims[2+i]
			if !d.IsStatic() {
				out := dynamicShape(rank)
				out.Dims[0] = xs.Dims[0]
				out.Dims[1] = ws.Dims[0]
				setOutput(n, 0, t, out)
				return nil
			}
			kernel[i] = d.Size
		}
	}
	w, err := readWindow(n, k, kernel)
	if err != nil {
		return err
	}
	c, wc := xs.Dims[1], ws.Dims[1]
	if c.IsStatic() && wc.IsStatic() && c.Size != wc.Size*group {
		return n.Errorf("input has %d channels but weights %v with group %d expect %d", c.Size, ws, group, wc.Size*group)
	}
	m := ws.Dims[0]
	if m.IsStatic() && m.Size%group != 0 {
		return n.Errorf("weights %v: %d output channels are not divisible by group %d", ws, m.Size, group)
	}
	if b := n.Input(2); b.Valid() {
		if bs := b.Shape(); bs.RankKnown {
			if len(bs.Dims) != 1 {
				return n.Errorf("bias has shape %v, want [%v]", bs, m)
			}
			if _, ok := mergeDim(bs.Dims[0], m); !ok {
				return n.Errorf("bias has shape %v, want [%v]", bs, m)
			}
		}
	}
	for i, kd := range kernel {
		if d := ws.Dims[2+i]; d.IsStatic() && d.Size != kd {
			return n.Errorf("kernel_shape %v does not match weights %v", kernel, ws)
		}
	}
	sp, err := w.outDims(n, xs.Dims[2:], false)
	if err != nil {
		return err
	}
	out := PartialShape{Dims: append([]Dim{xs.Dims[0], m}, sp...), RankKnown: true}
	setOutput(n, 0, t, out)
	return nil
}

func inferConvTranspose(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	wIn, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	xs, ws := x.Shape(), wIn.Shape()
	group := n.Attrs.Int("group", 1)
	if group < 1 {
		return n.Errorf("group %d must be positive", group)
	}
	rank := xs.Rank()
	if rank < 0 {
		rank = ws.Rank()
	}
	if rank < 0 {
		setOutput(n, 0, t, DynamicRank)
		return nil
	}
	if rank < 3 {
		return n.Errorf("input has rank %d, want >= 3 (N, C, spatial...)", rank)
	}
	if xs.RankKnown && ws.RankKnown && len(ws.Dims) != len(xs.Dims) {
		return n.Errorf("input %v and weights %v differ in rank", xs, ws)
	}
	if !xs.RankKnown {
		xs = dynamicShape(rank)
	}
	if !ws.RankKnown {
		ws = dynamicShape(rank)
	}
	k := rank - 2
	if c, wc := xs.Dims[1], ws.Dims[0]; c.IsStatic() && wc.IsStatic() && c.Size != wc.Size {
		return n.Errorf("input has %d channels but weights %v expect %d", c.Size, ws, wc.Size)
	}
	m := DynamicDim("")
	if d := ws.Dims[1]; d.IsStatic() {
		m = StaticDim(d.Size * group)
	}
	out := PartialShape{Dims: append([]Dim{xs.Dims[0], m}, make([]Dim, k)...), RankKnown: true}
	if os := n.Attrs.Ints("output_shape", nil); os != nil {
		if len(os) != k && len(os) != rank {
			return n.Errorf("output_shape %v has %d entries, want %d", os, len(os), k)
		}
		os = os[len(os)-k:]
		for i, v := range os {
			out.Dims[2+i] = StaticDim(v)
		}
		setOutput(n, 0, t, out)
		return nil
	}
	kernel := n.Attrs.Ints("kernel_shape", nil)
	if kernel == nil {
		kernel = make([]int64, k)
		for i := range k {
			d := ws.Dims[2+i]
			if !d.IsStatic() {
				for j := range k {
					out.Dims[2+j] = DynamicDim("")
				}
				setOutput(n, 0, t, out)
				return nil
			}
			kernel[i] = d.Size
		}
	}
	w, err := readWindow(n, k, kernel)
	if err != nil {
		return err
	}
	op := n.Attrs.Ints("output_padding", nil)
	if op != nil && len(op) != k {
		return n.Errorf("output_padding %v has %d entries, want %d", op, len(op), k)
	}
	for i := range k {
		d := xs.Dims[2+i]
		if !d.IsStatic() {
			out.Dims[2+i] = DynamicDim("")
			continue
		}
		s := w.strides[i]
		var o int64
		switch w.autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			o = d.Size * s
		default:
			ext := (kernel[i]-1)*w.dilations[i] + 1
			pb, pe := w.pads[i], w.pads[i+k]
			if w.autoPad == "VALID" {
				pb, pe = 0, 0
			}
			o = s*(d.Size-1) + at(op, i, 0) + ext - pb - pe
		}
		if o < 1 {
			return n.Errorf("spatial axis %d of size %d gives output size %d", i, d.Size, o)
		}
		out.Dims[2+i] = StaticDim(o)
	}
	setOutput(n, 0, t, out)
	return nil
}

// inferPool is MaxPool and AveragePool.
func inferPool(n *Node) error {
	maxOuts := 1
	if n.OpType == "MaxPool" {
		maxOuts = 2
	}
	if err := checkOutputs(n, 1, maxOuts); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	kernel := n.Attrs.Ints("kernel_shape", nil)
	if kernel == nil {
		return n.Errorf("attribute kernel_shape is required")
	}
	xs := x.Shape()
	rank := len(kernel) + 2
	if xs.RankKnown && len(xs.Dims) != rank {
		return n.Errorf("input %v has rank %d but kernel_shape %v needs rank %d", xs, len(xs.Dims), kernel, rank)
	}
	if !xs.RankKnown {
		xs = dynamicShape(rank)
	}
	w, err := readWindow(n, len(kernel), kernel)
	if err != nil {
		return err
	}
	sp, err := w.outDims(n, xs.Dims[2:], n.Attrs.Int("ceil_mode", 0) != 0)
	if err != nil {
		return err
	}
	out := PartialShape{Dims: append([]Dim{xs.Dims[0], xs.Dims[1]}, sp...), RankKnown: true}
	setOutput(n, 0, x.Type(), out)
	if len(n.Outputs) == 2 {
		setOutput(n, 1, tensor.I64, out.Clone())
	}
	return nil
}

func inferGlobalPool(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	if len(xs.Dims) < 3 {
		return n.Errorf("input has shape %v, want rank >= 3 (N, C, spatial...)", xs)
	}
	out := xs.Clone()
	for i := 2; i < len(out.Dims); i++ {
		out.Dims[i] = StaticDim(1)
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// checkChannelVec checks that inputs idx are 1-D of the channel count c.
func checkChannelVec(n *Node, c Dim, idx ...int) error {
	for _, i := range idx {
		in := n.Input(i)
		if !in.Valid() {
			continue
		}
		s := in.Shape()
		if !s.RankKnown {
			continue
		}
		if len(s.Dims) != 1 {
			return n.Errorf("input %d has shape %v, want [%v]", i, s, c)
		}
		if _, ok := mergeDim(s.Dims[0], c); !ok {
			return n.Errorf("input %d has shape %v, want [%v] (the input's channels)", i, s, c)
		}
	}
	return nil
}

func inferBatchNorm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 5 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	x := n.Inputs[0]
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	xs := x.Shape()
	if xs.RankKnown {
		if len(xs.Dims) < 2 {
			return n.Errorf("input has shape %v, want rank >= 2 (N, C, ...)", xs)
		}
		if err := checkChannelVec(n, xs.Dims[1], 1, 2, 3, 4); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), xs.Clone())
	return nil
}

func inferInstanceNorm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 3 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	x := n.Inputs[0]
	xs := x.Shape()
	if xs.RankKnown {
		if len(xs.Dims) < 3 {
			return n.Errorf("input has shape %v, want rank >= 3 (N, C, spatial...)", xs)
		}
		if err := checkChannelVec(n, xs.Dims[1], 1, 2); err != nil {
			return err
		}
	}
	setOutput(n, 0, x.Type(), xs.Clone())
	return nil
}

func inferLayerNorm(n *Node) error {
	if err := checkOutputs(n, 1, 3); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	if _, err := sameTypes(n, 0, 1, 2); err != nil {
		return err
	}
	xs := x.Shape()
	setOutput(n, 0, x.Type(), xs.Clone())
	stash := tensor.F32
	if n.Attrs.Has("stash_type") {
		stash = tensor.ElementType(n.Attrs.Int("stash_type", int64(tensor.F32)))
		if !stash.IsFloat() {
			return n.Errorf("stash_type %v is not a floating-point type", stash)
		}
	}
	stat := DynamicRank
	if xs.RankKnown {
		axis, err := NormalizeAxis(n, n.Attrs.Int("axis", -1), len(xs.Dims))
		if err != nil {
			return err
		}
		for i := 1; i <= 2; i++ {
			if in := n.Input(i); in.Valid() {
				if err := unidirectional(n, in.Shape(), PartialShape{Dims: xs.Dims[axis:], RankKnown: true}, "scale/bias"); err != nil {
					return err
				}
			}
		}
		stat = xs.Clone()
		for i := axis; i < len(stat.Dims); i++ {
			stat.Dims[i] = StaticDim(1)
		}
	}
	for i := 1; i < len(n.Outputs); i++ {
		setOutput(n, i, stash, stat.Clone())
	}
	return nil
}

func inferMatMul(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	a, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	b, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1)
	if err != nil {
		return err
	}
	as, bs := a.Shape(), b.Shape()
	if !as.RankKnown || !bs.RankKnown {
		setOutput(n, 0, t, DynamicRank)
		return nil
	}
	if len(as.Dims) == 0 || len(bs.Dims) == 0 {
		return n.Errorf("operands %v and %v: MatMul needs rank >= 1", as, bs)
	}
	ad, bd := as.Dims, bs.Dims
	aVec, bVec := len(ad) == 1, len(bd) == 1
	if aVec {
		ad = []Dim{StaticDim(1), ad[0]}
	}
	if bVec {
		bd = []Dim{bd[0], StaticDim(1)}
	}
	k1, k2 := ad[len(ad)-1], bd[len(bd)-2]
	if _, ok := mergeDim(k1, k2); !ok {
		return n.Errorf("operands %v and %v: inner dimensions %v and %v differ", as, bs, k1, k2)
	}
	batch, err := BroadcastShapes(PartialShape{Dims: ad[:len(ad)-2], RankKnown: true}, PartialShape{Dims: bd[:len(bd)-2], RankKnown: true})
	if err != nil {
		return n.Errorf("batch dimensions of %v and %v: %w", as, bs, err)
	}
	out := batch.Dims
	if !aVec {
		out = append(out, ad[len(ad)-2])
	}
	if !bVec {
		out = append(out, bd[len(bd)-1])
	}
	if out == nil {
		out = []Dim{}
	}
	setOutput(n, 0, t, PartialShape{Dims: out, RankKnown: true})
	return nil
}

func inferGemm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	a, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	b, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	as, bs := a.Shape(), b.Shape()
	for i, s := range []PartialShape{as, bs} {
		if s.RankKnown && len(s.Dims) != 2 {
			return n.Errorf("input %d has shape %v, want rank 2", i, s)
		}
	}
	if !as.RankKnown {
		as = dynamicShape(2)
	}
	if !bs.RankKnown {
		bs = dynamicShape(2)
	}
	mDim, k1 := as.Dims[0], as.Dims[1]
	if n.Attrs.Int("transA", 0) != 0 {
		mDim, k1 = k1, mDim
	}
	k2, nDim := bs.Dims[0], bs.Dims[1]
	if n.Attrs.Int("transB", 0) != 0 {
		k2, nDim = nDim, k2
	}
	if _, ok := mergeDim(k1, k2); !ok {
		return n.Errorf("A %v and B %v (transA=%d, transB=%d): inner dimensions %v and %v differ", as, bs, n.Attrs.Int("transA", 0), n.Attrs.Int("transB", 0), k1, k2)
	}
	out := PartialShape{Dims: []Dim{mDim, nDim}, RankKnown: true}
	if c := n.Input(2); c.Valid() {
		if err := unidirectional(n, c.Shape(), out, "C"); err != nil {
			return err
		}
	}
	setOutput(n, 0, t, out)
	return nil
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

// inferReduce is ReduceMean, ReduceSum, ReduceMax and ReduceMin with axes
// as an optional input.
func inferReduce(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if a := n.Input(1); a.Valid() && a.Type() != tensor.I64 {
		return n.Errorf("axes have element type %v, want i64", a.Type())
	}
	keep := n.Attrs.Int("keepdims", 1) != 0
	noop := n.Attrs.Int("noop_with_empty_axes", 0) != 0
	xs := x.Shape()
	var axes []int64
	if present(n, 1) {
		v, ok := n.ConstInts(1)
		if !ok {
			if keep && xs.RankKnown {
				setOutput(n, 0, x.Type(), dynamicShape(len(xs.Dims)))
			} else {
				setOutput(n, 0, x.Type(), DynamicRank)
			}
			return nil
		}
		axes = v
	}
	if len(axes) == 0 && noop {
		setOutput(n, 0, x.Type(), xs.Clone())
		return nil
	}
	if !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	r := len(xs.Dims)
	reduce := make([]bool, r)
	if len(axes) == 0 {
		for i := range reduce {
			reduce[i] = true
		}
	} else {
		norm, err := normalizeAxes(n, axes, r)
		if err != nil {
			return err
		}
		for _, a := range norm {
			reduce[a] = true
		}
	}
	out := PartialShape{Dims: []Dim{}, RankKnown: true}
	for i, d := range xs.Dims {
		switch {
		case !reduce[i]:
			out.Dims = append(out.Dims, d)
		case keep:
			out.Dims = append(out.Dims, StaticDim(1))
		}
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}
