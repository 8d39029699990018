package clbackend

import (
	"fmt"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

func lowerAlias(b *builder, n *graph.Node) error {
	b.alias(b.out(n, 0), b.in(n, 0))
	return nil
}

// collapseView drops the unit dims of a strided copy and merges each dim
// into the one before it where both views step over it as one run (outer
// stride = inner stride * inner dim), so that a copy of dense blocks
// (Concat, Split, Slice of leading axes) has rank 1 and the kernel does no
// index division.
func collapseView(dims, sst, dstr []int64) (d, s, t []int64) {
	for i, n := range dims {
		if n == 1 {
			continue
		}
		if k := len(d) - 1; k >= 0 && s[k] == sst[i]*n && t[k] == dstr[i]*n {
			d[k] *= n
			s[k], t[k] = sst[i], dstr[i]
			continue
		}
		d, s, t = append(d, n), append(s, sst[i]), append(t, dstr[i])
	}
	return d, s, t
}

// copyView emits a strided copy: iteration dims, source strides and
// offset, destination strides and offset, in elements.
func (b *builder) copyView(n *graph.Node, src, dst int, dims, sst []int64, soff int64, dstr []int64, doff int64) error {
	cnt := int64(1)
	for _, d := range dims {
		cnt *= d
	}
	dims, sst, dstr = collapseView(dims, sst, dstr)
	m := []int64{int64(len(dims))}
	m = append(m, dims...)
	m = append(m, sst...)
	m = append(m, dstr...)
	m = append(m, soff, doff)
	if len(dims) == 0 {
		m = []int64{1, 1, 0, 0, soff, doff}
	}
	defines := "-DT=" + bitsType(b.val(dst).typ)
	meta := b.meta(m)
	if cnt == 0 {
		return b.emit(n, "strided_copy", defines, cnt, slotArg(src), slotArg(dst), uint64(cnt), meta)
	}
	key := fmt.Sprintf("%v %s", m[:len(m)-2], b.val(dst).typ)
	// One copy computes a node's output only when the node is one copy.
	tunable := src == b.in(n, 0) && dst == b.out(n, 0) && len(n.Outputs) == 1 && b.val(src).shape.NumElements() == cnt
	return b.choose(n, "copy", key, tunable, func(kernels.Variant) string { return "" }, b.profile().runs("copy"),
		func(v kernels.Variant) error {
			return b.emitRuns(n, "strided_copy", defines, v, cnt, m, slotArg(src), slotArg(dst), uint64(cnt), meta)
		})
}

// copyBroadcast copies src into dst, broadcasting (Expand).
func (b *builder) copyBroadcast(n *graph.Node, src, dst int) error {
	os := b.val(dst).shape
	m := broadcastMeta(os, b.val(src).shape)
	r := int(m[0])
	dims, sst := m[1:1+r], m[1+r:1+2*r]
	return b.copyView(n, src, dst, dims, sst, 0, strides(tensor.Shape(dims)), 0)
}

func lowerExpand(b *builder, n *graph.Node) error {
	return b.copyBroadcast(n, b.in(n, 0), b.out(n, 0))
}

func lowerTranspose(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	perm := n.Attrs.Ints("perm", nil)
	if perm == nil {
		for i := len(is) - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	ist := strides(is)
	os := b.val(y).shape
	sst := make([]int64, len(perm))
	for d, p := range perm {
		sst[d] = ist[p]
	}
	return b.copyView(n, x, y, os, sst, 0, strides(os), 0)
}

func lowerSlice(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	r := int64(len(is))
	starts, ok1 := b.hostInts(b.in(n, 1))
	ends, ok2 := b.hostInts(b.in(n, 2))
	if !ok1 || !ok2 {
		return errUnsupported(n, "Slice starts/ends not known at plan time")
	}
	axes := make([]int64, len(starts))
	for i := range axes {
		axes[i] = int64(i)
	}
	if v := b.in(n, 3); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "Slice axes not known at plan time")
		}
		axes = a
	}
	steps := make([]int64, len(starts))
	for i := range steps {
		steps[i] = 1
	}
	if v := b.in(n, 4); v >= 0 {
		s, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "Slice steps not known at plan time")
		}
		steps = s
	}
	ist := strides(is)
	sst := append([]int64(nil), ist...)
	os := b.val(y).shape
	var off int64
	cut, cutAt := int64(-1), int64(0) // the one axis a block slice cuts, from cutAt
	block := true
	for i, ax := range axes {
		if ax < 0 {
			ax += r
		}
		dim, st, step := is[ax], starts[i], steps[i]
		if st < 0 {
			st += dim
		}
		if step > 0 {
			st = min(max(st, 0), dim)
		} else {
			st = min(max(st, 0), dim-1)
		}
		off += st * ist[ax]
		sst[ax] = ist[ax] * step
		if os[ax] != dim || st != 0 || step != 1 {
			block = block && step == 1 && cut < 0
			cut, cutAt = ax, st
		}
	}
	_ = ends
	if os.NumElements() == 0 {
		return nil
	}
	if block && cut >= 0 && b.blockView(x, y, cut, cutAt, ist[cut]) {
		return nil // a contiguous block of x at an aligned origin: a view
	}
	return b.copyView(n, x, y, os, sst, off, strides(os), 0)
}

func lowerConcat(b *builder, n *graph.Node) error {
	y := b.out(n, 0)
	os := b.val(y).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(os))
	}
	ost := strides(os)
	placed := b.concatInPlace(n, ax)
	var at int64
	for i := range n.Inputs {
		x := b.in(n, i)
		is := b.val(x).shape
		if is.NumElements() > 0 && !placed[i] {
			if err := b.copyView(n, x, y, is, strides(is), 0, ost, at*ost[ax]); err != nil {
				return err
			}
		}
		at += is[ax]
	}
	return nil
}

func lowerSplit(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	is := b.val(x).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	ist := strides(is)
	var at int64
	for i := range n.Outputs {
		y := b.out(n, i)
		os := b.val(y).shape
		if os.NumElements() > 0 {
			if err := b.copyView(n, x, y, os, ist, at*ist[ax], strides(os), 0); err != nil {
				return err
			}
		}
		at += os[ax]
	}
	return nil
}

func lowerTile(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is, os := b.val(x).shape, b.val(y).shape
	ist, ost := strides(is), strides(os)
	var dims, sst, dst []int64
	for d := range is {
		rep := os[d] / max(is[d], 1)
		dims = append(dims, rep, is[d])
		sst = append(sst, 0, ist[d])
		dst = append(dst, is[d]*ost[d], ost[d])
	}
	if os.NumElements() == 0 {
		return nil
	}
	return b.copyView(n, x, y, dims, sst, 0, dst, 0)
}

func lowerPad(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	t := b.val(x).typ
	if clType(t) == "" || t == tensor.I8 || t == tensor.I16 {
		return errUnsupported(n, "element type %s", t)
	}
	r := int64(len(is))
	pads, ok := b.hostInts(b.in(n, 1))
	if !ok {
		return errUnsupported(n, "pads not known at plan time")
	}
	axes := make([]int64, r)
	for i := range axes {
		axes[i] = int64(i)
	}
	if v := b.in(n, 3); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "axes not known at plan time")
		}
		axes = a
	}
	begin := make([]int64, r)
	for i, ax := range axes {
		if ax < 0 {
			ax += r
		}
		begin[ax] = pads[i]
	}
	var value float64
	if v := b.in(n, 2); v >= 0 {
		f, ok := b.hostFloat(v)
		if !ok && b.val(v).shape.NumElements() > 0 {
			return errUnsupported(n, "constant_value not known at plan time")
		}
		value = f
	}
	mode := map[string]int32{"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}[n.Attrs.String("mode", "constant")]
	return b.padLaunch(n, x, y, begin, mode, value)
}

// padLaunch emits movement_pad.cl's pad of x into y, the output element o
// reading x at o - begin on every axis (begin negative where it crops),
// with mode and the constant value outside x.
func (b *builder) padLaunch(n *graph.Node, x, y int, begin []int64, mode int32, value float64) error {
	is, os := b.val(x).shape, b.val(y).shape
	m := []int64{int64(len(is))}
	m = append(m, os...)
	m = append(m, is...)
	m = append(m, strides(is)...)
	m = append(m, begin...)
	cnt := os.NumElements()
	ct := clType(b.val(x).typ)
	if mode == 0 && value == 0 {
		ct = bitsType(b.val(x).typ) // zero bits are zero in every type
	}
	return b.emit(n, "pad", "-DT="+ct, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), mode, float32(value))
}

// lowerTrilu keeps the upper or lower triangle of the last two axes; the
// kernel reads k from its (possibly runtime) input.
func lowerTrilu(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) < 2 {
		return errUnsupported(n, "rank %d input (Trilu needs rank >= 2)", len(s))
	}
	kv := b.in(n, 1)
	if kv < 0 {
		zero, _ := tensor.FromI64(tensor.Shape{1}, []int64{0})
		kv = b.newValue(tensor.I64, zero.Shape(), zero)
	} else if b.val(kv).typ != tensor.I64 || b.val(kv).shape.NumElements() != 1 {
		return errUnsupported(n, "k of type %s and shape %v (want one i64)", b.val(kv).typ, b.val(kv).shape)
	}
	cnt := s.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "trilu", "-DT="+bitsType(b.val(y).typ), cnt, slotArg(x), slotArg(y), uint64(cnt),
		uint64(s[len(s)-2]), uint64(s[len(s)-1]), slotArg(kv), int32(n.Attrs.Int("upper", 1)))
}

// lowerReverseSequence runs ReverseSequence as one gather of whole
// elements (reverse_sequence), reading the lengths on the device.
func lowerReverseSequence(b *builder, n *graph.Node) error {
	timeAx, _, err := graph.ReverseSequenceAxes(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	cnt := s.NumElements()
	if cnt == 0 {
		return nil
	}
	steps, batch := s[0], s[1]
	if timeAx == 1 {
		steps, batch = batch, steps
	}
	return b.emit(n, "reverse_sequence", "-DT="+bitsType(b.val(y).typ), cnt, slotArg(x), slotArg(b.in(n, 1)), slotArg(y),
		uint64(cnt), uint64(steps), uint64(batch), uint64(s[2:].NumElements()), int32(1-timeAx))
}

// lowerSpaceDepth runs DepthToSpace and SpaceToDepth as one strided copy:
// the input viewed as 6-D, transposed, is the output.
func lowerSpaceDepth(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) != 4 {
		return errUnsupported(n, "rank %d input (want NCHW)", len(s))
	}
	bs := n.Attrs.Int("blocksize", 0)
	if bs <= 0 {
		return errUnsupported(n, "blocksize %d", bs)
	}
	N, C, H, W := s[0], s[1], s[2], s[3]
	var view, perm []int64
	switch {
	case n.OpType == "SpaceToDepth":
		view, perm = []int64{N, C, H / bs, bs, W / bs, bs}, []int64{0, 3, 5, 1, 2, 4}
	case n.Attrs.String("mode", "DCR") == "CRD":
		view, perm = []int64{N, C / (bs * bs), bs, bs, H, W}, []int64{0, 1, 4, 2, 5, 3}
	default:
		view, perm = []int64{N, bs, bs, C / (bs * bs), H, W}, []int64{0, 3, 4, 1, 5, 2}
	}
	if b.val(y).shape.NumElements() == 0 {
		return nil
	}
	vst := strides(view)
	dims, sst := make([]int64, 6), make([]int64, 6)
	for d, p := range perm {
		dims[d], sst[d] = view[p], vst[p]
	}
	return b.copyView(n, x, y, dims, sst, 0, strides(dims), 0)
}

// lowerDropout is inference-mode Dropout: the output is the input (zero
// copy) and the optional mask is all true, a plan constant. A
// training_mode not known false at plan time runs dropout_train
// (lower_random.go), which draws the mask.
func lowerDropout(b *builder, n *graph.Node) error {
	if v := b.in(n, 2); v >= 0 {
		if train, ok := b.hostFloat(v); !ok || train != 0 {
			return lowerDropoutTrain(b, n)
		}
	}
	b.alias(b.out(n, 0), b.in(n, 0))
	if len(n.Outputs) > 1 {
		mv := b.val(b.out(n, 1))
		ones := make([]bool, mv.shape.NumElements())
		for i := range ones {
			ones[i] = true
		}
		mask, err := tensor.FromBool(mv.shape, ones)
		if err != nil {
			return n.Errorf("Dropout mask: %w", err)
		}
		mv.host = mask
	}
	return nil
}

// movementLowerings are the GPU table entries (see lowering) of the
// data-movement ops: zero-copy aliases and strided copies that move bits of
// any element type.
func movementLowerings() map[string]lowering {
	alias := lowering{lower: lowerAlias, half: true}
	return map[string]lowering{
		"Reshape": alias, "Flatten": alias, "Squeeze": alias, "Unsqueeze": alias, "Identity": alias,
		"Transpose": copies(lowerTranspose), "Slice": copies(lowerSlice), "Concat": copies(lowerConcat),
		"Split": copies(lowerSplit), "Expand": copies(lowerExpand), "Tile": copies(lowerTile),
		"DepthToSpace": copies(lowerSpaceDepth), "SpaceToDepth": copies(lowerSpaceDepth),
		"Pad": {lower: lowerPad}, "Trilu": {lower: lowerTrilu},
		"ReverseSequence": copies(lowerReverseSequence), "Dropout": {lower: lowerDropout},
	}
}
