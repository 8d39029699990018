package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lossGroup is loss_reduce's work-group size: every OpenCL device runs
// groups of 64.
const lossGroup = 64

// lowerLoss runs NegativeLogLikelihoodLoss as one nll_loss launch (the
// losses and weights per target), then for sum and mean one loss_reduce
// group; SoftmaxCrossEntropyLoss first runs log_softmax along axis 1 into
// its log_prob output (or a temporary).
func lowerLoss(b *builder, n *graph.Node) error {
	x, tg, w, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xt := b.val(x).typ
	if xt != tensor.F32 && xt != tensor.F16 {
		return errUnsupported(n, "element type %s (the GPU kernels take f32 and f16)", xt)
	}
	it, err := b.indexType(n, tg)
	if err != nil {
		return err
	}
	red, err := graph.LossReduction(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	s := b.val(x).shape
	N, C := s[0], s[1]
	D := prod(s[2:])
	half := b.halfDefine(x)
	lp := x
	if n.OpType == "SoftmaxCrossEntropyLoss" {
		lp = b.temp(xt, s)
		if len(n.Outputs) > 1 {
			lp = b.out(n, 1)
		}
		if cnt := N * D; cnt > 0 {
			if err := b.emit(n, "log_softmax", half, cnt, slotArg(x), slotArg(lp), uint64(cnt), uint64(C), uint64(D)); err != nil {
				return err
			}
		}
	}
	hasW := int32(0)
	wa := any(b.floatsFor(x, []float32{0}))
	if w >= 0 {
		hasW, wa = 1, slotArg(w)
	}
	ignore, hasIgnore := int64(0), int32(0)
	if _, ok := n.Attrs["ignore_index"]; ok {
		ignore, hasIgnore = n.Attrs.Int("ignore_index", 0), 1
	}
	cnt := N * D
	ws := b.temp(tensor.F32, tensor.Shape{cnt})
	defs := half + " -DIT=" + it
	if red == "none" {
		return b.emit(n, "nll_loss", defs, cnt, slotArg(lp), slotArg(tg), wa, slotArg(y), slotArg(ws), uint64(cnt),
			uint64(C), uint64(D), ignore, hasW, hasIgnore)
	}
	l := b.temp(tensor.F32, tensor.Shape{cnt})
	if err := b.emit(n, "nll_loss", defs+" -DSUMS", cnt, slotArg(lp), slotArg(tg), wa, slotArg(l), slotArg(ws), uint64(cnt),
		uint64(C), uint64(D), ignore, hasW, hasIgnore); err != nil {
		return err
	}
	mean := int32(0)
	if red == "mean" {
		mean = 1
	}
	return b.emitND(n, "loss_reduce", half+" -DWG=64", []int{lossGroup}, []int{lossGroup}, slotArg(l), slotArg(ws), slotArg(y), uint64(cnt), mean)
}

// lossLowerings are the GPU table entries of the loss family.
func lossLowerings() map[string]lowering {
	return map[string]lowering{
		"NegativeLogLikelihoodLoss": {lower: lowerLoss, noF64: true, half: true},
		"SoftmaxCrossEntropyLoss":   {lower: lowerLoss, noF64: true, half: true},
	}
}
