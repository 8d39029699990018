package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerEyeLike makes the output a plan constant: ones on diagonal k of a
// 2-D tensor of the input's shape, which is known at plan time.
func lowerEyeLike(b *builder, n *graph.Node) error {
	yv := b.val(b.out(n, 0))
	s := yv.shape
	if len(s) != 2 {
		return errUnsupported(n, "rank %d input (EyeLike takes 2-D)", len(s))
	}
	k := n.Attrs.Int("k", 0)
	v := make([]float64, s.NumElements())
	for i := int64(0); i < s[0]; i++ {
		if j := i + k; j >= 0 && j < s[1] {
			v[i*s[1]+j] = 1
		}
	}
	eye, err := tensor.FromFloat64s(yv.typ, s, v)
	if err != nil {
		return errUnsupported(n, "output type %s: %v", yv.typ, err)
	}
	yv.host = eye
	return nil
}

// shapeLowerings are the GPU table entries (see lowering) of the ops that make
// values from shapes.
func shapeLowerings() map[string]lowering {
	onHost := "a shape computation the planner folds on the host once shapes (and host inputs) are known"
	return map[string]lowering{
		"Shape": {host: onHost, half: true}, "Size": {host: onHost, half: true},
		"ConstantOfShape": {host: onHost}, "Range": {host: onHost}, "EyeLike": {lower: lowerEyeLike},
	}
}
