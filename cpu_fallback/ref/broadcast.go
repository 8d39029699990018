package ref

import (
	"fmt"

	"github.com/clinfer/clinfer/tensor"
)

// broadcastShape is numpy's multidirectional broadcast of shapes: shapes are
// right-aligned, and along each axis every size must be equal or 1.
func broadcastShape(shapes ...tensor.Shape) (tensor.Shape, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make(tensor.Shape, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case d == o || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("%w: shapes %v cannot be broadcast together (axis %d: %d vs %d)", tensor.ErrShape, shapes, off+i, o, d)
			}
		}
	}
	return out, nil
}

// bcastPlan walks an output shape and, for each of several inputs
// broadcast to it, the matching input offsets. Dimensions of size 1 are
// dropped and adjacent dimensions that are contiguous for every input are
// merged, so the same-shape case is one run over everything and a scalar
// operand has stride 0: the fast paths fall out of the general plan.
type bcastPlan struct {
	dims    []int64   // collapsed output dimensions, outermost first; never empty
	strides [][]int64 // strides[k][d]: element stride of input k along dims[d]
	total   int64     // number of output elements
}

// newBcastPlan plans broadcasting inputs of shapes ins to out. Every input
// must be broadcastable to out (checked by broadcastShape beforehand).
func newBcastPlan(out tensor.Shape, ins ...tensor.Shape) *bcastPlan {
	return newStridePlan(out, alignedStrides(out, ins...))
}

// alignedStrides returns, for each input, its contiguous strides aligned to
// out's rank with 0 along broadcast axes.
func alignedStrides(out tensor.Shape, ins ...tensor.Shape) [][]int64 {
	r := len(out)
	st := make([][]int64, len(ins))
	for k, s := range ins {
		st[k] = make([]int64, r)
		cs := tensor.ContiguousStrides(s)
		off := r - len(s)
		for i := range s {
			if s[i] != 1 {
				st[k][off+i] = cs[i]
			}
		}
	}
	return st
}

// newStridePlan plans a walk over out where input k has element strides
// st[k] (one per axis of out; any sign, 0 for broadcast).
func newStridePlan(out tensor.Shape, st [][]int64) *bcastPlan {
	p := &bcastPlan{strides: make([][]int64, len(st)), total: out.NumElements()}
	for d, size := range out {
		if size == 1 {
			continue
		}
		if last := len(p.dims) - 1; last >= 0 {
			merge := true
			for k := range st {
				if p.strides[k][last] != st[k][d]*size {
					merge = false
					break
				}
			}
			if merge {
				p.dims[last] *= size
				for k := range st {
					p.strides[k][last] = st[k][d]
				}
				continue
			}
		}
		p.dims = append(p.dims, size)
		for k := range st {
			p.strides[k] = append(p.strides[k], st[k][d])
		}
	}
	if len(p.dims) == 0 {
		p.dims = []int64{1}
		for k := range st {
			p.strides[k] = []int64{0}
		}
	}
	return p
}

// inner is input k's stride along the innermost (run) dimension.
func (p *bcastPlan) inner(k int) int { return int(p.strides[k][len(p.dims)-1]) }

// runs calls fn once per contiguous run of the output: the run starts at
// output element outOff, is n elements long, and input k's elements start at
// offs[k] and advance by inner(k). fn must not keep offs.
func (p *bcastPlan) runs(fn func(outOff int64, offs []int64, n int64)) {
	if p.total == 0 {
		return
	}
	r := len(p.dims)
	n := p.dims[r-1]
	offs := make([]int64, len(p.strides))
	idx := make([]int64, r)
	for outOff := int64(0); outOff < p.total; outOff += n {
		fn(outOff, offs, n)
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			for k := range offs {
				offs[k] += p.strides[k][d]
			}
			if idx[d] < p.dims[d] {
				break
			}
			for k := range offs {
				offs[k] -= p.strides[k][d] * p.dims[d]
			}
			idx[d] = 0
		}
	}
}

// stridedCopy fills the contiguous dst (shape out, elements of esz bytes)
// from src read at element offset base + sum(idx[d]*strides[d]). It serves
// Transpose (permuted strides), Slice (scaled, possibly negative strides),
// Expand (zero strides) and Tile.
func stridedCopy(dst, src []byte, esz int, out tensor.Shape, strides []int64, base int64) {
	p := newStridePlan(out, [][]int64{strides})
	switch esz {
	case 1:
		stridedRuns(p, bytesAs[uint8](dst), bytesAs[uint8](src), base)
	case 2:
		stridedRuns(p, bytesAs[uint16](dst), bytesAs[uint16](src), base)
	case 4:
		stridedRuns(p, bytesAs[uint32](dst), bytesAs[uint32](src), base)
	case 8:
		stridedRuns(p, bytesAs[uint64](dst), bytesAs[uint64](src), base)
	default:
		panic(fmt.Sprintf("cpufallback: element size %d", esz))
	}
}

func stridedRuns[T sized](p *bcastPlan, dst, src []T, base int64) {
	s := int64(p.inner(0))
	p.runs(func(outOff int64, offs []int64, n int64) {
		d := dst[outOff : outOff+n]
		at := base + offs[0]
		switch s {
		case 1:
			copy(d, src[at:at+n])
		case 0:
			v := src[at]
			for i := range d {
				d[i] = v
			}
		default:
			for i := range d {
				d[i] = src[at]
				at += s
			}
		}
	})
}
