package ref

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// runOp runs one kernel on a node with the given attributes and nOut outputs.
func runOp(op string, attrs graph.Attrs, nOut int, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	k, ok := hostKernels()[op]
	if !ok {
		panic("no kernel " + op)
	}
	n := graph.NewNode(op, "node_"+op, nil, attrs, nOut)
	return k(n, in)
}

// run1 runs a single-output op and requires success.
func run1(t *testing.T, op string, attrs graph.Attrs, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	out, err := runOp(op, attrs, 1, in...)
	require.NoError(t, err)
	require.Len(t, out, 1)
	return out[0]
}

func tF32(shape tensor.Shape, v ...float32) *tensor.Tensor {
	x, err := tensor.FromF32(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

func tI64(shape tensor.Shape, v ...int64) *tensor.Tensor {
	x, err := tensor.FromI64(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

func tI32(shape tensor.Shape, v ...int32) *tensor.Tensor {
	x, err := tensor.FromI32(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

func tBool(shape tensor.Shape, v ...bool) *tensor.Tensor {
	x, err := tensor.FromBool(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

// tOf makes a tensor of any numeric type from float64 values (exactly
// representable ones, so the conversion is not under test).
func tOf(typ tensor.ElementType, shape tensor.Shape, v []float64) *tensor.Tensor {
	x, err := tensor.FromFloat64s(typ, shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

// randVals returns n random values suitable for typ: small integers for
// integer types (non-negative for u8), values in [-lim, lim) rounded to the
// type for floats.
func randVals(rng *rand.Rand, typ tensor.ElementType, n int64, lim float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch {
		case typ == tensor.U8:
			v[i] = float64(rng.IntN(int(lim)) + 1)
		case typ.IsInteger():
			v[i] = float64(rng.IntN(2*int(lim)+1) - int(lim))
		case typ == tensor.F16:
			v[i] = float64(tensor.F16ToFloat32(tensor.Float32ToF16(float32(rng.Float64()*2*lim - lim))))
		case typ == tensor.BF16:
			v[i] = float64(tensor.BF16ToFloat32(tensor.Float32ToBF16(float32(rng.Float64()*2*lim - lim))))
		case typ == tensor.F32:
			v[i] = float64(float32(rng.Float64()*2*lim - lim))
		default:
			v[i] = rng.Float64()*2*lim - lim
		}
	}
	return v
}

// tolFor is the relative tolerance of a computation rounded to typ.
func tolFor(typ tensor.ElementType) float64 {
	switch typ {
	case tensor.F16:
		return 2e-3
	case tensor.BF16:
		return 1.6e-2
	case tensor.F32:
		return 2e-6
	}
	return 1e-12
}

// wrapTo wraps an exact integer result the way a C cast to typ would.
func wrapTo(typ tensor.ElementType, v float64) float64 {
	i := int64(v)
	switch typ {
	case tensor.I8:
		return float64(int8(i))
	case tensor.U8:
		return float64(uint8(i))
	case tensor.I16:
		return float64(int16(i))
	case tensor.I32:
		return float64(int32(i))
	}
	return v
}

// unravel converts a flat row-major index into coordinates of shape.
func unravel(i int64, shape tensor.Shape) []int64 {
	c := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			c[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return c
}

// bcastIndex is the flat index in a tensor of shape s of the element that
// output coordinates c (of a possibly higher rank) broadcast from.
func bcastIndex(c []int64, s tensor.Shape) int64 {
	off := len(c) - len(s)
	idx := int64(0)
	for d := range s {
		v := c[off+d]
		if s[d] == 1 {
			v = 0
		}
		idx = idx*s[d] + v
	}
	return idx
}

// refBroadcast is a naive, per-element reference for a broadcast op.
func refBroadcast(out tensor.Shape, ins []tensor.Shape, vals [][]float64, f func(x []float64) float64) []float64 {
	res := make([]float64, out.NumElements())
	args := make([]float64, len(ins))
	for i := range res {
		c := unravel(int64(i), out)
		for k, s := range ins {
			args[k] = vals[k][bcastIndex(c, s)]
		}
		res[i] = f(args)
	}
	return res
}

func TestKernelTableHasNoDuplicates(t *testing.T) {
	// kernelTable panics when a name is registered by two families.
	require.NotPanics(t, func() { kernelTable() })
	tbl := kernelTable()
	for _, op := range []string{"Add", "Where", "Cast", "Equal", "ReduceMean", "ArgMax", "Concat", "Slice", "Range"} {
		assert.Contains(t, tbl, op)
	}
}

func TestGuardMakesViewsContiguous(t *testing.T) {
	x := tF32(tensor.Shape{3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	v, err := x.View([]int64{0, 1}, []int64{3, 3})
	require.NoError(t, err)
	require.False(t, v.IsContiguous())
	y := run1(t, "Add", nil, v, tF32(tensor.Shape{}, 10))
	assert.Equal(t, tensor.Shape{3, 2}, y.Shape())
	assert.Equal(t, []float32{12, 13, 15, 16, 18, 19}, y.F32())
}

func TestGuardTurnsPanicIntoError(t *testing.T) {
	k := guard(func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		_ = in[5] // index out of range: a bug
		return nil, nil
	})
	_, err := k(graph.NewNode("Add", "buggy", nil, nil, 1), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "buggy")
}
