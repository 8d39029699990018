package clbackend

import (
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Einsum runs on the existing kernels: each operand's diagonals (repeated
// labels) and transposes are one strided copy (or none, when its view is
// already in the order needed), labels no later step needs are summed out
// with the reductions, each pair of operands is one batched GEMM
// ([batch, M, K] x [batch, K, N], broadcast batches by stride 0), and the
// result is permuted into the output's order.

// einView is a strided view of a plan value: one axis per distinct label.
type einView struct {
	v       int
	labels  []int
	dims    []int64
	strides []int64
}

// einOperand views value v, labelled labels, with its repeated labels
// folded into one axis each (their strides add up: the diagonal); an axis
// of size 1 whose label is larger elsewhere keeps its size (it
// broadcasts).
func (b *builder) einOperand(v int, labels []int) einView {
	s := b.val(v).shape
	st := strides(s)
	ev := einView{v: v}
	for j, l := range labels {
		k := slices.Index(ev.labels, l)
		if k < 0 {
			ev.labels, ev.dims, ev.strides = append(ev.labels, l), append(ev.dims, s[j]), append(ev.strides, st[j])
			continue
		}
		ev.strides[k] += st[j]
	}
	return ev
}

// dense reports whether ev reads its value in row-major order of its axes.
func (b *builder) dense(ev einView) bool {
	return slices.Equal(ev.strides, strides(tensor.Shape(ev.dims))) && prod(ev.dims) == b.val(ev.v).shape.NumElements()
}

// einMaterialize returns ev with its axes in the order of labels (each of
// ev's labels once), dense: the same value when it already is, else a
// strided copy into a temporary.
func (b *builder) einMaterialize(n *graph.Node, ev einView, labels []int) (einView, error) {
	out := einView{labels: labels}
	var sst []int64
	for _, l := range labels {
		k := slices.Index(ev.labels, l)
		out.dims, sst = append(out.dims, ev.dims[k]), append(sst, ev.strides[k])
	}
	out.strides = strides(tensor.Shape(out.dims))
	if slices.Equal(sst, out.strides) && prod(out.dims) == b.val(ev.v).shape.NumElements() {
		out.v = b.reshaped(ev.v, out.dims)
		return out, nil
	}
	out.v = b.temp(b.val(ev.v).typ, tensor.Shape(out.dims))
	return out, b.copyView(n, ev.v, out.v, out.dims, sst, 0, out.strides, 0)
}

// reshaped is a zero-copy view of value v with shape s.
func (b *builder) reshaped(v int, s []int64) int {
	if b.val(v).shape.Equal(tensor.Shape(s)) {
		return v
	}
	r := b.temp(b.val(v).typ, tensor.Shape(s))
	b.alias(r, v)
	return r
}

// einSum sums ev over the labels drop (reduce_sum), keeping the others in
// their order.
func (b *builder) einSum(n *graph.Node, ev einView, drop []int) (einView, error) {
	if len(drop) == 0 {
		return ev, nil
	}
	var keep []int
	for _, l := range ev.labels {
		if !slices.Contains(drop, l) {
			keep = append(keep, l)
		}
	}
	// Summed labels last, so the reduction reads contiguous runs.
	d, err := b.einMaterialize(n, ev, append(slices.Clone(keep), drop...))
	if err != nil {
		return einView{}, err
	}
	out := einView{labels: keep, dims: d.dims[:len(keep):len(keep)]}
	out.strides = strides(tensor.Shape(out.dims))
	axes := make([]int64, len(drop))
	for i := range drop {
		axes[i] = int64(len(keep) + i)
	}
	out.v = b.temp(b.val(d.v).typ, tensor.Shape(out.dims))
	return out, b.reduce(n, "reduce_sum", d.v, out.v, axes)
}

// einPair multiplies a and b, summing the labels in both that later steps
// do not need (need: the output's and the remaining operands' labels):
// one batched GEMM over [batch..., M..., K...] x [batch..., K..., N...],
// the result's axes batch, M, N.
func (b *builder) einPair(n *graph.Node, a, c einView, need map[int]bool) (einView, error) {
	var batch, m, k, nn []int
	for _, l := range a.labels {
		switch {
		case !slices.Contains(c.labels, l):
			m = append(m, l)
		case need[l]:
			batch = append(batch, l)
		default:
			k = append(k, l)
		}
	}
	for _, l := range c.labels {
		if !slices.Contains(a.labels, l) {
			nn = append(nn, l)
		}
	}
	// A summed label of size 1 on one side broadcasts: sum the other side
	// over it first.
	var dropA, dropC, kk []int
	for _, l := range k {
		da, dc := a.dims[slices.Index(a.labels, l)], c.dims[slices.Index(c.labels, l)]
		switch {
		case da == dc:
			kk = append(kk, l)
		case da == 1:
			dropC = append(dropC, l)
		default:
			dropA = append(dropA, l)
		}
	}
	var err error
	if a, err = b.einSum(n, a, dropA); err != nil {
		return einView{}, err
	}
	if c, err = b.einSum(n, c, dropC); err != nil {
		return einView{}, err
	}
	// dropA/dropC leave a size-1 label on the other side: an M or N label
	// then, summed over a single element.
	m = slices.DeleteFunc(m, func(l int) bool { return slices.Contains(dropA, l) })
	nn = slices.DeleteFunc(nn, func(l int) bool { return slices.Contains(dropC, l) })
	for _, l := range dropA {
		nn = append(nn, l) // c keeps its size-1 axis
	}
	for _, l := range dropC {
		m = append(m, l)
	}
	if a, err = b.einMaterialize(n, a, slices.Concat(batch, m, kk)); err != nil {
		return einView{}, err
	}
	if c, err = b.einMaterialize(n, c, slices.Concat(batch, kk, nn)); err != nil {
		return einView{}, err
	}
	size := func(v einView, ls []int) int64 {
		p := int64(1)
		for _, l := range ls {
			p *= v.dims[slices.Index(v.labels, l)]
		}
		return p
	}
	g := gemmGeom{M: size(a, m), K: size(a, kk), N: size(c, nn)}
	g.aRow, g.aK, g.bK, g.bCol = g.K, 1, g.N, 1
	out := einView{labels: slices.Concat(batch, m, nn)}
	as, cs := strides(tensor.Shape(a.dims)), strides(tensor.Shape(c.dims))
	for i := range batch {
		da, dc := a.dims[i], c.dims[i]
		var sa, sc int64
		if da != 1 {
			sa = as[i]
		}
		if dc != 1 {
			sc = cs[i]
		}
		g.batch, g.aBatch, g.bBatch = append(g.batch, max(da, dc)), append(g.aBatch, sa), append(g.bBatch, sc)
		out.dims = append(out.dims, max(da, dc))
	}
	for _, l := range m {
		out.dims = append(out.dims, a.dims[slices.Index(a.labels, l)])
	}
	for _, l := range nn {
		out.dims = append(out.dims, c.dims[slices.Index(c.labels, l)])
	}
	out.strides = strides(tensor.Shape(out.dims))
	out.v = b.temp(b.val(a.v).typ, tensor.Shape(out.dims))
	return out, b.gemm(n, a.v, c.v, -1, out.v, g, 1, 0)
}

// lowerEinsum contracts the operands left to right (see einView).
func lowerEinsum(b *builder, n *graph.Node) error {
	y := b.out(n, 0)
	typ := b.val(y).typ
	if typ != tensor.F32 && typ != tensor.F16 && typ != tensor.F64 && (!typ.IsInteger() || typ.Bits() == 4) {
		return errUnsupported(n, "element type %s (the GPU lowers Einsum on f32, f16, f64 and integers)", typ)
	}
	ranks := make([]int, len(n.Inputs))
	for i := range n.Inputs {
		ranks[i] = len(b.val(b.in(n, i)).shape)
	}
	terms, err := graph.ParseEinsum(n.Attrs.String("equation", ""), ranks)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	// need[i] are the labels operands after i and the output use.
	need := make([]map[int]bool, len(terms.In))
	for i := range terms.In {
		need[i] = map[int]bool{}
		for _, l := range terms.Out {
			need[i][l] = true
		}
		for _, ls := range terms.In[i+1:] {
			for _, l := range ls {
				need[i][l] = true
			}
		}
	}
	var acc einView
	for i, ls := range terms.In {
		op := b.einOperand(b.in(n, i), ls)
		// Labels of this operand alone that nothing else needs: summed now.
		var alone []int
		for _, l := range op.labels {
			used := need[i][l]
			if i > 0 {
				used = used || slices.Contains(acc.labels, l)
			}
			if !used {
				alone = append(alone, l)
			}
		}
		if op, err = b.einSum(n, op, alone); err != nil {
			return err
		}
		if i == 0 {
			acc = op
			continue
		}
		if acc, err = b.einPair(n, acc, op, need[i]); err != nil {
			return err
		}
	}
	// Labels the output lacks (a size-1 axis left by a broadcast sum).
	var extra []int
	for _, l := range acc.labels {
		if !slices.Contains(terms.Out, l) {
			extra = append(extra, l)
		}
	}
	if acc, err = b.einSum(n, acc, extra); err != nil {
		return err
	}
	var sst []int64
	os := b.val(y).shape
	for _, l := range terms.Out {
		sst = append(sst, acc.strides[slices.Index(acc.labels, l)])
	}
	if slices.Equal(sst, strides(os)) {
		b.alias(y, acc.v)
		return nil
	}
	return b.copyView(n, acc.v, y, os, sst, 0, strides(os), 0)
}
