package ref

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// arithOp is a binary arithmetic operation with numpy broadcasting.
type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
	opPRelu
)

var arithNames = [...]string{opAdd: "Add", opSub: "Sub", opMul: "Mul", opDiv: "Div", opMax: "Max", opMin: "Min", opPRelu: "PRelu"}

func binaryKernel(op arithOp) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		b, err := need(n, in, 1)
		if err != nil {
			return nil, err
		}
		y, err := arith(n, op, a, b)
		if err != nil {
			return nil, err
		}
		return one(y), nil
	}
}

// variadicKernel folds op over any number of inputs (Sum, Max, Min, Mean),
// broadcasting at each step; mean divides the sum by the input count.
func variadicKernel(op arithOp, mean bool) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return nil, n.Errorf("%w: needs at least one input", driver.ErrInvalidArgument)
		}
		acc := in[0]
		for i := 1; i < len(in); i++ {
			if in[i] == nil {
				return nil, n.Errorf("%w: input %d is missing", driver.ErrInvalidArgument, i)
			}
			var err error
			if acc, err = arith(n, op, acc, in[i]); err != nil {
				return nil, err
			}
		}
		if len(in) == 1 {
			if !isNumeric(acc.Type()) {
				return nil, n.Errorf("%w: %v is not a numeric type", driver.ErrUnsupported, acc.Type())
			}
			acc = acc.Clone()
		}
		if mean && len(in) > 1 {
			cnt, err := tensor.FromF64(tensor.Shape{}, []float64{float64(len(in))})
			if err != nil {
				return nil, n.Errorf("%w", err)
			}
			c, err := castTo(n, cnt, acc.Type())
			if err != nil {
				return nil, err
			}
			if acc, err = arith(n, opDiv, acc, c); err != nil {
				return nil, err
			}
		}
		return one(acc), nil
	}
}

// castTo converts a small helper tensor (a count, a bound) to type t.
func castTo(n *graph.Node, x *tensor.Tensor, t tensor.ElementType) (*tensor.Tensor, error) {
	y, err := newOut(n, t, x.Shape())
	if err != nil {
		return nil, err
	}
	storeF64(y, toF64s(x))
	return y, nil
}

// isNumeric reports whether the arithmetic kernels take t: the float and
// integer types but the 4-bit ones (ONNX has no arithmetic on them: they
// are quantized storage, for Q/DQ, Cast and data movement).
func isNumeric(t tensor.ElementType) bool { return t.IsFloat() || (t.IsInteger() && t.Bits() != 4) }

// sameType checks that the operands of an op have one element type.
func sameType(n *graph.Node, xs ...*tensor.Tensor) error {
	for _, x := range xs[1:] {
		if x.Type() != xs[0].Type() {
			return n.Errorf("%w: operand types differ: %v and %v", tensor.ErrType, xs[0], x)
		}
	}
	return nil
}

// broadcastOut computes the broadcast output shape of the operands or an
// error naming the node.
func broadcastOut(n *graph.Node, xs ...*tensor.Tensor) (tensor.Shape, *bcastPlan, error) {
	shapes := make([]tensor.Shape, len(xs))
	for i, x := range xs {
		shapes[i] = x.Shape()
	}
	out, err := broadcastShape(shapes...)
	if err != nil {
		return nil, nil, n.Errorf("%w", err)
	}
	return out, newBcastPlan(out, shapes...), nil
}

// arith computes op(a, b) with numpy broadcasting; both operands have the
// same numeric type, which is the output type.
func arith(n *graph.Node, op arithOp, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := sameType(n, a, b); err != nil {
		return nil, err
	}
	t := a.Type()
	if !isNumeric(t) {
		return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, arithNames[op], t)
	}
	shape, p, err := broadcastOut(n, a, b)
	if err != nil {
		return nil, err
	}
	if op == opPRelu && !shape.Equal(a.Shape()) {
		return nil, n.Errorf("%w: slope %v does not broadcast to input %v", tensor.ErrShape, b.Shape(), a.Shape())
	}
	y, err := newOut(n, t, shape)
	if err != nil {
		return nil, err
	}
	switch t {
	case tensor.F32:
		arithPlan(p, op, a.F32(), b.F32(), y.F32())
	case tensor.F64:
		arithPlan(p, op, a.F64(), b.F64(), y.F64())
	case tensor.F16, tensor.BF16:
		o := make([]float32, y.NumElements())
		arithPlan(p, op, toF32(a), toF32(b), o)
		storeF32(y, o)
	case tensor.I8:
		err = arithInt(n, p, op, a.I8(), b.I8(), y.I8())
	case tensor.U8:
		err = arithInt(n, p, op, a.U8(), b.U8(), y.U8())
	case tensor.I16:
		err = arithInt(n, p, op, a.I16(), b.I16(), y.I16())
	case tensor.U16:
		err = arithInt(n, p, op, a.U16(), b.U16(), y.U16())
	case tensor.U32:
		err = arithInt(n, p, op, a.U32(), b.U32(), y.U32())
	case tensor.U64:
		err = arithInt(n, p, op, a.U64(), b.U64(), y.U64())
	case tensor.I32:
		err = arithInt(n, p, op, a.I32(), b.I32(), y.I32())
	case tensor.I64:
		err = arithInt(n, p, op, a.I64(), b.I64(), y.I64())
	}
	if err != nil {
		return nil, err
	}
	return y, nil
}

// arithInt guards integer division against a zero divisor (which would
// panic in Go and is undefined in ONNX) before running the plan.
func arithInt[T number](n *graph.Node, p *bcastPlan, op arithOp, a, b, y []T) error {
	if op == opDiv && y != nil && len(y) > 0 {
		for _, v := range b {
			if v == 0 {
				return n.Errorf("%w: integer division by zero", driver.ErrInvalidArgument)
			}
		}
	}
	arithPlan(p, op, a, b, y)
	return nil
}

func arithPlan[T number](p *bcastPlan, op arithOp, a, b, y []T) {
	sa, sb := p.inner(0), p.inner(1)
	p.runs(func(outOff int64, offs []int64, n int64) {
		arithRun(op, y[outOff:outOff+n], a[offs[0]:], b[offs[1]:], sa, sb)
	})
}

// arithRun computes one run; sa and sb are 0 (broadcast operand) or 1.
func arithRun[T number](op arithOp, y, a, b []T, sa, sb int) {
	if op <= opDiv && sa == 1 && (sb == 1 || sb == 0) {
		arithFast(op, y, a[:len(y)], b, sb)
		return
	}
	switch op {
	case opAdd:
		for i := range y {
			y[i] = a[i*sa] + b[i*sb]
		}
	case opSub:
		for i := range y {
			y[i] = a[i*sa] - b[i*sb]
		}
	case opMul:
		for i := range y {
			y[i] = a[i*sa] * b[i*sb]
		}
	case opDiv:
		for i := range y {
			y[i] = a[i*sa] / b[i*sb]
		}
	case opMax:
		for i := range y {
			x, z := a[i*sa], b[i*sb]
			if x != x || x > z { // x != x: NaN propagates
				y[i] = x
			} else {
				y[i] = z
			}
		}
	case opMin:
		for i := range y {
			x, z := a[i*sa], b[i*sb]
			if x != x || x < z {
				y[i] = x
			} else {
				y[i] = z
			}
		}
	case opPRelu:
		for i := range y {
			x := a[i*sa]
			if x < 0 {
				y[i] = x * b[i*sb]
			} else {
				y[i] = x
			}
		}
	default:
		panic(fmt.Sprintf("cpufallback: arith op %d", op))
	}
}

// arithFast is arithRun for the common shapes: a contiguous first operand
// and a contiguous or scalar second one, with loops the compiler can keep
// free of index arithmetic and bounds checks.
func arithFast[T number](op arithOp, y, a, b []T, sb int) {
	y = y[:len(a)]
	if sb == 0 {
		c := b[0]
		switch op {
		case opAdd:
			for i, v := range a {
				y[i] = v + c
			}
		case opSub:
			for i, v := range a {
				y[i] = v - c
			}
		case opMul:
			for i, v := range a {
				y[i] = v * c
			}
		case opDiv:
			for i, v := range a {
				y[i] = v / c
			}
		}
		return
	}
	b = b[:len(a)]
	switch op {
	case opAdd:
		for i, v := range a {
			y[i] = v + b[i]
		}
	case opSub:
		for i, v := range a {
			y[i] = v - b[i]
		}
	case opMul:
		for i, v := range a {
			y[i] = v * b[i]
		}
	case opDiv:
		for i, v := range a {
			y[i] = v / b[i]
		}
	}
}

// powKernel is ONNX Pow: the base and exponent may have different numeric
// types; the output has the base's type. Integer ** integer is exact.
func powKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	b, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if !isNumeric(a.Type()) || !isNumeric(b.Type()) {
		return nil, n.Errorf("%w: Pow of %v by %v", driver.ErrUnsupported, a.Type(), b.Type())
	}
	shape, p, err := broadcastOut(n, a, b)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, a.Type(), shape)
	if err != nil {
		return nil, err
	}
	if a.Type() == tensor.F32 && b.Type() == tensor.F32 {
		powF32(p, a.F32(), b.F32(), y.F32())
		return one(y), nil
	}
	if a.Type().IsInteger() && b.Type().IsInteger() {
		ai, bi := toI64s(a), toI64s(b)
		o := make([]int64, y.NumElements())
		sa, sb := p.inner(0), p.inner(1)
		p.runs(func(outOff int64, offs []int64, m int64) {
			for i := range m {
				o[outOff+i] = ipow(ai[offs[0]+i*int64(sa)], bi[offs[1]+i*int64(sb)])
			}
		})
		storeI64(y, o)
		return one(y), nil
	}
	af, bf := toF64s(a), toF64s(b)
	o := make([]float64, y.NumElements())
	sa, sb := p.inner(0), p.inner(1)
	p.runs(func(outOff int64, offs []int64, m int64) {
		for i := range m {
			o[outOff+i] = math.Pow(af[offs[0]+i*int64(sa)], bf[offs[1]+i*int64(sb)])
		}
	})
	storeF64(y, o)
	return one(y), nil
}

func powF32(p *bcastPlan, a, b, y []float32) {
	sa, sb := p.inner(0), p.inner(1)
	p.runs(func(outOff int64, offs []int64, n int64) {
		ya, aa, bb := y[outOff:outOff+n], a[offs[0]:], b[offs[1]:]
		if sb == 0 {
			switch e := bb[0]; e {
			case 2:
				for i := range ya {
					x := aa[i*sa]
					ya[i] = x * x
				}
				return
			case 0.5:
				for i := range ya {
					ya[i] = float32(math.Sqrt(float64(aa[i*sa])))
				}
				return
			}
		}
		for i := range ya {
			ya[i] = float32(math.Pow(float64(aa[i*sa]), float64(bb[i*sb])))
		}
	})
}

// ipow is integer exponentiation by squaring (wrapping on overflow). A
// negative exponent gives the truncated real result: 0 except for bases 1
// and -1.
func ipow(base, exp int64) int64 {
	if exp < 0 {
		switch base {
		case 1:
			return 1
		case -1:
			if exp%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for exp > 0 {
		if exp&1 == 1 {
			r *= base
		}
		base *= base
		exp >>= 1
	}
	return r
}

// walkBroadcast walks every element of out and calls f with the flat offsets
// of the (numpy-broadcast) inputs.
func walkBroadcast(out tensor.Shape, ins []tensor.Shape, f func(o int64, offs []int64)) {
	st := alignedStrides(out, ins...)
	r := len(out)
	idx := make([]int64, r)
	offs := make([]int64, len(ins))
	total := out.NumElements()
	for o := int64(0); o < total; o++ {
		f(o, offs)
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			for k := range offs {
				offs[k] += st[k][d]
			}
			if idx[d] < out[d] {
				break
			}
			for k := range offs {
				offs[k] -= st[k][d] * idx[d]
			}
			idx[d] = 0
		}
	}
}

// modKernel is Mod: fmod=1 truncates (the sign of the dividend, C fmod);
// fmod=0 floors (the sign of the divisor, integers only).
func modKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	b, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(n, a, b); err != nil {
		return nil, err
	}
	fmod := n.Attrs.Int("fmod", 0) != 0
	t := a.Type()
	if t.IsFloat() && !fmod {
		return nil, n.Errorf("%w: floating-point Mod needs fmod=1", driver.ErrInvalidArgument)
	}
	if !t.IsFloat() && !t.IsInteger() {
		return nil, n.Errorf("%w: Mod on %v", driver.ErrUnsupported, a)
	}
	shape, err := broadcastShape(a.Shape(), b.Shape())
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	y, err := newOut(n, t, shape)
	if err != nil {
		return nil, err
	}
	if t.IsFloat() {
		A, B := a.Float64s(), b.Float64s()
		v := make([]float64, shape.NumElements())
		walkBroadcast(shape, []tensor.Shape{a.Shape(), b.Shape()}, func(o int64, offs []int64) {
			v[o] = math.Mod(A[offs[0]], B[offs[1]])
		})
		storeF64(y, v)
		return one(y), nil
	}
	if t.IsUnsigned() { // u64 beyond 2^63 stays exact; floor and trunc agree
		A, B := uint64s(a), uint64s(b)
		v := make([]uint64, shape.NumElements())
		var div0 bool
		walkBroadcast(shape, []tensor.Shape{a.Shape(), b.Shape()}, func(o int64, offs []int64) {
			if d := B[offs[1]]; d != 0 {
				v[o] = A[offs[0]] % d
			} else {
				div0 = true
			}
		})
		if div0 {
			return nil, n.Errorf("%w: integer modulo by zero", driver.ErrInvalidArgument)
		}
		storeI64(y, convSlice[uint64, int64](v))
		return one(y), nil
	}
	A, B := toI64s(a), toI64s(b)
	v := make([]int64, shape.NumElements())
	var div0 bool
	walkBroadcast(shape, []tensor.Shape{a.Shape(), b.Shape()}, func(o int64, offs []int64) {
		x, d := A[offs[0]], B[offs[1]]
		if d == 0 {
			div0 = true
			return
		}
		r := x % d
		if !fmod && r != 0 && (r < 0) != (d < 0) {
			r += d
		}
		v[o] = r
	})
	if div0 {
		return nil, n.Errorf("%w: integer modulo by zero", driver.ErrInvalidArgument)
	}
	storeI64(y, v)
	return one(y), nil
}

// eltwiseKernels are the element-wise arithmetic and math ops: binary and
// variadic ops with numpy broadcasting over numeric types, and unary math.
// Float-only math is computed in float64 and rounded to the input's type;
// f16/bf16 go through float32.
func eltwiseKernels() map[string]Kernel {
	return map[string]Kernel{
		"Add":        binaryKernel(opAdd),
		"Sub":        binaryKernel(opSub),
		"Mul":        binaryKernel(opMul),
		"Div":        binaryKernel(opDiv),
		"Max":        variadicKernel(opMax, false),
		"Min":        variadicKernel(opMin, false),
		"Sum":        variadicKernel(opAdd, false),
		"Mean":       variadicKernel(opAdd, true),
		"Pow":        powKernel,
		"Mod":        modKernel,
		"Sqrt":       pure(math.Sqrt),
		"Exp":        pure(math.Exp),
		"Log":        pure(math.Log),
		"Erf":        intsToo(pure(math.Erf)),
		"Sin":        pure(math.Sin),
		"Cos":        pure(math.Cos),
		"Tan":        pure(math.Tan),
		"Asin":       pure(math.Asin),
		"Acos":       pure(math.Acos),
		"Atan":       pure(math.Atan),
		"Sinh":       pure(math.Sinh),
		"Cosh":       pure(math.Cosh),
		"Asinh":      pure(math.Asinh),
		"Acosh":      pure(math.Acosh),
		"Atanh":      pure(math.Atanh),
		"Floor":      pure(math.Floor),
		"Ceil":       pure(math.Ceil),
		"Round":      pure(math.RoundToEven),
		"Reciprocal": pure(func(x float64) float64 { return 1 / x }),
		"Neg":        numUnary(uNeg),
		"Abs":        numUnary(uAbs),
		"Sign":       numUnary(uSign),
	}
}
