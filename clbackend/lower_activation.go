package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func lowerSoftmax(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	defines := b.halfDefine(x)
	switch t := b.val(x).typ; t {
	case tensor.F32, tensor.F16:
	case tensor.F64:
		if _, err := b.numType(n, t); err != nil { // cl_khr_fp64
			return err
		}
		defines = "-DIS_DOUBLE"
	default:
		return errUnsupported(n, "element type %s", t)
	}
	ax := n.Attrs.Int("axis", -1)
	if ax < 0 {
		ax += int64(len(s))
	}
	outer, inner := prod(s[:ax]), prod(s[ax+1:])
	name := lowerings()[n.OpType].kernel
	var axisLen int64 = 1
	if len(s) > 0 {
		axisLen = s[ax]
	}
	cnt := outer * inner
	if s.NumElements() == 0 {
		return nil
	}
	if inner == 1 && axisLen >= softmaxRowsMin && axisLen < 1<<31 && defines != "-DIS_DOUBLE" {
		// Along the last axis: a work group per row (softmax_rows).
		vw, _ := b.profile().softmaxRows(axisLen, 1)
		rowDefines := fmt.Sprintf("%s -DVW=%d", defines, vw)
		limit, err := b.groupLimit(n, name+"_rows", rowDefines)
		if err != nil {
			return err
		}
		_, group := b.profile().softmaxRows(axisLen, limit)
		return b.emitND(n, name+"_rows", rowDefines, []int{int(outer) * group}, []int{group},
			slotArg(x), slotArg(y), uint64(outer), int32(axisLen))
	}
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(axisLen), uint64(inner))
}

// softmaxRowsMin is the shortest last axis Softmax and LogSoftmax run
// by rows (softmax_rows): a shorter row is less than a vector of work.
const softmaxRowsMin = 16

// clipTypeOK reports whether a GPU lowering of Clip exists for t: f32 on
// the unary kernel, other numeric types (f16, f64, integers) as Max and
// Min with the bound inputs, bf16 in f32 (lowerWidened).
func clipTypeOK(t tensor.ElementType) bool {
	return t == tensor.F32 || t == tensor.F16 || t == tensor.F64 || t == tensor.BF16 || t.IsInteger()
}

// lowerClip runs f32 and f16 Clip with bounds known at plan time on the
// unary kernel, and every other numeric type, or runtime bounds, as Max
// then Min with the bound inputs
// (runtime scalars of the input's type); without bounds it is a copy.
func lowerClip(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	_, loKnown := b.hostFloat(b.in(n, 1))
	_, hiKnown := b.hostFloat(b.in(n, 2))
	if (t == tensor.F32 || t == tensor.F16) && (loKnown || b.in(n, 1) < 0) && (hiKnown || b.in(n, 2) < 0) {
		return lowerUnary(b, n)
	}
	if !clipTypeOK(t) {
		return errUnsupported(n, "element type %s", t)
	}
	lo, hi := b.in(n, 1), b.in(n, 2)
	switch {
	case lo < 0 && hi < 0:
		b.alias(y, x)
		return nil
	case lo >= 0 && hi >= 0:
		tmp := b.temp(t, b.val(y).shape)
		if err := b.binary(n, "max", x, lo, tmp); err != nil {
			return err
		}
		return b.binary(n, "min", tmp, hi, y)
	case lo >= 0:
		return b.binary(n, "max", x, lo, y)
	default:
		return b.binary(n, "min", x, hi, y)
	}
}

// lowerHardmax writes 1 at the first maximum of every fibre along the axis.
func lowerHardmax(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	defines := ""
	switch t := b.val(x).typ; t {
	case tensor.F32:
	case tensor.F64:
		d, err := b.floatDefines(n, t) // cl_khr_fp64
		if err != nil {
			return err
		}
		defines = d
	default:
		return errUnsupported(n, "element type %s (the GPU kernel takes f32 and f64)", t) // f16, bf16: widerType
	}
	s := b.val(x).shape
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	outer, inner := prod(s[:ax]), prod(s[ax+1:])
	if cnt := outer * inner; cnt > 0 && s[ax] > 0 {
		return b.emit(n, "hardmax", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(s[ax]), uint64(inner))
	}
	return nil
}

// activationLowerings are the GPU table entries (see lowering) of the
// activations that are not plain unary kernels.
func activationLowerings() map[string]lowering {
	return map[string]lowering{
		"Clip":    {lower: lowerClip, kernel: "clip", half: true, check: clipCheck},
		"PRelu":   {lower: lowerBinary, kernel: "prelu"},
		"Softmax": {lower: lowerSoftmax, kernel: "softmax", half: true}, "LogSoftmax": {lower: lowerSoftmax, kernel: "log_softmax", half: true},
		"Hardmax": {lower: lowerHardmax},
	}
}
