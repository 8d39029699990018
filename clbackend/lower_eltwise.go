package clbackend

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

func lowerUnary(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	name := lowerings()[n.OpType].kernel
	// p0 and p1 are the op's float attributes (graph's Params).
	var p [2]float32
	copy(p[:], graph.ParamValues(n))
	switch n.OpType {
	case "Gelu":
		if n.Attrs.String("approximate", "none") == "tanh" {
			name = "gelu_tanh"
		}
	case "Clip":
		p = [2]float32{float32(math.Inf(-1)), float32(math.Inf(1))}
		for i := range p {
			v := b.in(n, i+1)
			if v < 0 {
				continue
			}
			f, ok := b.hostFloat(v)
			if !ok {
				return errUnsupported(n, "Clip bound %d is not known at plan time", i+1)
			}
			p[i] = float32(f)
		}
	}
	defines := "-DT=float"
	switch {
	case t == tensor.F32 && b.val(y).typ == tensor.Bool: // IsNaN, IsInf
		defines += " -DTO=uchar"
	case t == tensor.F32:
	case t == tensor.F16 && b.val(y).typ == tensor.F16:
		defines += " -DHALF" // f16 storage, float math
	case n.OpType == "Not" && t == tensor.Bool:
		defines = "-DT=uchar"
	case intUnaryOps[n.OpType] && clType(t) != "" && t != tensor.Bool:
		defines = "-DT=" + clType(t) + " -DIS_INT"
	case t == tensor.F64 && (b.val(y).typ == tensor.F64 || b.val(y).typ == tensor.Bool):
		if _, err := b.numType(n, t); err != nil { // cl_khr_fp64
			return err
		}
		defines = "-DT=double -DIS_DOUBLE"
		if b.val(y).typ == tensor.Bool { // IsNaN, IsInf
			defines += " -DTO=uchar"
		}
	default:
		return errUnsupported(n, "element type %s (the GPU kernel takes f32)", t)
	}
	cnt := int64(b.val(y).shape.NumElements())
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(y), uint64(cnt), p[0], p[1])
}

// intUnaryOps are the unary ops with integer forms in eltwise_unary.cl
// (-DIS_INT); the other ops the op set allows on integers run in f64
// (viaDoubleOps) or are not unary kernels.
var intUnaryOps = map[string]bool{"Relu": true, "Neg": true, "Abs": true, "Sign": true, "BitwiseNot": true}

// binary emits out = name(a, b) with broadcasting.
func (b *builder) binary(n *graph.Node, name string, x, y, out int) error {
	defines, err := b.binaryDefines(n, name, b.val(x).typ, b.val(y).typ, b.val(out).typ)
	if err != nil {
		return err
	}
	os := b.val(out).shape
	table := broadcastMeta(os, b.val(x).shape, b.val(y).shape)
	m := b.meta(table)
	cnt := os.NumElements()
	if cnt == 0 {
		return b.emit(n, name, defines, cnt, slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
	}
	// The broadcast (merged dims and strides) and the types decide the
	// variant; the op does not.
	key := fmt.Sprintf("%v %s %s", table, b.val(x).typ, b.val(out).typ)
	tunable := x == b.in(n, 0) && y == b.in(n, 1) && out == b.out(n, 0) && len(n.Inputs) == 2 && b.val(x).typ.IsFloat()
	return b.choose(n, "eltwise", key, tunable, func(kernels.Variant) string { return "" }, b.profile().runs("eltwise"),
		func(v kernels.Variant) error {
			return b.emitRuns(n, name, defines, v, cnt, table, slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
		})
}

// emitRuns emits one launch of catalogue kernel name over the cnt
// elements of the iteration space table (broadcastMeta's layout: rank,
// dims, strides...) as variant v of a family of element-wise runs: a 1-D
// range of runs of EPT elements (flat), or a 2-D range of runs along the
// innermost axis by rows (rows).
func (b *builder) emitRuns(n *graph.Node, name, defines string, v kernels.Variant, cnt int64, table []int64, args ...any) error {
	global, local := runsGeometry(v, cnt, table)
	return b.emitND(n, name, defines+" "+v.Defines(), global, local, args...)
}

// runsGeometry is the NDRange and work group of variant v of a family of
// element-wise runs over the cnt elements of table (emitRuns).
func runsGeometry(v kernels.Variant, cnt int64, table []int64) (global, local []int) {
	ept, wg := int64(v.Get("EPT")), v.Get("WG")
	if v.Algorithm == "rows" {
		inner := table[table[0]] // the innermost dim
		if wg > 0 {
			local = []int{wg, 1}
		}
		return roundGlobal([]int64{ceilDiv(inner, ept), cnt / inner}, local), local
	}
	return group1D(ceilDiv(cnt, ept), wg)
}

func lowerBinary(b *builder, n *graph.Node) error {
	return b.binary(n, lowerings()[n.OpType].kernel, b.in(n, 0), b.in(n, 1), b.out(n, 0))
}

// lowerVariadic chains Max, Min, Sum and Mean pairwise through
// temporaries; Mean scales the sum at the end.
func lowerVariadic(b *builder, n *graph.Node) error {
	name := lowerings()[n.OpType].kernel
	out := b.out(n, 0)
	ot := b.val(out)
	if len(n.Inputs) == 1 && n.OpType != "Mean" {
		return b.copyBroadcast(n, b.in(n, 0), out)
	}
	acc := b.in(n, 0)
	k := len(n.Inputs)
	for i := 1; i < k; i++ {
		dst := out
		if i < k-1 || n.OpType == "Mean" {
			dst = b.temp(ot.typ, ot.shape)
		}
		if err := b.binary(n, name, acc, b.in(n, i), dst); err != nil {
			return err
		}
		acc = dst
	}
	if n.OpType == "Mean" {
		if ot.typ != tensor.F32 && ot.typ != tensor.F64 {
			return errUnsupported(n, "Mean of %s", ot.typ) // f16 and bf16 run in f32 (widerType)
		}
		s, err := tensor.FromFloat64s(ot.typ, tensor.Shape{}, []float64{1 / float64(k)})
		if err != nil {
			return n.Errorf("Mean: %w", err)
		}
		sv := b.newValue(ot.typ, tensor.Shape{}, s)
		if k == 1 {
			return b.binary(n, "mul", b.in(n, 0), sv, out)
		}
		return b.binary(n, "mul", acc, sv, out)
	}
	return nil
}

// binaryDefines returns the eltwise_binary.cl defines of out = name(x, y)
// for operands of type t and an output of type to: f16 is read and written
// as storage and computed in float, f64 needs cl_khr_fp64.
func (b *builder) binaryDefines(n *graph.Node, name string, tx, ty, to tensor.ElementType) (string, error) {
	if tx != ty {
		return "", errUnsupported(n, "operand types %s and %s (the GPU kernel needs equal types)", tx, ty)
	}
	var defines string
	switch tx {
	case tensor.F16:
		defines = "-DT=float -DIS_FLOAT -DHALF_IN"
		if to == tensor.F16 {
			defines += " -DHALF_OUT"
		} else {
			ot, err := b.numType(n, to)
			if err != nil {
				return "", err
			}
			defines += " -DTO=" + ot
		}
	case tensor.BF16:
		return "", errUnsupported(n, "element type bf16 (the GPU kernels compute f16, f32 and f64)")
	default:
		ct, err := b.numType(n, tx)
		if err != nil {
			return "", err
		}
		defines = "-DT=" + ct
		if tx.IsFloat() {
			defines += " -DIS_FLOAT"
		}
		if to != tx {
			ot, err := b.numType(n, to)
			if err != nil {
				return "", err
			}
			defines += " -DTO=" + ot
		}
	}
	if !tx.IsFloat() && name == "pow" {
		return "", errUnsupported(n, "element type %s (the GPU kernel takes float types)", tx)
	}
	if name == "mod" {
		fmod := n.Attrs.Int("fmod", 0) == 1
		switch {
		case tx.IsFloat() && !fmod:
			return "", errUnsupported(n, "Mod with fmod=0 on %s (ONNX requires fmod=1 for float types)", tx)
		case !tx.IsFloat() && fmod:
			defines += " -DINT_FMOD"
		}
	}
	return defines, nil
}

// lowerPow runs Pow of equal float types on eltwise_binary and every other
// combination of numeric types (integers, or a base and an exponent of
// different types) on eltwise_pow.cl; the output has the base's type.
func lowerPow(b *builder, n *graph.Node) error {
	x, e, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	tx, te := b.val(x).typ, b.val(e).typ
	if tx == te && tx.IsFloat() {
		return b.binary(n, "pow", x, e, y)
	}
	for i, t := range []tensor.ElementType{tx, te} {
		if !t.IsInteger() && t != tensor.F32 && t != tensor.F64 && (i > 0 || t != tensor.F16) {
			return errUnsupported(n, "operand type %s (the GPU kernel takes integers, f32 and f64, and an f16 base)", t)
		}
	}
	half := ""
	if tx == tensor.F16 {
		// f16 storage of the base and the output (halfOps keeps the
		// exponent in its own type), computed in TC.
		tx, half = tensor.F32, " -DHALF"
	}
	ta, err := b.numType(n, tx)
	if err != nil {
		return err
	}
	tb, err := b.numType(n, te)
	if err != nil {
		return err
	}
	tc := "float"
	if tx == tensor.F64 || te == tensor.F64 {
		tc = "double"
	}
	defines := "-DTA=" + ta + " -DTB=" + tb + " -DTC=" + tc + half
	if tx.IsInteger() {
		defines += " -DA_INT"
	}
	if te.IsInteger() {
		defines += " -DB_INT"
	}
	os := b.val(y).shape
	cnt := os.NumElements()
	if cnt == 0 {
		return nil
	}
	m := b.meta(broadcastMeta(os, b.val(x).shape, b.val(e).shape))
	return b.emit(n, "pow_mixed", defines, cnt, slotArg(x), slotArg(e), slotArg(y), uint64(cnt), m)
}

// eltwiseLowerings are the GPU table entries (see lowering) of the element-wise
// arithmetic and math ops with their own entry (the unary ones come from
// unaryOps).
func eltwiseLowerings() map[string]lowering {
	return map[string]lowering{
		"Add": {lower: lowerBinary, kernel: "add", half: true}, "Sub": {lower: lowerBinary, kernel: "sub", half: true},
		"Mul": {lower: lowerBinary, kernel: "mul", half: true}, "Div": {lower: lowerBinary, kernel: "div", half: true},
		"Mod": {lower: lowerBinary, kernel: "mod"}, "Pow": {lower: lowerPow, half: true, f32: []int{1}},
		"Max": {lower: lowerVariadic, kernel: "max"}, "Min": {lower: lowerVariadic, kernel: "min"},
		"Sum": {lower: lowerVariadic, kernel: "add"}, "Mean": {lower: lowerVariadic, kernel: "add"},
	}
}
