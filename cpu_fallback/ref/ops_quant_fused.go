package ref

import (
	"math"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// quantEpilogue is the float epilogue of the fused integer ops
// (graph.OpQuantizedConv): per channel c, v = f32(acc) * mult[c] + bias[c],
// the post-ops in f32, then optionally the requantization. Every step is
// one f32 operation in the order the GPU kernels compute it
// (quant_block.clh), so both devices give the same bits; the
// transcendental post-ops (sigmoid, swish, gelu, tanh) are the exception:
// the device's exp and tanh may differ from Go's in the last ulp.
type quantEpilogue struct {
	mult, bias []float32 // per channel (one entry: all channels)
	ops        []graph.PostOp
	res        []float32 // the residual broadcast to the output, nil without
	quant      bool
	ys         float32
	yz, lo, hi int64
	out        tensor.ElementType
}

// newQuantEpilogue reads the epilogue inputs of fused integer op n whose
// output has shape out and c channels.
func newQuantEpilogue(n *graph.Node, in []*tensor.Tensor, out tensor.Shape, c int64) (*quantEpilogue, error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return nil, err
	}
	e := &quantEpilogue{ops: ops, out: tensor.F32}
	xs, err := need(n, in, graph.QuantInXScale)
	if err != nil {
		return nil, err
	}
	ws, err := need(n, in, graph.QuantInWScale)
	if err != nil {
		return nil, err
	}
	if xs.NumElements() != 1 || (ws.NumElements() != 1 && ws.NumElements() != c) {
		return nil, n.Errorf("%w: x_scale %v must be a scalar and w_scale %v a scalar or %d values", tensor.ErrShape, xs.Shape(), ws.Shape(), c)
	}
	x := toF32(xs)[0]
	for _, w := range toF32(ws) {
		e.mult = append(e.mult, x*w)
	}
	if b := opt(in, graph.QuantInBias); b != nil {
		if b.NumElements() != c {
			return nil, n.Errorf("%w: bias %v: want %d values", tensor.ErrShape, b.Shape(), c)
		}
		e.bias = toF32(b)
	}
	if r := opt(in, graph.QuantInResidual); r != nil {
		full, err := broadcastTo(n, r, out)
		if err != nil {
			return nil, err
		}
		e.res = full
	}
	if ys := opt(in, graph.QuantInYScale); ys != nil {
		yz, err := need(n, in, graph.QuantInYZero)
		if err != nil {
			return nil, err
		}
		e.quant, e.ys, e.yz, e.out = true, toF32(ys)[0], toI64s(yz)[0], yz.Type()
		var ok bool
		if e.lo, e.hi, ok = e.out.IntRange(); !ok {
			return nil, n.Errorf("%w: output type %v", driver.ErrUnsupported, e.out)
		}
	}
	return e, nil
}

// broadcastTo returns r's elements broadcast (numpy, unidirectionally) to
// shape out, as f32.
func broadcastTo(n *graph.Node, r *tensor.Tensor, out tensor.Shape) ([]float32, error) {
	zero, err := newOut(n, tensor.F32, out)
	if err != nil {
		return nil, err
	}
	s, err := arith(n, opAdd, zero, r.Contiguous())
	if err != nil {
		return nil, err
	}
	if !s.Shape().Equal(out) {
		return nil, n.Errorf("%w: residual %v does not broadcast to output %v", tensor.ErrShape, r.Shape(), out)
	}
	return s.F32(), nil
}

// at is the epilogue of accumulator acc of channel c at output element o:
// the f32 value, or the quantized one as a float64 integer.
func (e *quantEpilogue) at(acc int32, c, o int64) float64 {
	m, b := e.mult[0], float32(0)
	if len(e.mult) > 1 {
		m = e.mult[c]
	}
	if e.bias != nil {
		b = e.bias[c]
	}
	// The conversion keeps the compiler from fusing a*b+c; the bias is
	// added even when it is 0 (which turns -0 into +0), as the GPU does.
	v := float32(float32(acc)*m) + b
	for _, p := range e.ops {
		v = postOpF32(p, v, e.res, o)
	}
	if !e.quant {
		return float64(v)
	}
	return float64(quantizeF32(v, e.ys, e.yz, e.lo, e.hi))
}

// postOpF32 is one post-op on v in f32, in the operations of the GPU's
// post_ops_v (block.clh); res[o] is the residual of a "sum".
func postOpF32(p graph.PostOp, v float32, res []float32, o int64) float32 {
	a, b := p.Alpha, p.Beta
	switch p.Kind {
	case graph.PostSum:
		return v + res[o]
	case graph.PostRelu:
		if v < 0 {
			return 0
		}
	case graph.PostClip:
		if v < a {
			v = a
		}
		if v > b {
			v = b
		}
	case graph.PostHardSwish:
		return v * fmax32(0, fmin32(1, v/6+0.5))
	case graph.PostHardSigmoid:
		return fmax32(0, fmin32(1, float32(a*v)+b))
	case graph.PostSigmoid:
		return 1 / (1 + float32(math.Exp(float64(-v))))
	case graph.PostSwish:
		return v / (1 + float32(math.Exp(float64(-float32(a*v)))))
	case graph.PostGelu:
		if a != 0 {
			k := float32(0.79788456080286536)
			t := float32(math.Tanh(float64(k * (v + float32(float32(0.044715*v)*v*v)))))
			return 0.5 * v * (1 + t)
		}
		return 0.5 * v * (1 + float32(math.Erf(float64(v*0.70710678118654752))))
	case graph.PostLeakyRelu:
		if v < 0 {
			return a * v
		}
	case graph.PostTanh:
		return float32(math.Tanh(float64(v)))
	case graph.PostLinear:
		return float32(a*v) + b
	}
	return v
}

// fmax32 and fmin32 are OpenCL's fmax and fmin: a NaN operand gives the
// other one.
func fmax32(x, y float32) float32 {
	if x != x || y > x {
		return y
	}
	return x
}

func fmin32(x, y float32) float32 {
	if x != x || y < x {
		return y
	}
	return x
}

// quantizedConvKernel is graph.OpQuantizedConv: the exact integer
// convolution and the epilogue.
func quantizedConvKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	in, err := quantizeOnLoad(n, in)
	if err != nil {
		return nil, err
	}
	s, err := newIntConv(n, in, graph.QuantInX, graph.QuantInW, graph.QuantInXZero, graph.QuantInWZero)
	if err != nil {
		return nil, err
	}
	e, err := newQuantEpilogue(n, in, s.outShape(), s.m)
	if err != nil {
		return nil, err
	}
	v := make([]float64, s.outShape().NumElements())
	s.run(func(img, m0, rows, j0, cols int64, acc []float64) {
		for r := int64(0); r < rows; r++ {
			ch := m0 + r
			base := (img*s.m + ch) * s.out
			for j, a := range acc[r*cols : (r+1)*cols] {
				o := base + j0 + int64(j)
				v[o] = e.at(wrap32(a), ch, o)
			}
		}
	})
	return e.store(n, s.outShape(), v)
}

// quantizeOnLoad returns in with f32 data (graph.QuantizesOnLoad)
// replaced by its QuantizeLinear with x_scale and x_zero_point, in
// x_zero_point's type; in itself otherwise.
func quantizeOnLoad(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[graph.QuantInX]
	if !graph.QuantizesOnLoad(n) || x == nil || x.Type() != tensor.F32 {
		return in, nil
	}
	xs, err := need(n, in, graph.QuantInXScale)
	if err != nil {
		return nil, err
	}
	xz, err := need(n, in, graph.QuantInXZero)
	if err != nil {
		return nil, err
	}
	lo, hi, ok := xz.Type().IntRange()
	if !ok || xs.NumElements() != 1 || xz.NumElements() != 1 {
		return nil, n.Errorf("%w: f32 data quantized with %v x_scale %v and %v x_zero_point %v (want scalars, an integer zero point)",
			driver.ErrUnsupported, xs.Type(), xs.Shape(), xz.Type(), xz.Shape())
	}
	z, _ := xz.Int64s()
	s := toF32(xs)[0]
	q, err := newOut(n, xz.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	v := x.Contiguous().F32()
	out := make([]int64, len(v))
	for i, f := range v {
		out[i] = quantizeF32(f, s, z[0], lo, hi)
	}
	storeI64(q, out)
	c := slices.Clone(in)
	c[graph.QuantInX] = q
	return c, nil
}

// store returns the epilogue's values as the output tensor.
func (e *quantEpilogue) store(n *graph.Node, shape tensor.Shape, v []float64) ([]*tensor.Tensor, error) {
	y, err := newOut(n, e.out, shape)
	if err != nil {
		return nil, err
	}
	if e.quant {
		q := make([]int64, len(v))
		for i, f := range v {
			q[i] = int64(f)
		}
		storeI64(y, q)
	} else {
		copy(y.F32(), convSlice[float64, float32](v))
	}
	return one(y), nil
}

// quantizedFullyConnectedKernel is graph.OpQuantizedFullyConnected: the
// exact integer product and the epilogue per column.
func quantizedFullyConnectedKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	w, err := need(n, in, graph.QuantInW)
	if err != nil {
		return nil, err
	}
	if w.Rank() != 2 {
		return nil, n.Errorf("%w: weights %v must be a [K, N] matrix", tensor.ErrShape, w.Shape())
	}
	p, err := newIntMatMul(n, in, graph.QuantInX, graph.QuantInW, graph.QuantInXZero, graph.QuantInWZero)
	if err != nil {
		return nil, err
	}
	e, err := newQuantEpilogue(n, in, p.yShape, p.n)
	if err != nil {
		return nil, err
	}
	v := make([]float64, p.yShape.NumElements())
	mn := p.m * p.n
	p.run(func(bi int, acc []float64) {
		for j, a := range acc {
			o := int64(bi)*mn + int64(j)
			v[o] = e.at(wrap32(a), int64(j)%p.n, o)
		}
	})
	return e.store(n, p.yShape, v)
}
