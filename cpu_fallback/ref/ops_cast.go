package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// castKernel is Cast; attribute "to" holds int64(tensor.ElementType).
func castKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	to := tensor.ElementType(n.Attrs.Int("to", 0))
	if !n.Attrs.Has("to") || !to.Valid() {
		return nil, n.Errorf("%w: attribute to=%v is not an element type", driver.ErrInvalidArgument, n.Attrs["to"])
	}
	y, err := x.Cast(to, n.Attrs.Int("saturate", 1) != 0)
	if err != nil {
		return nil, n.Errorf("cast %v to %v: %w", x, to, err)
	}
	if y == x {
		y = x.Clone()
	}
	return one(y), nil
}

// castLikeKernel is CastLike: input 0 converted to input 1's element type.
func castLikeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	like, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	y, err := x.Cast(like.Type(), n.Attrs.Int("saturate", 1) != 0)
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	if y == x {
		y = x.Clone()
	}
	return one(y), nil
}

// castKernels convert element types.
func castKernels() map[string]Kernel {
	return map[string]Kernel{"Cast": castKernel, "CastLike": castLikeKernel}
}
