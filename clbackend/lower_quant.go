package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// exactDivision is the build option of the quantization kernels that makes
// their float division correctly rounded, as the CPU reference's is: the
// OpenCL option where the device supports it
// (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT), else the quotient in double
// (quant.clh's DIV_F64: a double quotient rounds to the correctly rounded
// float) where it has cl_khr_fp64, else none (a quotient may then be one
// float off, which moves a value on a rounding tie by one step).
func (b *builder) exactDivision() string {
	switch {
	case b.c.dev.exactDiv:
		return " -cl-fp32-correctly-rounded-divide-sqrt"
	case b.c.dev.fp64:
		return " -DDIV_F64"
	}
	return ""
}

// quantDefines are the -DQT, -DQMIN and -DQMAX (with prefix instead of Q:
// "Y" gives YT) of quantized type t.
func quantDefines(n *graph.Node, prefix string, t tensor.ElementType) (string, error) {
	lo, hi, ok := t.IntRange()
	ct := clType(t)
	if !ok || ct == "" || t.Size() > 2 {
		return "", errUnsupported(n, "quantized type %s", t)
	}
	return fmt.Sprintf(" -D%sT=%s -DQMIN=%d -DQMAX=%d", prefix, ct, lo, hi), nil
}

// scaleDefine is the -DS_HALF or -DS_BF16 of a scale (and dequantized
// value) of type t; f32 needs none.
func scaleDefine(n *graph.Node, t tensor.ElementType) (string, error) {
	switch t {
	case tensor.F32:
		return "", nil
	case tensor.F16:
		return " -DS_HALF", nil
	case tensor.BF16:
		return " -DS_BF16", nil
	}
	return "", errUnsupported(n, "scale of type %s (the GPU kernels take f32, f16 and bf16)", t)
}

// quantGeometry is quant.cl's table m of node n over data of shape data
// and scale of shape scale.
func quantGeometry(n *graph.Node, data, scale tensor.Shape) ([]int64, error) {
	g, err := graph.QuantGeometry(n, data, scale)
	if err != nil {
		return nil, err
	}
	if g.Axis < 0 {
		return []int64{0, 1, 1, 1, 1}, nil
	}
	inner, dim := prod(data[g.Axis+1:]), data[g.Axis]
	if g.Block == 0 {
		return []int64{1, inner, dim, 1, dim}, nil
	}
	return []int64{2, inner, dim, g.Block, (dim + g.Block - 1) / g.Block}, nil
}

// lowerQuantizeLinear runs QuantizeLinear (f32, f16, bf16 or i32 data) in
// every geometry, one element per work item.
func lowerQuantizeLinear(b *builder, n *graph.Node) error {
	x, s, z, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	defs, err := quantDefines(n, "Q", b.val(y).typ)
	if err != nil {
		return err
	}
	switch t := b.val(x).typ; t {
	case tensor.F32:
	case tensor.F16:
		defs += " -DX_HALF"
	case tensor.BF16:
		defs += " -DX_BF16"
	case tensor.I32:
		defs += " -DX_INT"
	default:
		return errUnsupported(n, "input of type %s", t)
	}
	sd, err := scaleDefine(n, b.val(s).typ)
	if err != nil {
		return err
	}
	return b.quantLaunch(n, "quantize_linear", defs+sd, x, s, z, y)
}

// lowerDequantizeLinear runs DequantizeLinear (8- and 16-bit, 4-bit and
// i32 data) in every geometry, one element per work item.
func lowerDequantizeLinear(b *builder, n *graph.Node) error {
	x, s, z, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xt := b.val(x).typ
	var defs string
	if xt == tensor.I32 {
		defs = " -DQT=int -DQMIN=0 -DQMAX=0" // the range is unused
	} else {
		var err error
		if defs, err = quantDefines(n, "Q", xt); err != nil {
			return err
		}
	}
	sd, err := scaleDefine(n, b.val(s).typ)
	if err != nil {
		return err
	}
	return b.quantLaunch(n, "dequantize_linear", defs+sd, x, s, z, y)
}

// quantLaunch emits quantize_linear or dequantize_linear over x with
// scale s and zero point z (< 0: none) into y.
func (b *builder) quantLaunch(n *graph.Node, name, defs string, x, s, z, y int) error {
	m, err := quantGeometry(n, b.val(x).shape, b.val(s).shape)
	if err != nil {
		return err
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	args := []any{slotArg(x), slotArg(s)}
	if z >= 0 {
		defs += " -DHAS_ZP"
		args = append(args, slotArg(z))
	}
	args = append(args, slotArg(y), uint64(cnt), b.meta(m))
	items := cnt
	if name == "quantize_linear" && m[0] == 0 && b.val(x).typ == tensor.F32 {
		// One scale over f32 data: the device's vector width of elements
		// per item, in vector math.
		vw := b.profile().vw()
		defs, items = defs+fmt.Sprintf(" -DQV=%d", vw), ceilDiv(cnt, int64(vw))
	}
	return b.emit(n, name, defs+b.exactDivision(), items, args...)
}

// dynamicGroups is the number of partial ranges quant_minmax folds n
// elements into: contiguous runs of at least 4096 elements, at most 1024
// of them.
func dynamicGroups(n int64) int64 { return max(1, min(ceilDiv(n, 4096), 1024)) }

// lowerDynamicQuantizeLinear folds x's range into partial pairs
// (quant_minmax), folds those into the scale and zero point outputs
// (quant_dynamic_params, one item) and quantizes x with them
// (quantize_linear, -DDYNAMIC): three launches, nothing read back.
func lowerDynamicQuantizeLinear(b *builder, n *graph.Node) error {
	x, y, s, z := b.in(n, 0), b.out(n, 0), b.out(n, 1), b.out(n, 2)
	if t := b.val(x).typ; t != tensor.F32 {
		return errUnsupported(n, "input of type %s (DynamicQuantizeLinear takes f32)", t)
	}
	cnt := b.val(x).shape.NumElements()
	g := dynamicGroups(cnt)
	part := b.temp(tensor.F32, tensor.Shape{2 * g})
	div := b.exactDivision()
	if err := b.emit(n, "quant_minmax", "", g, slotArg(x), slotArg(part), uint64(cnt), uint64(g)); err != nil {
		return err
	}
	if err := b.emit(n, "quant_dynamic_params", div, 1, slotArg(part), slotArg(s), slotArg(z), uint64(g)); err != nil {
		return err
	}
	if cnt == 0 {
		return nil
	}
	vw := b.profile().vw()
	return b.emit(n, "quantize_linear", fmt.Sprintf(" -DQT=uchar -DQMIN=0 -DQMAX=255 -DHAS_ZP -DDYNAMIC -DQV=%d", vw)+div, ceilDiv(cnt, int64(vw)),
		slotArg(x), slotArg(s), slotArg(z), slotArg(y), uint64(cnt), b.meta([]int64{0, 1, 1, 1, 1}))
}

// int8Defines are -D<name>=char or uchar for the 8-bit operands (input i
// named names[i]) of an integer product or convolution.
func (b *builder) int8Defines(n *graph.Node, names map[int]string) (string, error) {
	var defs string
	for _, i := range []int{0, 1, 3} {
		name, ok := names[i]
		if !ok {
			continue
		}
		t := b.val(b.in(n, i)).typ
		if t != tensor.I8 && t != tensor.U8 {
			return "", errUnsupported(n, "input %d of type %s (want i8 or u8)", i, t)
		}
		defs += " -D" + name + "=" + clType(t)
	}
	return defs, nil
}

// requantDefines checks the scales of QLinearConv and QLinearMatMul
// (inputs 1, 4 and 6: f32) and returns the defines of their
// requantization into output y.
func (b *builder) requantDefines(n *graph.Node, y int) (string, error) {
	for _, i := range []int{1, 4, 6} {
		if t := b.val(b.in(n, i)).typ; t != tensor.F32 {
			return "", errUnsupported(n, "scale (input %d) of type %s (the GPU kernel takes f32 scales)", i, t)
		}
	}
	dy, err := quantDefines(n, "Y", b.val(y).typ)
	if err != nil {
		return "", err
	}
	return " -DREQUANT" + dy + b.exactDivision(), nil
}

// zeroOf is the argument of an optional zero point: its value, or a
// one-element zero of type t.
func (b *builder) zeroOf(v int, t tensor.ElementType) slotArg {
	if v >= 0 {
		return slotArg(v)
	}
	z, _ := tensor.New(t, tensor.Shape{1})
	return slotArg(b.newValue(t, z.Shape(), z))
}

// perChannel is 1 when value v (a zero point or a scale) holds more than
// one element.
func (b *builder) perChannel(v int) int64 {
	if v >= 0 && b.val(v).shape.NumElements() > 1 {
		return 1
	}
	return 0
}

// lowerIntegerConv runs ConvInteger (i32 out) and QLinearConv
// (requantized) on 1-D and 2-D data with conv_integer, one output per
// work item.
func lowerIntegerConv(b *builder, n *graph.Node) error {
	qlinear := n.OpType == "QLinearConv"
	xi, wi, xz, wz := 0, 1, 2, 3
	if qlinear {
		xi, wi, xz, wz = 0, 3, 2, 5
	}
	x, w, y := b.in(n, xi), b.in(n, wi), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	defs, err := b.int8Defines(n, map[int]string{xi: "XT", wi: "WT"})
	if err != nil {
		return err
	}
	g := conv2DOf(n, xs, ws, ys)
	xzp, wzp := b.in(n, xz), b.in(n, wz)
	m := append(g.meta(0), b.perChannel(wzp), 0)
	args := []any{slotArg(x), slotArg(w), b.zeroOf(xzp, b.val(x).typ), b.zeroOf(wzp, b.val(w).typ)}
	if qlinear {
		rq, err := b.requantDefines(n, y)
		if err != nil {
			return err
		}
		barg, hasBias := optArg(b.in(n, 8), b.in(n, 1))
		m[16] = hasBias
		m[18] = b.perChannel(b.in(n, 4))
		defs += rq
		args = append(args, barg, slotArg(b.in(n, 1)), slotArg(b.in(n, 4)), slotArg(b.in(n, 6)), slotArg(b.in(n, 7)))
	}
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	args = append(args, slotArg(y), uint64(cnt), b.meta(m))
	return b.emit(n, "conv_integer", defs, cnt, args...)
}

// lowerIntegerMatMul runs MatMulInteger (i32 out) and QLinearMatMul
// (requantized) over broadcast batches with matmul_integer, one output
// per work item.
func lowerIntegerMatMul(b *builder, n *graph.Node) error {
	qlinear := n.OpType == "QLinearMatMul"
	ai, bi, az, bz := 0, 1, 2, 3
	if qlinear {
		ai, bi, az, bz = 0, 3, 2, 5
	}
	a, bb, y := b.in(n, ai), b.in(n, bi), b.out(n, 0)
	g, err := matMulGeom(n, b.val(a).shape, b.val(bb).shape)
	if err != nil {
		return err
	}
	defs, err := b.int8Defines(n, map[int]string{ai: "AT", bi: "BT"})
	if err != nil {
		return err
	}
	azp, bzp := b.in(n, az), b.in(n, bz)
	m := []int64{g.M, g.N, g.K, int64(len(g.batch))}
	m = append(m, g.batch...)
	m = append(m, matrixStrides(g.aBatch, g.M*g.K)...)
	m = append(m, matrixStrides(g.bBatch, g.K*g.N)...)
	m = append(m, b.perChannel(azp), b.perChannel(bzp), 0, 0)
	args := []any{slotArg(a), slotArg(bb), b.zeroOf(azp, b.val(a).typ), b.zeroOf(bzp, b.val(bb).typ)}
	if qlinear {
		rq, err := b.requantDefines(n, y)
		if err != nil {
			return err
		}
		q := len(g.batch)
		m[4+3*q+2], m[4+3*q+3] = b.perChannel(b.in(n, 1)), b.perChannel(b.in(n, 4))
		defs += rq
		args = append(args, slotArg(b.in(n, 1)), slotArg(b.in(n, 4)), slotArg(b.in(n, 6)), slotArg(b.in(n, 7)))
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	args = append(args, slotArg(y), uint64(cnt), b.meta(m))
	return b.emit(n, "matmul_integer", defs, cnt, args...)
}

// matrixStrides turns element batch strides (of matrices of size elements)
// into strides in matrices.
func matrixStrides(s []int64, size int64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		if size > 0 {
			out[i] = v / size
		}
	}
	return out
}

// quantLowerings are the GPU table entries (see lowering) of the
// quantization ops.
func quantLowerings() map[string]lowering {
	return map[string]lowering{
		"QuantizeLinear":                {lower: lowerQuantizeLinear},
		"DequantizeLinear":              {lower: lowerDequantizeLinear},
		"DynamicQuantizeLinear":         {lower: lowerDynamicQuantizeLinear},
		"ConvInteger":                   {lower: lowerIntegerConv},
		"QLinearConv":                   {lower: lowerIntegerConv},
		"MatMulInteger":                 {lower: lowerIntegerMatMul},
		"QLinearMatMul":                 {lower: lowerIntegerMatMul},
		graph.OpQuantizedConv:           {lower: lowerQuantizedConv},
		graph.OpQuantizedFullyConnected: {lower: lowerQuantizedFullyConnected},
	}
}
