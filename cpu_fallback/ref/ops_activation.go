package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// softplus is log(1+exp(x)) without overflow for large x.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// geluKernel is Gelu with approximate="none" (erf) or "tanh".
func geluKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	var f func(float64) float64
	switch a := n.Attrs.String("approximate", "none"); a {
	case "none":
		f = func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	case "tanh":
		k := math.Sqrt(2 / math.Pi)
		f = func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(k*(x+0.044715*x*x*x))) }
	default:
		return nil, n.Errorf("%w: attribute approximate=%q (accepted: none, tanh)", driver.ErrInvalidArgument, a)
	}
	y, err := applyFloat(n, x, f)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// clipKernel is Clip with optional min and max scalar inputs of the input's
// type; NaN inputs pass through.
func clipKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !isNumeric(x.Type()) {
		return nil, n.Errorf("%w: Clip on %v", driver.ErrUnsupported, x)
	}
	bounds := [2]*tensor.Tensor{opt(in, 1), opt(in, 2)}
	for i, b := range bounds {
		if b == nil {
			continue
		}
		if b.Type() != x.Type() {
			return nil, n.Errorf("%w: bound %d is %v, input is %v", tensor.ErrType, i+1, b, x)
		}
		if b.NumElements() != 1 {
			return nil, n.Errorf("%w: bound %d must be a scalar, got %v", tensor.ErrShape, i+1, b)
		}
	}
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	if x.Type().IsFloat() {
		lo, hi := math.Inf(-1), math.Inf(1)
		if bounds[0] != nil {
			lo = toF64s(bounds[0])[0]
		}
		if bounds[1] != nil {
			hi = toF64s(bounds[1])[0]
		}
		switch x.Type() {
		case tensor.F32:
			clipRun(x.F32(), y.F32(), float32(lo), float32(hi))
		case tensor.F64:
			clipRun(x.F64(), y.F64(), lo, hi)
		default:
			o := make([]float32, x.NumElements())
			clipRun(toF32(x), o, float32(lo), float32(hi))
			storeF32(y, o)
		}
		return one(y), nil
	}
	lo, hi := intRange(x.Type())
	if bounds[0] != nil {
		lo = toI64s(bounds[0])[0]
	}
	if bounds[1] != nil {
		hi = toI64s(bounds[1])[0]
	}
	switch x.Type() {
	case tensor.I8:
		clipRun(x.I8(), y.I8(), int8(lo), int8(hi))
	case tensor.U8:
		clipRun(x.U8(), y.U8(), uint8(lo), uint8(hi))
	case tensor.I16:
		clipRun(x.I16(), y.I16(), int16(lo), int16(hi))
	case tensor.U16:
		clipRun(x.U16(), y.U16(), uint16(lo), uint16(hi))
	case tensor.U32:
		clipRun(x.U32(), y.U32(), uint32(lo), uint32(hi))
	case tensor.U64:
		ulo, uhi := uint64(0), uint64(math.MaxUint64)
		if bounds[0] != nil {
			ulo = uint64s(bounds[0])[0]
		}
		if bounds[1] != nil {
			uhi = uint64s(bounds[1])[0]
		}
		clipRun(x.U64(), y.U64(), ulo, uhi)
	case tensor.I32:
		clipRun(x.I32(), y.I32(), int32(lo), int32(hi))
	case tensor.I64:
		clipRun(x.I64(), y.I64(), lo, hi)
	}
	return one(y), nil
}

func clipRun[T number](x, y []T, lo, hi T) {
	y = y[:len(x)]
	for i, v := range x {
		if v < lo {
			v = lo
		}
		if v > hi {
			v = hi
		}
		y[i] = v
	}
}

// softmaxKernel is ONNX Softmax (opset 13) over one axis.
func softmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return softmaxAlong(n, in, false)
}

// logSoftmaxKernel is ONNX LogSoftmax (opset 13) over one axis.
func logSoftmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return softmaxAlong(n, in, true)
}

// softmaxAlong computes the (log-)softmax of every fibre along the axis,
// subtracting the maximum first for stability and accumulating in float64.
func softmaxAlong(n *graph.Node, in []*tensor.Tensor, log bool) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		// A scalar is a one-element fibre.
		if log {
			y.F32()[0] = 0
		} else {
			y.F32()[0] = 1
		}
		return []*tensor.Tensor{y}, nil
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	outer := int(nnProd(xs[:axis]))
	L := int(xs[axis])
	inner := int(nnProd(xs[axis+1:]))
	X, Y := x.F32(), y.F32()
	if L == 0 {
		return []*tensor.Tensor{y}, nil
	}
	nnParallel(outer*inner, func(lo, hi int) {
		for f := lo; f < hi; f++ {
			o, i := f/inner, f%inner
			base := o*L*inner + i
			m := float32(math.Inf(-1))
			for j := 0; j < L; j++ {
				if v := X[base+j*inner]; v > m {
					m = v
				}
			}
			var s float64
			for j := 0; j < L; j++ {
				s += math.Exp(float64(X[base+j*inner] - m))
			}
			if log {
				ls := math.Log(s)
				for j := 0; j < L; j++ {
					Y[base+j*inner] = float32(float64(X[base+j*inner]-m) - ls)
				}
			} else {
				for j := 0; j < L; j++ {
					Y[base+j*inner] = float32(math.Exp(float64(X[base+j*inner]-m)) / s)
				}
			}
		}
	})
	return []*tensor.Tensor{y}, nil
}

// hardmaxKernel is ONNX Hardmax (opset 13): 1 at the first maximum of every
// fibre along the axis (default -1), 0 elsewhere.
func hardmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 1)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	outer := int(nnProd(xs[:axis]))
	L := int(xs[axis])
	inner := int(nnProd(xs[axis+1:]))
	X, Y := x.F32(), y.F32()
	if L == 0 {
		return []*tensor.Tensor{y}, nil
	}
	for f := 0; f < outer*inner; f++ {
		o, i := f/inner, f%inner
		base := o*L*inner + i
		best := 0
		for j := 1; j < L; j++ {
			if X[base+j*inner] > X[base+best*inner] {
				best = j
			}
		}
		Y[base+best*inner] = 1
	}
	return []*tensor.Tensor{y}, nil
}

// shrinkKernel is Shrink: x+bias below -lambd, x-bias above lambd, else 0.
func shrinkKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	lambd, bias := float64(graph.ParamValue(n, "lambd")), float64(graph.ParamValue(n, "bias"))
	v := x.Float64s()
	for i, e := range v {
		switch {
		case e < -lambd:
			v[i] = e + bias
		case e > lambd:
			v[i] = e - bias
		default:
			v[i] = 0
		}
	}
	y, err := fromF64(n, x.Type(), x.Shape(), v)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

func preluKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	slope, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	y, err := arith(n, opPRelu, x, slope)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// activationKernels are the activation functions and the softmax family.
// Their float attributes default to graph's op table (graph.ParamValue).
func activationKernels() map[string]Kernel {
	return map[string]Kernel{
		"Relu":      numUnary(uRelu),
		"Tanh":      pure(math.Tanh),
		"Sigmoid":   pure(sigmoid),
		"Softplus":  pure(softplus),
		"Softsign":  pure(func(x float64) float64 { return x / (1 + math.Abs(x)) }),
		"Mish":      pure(func(x float64) float64 { return x * math.Tanh(softplus(x)) }),
		"HardSwish": pure(func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }),
		"LeakyRelu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(graph.ParamValue(n, "alpha"))
			return func(x float64) float64 {
				if x < 0 {
					return alpha * x
				}
				return x
			}
		}),
		"HardSigmoid": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha, beta := float64(graph.ParamValue(n, "alpha")), float64(graph.ParamValue(n, "beta"))
			return func(x float64) float64 { return math.Max(0, math.Min(1, alpha*x+beta)) }
		}),
		"Elu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(graph.ParamValue(n, "alpha"))
			return func(x float64) float64 {
				if x < 0 {
					return alpha * math.Expm1(x)
				}
				return x
			}
		}),
		"Selu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha, gamma := float64(graph.ParamValue(n, "alpha")), float64(graph.ParamValue(n, "gamma"))
			return func(x float64) float64 {
				if x <= 0 {
					return gamma * alpha * math.Expm1(x)
				}
				return gamma * x
			}
		}),
		"Celu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(graph.ParamValue(n, "alpha"))
			return func(x float64) float64 { return math.Max(0, x) + math.Min(0, alpha*math.Expm1(x/alpha)) }
		}),
		"ThresholdedRelu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(graph.ParamValue(n, "alpha"))
			return func(x float64) float64 {
				if x > alpha {
					return x
				}
				return 0
			}
		}),
		"Gelu":       geluKernel,
		"Clip":       clipKernel,
		"PRelu":      preluKernel,
		"Shrink":     shrinkKernel,
		"Softmax":    nnFloatKernel(softmaxKernel),
		"LogSoftmax": nnFloatKernel(logSoftmaxKernel),
		"Hardmax":    nnFloatKernel(hardmaxKernel),
	}
}
