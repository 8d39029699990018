package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// This file holds the element-type side of the lowerings: f64 through
// cl_khr_fp64, f16 and bf16 storage, Cast/CastLike between every numeric
// type, Pow across types and Clip of integers.

// fp64Extension is the OpenCL extension f64 kernels need.
const fp64Extension = "cl_khr_fp64"

// numType returns the OpenCL C type kernels compute element type t in: the
// types of clType, and double for f64 on a device with cl_khr_fp64. Any
// other type is an errUnsupported; for f64 on a device without the
// extension it names the extension and the device.
func (b *builder) numType(n *graph.Node, t tensor.ElementType) (string, error) {
	if t == tensor.F64 {
		if !b.c.dev.fp64 {
			return "", errUnsupported(n, "element type f64 needs the OpenCL extension %s, which %s (%s) does not report; run the model on the CPU device or with HETERO:GPU,CPU",
				fp64Extension, b.c.dev.name(), b.c.dev.fullName)
		}
		return "double", nil
	}
	if s := clType(t); s != "" {
		return s, nil
	}
	return "", errUnsupported(n, "element type %s", t)
}

// floatDefines returns the type defines of a kernel written for f32 that
// also builds for f64 with -DT=double and for f16 storage with -DHALF
// (half.clh): "" for f32.
func (b *builder) floatDefines(n *graph.Node, t tensor.ElementType) (string, error) {
	switch t {
	case tensor.F32:
		return "", nil
	case tensor.F16:
		return "-DHALF", nil
	case tensor.F64:
		if _, err := b.numType(n, t); err != nil {
			return "", err
		}
		return "-DT=double", nil
	}
	return "", errUnsupported(n, "element type %s (the GPU kernel takes f32, f16, and f64 where the device has %s)", t, fp64Extension)
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
	if !tx.IsFloat() && (name == "pow" || name == "prelu") {
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

// lowerPow runs Pow of equal float types on eltwise_binary and every other
// combination of numeric types (integers, or a base and an exponent of
// different types) on pow.cl; the output has the base's type.
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

// clipTypeOK reports whether a GPU lowering of Clip exists for t: f32 on
// the unary kernel, other numeric types (f16, f64, integers) as Max and
// Min with the bound inputs.
func clipTypeOK(t tensor.ElementType) bool {
	return t == tensor.F32 || t == tensor.F16 || t == tensor.F64 || t.IsInteger()
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
