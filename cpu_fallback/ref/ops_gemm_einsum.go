package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// einsumKernel is Einsum: for every output element, the sum over the
// labels absent from the output of the product of the inputs' elements
// (a label repeated in one input walks its diagonal: the strides of its
// axes add up; an axis of size 1 broadcasts), accumulated in float64.
func einsumKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ranks := make([]int, len(in))
	shapes := make([][]int64, len(in))
	for i := range in {
		x, err := need(n, in, i)
		if err != nil {
			return nil, err
		}
		ranks[i], shapes[i] = x.Rank(), x.Shape()
	}
	terms, err := graph.ParseEinsum(n.Attrs.String("equation", ""), ranks)
	if err != nil {
		return nil, n.Errorf("%w: %v", driver.ErrInvalidArgument, err)
	}
	sizes, err := graph.EinsumSizes(terms, shapes)
	if err != nil {
		return nil, n.Errorf("%w: %v", driver.ErrInvalidArgument, err)
	}
	inOut := map[int]bool{}
	for _, l := range terms.Out {
		inOut[l] = true
	}
	var sum []int // labels summed over, in first-seen order
	for _, labels := range terms.In {
		for _, l := range labels {
			if !inOut[l] {
				inOut[l] = true
				sum = append(sum, l)
			}
		}
	}
	// Per input, its element stride along each output and summed label.
	strideOf := func(i, l int) int64 {
		st := tensor.ContiguousStrides(shapes[i])
		s := int64(0)
		for j, lj := range terms.In[i] {
			if lj == l && shapes[i][j] != 1 {
				s += st[j]
			}
		}
		return s
	}
	ys := make(tensor.Shape, len(terms.Out))
	for j, l := range terms.Out {
		ys[j] = sizes[l]
	}
	y, err := newOut(n, in[0].Type(), ys)
	if err != nil {
		return nil, err
	}
	ostr := make([][]int64, len(in))
	sstr := make([][]int64, len(in))
	vals := make([][]float64, len(in))
	for i, x := range in {
		vals[i] = x.Float64s()
		for _, l := range terms.Out {
			ostr[i] = append(ostr[i], strideOf(i, l))
		}
		for _, l := range sum {
			sstr[i] = append(sstr[i], strideOf(i, l))
		}
	}
	ssz := make([]int64, len(sum))
	total := int64(1)
	for k, l := range sum {
		ssz[k] = sizes[l]
		total *= ssz[k]
	}
	out := make([]float64, y.NumElements())
	base := make([]int64, len(in))
	off := make([]int64, len(in))
	idx := make([]int64, len(sum))
	oidx := make([]int64, len(ys))
	for o := range out {
		for i := range in {
			base[i] = 0
			for j, v := range oidx {
				base[i] += v * ostr[i][j]
			}
		}
		acc := 0.0
		for i := range idx {
			idx[i] = 0
		}
		copy(off, base)
		for range total {
			p := 1.0
			for i := range in {
				p *= vals[i][off[i]]
			}
			acc += p
			// Advance the summed labels' odometer.
			for k := len(idx) - 1; k >= 0; k-- {
				idx[k]++
				for i := range in {
					off[i] += sstr[i][k]
				}
				if idx[k] < ssz[k] {
					break
				}
				for i := range in {
					off[i] -= sstr[i][k] * ssz[k]
				}
				idx[k] = 0
			}
		}
		out[o] = acc
		for j := len(oidx) - 1; j >= 0; j-- {
			if oidx[j]++; oidx[j] < ys[j] {
				break
			}
			oidx[j] = 0
		}
	}
	storeF64(y, out)
	return one(y), nil
}
