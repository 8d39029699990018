package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"math"
)

// The unary element-wise machinery: float math in float64 rounded to the
// input type (floatMath, pure), the numeric forms of Neg, Abs, Relu and
// Sign (numUnary), shared by the eltwise and activation families.

// pure is the kernel of a float function without attributes (see
// floatMath).
func pure(f func(float64) float64) Kernel {
	return floatMath(func(*graph.Node) func(float64) float64 { return f })
}

// floatMath makes a kernel applying f elementwise to a float tensor; mk
// builds f from the node's attributes once per call.
func floatMath(mk func(*graph.Node) func(float64) float64) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		if f := fastF32[n.OpType]; f != nil && x.Type() == tensor.F32 {
			y, err := newOut(n, tensor.F32, x.Shape())
			if err != nil {
				return nil, err
			}
			dst := y.F32()
			for i, v := range x.F32() {
				dst[i] = f(v)
			}
			return one(y), nil
		}
		y, err := applyFloat(n, x, mk(n))
		if err != nil {
			return nil, err
		}
		return one(y), nil
	}
}

// fastF32 are float32 forms of unary ops, correctly rounded or within an
// ulp of the float64 function, used on f32 tensors (streaming models take
// logs of every spectrum bin of every chunk).
var fastF32 = map[string]func(float32) float32{"Log": logF32}

// logF32 is the natural logarithm of x: x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) = 2 atanh((m-1)/(m+1)) by its series to
// within double rounding, plus e*ln 2, rounded once to float32. Zero,
// negatives, subnormals, infinities and NaN go through math.Log.
func logF32(x float32) float32 {
	b := math.Float32bits(x)
	exp := int(b>>23) & 0xff
	if b>>31 != 0 || exp == 0 || exp == 0xff {
		return float32(math.Log(float64(x)))
	}
	m := float64(math.Float32frombits(b&0x7fffff | 0x3f800000))
	e := exp - 127
	if m > math.Sqrt2 {
		m /= 2
		e++
	}
	t := (m - 1) / (m + 1)
	t2 := t * t
	p := t * (2 + t2*(2.0/3+t2*(2.0/5+t2*(2.0/7+t2*(2.0/9+t2*(2.0/11+t2*(2.0/13)))))))
	return float32(float64(e)*math.Ln2 + p)
}

// intsToo extends a float kernel to integer inputs (ONNX Erf): the result
// is computed in float64 and truncated toward zero.
func intsToo(k Kernel) Kernel {
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
		return nil, n.Errorf("%w: %s needs a float input, got %v", driver.ErrUnsupported, n.OpType, x)
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

// unaryOp is a unary op defined on every numeric type.
type unaryOp uint8

const (
	uNeg unaryOp = iota
	uAbs
	uRelu
	uSign
)

func numUnary(op unaryOp) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		if !isNumeric(x.Type()) {
			return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, n.OpType, x)
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
		case tensor.U16:
			unaryRun(op, x.U16(), y.U16())
		case tensor.U32:
			unaryRun(op, x.U32(), y.U32())
		case tensor.U64:
			unaryRun(op, x.U64(), y.U64())
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

// fromF64 builds a tensor of type t from float64 values, naming the node on
// error.
func fromF64(n *graph.Node, t tensor.ElementType, shape tensor.Shape, v []float64) (*tensor.Tensor, error) {
	y, err := tensor.FromFloat64s(t, shape, v)
	if err != nil {
		return nil, n.Errorf("output %v%v: %w", t, shape, err)
	}
	return y, nil
}
