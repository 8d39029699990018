package cpufallback

import (
	"math"
	"sort"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// moreKernels are the ops added for ONNX coverage: more unary math, IsNaN,
// IsInf, Shrink, Mod, CastLike, Trilu, EyeLike, CumSum, OneHot,
// GatherElements, GatherND, ScatterElements, ScatterND, DepthToSpace,
// SpaceToDepth and TopK. Data-movement kernels copy elements as bytes, so
// they work for every element type; arithmetic is done in float64 for float
// types and int64 for integers.
func moreKernels() map[string]kernel {
	fm := func(f func(float64) float64) kernel {
		return floatMath(func(*graph.Node) func(float64) float64 { return f })
	}
	return map[string]kernel{
		"Tan":             fm(math.Tan),
		"Acos":            fm(math.Acos),
		"Asin":            fm(math.Asin),
		"Atan":            fm(math.Atan),
		"Sinh":            fm(math.Sinh),
		"Cosh":            fm(math.Cosh),
		"Asinh":           fm(math.Asinh),
		"Acosh":           fm(math.Acosh),
		"Atanh":           fm(math.Atanh),
		"IsNaN":           isClassKernel,
		"IsInf":           isClassKernel,
		"Shrink":          shrinkKernel,
		"Mod":             modKernel,
		"CastLike":        castLikeKernel,
		"Trilu":           triluKernel,
		"EyeLike":         eyeLikeKernel,
		"CumSum":          cumSumKernel,
		"OneHot":          oneHotKernel,
		"GatherElements":  gatherElementsKernel,
		"GatherND":        gatherNDKernel,
		"ScatterElements": scatterElementsKernel,
		"ScatterND":       scatterNDKernel,
		"DepthToSpace":    spaceDepthKernel,
		"SpaceToDepth":    spaceDepthKernel,
		"TopK":            topKKernel,
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

// isClassKernel is IsNaN and IsInf (detect_negative, detect_positive).
func isClassKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !x.Type().IsFloat() {
		return nil, n.Errorf("%w: %s on %v, want a float type", plugin.ErrUnsupported, n.OpType, x)
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

// shrinkKernel is Shrink: x+bias below -lambd, x-bias above lambd, else 0.
func shrinkKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	lambd, bias := float64(n.Attrs.Float("lambd", 0.5)), float64(n.Attrs.Float("bias", 0))
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
		return nil, n.Errorf("%w: floating-point Mod needs fmod=1", plugin.ErrInvalidArgument)
	}
	if !t.IsFloat() && !t.IsInteger() {
		return nil, n.Errorf("%w: Mod on %v", plugin.ErrUnsupported, a)
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
		return nil, n.Errorf("%w: integer modulo by zero", plugin.ErrInvalidArgument)
	}
	storeI64(y, v)
	return one(y), nil
}

// castLikeKernel is CastLike: input 0 converted to input 1's element type.
func castLikeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	like, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	y, err := x.Convert(like.Type())
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	if y == x {
		y = x.Clone()
	}
	return one(y), nil
}

// scalarInt reads input i as one integer (a 0-D or one-element tensor);
// ok is false when it is omitted.
func scalarInt(n *graph.Node, in []*tensor.Tensor, i int, what string) (int64, bool, error) {
	x := opt(in, i)
	if x == nil {
		return 0, false, nil
	}
	if !x.Type().IsInteger() || x.NumElements() != 1 {
		return 0, false, n.Errorf("%w: %s must be one integer, got %v", plugin.ErrInvalidArgument, what, x)
	}
	return toI64s(x)[0], true, nil
}

// triluKernel is Trilu: keeps the upper (upper=1, j-i >= k) or lower
// (j-i <= k) triangle of the last two axes and zeroes the rest.
func triluKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() < 2 {
		return nil, n.Errorf("%w: input %v has rank < 2", tensor.ErrShape, x)
	}
	k, _, err := scalarInt(n, in, 1, "k")
	if err != nil {
		return nil, err
	}
	upper := n.Attrs.Int("upper", 1) != 0
	y := x.Clone()
	xs := x.Shape()
	rows, cols := xs[len(xs)-2], xs[len(xs)-1]
	esz := int64(x.Type().Size())
	B := y.Bytes()
	mats := xs.NumElements() / max(rows*cols, 1)
	for m := int64(0); m < mats; m++ {
		for i := int64(0); i < rows; i++ {
			for j := int64(0); j < cols; j++ {
				keep := j-i >= k
				if !upper {
					keep = j-i <= k
				}
				if !keep {
					off := ((m*rows+i)*cols + j) * esz
					clear(B[off : off+esz])
				}
			}
		}
	}
	return one(y), nil
}

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

// cumSumKernel is CumSum along the axis input, with exclusive and reverse.
func cumSumKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	a, ok, err := scalarInt(n, in, 1, "axis")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, n.Errorf("%w: input 1 (axis) is required", plugin.ErrInvalidArgument)
	}
	axis, err := normAxis(n, a, x.Rank())
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	outer, L, inner := nnProd(xs[:axis]), xs[axis], nnProd(xs[axis+1:])
	excl, rev := n.Attrs.Int("exclusive", 0) != 0, n.Attrs.Int("reverse", 0) != 0
	y, err := newOut(n, x.Type(), xs)
	if err != nil {
		return nil, err
	}
	walk := func(f func(base, step int64)) {
		for o := int64(0); o < outer; o++ {
			for i := int64(0); i < inner; i++ {
				f(o*L*inner+i, inner)
			}
		}
	}
	order := func(j int64) int64 {
		if rev {
			return L - 1 - j
		}
		return j
	}
	if x.Type().IsFloat() {
		X := x.Float64s()
		v := make([]float64, len(X))
		walk(func(base, step int64) {
			s := 0.0
			for j := int64(0); j < L; j++ {
				p := base + order(j)*step
				if excl {
					v[p] = s
					s += X[p]
				} else {
					s += X[p]
					v[p] = s
				}
			}
		})
		storeF64(y, v)
		return one(y), nil
	}
	if !x.Type().IsInteger() {
		return nil, n.Errorf("%w: CumSum on %v", plugin.ErrUnsupported, x)
	}
	X := toI64s(x)
	v := make([]int64, len(X))
	walk(func(base, step int64) {
		s := int64(0)
		for j := int64(0); j < L; j++ {
			p := base + order(j)*step
			if excl {
				v[p] = s
				s += X[p]
			} else {
				s += X[p]
				v[p] = s
			}
		}
	})
	storeI64(y, v)
	return one(y), nil
}

// oneHotKernel is OneHot(indices, depth, values): values[1] where the new
// axis equals the index (negative indices count from depth), values[0]
// elsewhere; out-of-range indices give an all-off fibre.
func oneHotKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ind, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	dt, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	vals, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	if dt.NumElements() != 1 || vals.NumElements() != 2 {
		return nil, n.Errorf("%w: depth %v must have one element and values %v two", plugin.ErrInvalidArgument, dt, vals)
	}
	depth := int64(dt.Float64s()[0])
	if depth < 0 {
		return nil, n.Errorf("%w: depth %d is negative", plugin.ErrInvalidArgument, depth)
	}
	is := ind.Shape()
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(is)+1)
	if err != nil {
		return nil, err
	}
	shape := append(append(append(tensor.Shape{}, is[:axis]...), depth), is[axis:]...)
	y, err := newOut(n, vals.Type(), shape)
	if err != nil {
		return nil, err
	}
	esz := int64(vals.Type().Size())
	off, on := vals.Bytes()[:esz], vals.Bytes()[esz:2*esz]
	Y := y.Bytes()
	for o := int64(0); o < shape.NumElements(); o++ {
		copy(Y[o*esz:], off)
	}
	outer, inner := nnProd(is[:axis]), nnProd(is[axis:])
	I := ind.Float64s()
	for o := int64(0); o < outer; o++ {
		for i := int64(0); i < inner; i++ {
			k := int64(I[o*inner+i])
			if k < 0 {
				k += depth
			}
			if k < 0 || k >= depth {
				continue
			}
			copy(Y[((o*depth+k)*inner+i)*esz:], on)
		}
	}
	return one(y), nil
}

// indexAt reads indices as int64, wrapping negative ones by dim and
// checking the range.
func indexAt(n *graph.Node, v, dim int64) (int64, error) {
	if v < 0 {
		v += dim
	}
	if v < 0 || v >= dim {
		return 0, n.Errorf("%w: index %d is out of range for a dimension of %d", plugin.ErrInvalidArgument, v, dim)
	}
	return v, nil
}

// elementsPlan returns the normalised axis and, for each element of the
// indices tensor, the flat offset in data of that element with its axis
// coordinate replaced by the index.
func elementsPlan(n *graph.Node, data, ind *tensor.Tensor) ([]int64, error) {
	ds, is := data.Shape(), ind.Shape()
	if len(ds) != len(is) || len(ds) == 0 {
		return nil, n.Errorf("%w: data %v and indices %v need the same rank >= 1", tensor.ErrShape, data, ind)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", 0), len(ds))
	if err != nil {
		return nil, err
	}
	dst := tensor.ContiguousStrides(ds)
	I := toI64s(ind)
	offs := make([]int64, len(I))
	idx := make([]int64, len(is))
	for e := range I {
		var off int64
		for d := range is {
			c := idx[d]
			if d == axis {
				if c, err = indexAt(n, I[e], ds[d]); err != nil {
					return nil, err
				}
			} else if c >= ds[d] {
				return nil, n.Errorf("%w: indices %v exceed data %v along axis %d", tensor.ErrShape, ind, data, d)
			}
			off += c * dst[d]
		}
		offs[e] = off
		for d := len(is) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < is[d] {
				break
			}
			idx[d] = 0
		}
	}
	return offs, nil
}

// gatherElementsKernel is GatherElements.
func gatherElementsKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	offs, err := elementsPlan(n, data, ind)
	if err != nil {
		return nil, err
	}
	y, err := newOut(n, data.Type(), ind.Shape())
	if err != nil {
		return nil, err
	}
	esz := int64(data.Type().Size())
	D, Y := data.Bytes(), y.Bytes()
	for e, off := range offs {
		copy(Y[int64(e)*esz:int64(e+1)*esz], D[off*esz:])
	}
	return one(y), nil
}

// ndPlan returns, for each index tuple of a GatherND/ScatterND indices
// tensor [..., k], the flat element offset of the slice it selects in data
// (after batch_dims leading axes), and the slice length.
func ndPlan(n *graph.Node, data, ind *tensor.Tensor, batch int) ([]int64, int64, error) {
	ds, is := data.Shape(), ind.Shape()
	if len(is) == 0 || batch < 0 || batch >= len(is) {
		return nil, 0, n.Errorf("%w: indices %v with batch_dims %d", tensor.ErrShape, ind, batch)
	}
	k := int(is[len(is)-1])
	if batch+k > len(ds) {
		return nil, 0, n.Errorf("%w: indices %v index %d axes of data %v after %d batch axes", tensor.ErrShape, ind, k, data, batch)
	}
	for d := 0; d < batch; d++ {
		if ds[d] != is[d] {
			return nil, 0, n.Errorf("%w: batch axis %d differs between data %v and indices %v", tensor.ErrShape, d, data, ind)
		}
	}
	dst := tensor.ContiguousStrides(ds)
	slice := nnProd(ds[batch+k:])
	batchSize := nnProd(ds[:batch])
	perBatch := nnProd(ds[batch:])
	tuples := nnProd(is[:len(is)-1])
	perBatchTuples := tuples / max(batchSize, 1)
	I := toI64s(ind)
	offs := make([]int64, tuples)
	for t := int64(0); t < tuples; t++ {
		off := (t / max(perBatchTuples, 1)) * perBatch
		for j := 0; j < k; j++ {
			c, err := indexAt(n, I[t*int64(k)+int64(j)], ds[batch+j])
			if err != nil {
				return nil, 0, err
			}
			off += c * dst[batch+j]
		}
		offs[t] = off
	}
	return offs, slice, nil
}

// gatherNDKernel is GatherND with batch_dims.
func gatherNDKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	batch := int(n.Attrs.Int("batch_dims", 0))
	offs, slice, err := ndPlan(n, data, ind, batch)
	if err != nil {
		return nil, err
	}
	is := ind.Shape()
	k := int(is[len(is)-1])
	shape := append(append(tensor.Shape{}, is[:len(is)-1]...), data.Shape()[batch+k:]...)
	y, err := newOut(n, data.Type(), shape)
	if err != nil {
		return nil, err
	}
	esz := int64(data.Type().Size())
	D, Y := data.Bytes(), y.Bytes()
	for t, off := range offs {
		copy(Y[int64(t)*slice*esz:int64(t+1)*slice*esz], D[off*esz:(off+slice)*esz])
	}
	return one(y), nil
}

// scatterInto writes updates (element u goes to data offset dst(u)) into a
// copy of data with the reduction attribute (none, add, mul, max, min).
func scatterInto(n *graph.Node, data, upd *tensor.Tensor, dst func(u int64) int64) ([]*tensor.Tensor, error) {
	if upd.Type() != data.Type() {
		return nil, n.Errorf("%w: updates %v and data %v differ in type", tensor.ErrType, upd, data)
	}
	red := n.Attrs.String("reduction", "none")
	total := upd.NumElements()
	if red == "none" {
		y := data.Clone()
		esz := int64(data.Type().Size())
		Y, U := y.Bytes(), upd.Bytes()
		for u := int64(0); u < total; u++ {
			o := dst(u)
			copy(Y[o*esz:(o+1)*esz], U[u*esz:])
		}
		return one(y), nil
	}
	var f func(a, b float64) float64
	switch red {
	case "add":
		f = func(a, b float64) float64 { return a + b }
	case "mul":
		f = func(a, b float64) float64 { return a * b }
	case "max":
		f = math.Max
	case "min":
		f = math.Min
	default:
		return nil, n.Errorf("%w: reduction %q is not one of none, add, mul, max, min", plugin.ErrInvalidArgument, red)
	}
	Y, U := data.Float64s(), upd.Float64s()
	for u := int64(0); u < total; u++ {
		o := dst(u)
		Y[o] = f(Y[o], U[u])
	}
	y, err := fromF64(n, data.Type(), data.Shape(), Y)
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// scatterElementsKernel is ScatterElements (and the older Scatter).
func scatterElementsKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	upd, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	if !upd.Shape().Equal(ind.Shape()) {
		return nil, n.Errorf("%w: updates %v and indices %v differ in shape", tensor.ErrShape, upd, ind)
	}
	offs, err := elementsPlan(n, data, ind)
	if err != nil {
		return nil, err
	}
	return scatterInto(n, data, upd, func(u int64) int64 { return offs[u] })
}

// scatterNDKernel is ScatterND.
func scatterNDKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	data, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ind, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	upd, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	offs, slice, err := ndPlan(n, data, ind, 0)
	if err != nil {
		return nil, err
	}
	if upd.NumElements() != int64(len(offs))*slice {
		return nil, n.Errorf("%w: updates %v do not match indices %v and data %v", tensor.ErrShape, upd, ind, data)
	}
	return scatterInto(n, data, upd, func(u int64) int64 { return offs[u/slice] + u%slice })
}

// spaceDepthKernel is DepthToSpace (mode DCR or CRD) and SpaceToDepth on
// NCHW data.
func spaceDepthKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	b := n.Attrs.Int("blocksize", 0)
	xs := x.Shape()
	if x.Rank() != 4 || b <= 0 {
		return nil, n.Errorf("%w: want NCHW input and blocksize > 0, got %v and %d", tensor.ErrShape, x, b)
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	d2s := n.OpType == "DepthToSpace"
	crd := n.Attrs.String("mode", "DCR") == "CRD"
	var ys tensor.Shape
	if d2s {
		if C%(b*b) != 0 {
			return nil, n.Errorf("%w: channels of %v are not divisible by blocksize^2", tensor.ErrShape, x)
		}
		ys = tensor.Shape{N, C / (b * b), H * b, W * b}
	} else {
		if H%b != 0 || W%b != 0 {
			return nil, n.Errorf("%w: spatial dims of %v are not divisible by blocksize", tensor.ErrShape, x)
		}
		ys = tensor.Shape{N, C * b * b, H / b, W / b}
	}
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	esz := int64(x.Type().Size())
	X, Y := x.Bytes(), y.Bytes()
	// Walk the space side (small C, big H, W) and map it to the depth side.
	sC, sH, sW := ys[1], ys[2], ys[3] // space-side shape for DepthToSpace
	if !d2s {
		sC, sH, sW = C, H, W
	}
	dC, dH, dW := sC*b*b, sH/b, sW/b
	for nn := int64(0); nn < N; nn++ {
		for c := int64(0); c < sC; c++ {
			for h := int64(0); h < sH; h++ {
				for w := int64(0); w < sW; w++ {
					bh, bw := h%b, w%b
					dc := (bh*b+bw)*sC + c
					if crd {
						dc = c*b*b + bh*b + bw
					}
					sOff := ((nn*sC+c)*sH+h)*sW + w
					dOff := ((nn*dC+dc)*dH+h/b)*dW + w/b
					if d2s {
						copy(Y[sOff*esz:(sOff+1)*esz], X[dOff*esz:])
					} else {
						copy(Y[dOff*esz:(dOff+1)*esz], X[sOff*esz:])
					}
				}
			}
		}
	}
	return one(y), nil
}

// topKKernel is TopK: the K largest (or smallest, largest=0) elements along
// axis, sorted, ties broken by the lower index, with their i64 indices.
func topKKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	k, ok, err := scalarInt(n, in, 1, "K")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, n.Errorf("%w: input 1 (K) is required", plugin.ErrInvalidArgument)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), x.Rank())
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	L := xs[axis]
	if k < 0 || k > L {
		return nil, n.Errorf("%w: K=%d is out of range for axis %d of %v", plugin.ErrInvalidArgument, k, axis, x)
	}
	largest := n.Attrs.Int("largest", 1) != 0
	ys := xs.Clone()
	ys[axis] = k
	vals, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	idx, err := newOut(n, tensor.I64, ys)
	if err != nil {
		return nil, err
	}
	outer, inner := nnProd(xs[:axis]), nnProd(xs[axis+1:])
	X := x.Float64s()
	esz := int64(x.Type().Size())
	XB, VB, I := x.Bytes(), vals.Bytes(), idx.I64()
	order := make([]int64, L)
	for o := int64(0); o < outer; o++ {
		for i := int64(0); i < inner; i++ {
			base := o*L*inner + i
			for j := range order {
				order[j] = int64(j)
			}
			sort.SliceStable(order, func(a, b int) bool {
				va, vb := X[base+order[a]*inner], X[base+order[b]*inner]
				if largest {
					return va > vb
				}
				return va < vb
			})
			for j := int64(0); j < k; j++ {
				src := base + order[j]*inner
				dst := o*k*inner + j*inner + i
				copy(VB[dst*esz:(dst+1)*esz], XB[src*esz:])
				I[dst] = order[j]
			}
		}
	}
	return []*tensor.Tensor{vals, idx}, nil
}
