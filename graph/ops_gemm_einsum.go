package graph

import (
	"fmt"
	"slices"
	"strings"
)

// EinsumTerms is an Einsum equation resolved for inputs of known ranks:
// every axis of every input and of the output carries a label. Letters are
// their character codes; the axes an ellipsis stands for get the labels
// EllipsisLabel+0, +1... aligned from the right, as numpy broadcasts them.
// A label repeated within one input takes that input's diagonal; a label
// absent from the output is summed over; equal labels of different inputs
// are multiplied together (sizes of 1 broadcast).
type EinsumTerms struct {
	In  [][]int
	Out []int
}

// EllipsisLabel is the label of the first axis an ellipsis stands for.
const EllipsisLabel = 1 << 10

// ParseEinsum resolves equation (ONNX Einsum: "ij,jk->ik", "...ii->...i",
// implicit "ij,jk": the output is the ellipsis axes and then the labels
// used once, in character order) for inputs of the given ranks.
func ParseEinsum(equation string, ranks []int) (EinsumTerms, error) {
	eq := strings.Join(strings.Fields(equation), "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	ops := strings.Split(lhs, ",")
	if len(ops) != len(ranks) {
		return EinsumTerms{}, fmt.Errorf("equation %q has %d operands for %d inputs", equation, len(ops), len(ranks))
	}
	var t EinsumTerms
	ell := 0 // axes the ellipsis stands for, the most of any input
	counts := map[int]int{}
	for i, op := range ops {
		labels, n, err := einsumTerm(op, ranks[i])
		if err != nil {
			return EinsumTerms{}, fmt.Errorf("equation %q, operand %d: %w", equation, i, err)
		}
		ell = max(ell, n)
		t.In = append(t.In, labels)
		for _, l := range labels {
			counts[l]++
		}
	}
	// Right-align each input's ellipsis axes on the widest one.
	for i, labels := range t.In {
		n := 0
		for _, l := range labels {
			if l >= EllipsisLabel {
				n++
			}
		}
		for j, l := range labels {
			if l >= EllipsisLabel {
				t.In[i][j] = l + ell - n
			}
		}
	}
	if !explicit {
		for j := range ell {
			t.Out = append(t.Out, EllipsisLabel+j)
		}
		var once []int
		for l, c := range counts {
			if c == 1 && l < EllipsisLabel {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		t.Out = append(t.Out, once...)
		return t, nil
	}
	out, n, err := einsumTerm(rhs, -1)
	if err != nil {
		return EinsumTerms{}, fmt.Errorf("equation %q, output: %w", equation, err)
	}
	for _, l := range out {
		if l >= EllipsisLabel {
			continue
		}
		if counts[l] == 0 {
			return EinsumTerms{}, fmt.Errorf("equation %q: output label %q is in no operand", equation, rune(l))
		}
	}
	seen := map[int]bool{}
	for _, l := range out {
		if l < EllipsisLabel && seen[l] {
			return EinsumTerms{}, fmt.Errorf("equation %q: output label %q is repeated", equation, rune(l))
		}
		seen[l] = true
	}
	if n < 0 { // "...": the ellipsis axes go where it is
		for j, l := range out {
			if l == EllipsisLabel {
				ellAxes := make([]int, ell)
				for k := range ellAxes {
					ellAxes[k] = EllipsisLabel + k
				}
				out = slices.Concat(out[:j], ellAxes, out[j+1:])
				break
			}
		}
	}
	t.Out = out // without "...", the ellipsis axes are summed over
	return t, nil
}

// einsumTerm labels one operand of rank r (r < 0: the output, whose
// ellipsis stays one label EllipsisLabel and n = -1). n is the number of
// axes the ellipsis stands for.
func einsumTerm(term string, r int) (labels []int, n int, err error) {
	before, after, hasEll := strings.Cut(term, "...")
	if strings.Contains(after, "...") || strings.Contains(strings.ReplaceAll(term, "...", ""), ".") {
		return nil, 0, fmt.Errorf("%q has a malformed ellipsis", term)
	}
	letters := func(s string) ([]int, error) {
		var out []int
		for _, c := range s {
			if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
				return nil, fmt.Errorf("%q has the label %q (labels are letters)", term, c)
			}
			out = append(out, int(c))
		}
		return out, nil
	}
	b, err := letters(before)
	if err != nil {
		return nil, 0, err
	}
	a, err := letters(after)
	if err != nil {
		return nil, 0, err
	}
	if !hasEll {
		if r >= 0 && len(b) != r {
			return nil, 0, fmt.Errorf("%q labels %d axes of an input of rank %d", term, len(b), r)
		}
		return b, 0, nil
	}
	if r < 0 {
		return slices.Concat(b, []int{EllipsisLabel}, a), -1, nil
	}
	n = r - len(b) - len(a)
	if n < 0 {
		return nil, 0, fmt.Errorf("%q labels %d axes of an input of rank %d", term, len(b)+len(a), r)
	}
	ell := make([]int, n)
	for k := range ell {
		ell[k] = EllipsisLabel + k
	}
	return slices.Concat(b, ell, a), n, nil
}

// EinsumSizes returns the size of every label of t for inputs of the given
// shapes: equal labels must agree, except sizes of 1, which broadcast.
func EinsumSizes(t EinsumTerms, shapes [][]int64) (map[int]int64, error) {
	sizes := map[int]int64{}
	for i, labels := range t.In {
		for j, l := range labels {
			d := shapes[i][j]
			s, ok := sizes[l]
			switch {
			case !ok || s == 1:
				sizes[l] = d
			case d != 1 && d != s:
				return nil, fmt.Errorf("label %s has sizes %d and %d", einsumLabel(l), s, d)
			}
		}
	}
	return sizes, nil
}

// einsumLabel names a label for messages.
func einsumLabel(l int) string {
	if l >= EllipsisLabel {
		return fmt.Sprintf("...[%d]", l-EllipsisLabel)
	}
	return fmt.Sprintf("%q", rune(l))
}

// inferEinsum is Einsum(inputs...) with its equation attribute.
func inferEinsum(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if len(n.Inputs) == 0 {
		return n.Errorf("has no inputs")
	}
	typ, err := sameTypes(n, allInputs(n)...)
	if err != nil {
		return err
	}
	if !isNumeric(typ) {
		return n.Errorf("inputs have element type %v, want a numeric type", typ)
	}
	ranks := make([]int, len(n.Inputs))
	for i, in := range n.Inputs {
		s := in.Shape()
		if !s.RankKnown {
			setOutput(n, 0, typ, DynamicRank)
			return nil
		}
		ranks[i] = len(s.Dims)
	}
	t, err := ParseEinsum(n.Attrs.String("equation", ""), ranks)
	if err != nil {
		return n.Errorf("%v", err)
	}
	dims := map[int]Dim{}
	for i, labels := range t.In {
		for j, l := range labels {
			d := n.Inputs[i].Shape().Dims[j]
			cur, ok := dims[l]
			switch {
			case !ok || (cur.IsStatic() && cur.Size == 1):
				dims[l] = d
			case d.IsStatic() && d.Size == 1:
			default:
				m, ok := mergeDim(cur, d)
				if !ok {
					return n.Errorf("label %s has sizes %v and %v", einsumLabel(l), cur, d)
				}
				dims[l] = m
			}
		}
	}
	out := PartialShape{RankKnown: true, Dims: make([]Dim, len(t.Out))}
	for i, l := range t.Out {
		out.Dims[i] = dims[l]
	}
	setOutput(n, 0, typ, out)
	return nil
}
