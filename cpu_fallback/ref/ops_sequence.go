package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The sequence family: sequences and optionals are *tensor.Tensor values
// of another kind (tensor.Kind); the kernels build new ones and share the
// tensors they hold (inputs are never modified).

// seqIn returns input i, checking that it is a sequence.
func seqIn(n *graph.Node, in []*tensor.Tensor, i int) (*tensor.Tensor, error) {
	s, err := need(n, in, i)
	if err != nil {
		return nil, err
	}
	if s.Kind() != tensor.KindSequence {
		return nil, n.Errorf("%w: input %d is %v, want a sequence", driver.ErrInvalidArgument, i, s)
	}
	return s, nil
}

// position reads optional input i, a position in a sequence of length l
// (negative counts from the end), checked against [0, l] (insert: at
// may equal l) or [0, l); def is used when the input is omitted.
func position(n *graph.Node, in []*tensor.Tensor, i int, l int64, insert bool, def int64) (int64, error) {
	p := opt(in, i)
	if p == nil {
		return def, nil
	}
	v, err := intsOf(n, p, "position")
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, n.Errorf("%w: position %v, want one value", driver.ErrInvalidArgument, p)
	}
	at := v[0]
	if at < 0 {
		at += l
	}
	hi := l - 1
	if insert {
		hi = l
	}
	if at < 0 || at > hi {
		return 0, n.Errorf("%w: position %d is out of range for a sequence of %d tensors", driver.ErrInvalidArgument, v[0], l)
	}
	return at, nil
}

// newSeq makes a sequence of element type t holding items.
func newSeq(n *graph.Node, t tensor.ElementType, items []*tensor.Tensor) (*tensor.Tensor, error) {
	s, err := tensor.NewSequence(t, items)
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return s, nil
}

func sequenceEmptyKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := newSeq(n, tensor.ElementType(n.Attrs.Int("dtype", int64(tensor.F32))), nil)
	return []*tensor.Tensor{s}, err
}

func sequenceConstructKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, n.Errorf("%w: needs at least one tensor", driver.ErrInvalidArgument)
	}
	s, err := newSeq(n, in[0].Type(), in)
	return []*tensor.Tensor{s}, err
}

func sequenceAtKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := seqIn(n, in, 0)
	if err != nil {
		return nil, err
	}
	if _, err := need(n, in, 1); err != nil {
		return nil, err
	}
	at, err := position(n, in, 1, int64(len(s.Items())), false, 0)
	if err != nil {
		return nil, err
	}
	return one(s.Items()[at]), nil
}

func sequenceInsertKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := seqIn(n, in, 0)
	if err != nil {
		return nil, err
	}
	x, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	l := int64(len(s.Items()))
	at, err := position(n, in, 2, l, true, l)
	if err != nil {
		return nil, err
	}
	items := make([]*tensor.Tensor, 0, l+1)
	items = append(append(append(items, s.Items()[:at]...), x), s.Items()[at:]...)
	out, err := newSeq(n, s.Type(), items)
	return []*tensor.Tensor{out}, err
}

func sequenceEraseKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := seqIn(n, in, 0)
	if err != nil {
		return nil, err
	}
	l := int64(len(s.Items()))
	if l == 0 {
		return nil, n.Errorf("%w: erase from an empty sequence", driver.ErrInvalidArgument)
	}
	at, err := position(n, in, 1, l, false, l-1)
	if err != nil {
		return nil, err
	}
	items := append(append([]*tensor.Tensor{}, s.Items()[:at]...), s.Items()[at+1:]...)
	out, err := newSeq(n, s.Type(), items)
	return []*tensor.Tensor{out}, err
}

func sequenceLengthKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := seqIn(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := tensor.FromI64(tensor.Shape{}, []int64{int64(len(s.Items()))})
	return []*tensor.Tensor{y}, err
}

// splitToSequenceKernel cuts the input along axis into pieces: of split's
// sizes, of a scalar split's size (the last one shorter), or of size 1
// (without the axis when keepdims=0).
func splitToSequenceKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	ax, err := graph.NormalizeAxis(n, n.Attrs.Int("axis", 0), len(s))
	if err != nil {
		return nil, err
	}
	dim := s[ax]
	var sizes []int64
	squeeze := false
	switch sp := opt(in, 1); {
	case sp == nil:
		for range dim {
			sizes = append(sizes, 1)
		}
		squeeze = n.Attrs.Int("keepdims", 1) == 0
	case sp.Rank() == 0:
		c, err := intsOf(n, sp, "split")
		if err != nil {
			return nil, err
		}
		if c[0] <= 0 {
			return nil, n.Errorf("%w: split %d must be positive", driver.ErrInvalidArgument, c[0])
		}
		for at := int64(0); at < dim; at += c[0] {
			sizes = append(sizes, min(c[0], dim-at))
		}
	default:
		if sizes, err = intsOf(n, sp, "split"); err != nil {
			return nil, err
		}
		total := int64(0)
		for _, v := range sizes {
			if v < 0 {
				return nil, n.Errorf("%w: split sizes %v must not be negative", driver.ErrInvalidArgument, sizes)
			}
			total += v
		}
		if total != dim {
			return nil, n.Errorf("%w: split sizes %v add up to %d, not axis %d's %d", driver.ErrInvalidArgument, sizes, total, ax, dim)
		}
	}
	items := make([]*tensor.Tensor, len(sizes))
	begin, end := make([]int64, len(s)), s.Clone()
	for i, sz := range sizes {
		end[ax] = begin[ax] + sz
		v, err := x.View(begin, end)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		piece := v.Clone()
		if squeeze {
			ps := append(append(tensor.Shape{}, s[:ax]...), s[ax+1:]...)
			if piece, err = piece.Reshape(ps); err != nil {
				return nil, n.Errorf("%w", err)
			}
		}
		items[i] = piece
		begin[ax] = end[ax]
	}
	out, err := newSeq(n, x.Type(), items)
	return []*tensor.Tensor{out}, err
}

// concatFromSequenceKernel concatenates a sequence's tensors along axis,
// or stacks them along a new axis with new_axis=1.
func concatFromSequenceKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := seqIn(n, in, 0)
	if err != nil {
		return nil, err
	}
	items := s.Items()
	if len(items) == 0 {
		return nil, n.Errorf("%w: concatenate an empty sequence", driver.ErrInvalidArgument)
	}
	axis := n.Attrs.Int("axis", 0)
	if n.Attrs.Int("new_axis", 0) == 1 {
		r := items[0].Rank() + 1
		ax, err := graph.NormalizeAxis(n, axis, r)
		if err != nil {
			return nil, err
		}
		stacked := make([]*tensor.Tensor, len(items))
		for i, it := range items {
			es := it.Shape()
			ns := append(append(append(tensor.Shape{}, es[:ax]...), 1), es[ax:]...)
			if stacked[i], err = it.Reshape(ns); err != nil {
				return nil, n.Errorf("%w", err)
			}
		}
		items, axis = stacked, int64(ax)
	}
	cat := &graph.Node{Name: n.Name, OpType: "Concat", Attrs: graph.Attrs{"axis": axis}, Outputs: n.Outputs}
	return concatKernel(cat, items)
}

// sequenceMapKernels returns SequenceMap's kernel: its body runs once per
// position of the sequence inputs (which must have the same length) on
// their tensors there and the tensor inputs whole, and each body output
// becomes a sequence. table is the complete kernel table.
func sequenceMapKernel(table map[string]Kernel) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		b, ok := n.Attrs[graph.AttrBody].(*graph.Model)
		if !ok || b == nil {
			return nil, n.Errorf("%w: no body", driver.ErrInvalidArgument)
		}
		p, err := compile(b, table)
		if err != nil {
			return nil, n.Errorf("body %q: %w", b.Name, err)
		}
		l := -1
		for i, x := range in {
			if x != nil && x.Kind() == tensor.KindSequence {
				if l >= 0 && len(x.Items()) != l {
					return nil, n.Errorf("%w: sequence input %d has %d tensors, an earlier one %d", driver.ErrInvalidArgument, i, len(x.Items()), l)
				}
				l = len(x.Items())
			}
		}
		outs := make([][]*tensor.Tensor, len(n.Outputs))
		args := make([]*tensor.Tensor, len(in))
		for k := range max(l, 0) {
			for i, x := range in {
				args[i] = x
				if x != nil && x.Kind() == tensor.KindSequence {
					args[i] = x.Items()[k]
				}
			}
			res, err := p.Run(args)
			if err != nil {
				return nil, n.Errorf("element %d: %w", k, err)
			}
			for j := range outs {
				outs[j] = append(outs[j], res[j])
			}
		}
		y := make([]*tensor.Tensor, len(outs))
		for j, items := range outs {
			if y[j], err = tensor.NewSequence(n.Outputs[j].Type, items); err != nil {
				return nil, n.Errorf("output %d: %w", j, err)
			}
		}
		return y, nil
	}
}

func optionalKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	k := tensor.Kind(n.Attrs.Int(graph.AttrValueKind, int64(tensor.KindOptional)))
	t := tensor.ElementType(n.Attrs.Int("dtype", 0))
	if x := opt(in, 0); x != nil {
		k, t = tensor.KindOptional, x.Type()
		if x.Kind() == tensor.KindSequence {
			k = tensor.KindOptionalSequence
		}
	}
	o, err := tensor.NewOptional(k, t, opt(in, 0))
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(o), nil
}

func optionalHasElementKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := opt(in, 0)
	y, err := tensor.FromBool(tensor.Shape{}, []bool{x != nil && x.HasElement()})
	return []*tensor.Tensor{y}, err
}

func optionalGetElementKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !x.Kind().IsOptional() {
		return one(x), nil
	}
	if !x.HasElement() {
		return nil, n.Errorf("%w: the optional is empty", driver.ErrInvalidArgument)
	}
	return one(x.Items()[0]), nil
}

// sequenceKernels are the sequence family's kernels; table is the
// complete kernel table, which SequenceMap's body runs with.
func sequenceKernels(table map[string]Kernel) map[string]Kernel {
	return map[string]Kernel{
		"SequenceEmpty":      sequenceEmptyKernel,
		"SequenceConstruct":  sequenceConstructKernel,
		"SequenceAt":         sequenceAtKernel,
		"SequenceInsert":     sequenceInsertKernel,
		"SequenceErase":      sequenceEraseKernel,
		"SequenceLength":     sequenceLengthKernel,
		"SplitToSequence":    splitToSequenceKernel,
		"ConcatFromSequence": concatFromSequenceKernel,
		"SequenceMap":        sequenceMapKernel(table),
		"Optional":           optionalKernel,
		"OptionalHasElement": optionalHasElementKernel,
		"OptionalGetElement": optionalGetElementKernel,
	}
}
