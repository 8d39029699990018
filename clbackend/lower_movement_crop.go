package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerCenterCropPad runs CenterCropPad as a constant-zero pad whose pads
// (negative where it crops) the planner computes from the shapes.
func lowerCenterCropPad(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	if t == tensor.String || t.Bits() == 4 {
		return errUnsupported(n, "element type %s", t)
	}
	target, ok := b.hostInts(b.in(n, 1))
	if !ok {
		return errUnsupported(n, "shape not known at plan time")
	}
	begin, _, err := graph.CenterCropPads(n, b.val(x).shape, target)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	return b.padLaunch(n, x, y, begin, 0, 0)
}

// cropLowerings are the GPU table entries of the movement family's center
// crop.
func cropLowerings() map[string]lowering {
	return map[string]lowering{"CenterCropPad": {lower: lowerCenterCropPad}}
}
