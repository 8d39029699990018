package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// channelNorm reads a normalisation over NC... data of rank >= minRank:
// the half define, the input and output values, the shape and the elements
// per channel plane.
func (b *builder) channelNorm(n *graph.Node, minRank int) (half string, x, y int, s tensor.Shape, inner int64, err error) {
	if b.val(b.in(n, 0)).typ == tensor.F64 {
		half, err = b.uniformF64(n) // norm.cl's -DDOUBLE
	} else {
		half, err = b.uniformFloat(n)
	}
	if err != nil {
		return "", 0, 0, nil, 0, err
	}
	x, y = b.in(n, 0), b.out(n, 0)
	if s = b.val(x).shape; len(s) < minRank {
		return "", 0, 0, nil, 0, errUnsupported(n, "input of rank %d", len(s))
	}
	return half, x, y, s, prod(s[2:]), nil
}

// uniformF64 returns norm.cl's -DDOUBLE when every input of n is f64 and
// the device has cl_khr_fp64.
func (b *builder) uniformF64(n *graph.Node) (string, error) {
	for i := range n.Inputs {
		if v := b.in(n, i); v >= 0 && b.val(v).typ != tensor.F64 {
			return "", errUnsupported(n, "input %d of type %s (the GPU kernel takes f32, f16 or f64 throughout)", i, b.val(v).typ)
		}
	}
	if _, err := b.numType(n, tensor.F64); err != nil {
		return "", err
	}
	return "-DDOUBLE", nil
}

func lowerBatchNorm(b *builder, n *graph.Node) error {
	half, x, y, s, inner, err := b.channelNorm(n, 2)
	if err != nil {
		return err
	}
	cnt := s.NumElements()
	return b.emit(n, "batch_norm", half, cnt, slotArg(x), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)), slotArg(b.in(n, 3)), slotArg(b.in(n, 4)),
		slotArg(y), uint64(cnt), uint64(s[1]), uint64(inner), n.Attrs.Float("epsilon", 1e-5))
}

func lowerInstanceNorm(b *builder, n *graph.Node) error {
	half, x, y, s, inner, err := b.channelNorm(n, 3)
	if err != nil {
		return err
	}
	cnt := s[0] * s[1]
	return b.emit(n, "instance_norm", half, cnt, slotArg(x), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)), slotArg(y),
		uint64(cnt), uint64(s[1]), uint64(inner), n.Attrs.Float("epsilon", 1e-5))
}

// lowerLayerNorm normalises over the axes from axis on, with the optional
// Mean and InvStdDev outputs (f32, one value per row).
func lowerLayerNorm(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	x, sc, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	s := b.val(x).shape
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	outer, inner := prod(s[:ax]), prod(s[ax:])
	if b.val(sc).shape.NumElements() != inner || (bias >= 0 && b.val(bias).shape.NumElements() != inner) {
		return errUnsupported(n, "scale or bias broadcast over the normalised axes")
	}
	barg, has := optArg(bias, sc)
	eps := n.Attrs.Float("epsilon", 1e-5)
	if outer == 0 {
		return nil
	}
	if len(n.Outputs) == 1 {
		return b.emit(n, "layer_norm", half, outer, slotArg(x), slotArg(sc), barg, slotArg(y), uint64(outer), uint64(inner), eps, uint32(has))
	}
	for i := 1; i < len(n.Outputs); i++ {
		if t := b.val(b.out(n, i)).typ; t != tensor.F32 {
			return errUnsupported(n, "output %d of type %s (the GPU kernel writes f32 statistics)", i, t)
		}
	}
	mean := b.out(n, 1)
	inv := b.temp(tensor.F32, b.val(mean).shape)
	if len(n.Outputs) > 2 {
		inv = b.out(n, 2)
	}
	return b.emit(n, "layer_norm_stats", half, outer, slotArg(x), slotArg(sc), barg, slotArg(y), slotArg(mean), slotArg(inv),
		uint64(outer), uint64(inner), eps, uint32(has))
}

// normLowerings are the GPU table entries (see lowering) of the normalisations.
func normLowerings() map[string]lowering {
	return map[string]lowering{
		"LRN": {lower: lowerLRN, noF64: true, half: true},
		// LayerNormalization's statistics stay f32.
		"BatchNormalization": {lower: lowerBatchNorm, half: true}, "InstanceNormalization": {lower: lowerInstanceNorm, half: true},
		"LayerNormalization": {lower: lowerLayerNorm, half: true},
	}
}

// lowerLRN normalises each element by the squares of its channel window.
func lowerLRN(b *builder, n *graph.Node) error {
	half, x, y, s, inner, err := b.channelNorm(n, 2)
	if err != nil {
		return err
	}
	size := n.Attrs.Int("size", 0)
	if size < 1 {
		return errUnsupported(n, "size %d", size)
	}
	cnt := s.NumElements()
	p := b.floats([]float32{graph.ParamValue(n, "alpha") / float32(size), graph.ParamValue(n, "beta"), graph.ParamValue(n, "bias")})
	return b.emit(n, "lrn", half, cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(s[1]), uint64(inner),
		int32((size-1)/2), int32(size/2), p)
}
