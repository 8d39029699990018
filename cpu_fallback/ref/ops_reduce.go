package ref

import (
	"math"
	"sort"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// redOp is a reduction.
type redOp uint8

const (
	rSum redOp = iota
	rMean
	rMax
	rMin
	rProd
	rL1
	rL2
	rSumSquare
	rLogSumExp
)

// axesOf returns the axes of n: its axes input (input 1) or, for models
// converted from older opsets, its axes attribute; nil when neither is
// given.
func axesOf(n *graph.Node, in []*tensor.Tensor) ([]int64, error) {
	if a := opt(in, 1); a != nil {
		return intsOf(n, a, "axes")
	}
	return n.Attrs.Ints("axes", nil), nil
}

// reduceAxes returns the mask of reduced axes of a rank-r input: the axes
// input (or, for models converted from older opsets, the axes attribute);
// none given means all axes, or none with noop_with_empty_axes.
func reduceAxes(n *graph.Node, in []*tensor.Tensor, rank int) ([]bool, error) {
	axes, err := axesOf(n, in)
	if err != nil {
		return nil, err
	}
	if len(axes) > 0 {
		return normAxes(n, axes, rank)
	}
	mask := make([]bool, rank)
	if n.Attrs.Int("noop_with_empty_axes", 0) == 0 {
		for i := range mask {
			mask[i] = true
		}
	}
	return mask, nil
}

// reducePlan returns a walk over the input (input k=0) and output (k=1,
// stride 0 along reduced axes), the output shape with the reduced axes kept
// as 1, and the number of elements folded into each output.
func reducePlan(shape tensor.Shape, mask []bool) (*bcastPlan, tensor.Shape, int64) {
	kept := shape.Clone()
	count := int64(1)
	for i, m := range mask {
		if m {
			kept[i] = 1
			count *= shape[i]
		}
	}
	outSt := tensor.ContiguousStrides(kept)
	for i, m := range mask {
		if m {
			outSt[i] = 0
		}
	}
	return newStridePlan(shape, [][]int64{tensor.ContiguousStrides(shape), outSt}), kept, count
}

// finalShape drops the reduced axes unless keepdims.
func finalShape(kept tensor.Shape, mask []bool, keep bool) tensor.Shape {
	if keep {
		return kept
	}
	out := tensor.Shape{}
	for i, d := range kept {
		if !mask[i] {
			out = append(out, d)
		}
	}
	return out
}

func reduceKernel(op redOp) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		if !isNumeric(x.Type()) {
			return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, n.OpType, x)
		}
		mask, err := reduceAxes(n, in, x.Rank())
		if err != nil {
			return nil, err
		}
		p, kept, count := reducePlan(x.Shape(), mask)
		y, err := newOut(n, x.Type(), finalShape(kept, mask, n.Attrs.Int("keepdims", 1) != 0))
		if err != nil {
			return nil, err
		}
		outN := kept.NumElements()
		switch {
		case x.Type() == tensor.F32:
			storeF64(y, reduceFloat(p, op, x.F32(), outN, count))
			return one(y), nil
		case isHalf(x.Type()):
			storeF64(y, reduceFloat(p, op, toF32(x), outN, count))
			return one(y), nil
		case x.Type().IsFloat() || op == rLogSumExp:
			storeF64(y, reduceFloat(p, op, toF64s(x), outN, count))
			return one(y), nil
		}
		lo, hi := intRange(x.Type())
		v := toI64s(x)
		if x.Type() == tensor.U64 && (op == rMax || op == rMin) {
			// Flipping the sign bit maps u64 order onto i64 order.
			flipSign(v)
			r := reduceInt(p, op, v, outN, count, math.MinInt64, math.MaxInt64)
			flipSign(r)
			storeI64(y, r)
			return one(y), nil
		}
		storeI64(y, reduceInt(p, op, v, outN, count, lo, hi))
		return one(y), nil
	}
}

func reduceFloat[S float32 | float64](p *bcastPlan, op redOp, x []S, outN, count int64) []float64 {
	acc := make([]float64, outN)
	switch op {
	case rMax, rLogSumExp:
		fill(acc, math.Inf(-1))
	case rMin:
		fill(acc, math.Inf(1))
	case rProd:
		fill(acc, 1)
	}
	if op == rLogSumExp {
		accumulate(p, rMax, x, acc)
		for i, m := range acc {
			if math.IsInf(m, 0) {
				acc[i] = 0 // shift; all -inf (or some +inf) needs none
			}
		}
		sum := make([]float64, outN)
		lseRun(p, x, acc, sum)
		for i := range acc {
			acc[i] += math.Log(sum[i])
		}
		return acc
	}
	accumulate(p, op, x, acc)
	switch op {
	case rMean:
		for i := range acc {
			acc[i] /= float64(count)
		}
	case rL2:
		for i := range acc {
			acc[i] = math.Sqrt(acc[i])
		}
	}
	return acc
}

func reduceInt(p *bcastPlan, op redOp, x []int64, outN, count, lo, hi int64) []int64 {
	acc := make([]int64, outN)
	switch op {
	case rMax:
		fill(acc, lo)
	case rMin:
		fill(acc, hi)
	case rProd:
		fill(acc, 1)
	}
	accumulate(p, op, x, acc)
	switch op {
	case rMean:
		for i := range acc {
			if count > 0 {
				acc[i] /= count
			}
		}
	case rL2:
		for i := range acc {
			acc[i] = int64(math.Sqrt(float64(acc[i])))
		}
	}
	return acc
}

// flipSign flips the sign bit of every element of v.
func flipSign(v []int64) {
	for i := range v {
		v[i] ^= math.MinInt64
	}
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// accumulate folds x into acc along the plan; rMean and rL2 accumulate like
// rSum and rSumSquare and are finished by the caller.
func accumulate[S number, A float64 | int64](p *bcastPlan, op redOp, x []S, acc []A) {
	so := p.inner(1)
	p.runs(func(_ int64, offs []int64, n int64) {
		src := x[offs[0] : offs[0]+n]
		if so == 0 {
			acc[offs[1]] = foldRun(op, src, acc[offs[1]])
			return
		}
		foldVec(op, src, acc[offs[1]:offs[1]+n])
	})
}

// foldVec folds src[i] into dst[i] for each i.
func foldVec[S number, A float64 | int64](op redOp, src []S, dst []A) {
	dst = dst[:len(src)]
	switch op {
	case rSum, rMean:
		for i, sv := range src {
			v := A(sv)
			dst[i] += v
		}
	case rSumSquare, rL2:
		for i, sv := range src {
			v := A(sv)
			dst[i] += v * v
		}
	case rL1:
		for i, sv := range src {
			v := A(sv)
			if v < 0 {
				v = -v
			}
			dst[i] += v
		}
	case rProd:
		for i, sv := range src {
			v := A(sv)
			dst[i] *= v
		}
	case rMax:
		for i, sv := range src {
			v := A(sv)
			if v != v || v > dst[i] {
				dst[i] = v
			}
		}
	case rMin:
		for i, sv := range src {
			v := A(sv)
			if v != v || v < dst[i] {
				dst[i] = v
			}
		}
	}
}

// foldRun folds the values of src into a.
func foldRun[S number, A float64 | int64](op redOp, src []S, a A) A {
	switch op {
	case rSum, rMean:
		for _, sv := range src {
			v := A(sv)
			a += v
		}
	case rSumSquare, rL2:
		for _, sv := range src {
			v := A(sv)
			a += v * v
		}
	case rL1:
		for _, sv := range src {
			v := A(sv)
			if v < 0 {
				v = -v
			}
			a += v
		}
	case rProd:
		for _, sv := range src {
			v := A(sv)
			a *= v
		}
	case rMax:
		for _, sv := range src {
			v := A(sv)
			if v != v || v > a {
				a = v
			}
		}
	case rMin:
		for _, sv := range src {
			v := A(sv)
			if v != v || v < a {
				a = v
			}
		}
	}
	return a
}

// lseRun adds exp(x - shift[out]) into sum[out].
func lseRun[S float32 | float64](p *bcastPlan, x []S, shift, sum []float64) {
	so := p.inner(1)
	p.runs(func(_ int64, offs []int64, n int64) {
		src := x[offs[0] : offs[0]+n]
		if so == 0 {
			s, m := sum[offs[1]], shift[offs[1]]
			for _, v := range src {
				s += math.Exp(float64(v) - m)
			}
			sum[offs[1]] = s
			return
		}
		for i, v := range src {
			sum[offs[1]+int64(i)] += math.Exp(float64(v) - shift[offs[1]+int64(i)])
		}
	})
}

// argKernel is ArgMax (max) or ArgMin: attributes axis, keepdims,
// select_last_index; i64 output.
func argKernel(max bool) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := need(n, in, 0)
		if err != nil {
			return nil, err
		}
		if !isNumeric(x.Type()) {
			return nil, n.Errorf("%w: %s on %v", driver.ErrUnsupported, n.OpType, x)
		}
		rank := max1(x.Rank())
		axis, err := normAxis(n, n.Attrs.Int("axis", 0), rank)
		if err != nil {
			return nil, err
		}
		shape := x.Shape()
		if len(shape) == 0 {
			shape = tensor.Shape{1}
		}
		if shape[axis] == 0 {
			return nil, n.Errorf("%w: %s over axis %d of size 0", driver.ErrInvalidArgument, n.OpType, axis)
		}
		mask := make([]bool, len(shape))
		mask[axis] = true
		kept := shape.Clone()
		kept[axis] = 1
		y, err := newOut(n, tensor.I64, finalShape(kept, mask, n.Attrs.Int("keepdims", 1) != 0))
		if err != nil {
			return nil, err
		}
		outer := tensor.Shape(shape[:axis]).NumElements()
		inner := tensor.Shape(shape[axis+1:]).NumElements()
		last := n.Attrs.Int("select_last_index", 0) != 0
		o := y.I64()
		l := shape[axis]
		switch x.Type() {
		case tensor.F32:
			argRun(x.F32(), o, outer, l, inner, max, last)
		case tensor.F64:
			argRun(x.F64(), o, outer, l, inner, max, last)
		case tensor.F16, tensor.BF16:
			argRun(toF32(x), o, outer, l, inner, max, last)
		case tensor.I8:
			argRun(x.I8(), o, outer, l, inner, max, last)
		case tensor.U8:
			argRun(x.U8(), o, outer, l, inner, max, last)
		case tensor.I16:
			argRun(x.I16(), o, outer, l, inner, max, last)
		case tensor.U16:
			argRun(x.U16(), o, outer, l, inner, max, last)
		case tensor.U32:
			argRun(x.U32(), o, outer, l, inner, max, last)
		case tensor.U64:
			argRun(x.U64(), o, outer, l, inner, max, last)
		case tensor.I32:
			argRun(x.I32(), o, outer, l, inner, max, last)
		case tensor.I64:
			argRun(x.I64(), o, outer, l, inner, max, last)
		}
		return one(y), nil
	}
}

func max1(r int) int {
	if r == 0 {
		return 1
	}
	return r
}

func argRun[T number](x []T, o []int64, outer, l, inner int64, max, last bool) {
	for a := range outer {
		for c := range inner {
			base := a*l*inner + c
			best, bi := x[base], int64(0)
			for k := int64(1); k < l; k++ {
				v := x[base+k*inner]
				var better bool
				if max {
					better = v > best || (last && v == best)
				} else {
					better = v < best || (last && v == best)
				}
				if better {
					best, bi = v, k
				}
			}
			o[a*inner+c] = bi
		}
	}
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
		return nil, n.Errorf("%w: input 1 (axis) is required", driver.ErrInvalidArgument)
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
		return nil, n.Errorf("%w: CumSum on %v", driver.ErrUnsupported, x)
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
		return nil, n.Errorf("%w: input 1 (K) is required", driver.ErrInvalidArgument)
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), x.Rank())
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	L := xs[axis]
	if k < 0 || k > L {
		return nil, n.Errorf("%w: K=%d is out of range for axis %d of %v", driver.ErrInvalidArgument, k, axis, x)
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

// reduceKernels are the ReduceXxx ops (axes as an optional i64 input,
// keepdims, noop_with_empty_axes), ArgMax/ArgMin, TopK and CumSum.
func reduceKernels() map[string]Kernel {
	return map[string]Kernel{
		"ReduceSum":       reduceKernel(rSum),
		"ReduceMean":      reduceKernel(rMean),
		"ReduceMax":       reduceKernel(rMax),
		"ReduceMin":       reduceKernel(rMin),
		"ReduceProd":      reduceKernel(rProd),
		"ReduceL1":        reduceKernel(rL1),
		"ReduceL2":        reduceKernel(rL2),
		"ReduceSumSquare": reduceKernel(rSumSquare),
		"ReduceLogSumExp": reduceKernel(rLogSumExp),
		"ArgMax":          argKernel(true),
		"ArgMin":          argKernel(false),
		"TopK":            topKKernel,
		"CumSum":          cumSumKernel,
	}
}
