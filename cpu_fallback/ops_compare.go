package cpufallback

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
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

// compareKernels are the comparisons (any numeric type; Equal also on
// booleans) and the logical ops And, Or, Xor (booleans), all with numpy
// broadcasting and a boolean output.
func compareKernels() map[string]kernel {
	return map[string]kernel{
		"Equal":          compareKernel(cEqual),
		"Greater":        compareKernel(cGreater),
		"Less":           compareKernel(cLess),
		"GreaterOrEqual": compareKernel(cGreaterEq),
		"LessOrEqual":    compareKernel(cLessEq),
		"And":            compareKernel(cAnd),
		"Or":             compareKernel(cOr),
		"Xor":            compareKernel(cXor),
	}
}

func compareKernel(op cmpOp) kernel {
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
			return nil, n.Errorf("%w: %s on %v", plugin.ErrUnsupported, n.OpType, t)
		case !t.Valid():
			return nil, n.Errorf("%w: %s on %v", plugin.ErrUnsupported, n.OpType, t)
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
		case tensor.F16, tensor.BF16:
			cmpPlan(p, op, toF32(a), toF32(b), o, cmpRun[float32])
		case tensor.I8:
			cmpPlan(p, op, a.I8(), b.I8(), o, cmpRun[int8])
		case tensor.U8:
			cmpPlan(p, op, a.U8(), b.U8(), o, cmpRun[uint8])
		case tensor.I16:
			cmpPlan(p, op, a.I16(), b.I16(), o, cmpRun[int16])
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
