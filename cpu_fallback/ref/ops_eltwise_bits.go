package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// bitsOf returns an integer tensor's elements as their bits widened to 64
// (signed values sign-extended, so that bit operations and a store back
// into the type give the type's own result).
func bitsOf(x *tensor.Tensor) []uint64 { return uint64s(x) }

// bitKernel is BitShift and the Bitwise ops: f of two operands' bits with
// numpy broadcasting, stored back into the operands' type.
func bitKernel(f func(n *graph.Node, bits int) func(a, b uint64) uint64) Kernel {
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
		if !a.Type().IsInteger() {
			return nil, n.Errorf("%w: %v, want an integer type", tensor.ErrType, a)
		}
		shape, err := broadcastShape(a.Shape(), b.Shape())
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		y, err := newOut(n, a.Type(), shape)
		if err != nil {
			return nil, err
		}
		op := f(n, a.Type().Bits())
		A, B := bitsOf(a), bitsOf(b)
		v := make([]int64, shape.NumElements())
		walkBroadcast(shape, []tensor.Shape{a.Shape(), b.Shape()}, func(o int64, offs []int64) {
			v[o] = int64(op(A[offs[0]], B[offs[1]]))
		})
		storeI64(y, v)
		return one(y), nil
	}
}

// shift is BitShift's operation: bits of the type shifted out are lost; a
// shift by the width or more gives 0.
func shift(n *graph.Node, bits int) func(a, b uint64) uint64 {
	left := n.Attrs.String("direction", "") == "LEFT"
	mask := ^uint64(0) >> (64 - bits)
	return func(a, b uint64) uint64 {
		if b >= uint64(bits) {
			return 0
		}
		if left {
			return (a << b) & mask
		}
		return (a & mask) >> b
	}
}

func bitwise(op func(a, b uint64) uint64) func(*graph.Node, int) func(a, b uint64) uint64 {
	return func(*graph.Node, int) func(a, b uint64) uint64 { return op }
}

// bitwiseNotKernel flips every bit of an integer tensor.
func bitwiseNotKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !x.Type().IsInteger() {
		return nil, n.Errorf("%w: %v, want an integer type", tensor.ErrType, x)
	}
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	v := bitsOf(x)
	out := make([]int64, len(v))
	for i, b := range v {
		out[i] = int64(^b)
	}
	storeI64(y, out)
	return one(y), nil
}

// bitKernels are the eltwise family's bit operations.
func bitKernels() map[string]Kernel {
	return map[string]Kernel{
		"BitShift":   bitKernel(shift),
		"BitwiseAnd": bitKernel(bitwise(func(a, b uint64) uint64 { return a & b })),
		"BitwiseOr":  bitKernel(bitwise(func(a, b uint64) uint64 { return a | b })),
		"BitwiseXor": bitKernel(bitwise(func(a, b uint64) uint64 { return a ^ b })),
		"BitwiseNot": bitwiseNotKernel,
	}
}
