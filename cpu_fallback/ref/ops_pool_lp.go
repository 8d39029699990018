package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// lpPoolKernel is LpPool: the p-norm of each window (sumPool).
func lpPoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return sumPool(n, in, float64(n.Attrs.Int("p", 2)))
}

// globalLpPoolKernel is GlobalLpPool: the p-norm of each plane.
func globalLpPoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p := float64(n.Attrs.Int("p", 2))
	return globalPool(n, in, func(v []float32) float32 {
		var s float64
		for _, x := range v {
			s += math.Pow(math.Abs(float64(x)), p)
		}
		return float32(math.Pow(s, 1/p))
	})
}

// maxUnpoolKernel is MaxUnpool: a zero tensor of the output shape with X's
// values at the flat indices I.
func maxUnpoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 3)
	if err != nil {
		return nil, err
	}
	idx, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if idx.NumElements() != x.NumElements() {
		return nil, n.Errorf("%w: indices %v do not match input %v", tensor.ErrShape, idx.Shape(), x.Shape())
	}
	var out []int64
	if s := opt(in, 2); s != nil {
		if out, err = intsOf(n, s, "output_shape"); err != nil {
			return nil, err
		}
	}
	shape, err := graph.UnpoolShape(n, x.Shape(), out)
	if err != nil {
		return nil, err
	}
	def, err := graph.UnpoolShape(n, x.Shape(), nil)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, x.Type(), shape)
	if err != nil {
		return nil, err
	}
	sz := int64(x.Type().Size())
	src, dst := x.Bytes(), y.Bytes()
	for i, at := range toI64s(idx) {
		o, ok := graph.UnpoolIndex(at, def, shape)
		if !ok {
			return nil, n.Errorf("%w: index %d of element %d is outside the output %v", driver.ErrInvalidArgument, at, i, shape)
		}
		copy(dst[o*sz:(o+1)*sz], src[int64(i)*sz:int64(i+1)*sz])
	}
	return one(y), nil
}

// lpPoolKernels are the pool family's p-norm poolings and MaxUnpool.
func lpPoolKernels() map[string]Kernel {
	return map[string]Kernel{
		"LpPool":       nnFloatKernel(lpPoolKernel),
		"GlobalLpPool": nnFloatKernel(globalLpPoolKernel),
		"MaxUnpool":    maxUnpoolKernel,
	}
}
