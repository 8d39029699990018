package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// centerCropPadKernel is CenterCropPad: Pad (constant zeros) with the
// pads graph.CenterCropPads gives, negative where it crops.
func centerCropPadKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	s, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	target, err := intsOf(n, s, "shape")
	if err != nil {
		return nil, err
	}
	begin, end, err := graph.CenterCropPads(n, x.Shape(), target)
	if err != nil {
		return nil, err
	}
	pads, err := tensor.FromI64(tensor.Shape{int64(2 * len(begin))}, append(begin, end...))
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	pad := &graph.Node{Name: n.Name, OpType: "Pad", Attrs: graph.Attrs{}, Outputs: n.Outputs}
	return padKernel(pad, []*tensor.Tensor{x, pads})
}

// cropKernels are the movement family's center crop.
func cropKernels() map[string]Kernel { return map[string]Kernel{"CenterCropPad": centerCropPadKernel} }
