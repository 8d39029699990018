package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// affineGridKernel is AffineGrid: for each output point, theta times its
// normalised base coordinates (x along W first) and 1.
func affineGridKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	th, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	sz, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	size, err := intsOf(n, sz, "size")
	if err != nil {
		return nil, err
	}
	if len(size) != 4 && len(size) != 5 {
		return nil, n.Errorf("%w: size %v, want [N, C, H, W] or [N, C, D, H, W]", driver.ErrInvalidArgument, size)
	}
	d := len(size) - 2
	if !th.Shape().Equal(tensor.Shape{size[0], int64(d), int64(d + 1)}) {
		return nil, n.Errorf("%w: theta %v, want [%d, %d, %d]", tensor.ErrShape, th.Shape(), size[0], d, d+1)
	}
	align := n.Attrs.Int("align_corners", 0) != 0
	spatial := tensor.Shape(size[2:])
	pts := spatial.NumElements()
	t := toF64s(th)
	out := make([]float64, size[0]*pts*int64(d))
	base := make([]float64, d+1)
	for b := range size[0] {
		m := t[b*int64(d*(d+1)) : (b+1)*int64(d*(d+1))]
		for p := range pts {
			// base = (x, y[, z], 1): the last spatial axis is x.
			r := p
			for a := d - 1; a >= 0; a-- {
				base[d-1-a] = graph.AffineGridBase(r%spatial[a], spatial[a], align)
				r /= spatial[a]
			}
			base[d] = 1
			for i := range d {
				var s float64
				for j := range d + 1 {
					s += m[i*(d+1)+j] * base[j]
				}
				out[(b*pts+p)*int64(d)+int64(i)] = s
			}
		}
	}
	y, err := newOut(n, th.Type(), append(append(tensor.Shape{size[0]}, spatial...), int64(d)))
	if err != nil {
		return nil, err
	}
	storeF64(y, out)
	return one(y), nil
}

// affineKernels are the resize family's grid generator.
func affineKernels() map[string]Kernel { return map[string]Kernel{"AffineGrid": affineGridKernel} }
