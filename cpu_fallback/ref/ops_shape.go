package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// eyeLikeKernel is EyeLike: ones on the diagonal k of a 2-D tensor of the
// input's shape, of type dtype (an int64(tensor.ElementType)) or the
// input's.
func eyeLikeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() != 2 {
		return nil, n.Errorf("%w: input %v must be 2-D", tensor.ErrShape, x)
	}
	t := x.Type()
	if n.Attrs.Has("dtype") {
		t = tensor.ElementType(n.Attrs.Int("dtype", 0))
	}
	k := n.Attrs.Int("k", 0)
	rows, cols := x.Shape()[0], x.Shape()[1]
	v := make([]float64, rows*cols)
	for i := int64(0); i < rows; i++ {
		if j := i + k; j >= 0 && j < cols {
			v[i*cols+j] = 1
		}
	}
	y, err := fromF64(n, t, x.Shape(), v)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// shapeKernel is Shape with optional start and end attributes (negative
// ones count from the end, both clamped).
func shapeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	r := int64(x.Rank())
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return min(max(v, 0), r)
	}
	start, end := clamp(n.Attrs.Int("start", 0)), clamp(n.Attrs.Int("end", r))
	dims := []int64{}
	if end > start {
		dims = x.Shape()[start:end]
	}
	y, err := tensor.FromI64(tensor.Shape{int64(len(dims))}, dims)
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(y), nil
}

func sizeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := tensor.FromI64(tensor.Shape{}, []int64{x.NumElements()})
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(y), nil
}

// constantOfShapeKernel fills a tensor of the shape given by its input with
// the one-element value attribute (default f32 0).
func constantOfShapeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	shape, err := intsOf(n, s, "shape")
	if err != nil {
		return nil, err
	}
	val := n.Attrs.Tensor("value")
	if val == nil {
		val = tensor.Scalar(0)
	}
	if val.NumElements() != 1 {
		return nil, n.Errorf("%w: value must hold one element, got %v", driver.ErrInvalidArgument, val)
	}
	y, err := newOut(n, val.Type(), tensor.Shape(shape))
	if err != nil {
		return nil, err
	}
	v := val.Contiguous().Bytes()
	dst := y.Bytes()
	if len(dst) > 0 {
		copy(dst, v)
		for filled := len(v); filled < len(dst); filled *= 2 {
			copy(dst[filled:], dst[:filled])
		}
	}
	return one(y), nil
}

// rangeKernel is Range: start, limit and delta scalars of one type (f32,
// f64, i16, i32, i64); max(ceil((limit-start)/delta), 0) elements.
func rangeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var xs [3]*tensor.Tensor
	for i := range xs {
		var err error
		if xs[i], err = need(n, in, i); err != nil {
			return nil, err
		}
		if xs[i].NumElements() != 1 {
			return nil, n.Errorf("%w: input %d must be a scalar, got %v", tensor.ErrShape, i, xs[i])
		}
	}
	if err := sameType(n, xs[:]...); err != nil {
		return nil, err
	}
	t := xs[0].Type()
	if !isNumeric(t) {
		return nil, n.Errorf("%w: Range on %v", driver.ErrUnsupported, t)
	}
	if t.IsInteger() {
		start, limit, delta := toI64s(xs[0])[0], toI64s(xs[1])[0], toI64s(xs[2])[0]
		if delta == 0 {
			return nil, n.Errorf("%w: delta is 0", driver.ErrInvalidArgument)
		}
		cnt := int64(0)
		if d := limit - start; (d > 0) == (delta > 0) && d != 0 {
			cnt = (d + delta - sign(delta)) / delta
		}
		y, err := newOut(n, t, tensor.Shape{cnt})
		if err != nil {
			return nil, err
		}
		v := make([]int64, cnt)
		for i := range v {
			v[i] = start + int64(i)*delta
		}
		storeI64(y, v)
		return one(y), nil
	}
	start, limit, delta := toF64s(xs[0])[0], toF64s(xs[1])[0], toF64s(xs[2])[0]
	if delta == 0 {
		return nil, n.Errorf("%w: delta is 0", driver.ErrInvalidArgument)
	}
	c := math.Ceil((limit - start) / delta)
	if math.IsNaN(c) || math.IsInf(c, 0) || c > 1<<40 {
		return nil, n.Errorf("%w: range(%v, %v, %v) is not finite", driver.ErrInvalidArgument, start, limit, delta)
	}
	cnt := max(int64(c), 0)
	y, err := newOut(n, t, tensor.Shape{cnt})
	if err != nil {
		return nil, err
	}
	v := make([]float64, cnt)
	for i := range v {
		v[i] = start + float64(i)*delta
	}
	storeF64(y, v)
	return one(y), nil
}

func sign(v int64) int64 {
	if v < 0 {
		return -1
	}
	return 1
}

// shapeKernels make values from shapes.
func shapeKernels() map[string]Kernel {
	return map[string]Kernel{
		"Shape":           shapeKernel,
		"Size":            sizeKernel,
		"ConstantOfShape": constantOfShapeKernel,
		"Range":           rangeKernel,
		"EyeLike":         eyeLikeKernel,
	}
}
