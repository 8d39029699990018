package clbackend

import (
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// reduce emits out = op over axes of x (axes normalised, sorted or not).
func (b *builder) reduce(n *graph.Node, name string, x, out int, axes []int64) error {
	is := b.val(x).shape
	defines, err := b.reduceDefines(n, name, b.val(x).typ)
	if err != nil {
		return err
	}
	red := make([]bool, len(is))
	for _, a := range axes {
		if a < 0 {
			a += int64(len(is))
		}
		red[a] = true
	}
	ist := strides(is)
	var kd, ks, rd, rs []int64
	count := int64(1)
	for d := range is {
		if red[d] {
			count *= is[d]
		}
		// Adjacent axes of the same kind merge into one (the input is
		// dense, so the outer stride is the inner one times its dim).
		if d > 0 && red[d] == red[d-1] {
			if red[d] {
				rd[len(rd)-1] *= is[d]
				rs[len(rs)-1] = ist[d]
			} else {
				kd[len(kd)-1] *= is[d]
				ks[len(ks)-1] = ist[d]
			}
			continue
		}
		if red[d] {
			rd, rs = append(rd, is[d]), append(rs, ist[d])
		} else {
			kd, ks = append(kd, is[d]), append(ks, ist[d])
		}
	}
	m := []int64{int64(len(kd))}
	m = append(m, kd...)
	m = append(m, ks...)
	m = append(m, int64(len(rd)))
	m = append(m, rd...)
	m = append(m, rs...)
	m = append(m, count)
	cnt := b.val(out).shape.NumElements()
	meta := b.meta(m)
	if cnt == 0 {
		return b.emit(n, name, defines, cnt, slotArg(x), slotArg(out), uint64(cnt), meta)
	}
	key := fmt.Sprintf("%s %v %s", name, m, b.val(x).typ)
	tunable := x == b.in(n, 0) && out == b.out(n, 0) && b.val(x).typ != tensor.F64
	return b.choose(n, "reduce", key, tunable, func(kernels.Variant) string { return "" }, b.profile().reduce(count, cnt), func(v kernels.Variant) error {
		if v.Algorithm == "workgroup" {
			wg := v.Get("WG")
			wgName := "reduce_wg_" + strings.TrimPrefix(name, "reduce_")
			return b.emitND(n, wgName, defines+" "+v.Defines(), []int{int(cnt) * wg}, []int{wg}, slotArg(x), slotArg(out), uint64(cnt), meta)
		}
		global, local := group1D(cnt, v.Get("WG"))
		return b.emitND(n, name, defines, global, local, slotArg(x), slotArg(out), uint64(cnt), meta)
	})
}

// reduceDefines returns reduce.cl's type defines for reduction name on
// type t: floatDefines' (f32, f16 storage, f64 with cl_khr_fp64), or the
// integer form (-DIS_INT) on every integer type but the 4-bit ones, for
// every reduction but LogSumExp (which the GPU runs in f64 on integers,
// as the CPU does: widerType).
func (b *builder) reduceDefines(n *graph.Node, name string, t tensor.ElementType) (string, error) {
	if !t.IsInteger() {
		return b.floatDefines(n, t)
	}
	if name == "reduce_log_sum_exp" || clType(t) == "" || t.Bits() == 4 {
		return "", errUnsupported(n, "element type %s", t)
	}
	return "-DIS_INT -DT=" + clType(t), nil
}

func lowerReduce(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	var axes []int64
	if v := b.in(n, 1); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "axes not known at plan time")
		}
		axes = a
	}
	if len(axes) == 0 {
		if n.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			b.alias(y, x)
			return nil
		}
		for d := range b.val(x).shape {
			axes = append(axes, int64(d))
		}
	}
	name := lowerings()[n.OpType].kernel
	return b.reduce(n, name, x, y, axes)
}

// lowerArgReduce runs ArgMax and ArgMin along one axis (keepdims only
// changes the output shape, which is already known).
func lowerArgReduce(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	t := b.val(x).typ
	if t == tensor.Bool || t == tensor.U8 || t.Bits() == 4 {
		return errUnsupported(n, "element type %s", t)
	}
	ct, err := b.numType(n, t) // f64 needs cl_khr_fp64
	if err != nil {
		return err
	}
	if len(is) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	if is[ax] == 0 {
		return errUnsupported(n, "an empty axis %d", ax)
	}
	outer, inner := prod(is[:ax]), prod(is[ax+1:])
	cnt := outer * inner
	if cnt == 0 {
		return nil
	}
	name := lowerings()[n.OpType].kernel
	return b.emit(n, name, "-DT="+ct, cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(is[ax]), uint64(inner),
		int32(n.Attrs.Int("select_last_index", 0)))
}

// lowerCumSum sums along one axis (integers wrapping, as the CPU
// reference); the kernel reads the axis from its (possibly runtime) input.
func lowerCumSum(b *builder, n *graph.Node) error {
	x, av, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	s := b.val(x).shape
	t, at := b.val(x).typ, b.val(av).typ
	if t != tensor.F32 && t != tensor.F64 && (!t.IsInteger() || t.Bits() == 4) {
		return errUnsupported(n, "element type %s", t) // f16 and bf16 run in f32 (widerType)
	}
	ct, err := b.numType(n, t) // f64 needs cl_khr_fp64
	if err != nil {
		return err
	}
	if t.IsInteger() {
		ct += " -DACC=ulong" // wrapping 64-bit sums
	}
	if (at != tensor.I64 && at != tensor.I32) || b.val(av).shape.NumElements() != 1 {
		return errUnsupported(n, "axis of type %s and shape %v (want one i32 or i64)", at, b.val(av).shape)
	}
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	cnt := s.NumElements()
	if cnt == 0 {
		return nil
	}
	m := append([]int64{int64(len(s))}, s...)
	return b.emit(n, "cumsum", "-DT="+ct+" -DIDX="+clType(at), cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m),
		slotArg(av), int32(n.Attrs.Int("exclusive", 0)), int32(n.Attrs.Int("reverse", 0)))
}

// lowerTopK ranks every element within its fibre in parallel; K must be
// known at plan time (it sets the output shape).
func lowerTopK(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	ks, ok := b.hostInts(b.in(n, 1))
	if !ok || len(ks) != 1 {
		return errUnsupported(n, "K is not known at plan time")
	}
	t := b.val(x).typ
	if !t.IsInteger() && t != tensor.F32 && t != tensor.F64 {
		return errUnsupported(n, "element type %s", t)
	}
	ct, err := b.numType(n, t)
	if err != nil {
		return err
	}
	defines := "-DT=" + ct
	if t.IsFloat() {
		defines += " -DIS_FLOAT"
	}
	s := b.val(x).shape
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	k, cnt := ks[0], s.NumElements()
	if k <= 0 || cnt == 0 {
		return nil
	}
	name := "topk"
	if n.Attrs.Int("largest", 1) == 0 {
		name = "topk_smallest"
	}
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(b.out(n, 0)), slotArg(b.out(n, 1)), uint64(cnt),
		uint64(s[ax]), uint64(prod(s[ax+1:])), uint64(k))
}

// reduceLowerings are the GPU table entries (see lowering) of the reductions,
// ArgMax/ArgMin, TopK and CumSum.
func reduceLowerings() map[string]lowering {
	return map[string]lowering{
		"ReduceMean": {lower: lowerReduce, kernel: "reduce_mean", half: true}, "ReduceSum": {lower: lowerReduce, kernel: "reduce_sum", half: true},
		"ReduceMax": {lower: lowerReduce, kernel: "reduce_max", half: true}, "ReduceMin": {lower: lowerReduce, kernel: "reduce_min", half: true},
		"ReduceProd": {lower: lowerReduce, kernel: "reduce_prod", half: true}, "ReduceL1": {lower: lowerReduce, kernel: "reduce_l1", half: true},
		"ReduceL2": {lower: lowerReduce, kernel: "reduce_l2", half: true}, "ReduceSumSquare": {lower: lowerReduce, kernel: "reduce_sum_square", half: true},
		"ReduceLogSumExp": {lower: lowerReduce, kernel: "reduce_log_sum_exp", half: true},
		"ArgMax":          {lower: lowerArgReduce, kernel: "arg_max"}, "ArgMin": {lower: lowerArgReduce, kernel: "arg_min"},
		"TopK": {lower: lowerTopK}, "CumSum": {lower: lowerCumSum},
	}
}
