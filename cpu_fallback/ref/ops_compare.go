package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// cmpOp is a broadcasting comparison or logical op with a boolean output.
type cmpOp uint8

const (
	cEqual cmpOp = iota
	cGreater
	cLess
	cGreaterEq
	cLessEq
	cAnd
	cOr
	cXor
)

func compareKernel(op cmpOp) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
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
		t := a.Type()
		switch {
		case op >= cAnd && t != tensor.Bool:
			return nil, n.Errorf("%w: %s needs boolean inputs, got %v", tensor.ErrType, n.OpType, t)
		case op < cAnd && op != cEqual && !isNumeric(t):
			return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, n.OpType, t)
		case !t.Valid():
			return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, n.OpType, t)
		}
		shape, p, err := broadcastOut(n, a, b)
		if err != nil {
			return nil, err
		}
		y, err := newOut(n, tensor.Bool, shape)
		if err != nil {
			return nil, err
		}
		o := y.Bool()
		switch t {
		case tensor.Bool:
			if op >= cAnd {
				cmpPlan(p, op, a.Bool(), b.Bool(), o, logicRun)
			} else {
				cmpPlan(p, op, view[uint8](a), view[uint8](b), o, cmpRun[uint8]) // Equal on booleans: compare the bytes
			}
		case tensor.F32:
			cmpPlan(p, op, a.F32(), b.F32(), o, cmpRun[float32])
		case tensor.F64:
			cmpPlan(p, op, a.F64(), b.F64(), o, cmpRun[float64])
		case tensor.F16, tensor.BF16, tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
			cmpPlan(p, op, toF32(a), toF32(b), o, cmpRun[float32])
		case tensor.I8:
			cmpPlan(p, op, a.I8(), b.I8(), o, cmpRun[int8])
		case tensor.U8:
			cmpPlan(p, op, a.U8(), b.U8(), o, cmpRun[uint8])
		case tensor.I16:
			cmpPlan(p, op, a.I16(), b.I16(), o, cmpRun[int16])
		case tensor.U16:
			cmpPlan(p, op, a.U16(), b.U16(), o, cmpRun[uint16])
		case tensor.U32:
			cmpPlan(p, op, a.U32(), b.U32(), o, cmpRun[uint32])
		case tensor.U64:
			cmpPlan(p, op, a.U64(), b.U64(), o, cmpRun[uint64])
		case tensor.I32:
			cmpPlan(p, op, a.I32(), b.I32(), o, cmpRun[int32])
		case tensor.I64:
			cmpPlan(p, op, a.I64(), b.I64(), o, cmpRun[int64])
		}
		return one(y), nil
	}
}

func cmpPlan[T any](p *bcastPlan, op cmpOp, a, b []T, y []bool, run func(cmpOp, []bool, []T, []T, int, int)) {
	sa, sb := p.inner(0), p.inner(1)
	p.runs(func(outOff int64, offs []int64, n int64) {
		run(op, y[outOff:outOff+n], a[offs[0]:], b[offs[1]:], sa, sb)
	})
}

func cmpRun[T number](op cmpOp, y []bool, a, b []T, sa, sb int) {
	switch op {
	case cEqual:
		for i := range y {
			y[i] = a[i*sa] == b[i*sb]
		}
	case cGreater:
		for i := range y {
			y[i] = a[i*sa] > b[i*sb]
		}
	case cLess:
		for i := range y {
			y[i] = a[i*sa] < b[i*sb]
		}
	case cGreaterEq:
		for i := range y {
			y[i] = a[i*sa] >= b[i*sb]
		}
	case cLessEq:
		for i := range y {
			y[i] = a[i*sa] <= b[i*sb]
		}
	}
}

func logicRun(op cmpOp, y []bool, a, b []bool, sa, sb int) {
	switch op {
	case cAnd:
		for i := range y {
			y[i] = a[i*sa] && b[i*sb]
		}
	case cOr:
		for i := range y {
			y[i] = a[i*sa] || b[i*sb]
		}
	case cXor:
		for i := range y {
			y[i] = a[i*sa] != b[i*sb]
		}
	}
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

// isClassKernel is IsNaN and IsInf (detect_negative, detect_positive).
func isClassKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !x.Type().IsFloat() {
		return nil, n.Errorf("%w: %s on %v, want a float type", driver.ErrUnsupported, n.OpType, x)
	}
	y, err := newOut(n, tensor.Bool, x.Shape())
	if err != nil {
		return nil, err
	}
	neg, pos := n.Attrs.Int("detect_negative", 1) != 0, n.Attrs.Int("detect_positive", 1) != 0
	Y := y.Bool()
	for i, v := range x.Float64s() {
		if n.OpType == "IsNaN" {
			Y[i] = math.IsNaN(v)
		} else {
			Y[i] = (neg && math.IsInf(v, -1)) || (pos && math.IsInf(v, 1))
		}
	}
	return one(y), nil
}

// whereKernel is ONNX Where: Y = cond ? X : Y with 3-way broadcasting, for
// any value type.
func whereKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var xs [3]*tensor.Tensor
	for i := range xs {
		var err error
		if xs[i], err = need(n, in, i); err != nil {
			return nil, err
		}
	}
	c, x, z := xs[0], xs[1], xs[2]
	if c.Type() != tensor.Bool {
		return nil, n.Errorf("%w: condition must be boolean, got %v", tensor.ErrType, c)
	}
	if err := sameType(n, x, z); err != nil {
		return nil, err
	}
	shape, p, err := broadcastOut(n, c, x, z)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, x.Type(), shape)
	if err != nil {
		return nil, err
	}
	cb := c.Bool()
	switch x.Type().Size() {
	case 1:
		whereRun(p, cb, view[uint8](x), view[uint8](z), view[uint8](y))
	case 2:
		whereRun(p, cb, view[uint16](x), view[uint16](z), view[uint16](y))
	case 4:
		whereRun(p, cb, view[uint32](x), view[uint32](z), view[uint32](y))
	case 8:
		whereRun(p, cb, view[uint64](x), view[uint64](z), view[uint64](y))
	}
	return one(y), nil
}

func whereRun[T sized](p *bcastPlan, c []bool, x, z, y []T) {
	sc, sx, sz := p.inner(0), p.inner(1), p.inner(2)
	p.runs(func(outOff int64, offs []int64, n int64) {
		yy, cc, xx, zz := y[outOff:outOff+n], c[offs[0]:], x[offs[1]:], z[offs[2]:]
		for i := range yy {
			if cc[i*sc] {
				yy[i] = xx[i*sx]
			} else {
				yy[i] = zz[i*sz]
			}
		}
	})
}

// compareKernels are the comparisons (any numeric type; Equal also on
// bool), the logic ops on bool, Not, Where and the float classifiers IsNaN
// and IsInf, with numpy broadcasting where the op has several inputs.
func compareKernels() map[string]Kernel {
	return map[string]Kernel{
		"Equal":          compareKernel(cEqual),
		"Greater":        compareKernel(cGreater),
		"Less":           compareKernel(cLess),
		"GreaterOrEqual": compareKernel(cGreaterEq),
		"LessOrEqual":    compareKernel(cLessEq),
		"And":            compareKernel(cAnd),
		"Or":             compareKernel(cOr),
		"Xor":            compareKernel(cXor),
		"Not":            notKernel,
		"Where":          whereKernel,
		"IsNaN":          isClassKernel,
		"IsInf":          isClassKernel,
	}
}
