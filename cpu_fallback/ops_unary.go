package cpufallback

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// unaryKernels are the one-input elementwise ops, Clip, Cast, Identity,
// Dropout and Not. Float-only math is computed in float64 and rounded to
// the input's type; f16/bf16 go through float32.
func unaryKernels() map[string]kernel {
	m := map[string]kernel{
		"Sqrt":       floatMath(func(*graph.Node) func(float64) float64 { return math.Sqrt }),
		"Exp":        floatMath(func(*graph.Node) func(float64) float64 { return math.Exp }),
		"Log":        floatMath(func(*graph.Node) func(float64) float64 { return math.Log }),
		"Erf":        intsToo(floatMath(func(*graph.Node) func(float64) float64 { return math.Erf })),
		"Tanh":       floatMath(func(*graph.Node) func(float64) float64 { return math.Tanh }),
		"Sin":        floatMath(func(*graph.Node) func(float64) float64 { return math.Sin }),
		"Cos":        floatMath(func(*graph.Node) func(float64) float64 { return math.Cos }),
		"Floor":      floatMath(func(*graph.Node) func(float64) float64 { return math.Floor }),
		"Ceil":       floatMath(func(*graph.Node) func(float64) float64 { return math.Ceil }),
		"Round":      floatMath(func(*graph.Node) func(float64) float64 { return math.RoundToEven }),
		"Reciprocal": floatMath(func(*graph.Node) func(float64) float64 { return func(x float64) float64 { return 1 / x } }),
		"Sigmoid":    floatMath(func(*graph.Node) func(float64) float64 { return sigmoid }),
		"Softplus":   floatMath(func(*graph.Node) func(float64) float64 { return softplus }),
		"Softsign": floatMath(func(*graph.Node) func(float64) float64 {
			return func(x float64) float64 { return x / (1 + math.Abs(x)) }
		}),
		"Mish": floatMath(func(*graph.Node) func(float64) float64 {
			return func(x float64) float64 { return x * math.Tanh(softplus(x)) }
		}),
		"HardSwish": floatMath(func(*graph.Node) func(float64) float64 {
			return func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }
		}),
		"LeakyRelu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(n.Attrs.Float("alpha", 0.01))
			return func(x float64) float64 {
				if x < 0 {
					return alpha * x
				}
				return x
			}
		}),
		"HardSigmoid": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha, beta := float64(n.Attrs.Float("alpha", 0.2)), float64(n.Attrs.Float("beta", 0.5))
			return func(x float64) float64 { return math.Max(0, math.Min(1, alpha*x+beta)) }
		}),
		"Elu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(n.Attrs.Float("alpha", 1))
			return func(x float64) float64 {
				if x < 0 {
					return alpha * math.Expm1(x)
				}
				return x
			}
		}),
		"Selu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(n.Attrs.Float("alpha", 1.67326319217681884765625))
			gamma := float64(n.Attrs.Float("gamma", 1.05070102214813232421875))
			return func(x float64) float64 {
				if x <= 0 {
					return gamma * alpha * math.Expm1(x)
				}
				return gamma * x
			}
		}),
		"Celu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(n.Attrs.Float("alpha", 1))
			return func(x float64) float64 { return math.Max(0, x) + math.Min(0, alpha*math.Expm1(x/alpha)) }
		}),
		"ThresholdedRelu": floatMath(func(n *graph.Node) func(float64) float64 {
			alpha := float64(n.Attrs.Float("alpha", 1))
			return func(x float64) float64 {
				if x > alpha {
					return x
				}
				return 0
			}
		}),
		"Gelu": geluKernel,
		"Neg":  numUnary(uNeg),
		"Abs":  numUnary(uAbs),
		"Relu": numUnary(uRelu),
		"Sign": numUnary(uSign),
		"Clip": clipKernel,
		"Cast": castKernel,
		"Identity": func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x, err := need(n, in, 0)
			if err != nil {
				return nil, err
			}
			return one(x.Clone()), nil
		},
		"Dropout": dropoutKernel,
		"Not":     notKernel,
	}
	return m
}

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

// floatMath makes a kernel applying f elementwise to a float tensor; mk
// builds f from the node's attributes once per call.
func floatMath(mk func(*graph.Node) func(float64) float64) kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		y, err := applyFloat(n, x, mk(n))
		if err != nil {
			return nil, err
		}
		return one(y), nil
	}
}

// intsToo extends a float kernel to integer inputs (ONNX Erf): the result
// is computed in float64 and truncated toward zero.
func intsToo(k kernel) kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := opt(in, 0)
		if x == nil || !x.Type().IsInteger() {
			return k(n, in)
		}
		f, _ := tensor.FromF64(x.Shape(), toF64s(x))
		out, err := k(n, append([]*tensor.Tensor{f}, in[1:]...))
		if err != nil {
			return nil, err
		}
		y, err := newOut(n, x.Type(), x.Shape())
		if err != nil {
			return nil, err
		}
		storeF64(y, out[0].F64())
		return one(y), nil
	}
}

func applyFloat(n *graph.Node, x *tensor.Tensor, f func(float64) float64) (*tensor.Tensor, error) {
	if !x.Type().IsFloat() {
		return nil, n.Errorf("%w: %s needs a float input, got %v", plugin.ErrUnsupported, n.OpType, x)
	}
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	switch x.Type() {
	case tensor.F64:
		src, dst := x.F64(), y.F64()
		for i, v := range src {
			dst[i] = f(v)
		}
	case tensor.F32:
		mapF32(x.F32(), y.F32(), f)
	default:
		o := make([]float32, x.NumElements())
		mapF32(toF32(x), o, f)
		storeF32(y, o)
	}
	return y, nil
}

func mapF32(src, dst []float32, f func(float64) float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(f(float64(v)))
	}
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
		return nil, n.Errorf("%w: attribute approximate=%q (accepted: none, tanh)", plugin.ErrInvalidArgument, a)
	}
	y, err := applyFloat(n, x, f)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// unaryOp is a unary op defined on every numeric type.
type unaryOp uint8

const (
	uNeg unaryOp = iota
	uAbs
	uRelu
	uSign
)

func numUnary(op unaryOp) kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		if !isNumeric(x.Type()) {
			return nil, n.Errorf("%w: %s on %v", plugin.ErrUnsupported, n.OpType, x)
		}
		y, err := newOut(n, x.Type(), x.Shape())
		if err != nil {
			return nil, err
		}
		switch x.Type() {
		case tensor.F32:
			unaryRun(op, x.F32(), y.F32())
		case tensor.F64:
			unaryRun(op, x.F64(), y.F64())
		case tensor.F16, tensor.BF16:
			o := make([]float32, x.NumElements())
			unaryRun(op, toF32(x), o)
			storeF32(y, o)
		case tensor.I8:
			unaryRun(op, x.I8(), y.I8())
		case tensor.U8:
			unaryRun(op, x.U8(), y.U8())
		case tensor.I16:
			unaryRun(op, x.I16(), y.I16())
		case tensor.I32:
			unaryRun(op, x.I32(), y.I32())
		case tensor.I64:
			unaryRun(op, x.I64(), y.I64())
		}
		return one(y), nil
	}
}

func unaryRun[T number](op unaryOp, x, y []T) {
	y = y[:len(x)]
	switch op {
	case uNeg:
		for i, v := range x {
			y[i] = -v
		}
	case uAbs:
		for i, v := range x {
			if v < 0 {
				v = -v
			}
			y[i] = v
		}
	case uRelu:
		for i, v := range x {
			if v < 0 {
				v = 0
			}
			y[i] = v
		}
	case uSign:
		for i, v := range x {
			switch {
			case v > 0:
				y[i] = 1
			case v < 0:
				y[i] = 0
				y[i]--
			case v == 0:
				y[i] = 0
			default:
				y[i] = v // NaN stays NaN
			}
		}
	}
}

// clipKernel is Clip with optional min and max scalar inputs of the input's
// type; NaN inputs pass through.
func clipKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !isNumeric(x.Type()) {
		return nil, n.Errorf("%w: Clip on %v", plugin.ErrUnsupported, x)
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

// castKernel is Cast; attribute "to" holds int64(tensor.ElementType).
func castKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	to := tensor.ElementType(n.Attrs.Int("to", 0))
	if !n.Attrs.Has("to") || !to.Valid() {
		return nil, n.Errorf("%w: attribute to=%v is not an element type", plugin.ErrInvalidArgument, n.Attrs["to"])
	}
	y, err := x.Convert(to)
	if err != nil {
		return nil, n.Errorf("cast %v to %v: %w", x, to, err)
	}
	if y == x {
		y = x.Clone()
	}
	return one(y), nil
}

// dropoutKernel is Dropout at inference: Y is a copy of X and the optional
// mask is all true. Training mode is not supported.
func dropoutKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if tm := opt(in, 2); tm != nil && tm.NumElements() == 1 && toF64s(tm)[0] != 0 {
		return nil, n.Errorf("%w: Dropout with training_mode=true", plugin.ErrNotImplemented)
	}
	out := []*tensor.Tensor{x.Clone()}
	if len(n.Outputs) > 1 {
		mask, err := newOut(n, tensor.Bool, x.Shape())
		if err != nil {
			return nil, err
		}
		mb := mask.Bool()
		for i := range mb {
			mb[i] = true
		}
		out = append(out, mask)
	}
	return out, nil
}

func notKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Type() != tensor.Bool {
		return nil, n.Errorf("%w: Not needs a boolean input, got %v", tensor.ErrType, x)
	}
	y, err := newOut(n, tensor.Bool, x.Shape())
	if err != nil {
		return nil, err
	}
	src, dst := x.Bool(), y.Bool()
	for i, v := range src {
		dst[i] = !v
	}
	return one(y), nil
}
