package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// groups calls f for each group of the elements of shape s that differ
// only along the axes red: f gets the flat offsets of the group's
// elements.
func groups(s tensor.Shape, red []int, f func(offs []int64)) {
	isRed := make([]bool, len(s))
	for _, a := range red {
		isRed[a] = true
	}
	st := tensor.ContiguousStrides(s)
	var keep, reduce []int
	for d := range s {
		if isRed[d] {
			reduce = append(reduce, d)
		} else {
			keep = append(keep, d)
		}
	}
	count := func(axes []int) int64 {
		c := int64(1)
		for _, d := range axes {
			c *= s[d]
		}
		return c
	}
	offsets := func(axes []int, i int64) int64 {
		o := int64(0)
		for j := len(axes) - 1; j >= 0; j-- {
			d := axes[j]
			o += (i % s[d]) * st[d]
			i /= s[d]
		}
		return o
	}
	inner := make([]int64, count(reduce))
	for r := range inner {
		inner[r] = offsets(reduce, int64(r))
	}
	offs := make([]int64, len(inner))
	for k := range count(keep) {
		base := offsets(keep, k)
		for r, o := range inner {
			offs[r] = base + o
		}
		f(offs)
	}
}

// mvnKernel is MeanVarianceNormalization: (x - mean) / (sqrt(E[x^2] -
// mean^2) + 1e-9) over axes, as ONNX's function body computes it.
func mvnKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	axes, err := graph.MVNAxes(n, x.Rank())
	if err != nil {
		return nil, err
	}
	v := toF64s(x)
	out := make([]float64, len(v))
	groups(x.Shape(), axes, func(offs []int64) {
		var s, ss float64
		for _, o := range offs {
			s += v[o]
			ss += v[o] * v[o]
		}
		c := float64(len(offs))
		mean := s / c
		sd := math.Sqrt(ss/c-mean*mean) + graph.MVNEpsilon
		for _, o := range offs {
			out[o] = (v[o] - mean) / sd
		}
	})
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	storeF64(y, out)
	return one(y), nil
}

// lpNormKernel is LpNormalization: x divided by its L1 or L2 norm along
// axis (0 where the norm is 0).
func lpNormKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	ax, err := graph.NormalizeAxis(n, n.Attrs.Int("axis", -1), x.Rank())
	if err != nil {
		return nil, err
	}
	l1 := n.Attrs.Int("p", 2) == 1
	v := toF64s(x)
	out := make([]float64, len(v))
	groups(x.Shape(), []int{ax}, func(offs []int64) {
		var norm float64
		for _, o := range offs {
			if l1 {
				norm += math.Abs(v[o])
			} else {
				norm += v[o] * v[o]
			}
		}
		if !l1 {
			norm = math.Sqrt(norm)
		}
		for _, o := range offs {
			if norm != 0 {
				out[o] = v[o] / norm
			}
		}
	})
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	storeF64(y, out)
	return one(y), nil
}

// batchNormTrainingKernel is BatchNormalizationTraining: per channel, the
// batch's mean and population variance normalise X (with scale, bias and
// epsilon), and the running statistics become input*momentum +
// batch*(1-momentum).
func batchNormTrainingKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 2)
	if err != nil {
		return nil, err
	}
	var p [4][]float64
	for i := range p {
		t, err := need(n, in, i+1)
		if err != nil {
			return nil, err
		}
		p[i] = toF64s(t)
	}
	scale, bias := p[0], p[1]
	eps, mom := float64(graph.ParamValue(n, "epsilon")), float64(graph.ParamValue(n, "momentum"))
	var red []int
	for d := range x.Rank() {
		if d != 1 {
			red = append(red, d)
		}
	}
	v := toF64s(x)
	out := make([]float64, len(v))
	C := x.Shape()[1]
	mean, variance := make([]float64, C), make([]float64, C)
	c := 0
	groups(x.Shape(), red, func(offs []int64) {
		var s float64
		for _, o := range offs {
			s += v[o]
		}
		m := s / float64(len(offs))
		var q float64
		for _, o := range offs {
			q += (v[o] - m) * (v[o] - m)
		}
		vr := q / float64(len(offs))
		inv := 1 / math.Sqrt(vr+eps)
		for _, o := range offs {
			out[o] = (v[o]-m)*inv*scale[c] + bias[c]
		}
		mean[c], variance[c] = m, vr
		c++
	})
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	storeF64(y, out)
	outs := []*tensor.Tensor{y}
	for i, batch := range [][]float64{mean, variance} {
		if len(n.Outputs) <= i+1 {
			break
		}
		run := make([]float64, C)
		for k := range run {
			run[k] = p[2+i][k]*mom + batch[k]*(1-mom)
		}
		t, err := newOut(n, in[3+i].Type(), tensor.Shape{C})
		if err != nil {
			return nil, err
		}
		storeF64(t, run)
		outs = append(outs, t)
	}
	return outs, nil
}

// normStatsKernels are the norm family's normalisations by the input's own
// statistics.
func normStatsKernels() map[string]Kernel {
	return map[string]Kernel{
		"MeanVarianceNormalization":  mvnKernel,
		"LpNormalization":            lpNormKernel,
		"BatchNormalizationTraining": batchNormTrainingKernel,
	}
}
