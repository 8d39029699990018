package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerCast converts between the numeric types, bool, f16 and bf16 (f64
// where the device has cl_khr_fp64). CastLike is the same op with the
// output type taken from its second input, which the kernel does not read.
func lowerCast(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	from, to := b.val(x).typ, b.val(y).typ
	if from == to {
		b.alias(y, x)
		return nil
	}
	var defines string
	switch from {
	case tensor.F16:
		defines = "-DSRC_HALF"
	case tensor.BF16:
		defines = "-DSRC_BF16"
	default:
		ct, err := b.numType(n, from)
		if err != nil {
			return err
		}
		defines = "-DSRC_T=" + ct
	}
	switch to {
	case tensor.F16:
		defines += " -DDST_HALF"
	case tensor.BF16:
		defines += " -DDST_BF16"
	case tensor.Bool:
		defines += " -DDST_T=uchar -DDST_BOOL"
	default:
		ct, err := b.numType(n, to)
		if err != nil {
			return err
		}
		defines += " -DDST_T=" + ct
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "cast", defines, cnt, slotArg(x), slotArg(y), uint64(cnt))
}

// castLowerings are the GPU table entries (see lowering) of the element type
// conversions.
func castLowerings() map[string]lowering {
	return map[string]lowering{
		"Cast": {lower: lowerCast}, "CastLike": {lower: lowerCast},
	}
}
