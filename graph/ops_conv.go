package graph

import "github.com/clinfer/clinfer/tensor"

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
	var err error
	if w.strides, err = n.IntsAttr("strides", k, 1); err != nil {
		return w, err
	}
	if w.dilations, err = n.IntsAttr("dilations", k, 1); err != nil {
		return w, err
	}
	if w.pads, err = n.IntsAttr("pads", 2*k, 0); err != nil {
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

// convInputs checks what Conv and ConvTranspose share: one output, the
// input and the weights present, one element type, a positive group,
// equal ranks of at least 3. It returns the type, the shapes (of the rank
// known from either when the other's is not), the group and the rank; a
// rank of -1 means neither rank is known, and the output is set to a
// dynamic rank.
func convInputs(n *Node) (t tensor.ElementType, xs, ws PartialShape, group int64, rank int, err error) {
	if err := checkOutputs(n, 1, 1); err != nil {
		return t, xs, ws, 0, 0, err
	}
	t, err = sameTypes(n, 0, 1, 2)
	if err != nil {
		return t, xs, ws, 0, 0, err
	}
	xs, ws, group, rank, err = convOperands(n, 0, 1, t)
	return t, xs, ws, group, rank, err
}

// convOperands checks the data (input xi) and the weights (input wi) of a
// convolution whose output has type t: both present, a positive group,
// equal ranks of at least 3 (see convInputs). The integer and quantized
// convolutions call it with their own input positions.
func convOperands(n *Node, xi, wi int, t tensor.ElementType) (xs, ws PartialShape, group int64, rank int, err error) {
	x, err := requiredInput(n, xi)
	if err != nil {
		return xs, ws, 0, 0, err
	}
	wIn, err := requiredInput(n, wi)
	if err != nil {
		return xs, ws, 0, 0, err
	}
	xs, ws = x.Shape(), wIn.Shape()
	group = n.Attrs.Int("group", 1)
	if group < 1 {
		return xs, ws, 0, 0, n.Errorf("group %d must be positive", group)
	}
	rank = xs.Rank()
	if rank < 0 {
		rank = ws.Rank()
	}
	if rank < 0 {
		setOutput(n, 0, t, DynamicRank)
		return xs, ws, group, -1, nil
	}
	if rank < 3 {
		return xs, ws, 0, 0, n.Errorf("input has rank %d, want >= 3 (N, C, spatial...)", rank)
	}
	if xs.RankKnown && ws.RankKnown && len(ws.Dims) != len(xs.Dims) {
		return xs, ws, 0, 0, n.Errorf("input %v and weights %v differ in rank", xs, ws)
	}
	if !xs.RankKnown {
		xs = dynamicShape(rank)
	}
	if !ws.RankKnown {
		ws = dynamicShape(rank)
	}
	return xs, ws, group, rank, nil
}

func inferConv(n *Node) error {
	t, xs, ws, group, rank, err := convInputs(n)
	if err != nil || rank < 0 {
		return err // rank < 0: the output's rank is unknown, and set so
	}
	return convOutput(n, t, xs, ws, group, rank, 2)
}

// convOutput sets output 0 of a convolution (type t, data xs, weights ws
// of rank >= 3) from its window attributes and checks the bias, input bi
// when it is present (bi < 0: none).
func convOutput(n *Node, t tensor.ElementType, xs, ws PartialShape, group int64, rank, bi int) error {
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
	if b := n.Input(bi); bi >= 0 && b.Valid() {
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
	t, xs, ws, group, rank, err := convInputs(n)
	if err != nil || rank < 0 {
		return err // rank < 0: the output's rank is unknown, and set so
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

// inferFusedConv is Conv's inference plus the post-op checks.
func inferFusedConv(n *Node) error {
	if err := inferConv(n); err != nil {
		return err
	}
	return checkPostOps(n)
}

// convOps are the convolutions.
var convOps = []OpSpec{
	{Name: "Conv", MinInputs: 2, MaxInputs: 3, Infer: inferConv},
	{Name: "ConvTranspose", MinInputs: 2, MaxInputs: 3, Infer: inferConvTranspose},
	{Name: OpFusedConv, MinInputs: 2, MaxInputs: 4, Infer: inferFusedConv},
}
