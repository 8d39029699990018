package ir

import (
	"math"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The slicing and splitting ops of the movement family: Split,
// VariadicSplit, Slice and StridedSlice.

// importSplit: num_splits equal parts along the constant axis.
func importSplit(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	axis, err := c.scalarInt(1, "axis")
	if err != nil {
		return nil, err
	}
	k, err := c.int("num_splits", 0)
	if err != nil {
		return nil, err
	}
	if k < 1 || int(k) != len(c.l.Outputs) {
		return nil, c.badAttr("num_splits", errf("%d for %d output ports", k, len(c.l.Outputs)))
	}
	n, err := c.node("Split", "", []graph.Output{c.in[0]}, graph.Attrs{"axis": axis, "num_outputs": k}, int(k))
	if err != nil {
		return nil, err
	}
	return outs(n), nil
}

// scalarInt returns input i's single integer, which must be a constant.
func (c *layerCtx) scalarInt(i int, what string) (int64, error) {
	v, err := c.ints(i, what)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, c.errorf(ErrInvalidModel, "input %d (%s) has %d values, want 1", i, what, len(v))
	}
	return v[0], nil
}

// importVariadicSplit: lengths along the constant axis; a -1 takes the
// rest, which the axis's static size decides.
func importVariadicSplit(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	axis, err := c.scalarInt(1, "axis")
	if err != nil {
		return nil, err
	}
	lengths := c.in[2]
	if v, ok := c.value(2); ok {
		l, _ := graph.IntValues(v)
		rest, sum := -1, int64(0)
		for i, x := range l {
			if x == -1 {
				rest = i
			} else {
				sum += x
			}
		}
		if rest >= 0 || v.Type() != tensor.I64 {
			if rest >= 0 {
				xs := c.in[0].Shape()
				r := xs.Rank()
				a := int(axis)
				if a < 0 {
					a += r
				}
				if r < 0 || a < 0 || a >= r || !xs.Dims[a].IsStatic() {
					return nil, c.errorf(ErrUnsupportedAttribute, "split_lengths %v: a -1 needs a static size on axis %d", l, axis)
				}
				l = append([]int64(nil), l...)
				l[rest] = xs.Dims[a].Size - sum
			}
			lengths = c.constI64("split_lengths", false, l...)
		}
	}
	if len(c.l.Outputs) == 0 {
		return nil, c.errorf(ErrInvalidModel, "VariadicSplit has no outputs")
	}
	n, err := c.node("Split", "", []graph.Output{c.in[0], lengths}, graph.Attrs{"axis": axis}, len(c.l.Outputs))
	if err != nil {
		return nil, err
	}
	return outs(n), nil
}

// importSlice: Slice-8 takes (data, start, stop, step, axes?), the op
// set's Slice (data, starts, ends, axes?, steps).
func importSlice(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(4, 5); err != nil {
		return nil, err
	}
	axes, steps := c.input(4), c.in[3]
	if c.gc.b.clinfer && hasRT(c.l.RTInfo, rtDefaultSteps) {
		steps = graph.Output{} // the writer's ones for omitted steps
	}
	return one(c.op("Slice", "", nil, c.in[0], c.in[1], c.in[2], axes, steps))
}

// stridedSpec is StridedSlice's per-entry masks.
type stridedSpec struct{ begin, end, newAxis, shrink, ellipsis []int64 }

func maskAt(m []int64, i int) bool { return i < len(m) && m[i] != 0 }

// importStridedSlice decomposes StridedSlice into Slice (the sliced
// axes), Squeeze (shrink_axis_mask) and Unsqueeze (new_axis_mask); a
// mask bit set in begin_mask or end_mask takes the whole range.
func importStridedSlice(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 4); err != nil {
		return nil, err
	}
	var m stridedSpec
	for _, p := range []struct {
		name string
		dst  *[]int64
	}{{"begin_mask", &m.begin}, {"end_mask", &m.end}, {"new_axis_mask", &m.newAxis}, {"shrink_axis_mask", &m.shrink}, {"ellipsis_mask", &m.ellipsis}} {
		v, _, err := c.intList(p.name)
		if err != nil {
			return nil, err
		}
		*p.dst = v
	}
	x := c.in[0]
	begin, okb := c.value(1)
	end, oke := c.value(2)
	strides, oks := c.value(3)
	if len(c.in) < 4 {
		oks = true
	}
	if !okb || !oke || !oks {
		return c.dynamicStridedSlice(m)
	}
	bv, _ := graph.IntValues(begin)
	ev, _ := graph.IntValues(end)
	var sv []int64
	if strides != nil {
		sv, _ = graph.IntValues(strides)
	}
	k := len(bv)
	if len(ev) != k || (sv != nil && len(sv) != k) {
		return nil, c.errorf(ErrInvalidModel, "begin, end and strides have %d, %d and %d values", len(bv), len(ev), len(sv))
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	consumed := 0
	for i := 0; i < k; i++ {
		if !maskAt(m.newAxis, i) && !maskAt(m.ellipsis, i) {
			consumed++
		}
	}
	var starts, ends, axes, steps, squeeze, unsqueeze []int64
	ax, out := 0, 0
	seenEllipsis := false
	for i := 0; i < k; i++ {
		switch {
		case maskAt(m.ellipsis, i):
			if seenEllipsis {
				return nil, c.badAttr("ellipsis_mask", errf("more than one ellipsis"))
			}
			seenEllipsis = true
			skip := r - consumed
			if skip < 0 {
				return nil, c.errorf(ErrInvalidModel, "the slice has %d axes for an input of rank %d", consumed, r)
			}
			ax += skip
			out += skip
		case maskAt(m.newAxis, i):
			unsqueeze = append(unsqueeze, int64(out))
			out++
		default:
			if ax >= r {
				return nil, c.errorf(ErrInvalidModel, "the slice has more axes than the input's rank %d", r)
			}
			step := int64(1)
			if sv != nil {
				step = sv[i]
			}
			if step == 0 {
				return nil, c.errorf(ErrInvalidModel, "stride %d is 0", i)
			}
			if maskAt(m.shrink, i) {
				b := bv[i]
				e := b + 1
				if b == -1 {
					e = math.MaxInt64
				}
				starts, ends, axes, steps = append(starts, b), append(ends, e), append(axes, int64(ax)), append(steps, 1)
				squeeze = append(squeeze, int64(ax))
				ax++
				continue
			}
			b, e := bv[i], ev[i]
			if maskAt(m.begin, i) {
				b = 0
				if step < 0 {
					b = math.MaxInt64
				}
			}
			if maskAt(m.end, i) {
				e = math.MaxInt64
				if step < 0 {
					e = math.MinInt64
				}
			}
			if !(b == 0 && e == math.MaxInt64 && step == 1) {
				starts, ends, axes, steps = append(starts, b), append(ends, e), append(axes, int64(ax)), append(steps, step)
			}
			ax++
			out++
		}
	}
	y := x
	if len(axes) > 0 {
		if y, err = c.op("Slice", sfx(len(squeeze)+len(unsqueeze) > 0, "slice"), nil, y,
			c.constI64("starts", false, starts...), c.constI64("ends", false, ends...),
			c.constI64("axes", false, axes...), c.constI64("steps", false, steps...)); err != nil {
			return nil, err
		}
	}
	if len(squeeze) > 0 {
		if y, err = c.op("Squeeze", sfx(len(unsqueeze) > 0, "shrink"), nil, y, c.constI64("shrink_axes", false, squeeze...)); err != nil {
			return nil, err
		}
	}
	if len(unsqueeze) > 0 {
		if y, err = c.op("Unsqueeze", "", nil, y, c.constI64("new_axes", false, unsqueeze...)); err != nil {
			return nil, err
		}
	}
	if y == x {
		return one(c.op("Identity", "", nil, x))
	}
	return []graph.Output{y}, nil
}

// sfx is suffix when more nodes follow, "" (the layer's own name) for the
// last.
func sfx(more bool, suffix string) string {
	if more {
		return suffix
	}
	return ""
}

// dynamicStridedSlice handles begin, end or strides known only at run
// time, when no mask is set: a Slice of the leading axes.
func (c *layerCtx) dynamicStridedSlice(m stridedSpec) ([]graph.Output, error) {
	for _, mask := range [][]int64{m.begin, m.end, m.newAxis, m.shrink, m.ellipsis} {
		for _, v := range mask {
			if v != 0 {
				return nil, c.errorf(ErrUnsupportedAttribute, "a StridedSlice with masks needs constant begin, end and strides")
			}
		}
	}
	bs := c.in[1].Shape()
	if !bs.RankKnown || len(bs.Dims) != 1 || !bs.Dims[0].IsStatic() {
		return nil, c.errorf(ErrUnsupportedAttribute, "a StridedSlice of run-time bounds needs a begin of known length")
	}
	k := bs.Dims[0].Size
	axes := make([]int64, k)
	for i := range axes {
		axes[i] = int64(i)
	}
	in := []graph.Output{c.in[0]}
	for i, s := range []string{"begin_i64", "end_i64"} {
		o, err := c.i64(i+1, s)
		if err != nil {
			return nil, err
		}
		in = append(in, o)
	}
	in = append(in, c.constI64("axes", false, axes...))
	if len(c.in) == 4 {
		o, err := c.i64(3, "strides_i64")
		if err != nil {
			return nil, err
		}
		in = append(in, o)
	}
	return one(c.op("Slice", "", nil, in...))
}

// exportSlice writes Slice-8 (data, start, stop, step, axes?). The op
// set's steps may be omitted, IR's not: the writer then gives ones of the
// starts' type and length and marks the layer, so the reader leaves them
// out again.
func exportSlice(e *exportCtx) (bool, error) {
	n := len(e.n.Inputs)
	if n < 3 || n > 5 || !e.onlyAttrs() {
		return false, nil
	}
	for _, i := range []int{0, 1, 2} {
		if !e.in(i).Valid() {
			return false, nil
		}
	}
	in := []src{from(e.in(0)), from(e.in(1)), from(e.in(2))}
	var rt []xmlRTAttr
	if steps := e.in(4); steps.Valid() {
		in = append(in, from(steps))
	} else {
		ss := e.in(1).Shape()
		if !ss.RankKnown || len(ss.Dims) != 1 || !ss.Dims[0].IsStatic() {
			return false, nil
		}
		ones := make([]float64, ss.Dims[0].Size)
		for i := range ones {
			ones[i] = 1
		}
		v, err := tensor.FromFloat64s(e.in(1).Type(), tensor.Shape{int64(len(ones))}, ones)
		if err != nil {
			return false, nil
		}
		in = append(in, e.constSrc("steps", v))
		rt = append(rt, rtAttr(rtDefaultSteps, ""))
	}
	if axes := e.in(3); axes.Valid() {
		in = append(in, from(axes))
	}
	_, err := e.emit(layerSpec{typ: "Slice", opset: 8, in: in, outs: 1, node: true, rt: rt})
	return err == nil, err
}

// importReverse reads Reverse-1: data reversed along the axes of input 1,
// a list of axes (mode index, the default) or one boolean per dim (mode
// mask); a Slice stepping -1 along each.
func importReverse(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "index", "index", "mask")
	if err != nil {
		return nil, err
	}
	v, err := c.floats(1, "axis")
	if err != nil {
		return nil, err
	}
	var axes []int64
	for i, a := range v {
		switch {
		case mode == "index":
			axes = append(axes, int64(a))
		case a != 0:
			axes = append(axes, int64(i))
		}
	}
	if len(axes) == 0 {
		return one(c.op("Identity", "", nil, c.in[0]))
	}
	n := len(axes)
	return one(c.op("Slice", "", nil, c.in[0], c.constI64("starts", false, repeat(-1, n)...),
		c.constI64("ends", false, repeat(math.MinInt64, n)...), c.constI64("axes", false, axes...), c.constI64("steps", false, repeat(-1, n)...)))
}

// repeat is n copies of v.
func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// importRoll reads Roll-7: data shifted along axes (element i moves to
// (i + shift) mod the dim), shifts and axes constants, a scalar shift
// applying to every axis and an axis named twice shifting by the sum. Per
// axis, the last shift elements are concatenated before the rest; the
// rolled dims must be static.
func importRoll(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	shifts, err := c.ints(1, "shift")
	if err != nil {
		return nil, err
	}
	axes, err := c.ints(2, "axes")
	if err != nil {
		return nil, err
	}
	if len(shifts) == 1 && len(axes) > 1 {
		shifts = repeat(shifts[0], len(axes))
	}
	if len(shifts) != len(axes) {
		return nil, c.errorf(ErrInvalidModel, "%d shifts for %d axes", len(shifts), len(axes))
	}
	s := c.in[0].Shape()
	total := map[int64]int64{}
	var order []int64
	for i, a := range axes {
		if a < 0 && s.RankKnown {
			a += int64(s.Rank())
		}
		if a < 0 || !s.RankKnown || int(a) >= s.Rank() || !s.Dims[a].IsStatic() {
			return nil, c.errorf(ErrUnsupportedAttribute, "Roll needs axis %d of input %v static", axes[i], s)
		}
		if _, ok := total[a]; !ok {
			order = append(order, a)
		}
		total[a] += shifts[i]
	}
	x := c.in[0]
	for _, a := range order {
		d := s.Dims[a].Size
		if d == 0 {
			continue
		}
		k := ((total[a] % d) + d) % d
		if k == 0 {
			continue
		}
		sfx := "_" + strconv.FormatInt(a, 10)
		tail, err := c.op("Slice", "tail"+sfx, nil, x, c.constI64("tail_start"+sfx, false, d-k), c.constI64("tail_end"+sfx, false, d), c.constI64("axis"+sfx, false, a))
		if err != nil {
			return nil, err
		}
		head, err := c.op("Slice", "head"+sfx, nil, x, c.constI64("head_start"+sfx, false, 0), c.constI64("head_end"+sfx, false, d-k), c.constI64("axis"+sfx, false, a))
		if err != nil {
			return nil, err
		}
		if x, err = c.op("Concat", "rolled"+sfx, graph.Attrs{"axis": a}, tail, head); err != nil {
			return nil, err
		}
	}
	if x == c.in[0] {
		return one(c.op("Identity", "", nil, x))
	}
	return []graph.Output{x}, nil
}
