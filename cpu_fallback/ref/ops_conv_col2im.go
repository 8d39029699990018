package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// col2ImKernel is Col2Im: each column's block of values added into the
// image at its block position (the inverse of im2col; overlaps sum).
func col2ImKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 3)
	if err != nil {
		return nil, err
	}
	var geo [2][]int64
	for i := range geo {
		t, err := need(n, in, i+1)
		if err != nil {
			return nil, err
		}
		if geo[i], err = intsOf(n, t, "shape"); err != nil {
			return nil, err
		}
	}
	g, err := graph.Col2ImGeometryOf(n, geo[0], geo[1])
	if err != nil {
		return nil, err
	}
	r := len(g.Image)
	K := tensor.Shape(g.Block).NumElements()
	L := tensor.Shape(g.Blocks).NumElements()
	xs := x.Shape()
	if xs[1]%K != 0 || xs[2] != L {
		return nil, n.Errorf("%w: input %v does not hold %d-value blocks at %d positions", tensor.ErrShape, xs, K, L)
	}
	N, C := xs[0], xs[1]/K
	img := tensor.Shape(g.Image)
	plane := img.NumElements()
	out := make([]float64, N*C*plane)
	v := toF64s(x)
	ist := tensor.ContiguousStrides(img)
	pos, kk := make([]int64, r), make([]int64, r)
	for b := range N * C {
		for k := range K {
			rem := k
			for d := r - 1; d >= 0; d-- {
				kk[d] = rem % g.Block[d]
				rem /= g.Block[d]
			}
		cols:
			for l := range L {
				rem := l
				for d := r - 1; d >= 0; d-- {
					pos[d] = rem % g.Blocks[d]
					rem /= g.Blocks[d]
				}
				o := int64(0)
				for d := range r {
					p := pos[d]*g.Stride[d] - g.PadB[d] + kk[d]*g.Dil[d]
					if p < 0 || p >= g.Image[d] {
						continue cols
					}
					o += p * ist[d]
				}
				out[b*plane+o] += v[(b*K+k)*L+l]
			}
		}
	}
	y, err := newOut(n, x.Type(), append(tensor.Shape{N, C}, img...))
	if err != nil {
		return nil, err
	}
	storeF64(y, out)
	return one(y), nil
}

// col2ImKernels are the conv family's Col2Im.
func col2ImKernels() map[string]Kernel { return map[string]Kernel{"Col2Im": col2ImKernel} }
