package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerCast converts between the numeric types, bool, f16, bf16 and the
// 8-bit floats (f64 where the device has cl_khr_fp64; saturate=0 makes
// out-of-range values infinite or NaN in an 8-bit float, as on the CPU). CastLike is the same op with the
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
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		defines = "-DSRC_" + f8Define(from)
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
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		defines += " -DDST_" + f8Define(to)
		if n.Attrs.Int("saturate", 1) == 0 {
			defines += " -DF8_NOSAT"
		}
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

// f8Define is the cast.cl define (after -DSRC_ or -DDST_) of an 8-bit
// float type: F8=<f8.clh's format code>.
func f8Define(t tensor.ElementType) string {
	return fmt.Sprintf("F8=%d", 1+int(t-tensor.F8E4M3FN))
}

// castLowerings are the GPU table entries (see lowering) of the element type
// conversions.
func castLowerings() map[string]lowering {
	return map[string]lowering{
		"Cast": {lower: lowerCast}, "CastLike": {lower: lowerCast},
	}
}
