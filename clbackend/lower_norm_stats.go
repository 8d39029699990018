package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// statsTemp is a temporary of x's type and shape with the axes red
// reduced to 1.
func (b *builder) statsTemp(x int, red []int) int {
	s := b.val(x).shape.Clone()
	for _, a := range red {
		s[a] = 1
	}
	return b.temp(b.val(x).typ, s)
}

// groupSize is the number of elements of shape s along the axes red.
func groupSize(s tensor.Shape, red []int) int64 {
	c := int64(1)
	for _, a := range red {
		c *= s[a]
	}
	return c
}

func asInt64s(a []int) []int64 {
	out := make([]int64, len(a))
	for i, v := range a {
		out[i] = int64(v)
	}
	return out
}

// lowerMVN reduces the mean and the sum of squares over the axes, then
// mvn_apply normalises each element.
func lowerMVN(b *builder, n *graph.Node) error {
	if err := b.allF32(n); err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	xs := b.val(x).shape
	axes, err := graph.MVNAxes(n, len(xs))
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	mean, ss := b.statsTemp(x, axes), b.statsTemp(x, axes)
	if err := b.reduce(n, "reduce_mean", x, mean, asInt64s(axes)); err != nil {
		return err
	}
	if err := b.reduce(n, "reduce_sum_square", x, ss, asInt64s(axes)); err != nil {
		return err
	}
	cnt := xs.NumElements()
	m := b.meta(broadcastMeta(xs, xs, b.val(mean).shape))
	return b.emit(n, "mvn_apply", "", cnt, slotArg(x), slotArg(mean), slotArg(ss), slotArg(y), uint64(cnt), m,
		float32(1/float64(groupSize(xs, axes))))
}

// lowerLpNorm reduces the L1 or L2 norm along the axis, then
// lp_norm_apply divides (f32, or f64 throughout).
func lowerLpNorm(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	defines := ""
	if t := b.val(x).typ; t == tensor.F64 {
		d, err := b.floatDefines(n, t) // cl_khr_fp64
		if err != nil {
			return err
		}
		defines = d
	} else if err := b.allF32(n); err != nil {
		return err // f16 and bf16 run in f32 (widerType)
	}
	xs := b.val(x).shape
	ax, err := graph.NormalizeAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	norm := b.statsTemp(x, []int{ax})
	name := "reduce_l2"
	if n.Attrs.Int("p", 2) == 1 {
		name = "reduce_l1"
	}
	if err := b.reduce(n, name, x, norm, []int64{int64(ax)}); err != nil {
		return err
	}
	cnt := xs.NumElements()
	return b.emit(n, "lp_norm_apply", defines, cnt, slotArg(x), slotArg(norm), slotArg(y), uint64(cnt), b.meta(broadcastMeta(xs, xs, b.val(norm).shape)))
}

// lowerBatchNormTraining reduces each channel's mean and sum of squares,
// normalises with them (bn_train_apply) and moves the running statistics
// (bn_train_stats).
func lowerBatchNormTraining(b *builder, n *graph.Node) error {
	if err := b.allF32(n); err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	xs := b.val(x).shape
	var red []int
	for d := range xs {
		if d != 1 {
			red = append(red, d)
		}
	}
	mean, ss := b.statsTemp(x, red), b.statsTemp(x, red)
	if err := b.reduce(n, "reduce_mean", x, mean, asInt64s(red)); err != nil {
		return err
	}
	if err := b.reduce(n, "reduce_sum_square", x, ss, asInt64s(red)); err != nil {
		return err
	}
	C := xs[1]
	inv := float32(1 / float64(groupSize(xs, red)))
	cnt := xs.NumElements()
	if err := b.emit(n, "bn_train_apply", "", cnt, slotArg(x), slotArg(mean), slotArg(ss), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)),
		slotArg(y), uint64(cnt), uint64(C), uint64(prod(xs[2:])), inv, graph.ParamValue(n, "epsilon")); err != nil {
		return err
	}
	if len(n.Outputs) == 1 {
		return nil
	}
	outMean := b.out(n, 1)
	outVar := b.temp(tensor.F32, tensor.Shape{C})
	if len(n.Outputs) > 2 {
		outVar = b.out(n, 2)
	}
	return b.emit(n, "bn_train_stats", "", C, slotArg(mean), slotArg(ss), slotArg(b.in(n, 3)), slotArg(b.in(n, 4)),
		slotArg(outMean), slotArg(outVar), uint64(C), inv, graph.ParamValue(n, "momentum"))
}

// normStatsLowerings are the GPU table entries of the norm family's
// normalisations by the input's own statistics.
func normStatsLowerings() map[string]lowering {
	return map[string]lowering{
		"MeanVarianceNormalization":  {lower: lowerMVN, noF64: true},
		"LpNormalization":            {lower: lowerLpNorm},
		"BatchNormalizationTraining": {lower: lowerBatchNormTraining, noF64: true},
	}
}
