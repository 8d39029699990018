package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The integer semantics every device shares (the GPU kernels compute the
// same, and the tests compare them bit for bit):
//
//   - quantize: q = saturate(rne(x / scale) + zero_point), the division in
//     f32 (f16 and bf16 data and scales widen to f32 first, as ONNX
//     Runtime computes), rne rounding half to even, saturate clamping to
//     the output type; a NaN quotient quantizes to the zero point.
//   - dequantize: y = f32(x - zero_point) * scale, the difference exact in
//     integers, rounded to the scale's type.
//   - integer products and convolutions accumulate exactly and wrap to
//     int32 (ONNX's accumulator).
//   - requantize (QLinearConv, QLinearMatMul and the fused integer ops):
//     q = saturate(rne(f32(acc) * m) + y_zero_point) with the multiplier
//     m = f32(x_scale * w_scale) / y_scale, per output channel.

// quantizeF32 is saturate(rne(v / s) + zp) into [lo, hi], in f32.
func quantizeF32(v, s float32, zp, lo, hi int64) int64 {
	return roundSat(v/s, zp, lo, hi)
}

// roundSat is saturate(rne(q) + zp) into [lo, hi]; NaN gives zp.
func roundSat(q float32, zp, lo, hi int64) int64 {
	var r int64
	switch {
	case q != q: // NaN
	case q >= 1<<40:
		r = 1 << 40
	case q <= -(1 << 40):
		r = -(1 << 40)
	default:
		r = int64(math.RoundToEven(float64(q)))
	}
	return min(max(r+zp, lo), hi)
}

// requantMultiplier is the f32 multiplier of a requantization: (xs * ws) /
// ys, each step rounded to f32.
func requantMultiplier(xs, ws, ys float32) float32 {
	return float32(xs*ws) / ys
}

// quantParams are the scales and zero points of a QuantizeLinear or
// DequantizeLinear node over its data shape, and where each element finds
// its own (graph.QuantGeometry).
type quantParams struct {
	geo          graph.QuantAxis
	scale        []float32
	zp           []int64 // nil: zero
	inner, dim   int64   // elements after the axis, the axis' size
	blocks       int64   // ceil(dim / block) for blocked
	scaleType    tensor.ElementType
	lo, hi       int64 // the quantized type's range
	quantizedTyp tensor.ElementType
}

// newQuantParams reads in[si] (scale) and in[si+1] (zero point, optional)
// for data of shape data and quantized type qt.
func newQuantParams(n *graph.Node, data tensor.Shape, in []*tensor.Tensor, si int, qt tensor.ElementType) (*quantParams, error) {
	s, err := need(n, in, si)
	if err != nil {
		return nil, err
	}
	if t := s.Type(); t != tensor.F32 && t != tensor.F16 && t != tensor.BF16 {
		// ONNX's scales are f32, f16 or bf16; the reference computes in f32.
		return nil, n.Errorf("%w: scale is %v, want f32, f16 or bf16", tensor.ErrType, t)
	}
	geo, err := graph.QuantGeometry(n, data, s.Shape())
	if err != nil {
		return nil, err
	}
	p := &quantParams{geo: geo, scale: toF32(s), scaleType: s.Type(), inner: 1, dim: 1, quantizedTyp: qt}
	if geo.Axis >= 0 {
		p.inner = nnProd(data[geo.Axis+1:])
		p.dim = data[geo.Axis]
		p.blocks = p.dim
		if geo.Block > 0 {
			p.blocks = (p.dim + geo.Block - 1) / geo.Block
		}
	}
	if z := opt(in, si+1); z != nil {
		if z.Type() != qt {
			return nil, n.Errorf("%w: zero point is %v, want %v", tensor.ErrType, z.Type(), qt)
		}
		if !z.Shape().Equal(s.Shape()) {
			return nil, n.Errorf("%w: zero point %v and scale %v differ in shape", tensor.ErrShape, z.Shape(), s.Shape())
		}
		p.zp = toI64s(z)
	}
	lo, hi, ok := qt.IntRange()
	if !ok {
		return nil, n.Errorf("%w: quantized type %v", driver.ErrUnsupported, qt)
	}
	p.lo, p.hi = lo, hi
	return p, nil
}

// index is the position of element i's scale and zero point.
func (p *quantParams) index(i int64) int64 {
	switch {
	case p.geo.Axis < 0:
		return 0
	case p.geo.Block == 0:
		return (i / p.inner) % p.dim
	}
	o, a, r := i/(p.inner*p.dim), (i/p.inner)%p.dim, i%p.inner
	return (o*p.blocks+a/p.geo.Block)*p.inner + r
}

// zeroAt is the zero point at position j.
func (p *quantParams) zeroAt(j int64) int64 {
	if p.zp == nil {
		return 0
	}
	return p.zp[j]
}

// quantizeLinearKernel is QuantizeLinear(x, y_scale, y_zero_point?) in
// every geometry (per-tensor, per-axis, blocked).
func quantizeLinearKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	qt := tensor.ElementType(n.Attrs.Int(graph.AttrOutputType, int64(tensor.U8)))
	if z := opt(in, 2); z != nil {
		qt = z.Type()
	}
	p, err := newQuantParams(n, x.Shape(), in, 1, qt)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, qt, x.Shape())
	if err != nil {
		return nil, err
	}
	q := make([]int64, x.NumElements())
	switch x.Type() {
	case tensor.F32, tensor.F16, tensor.BF16:
		v := toF32(x)
		for i := range q {
			j := p.index(int64(i))
			q[i] = quantizeF32(v[i], p.scale[j], p.zeroAt(j), p.lo, p.hi)
		}
	case tensor.I32:
		v := x.I32()
		for i := range q {
			j := p.index(int64(i))
			q[i] = quantizeF32(float32(v[i]), p.scale[j], p.zeroAt(j), p.lo, p.hi)
		}
	default:
		return nil, n.Errorf("%w: QuantizeLinear of %v", driver.ErrUnsupported, x.Type())
	}
	storeI64(y, q)
	return one(y), nil
}

// dequantizeLinearKernel is DequantizeLinear(x, x_scale, x_zero_point?):
// f32(x - zp) * scale in the scale's type.
func dequantizeLinearKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !x.Type().IsInteger() {
		return nil, n.Errorf("%w: DequantizeLinear of %v", driver.ErrUnsupported, x.Type())
	}
	p, err := newQuantParams(n, x.Shape(), in, 1, x.Type())
	if err != nil {
		return nil, err
	}
	v := toI64s(x)
	out := make([]float32, len(v))
	for i, q := range v {
		j := p.index(int64(i))
		out[i] = float32(q-p.zeroAt(j)) * p.scale[j]
	}
	y, err := newOut(n, p.scaleType, x.Shape())
	if err != nil {
		return nil, err
	}
	storeF32(y, out)
	return one(y), nil
}

// dynamicQuantParams are DynamicQuantizeLinear's scale and zero point for
// data whose minimum and maximum are lo and hi (u8): the range widened to
// hold 0, scale = (max - min) / 255, zero point = saturate(rne(0 - min /
// scale)). All-zero data (scale 0) has zero point 0.
func dynamicQuantParams(lo, hi float32) (scale float32, zp int64) {
	lo, hi = min(lo, 0), max(hi, 0)
	scale = (hi - lo) / 255
	if scale == 0 {
		return 0, 0
	}
	return scale, roundSat(0-lo/scale, 0, 0, 255)
}

// dynamicQuantizeLinearKernel is DynamicQuantizeLinear(x): y (u8),
// y_scale, y_zero_point from x's range (dynamicQuantParams); with scale 0
// every element quantizes to 0.
func dynamicQuantizeLinearKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Type() != tensor.F32 {
		return nil, n.Errorf("%w: DynamicQuantizeLinear of %v, want f32", driver.ErrUnsupported, x.Type())
	}
	v := x.F32()
	lo, hi := float32(0), float32(0)
	for _, f := range v {
		// NaN compares false and is skipped, as min/max reductions do.
		if f < lo {
			lo = f
		}
		if f > hi {
			hi = f
		}
	}
	scale, zp := dynamicQuantParams(lo, hi)
	y, err := newOut(n, tensor.U8, x.Shape())
	if err != nil {
		return nil, err
	}
	if scale != 0 {
		q := y.U8()
		nnParallel(len(v), func(a, b int) {
			for i := a; i < b; i++ {
				q[i] = uint8(quantizeF32(v[i], scale, zp, 0, 255))
			}
		})
	}
	s, err := tensor.FromF32(tensor.Shape{}, []float32{scale})
	if err != nil {
		return nil, err
	}
	z, err := tensor.FromU8(tensor.Shape{}, []uint8{uint8(zp)})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, s, z}, nil
}

// quantKernels are the quantization ops.
func quantKernels() map[string]Kernel {
	return map[string]Kernel{
		"QuantizeLinear":                quantizeLinearKernel,
		"DequantizeLinear":              dequantizeLinearKernel,
		"DynamicQuantizeLinear":         dynamicQuantizeLinearKernel,
		"ConvInteger":                   convIntegerKernel,
		"QLinearConv":                   qlinearConvKernel,
		"MatMulInteger":                 matMulIntegerKernel,
		"QLinearMatMul":                 qlinearMatMulKernel,
		graph.OpQuantizedConv:           quantizedConvKernel,
		graph.OpQuantizedFullyConnected: quantizedFullyConnectedKernel,
	}
}

// quantImpls name the implementations of the integer ops (see Impl).
var quantImpls = map[string]string{
	"ConvInteger":                   "ref_convinteger_i32",
	"QLinearConv":                   "ref_qlinearconv_i32",
	"MatMulInteger":                 "ref_matmulinteger_i32",
	"QLinearMatMul":                 "ref_qlinearmatmul_i32",
	graph.OpQuantizedConv:           "ref_quantizedconv_i32",
	graph.OpQuantizedFullyConnected: "ref_quantizedfullyconnected_i32",
}
