package quantize

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/names"
	"github.com/clinfer/clinfer/tensor"
)

// inserter adds the QuantizeLinear / DequantizeLinear nodes.
type inserter struct {
	names   *names.Set
	ranges  map[graph.Output]Range
	opts    Options
	report  *Report
	dq      map[graph.Output]graph.Output // a value's DequantizeLinear
	weights map[graph.Output]weightQ      // a weight constant's (per axis)
}

// weightQ is a quantized weight: its DequantizeLinear and its scales (one,
// or one per channel).
type weightQ struct {
	dq     graph.Output
	scales []float32
	axis   int
}

// insertQDQ quantizes every target's data, weights and bias.
func insertQDQ(m *graph.Model, targets []target, ranges map[graph.Output]Range, opts Options, report *Report) error {
	u, err := newNames(m)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	in := &inserter{names: u, ranges: ranges, opts: opts, report: report,
		dq: map[graph.Output]graph.Output{}, weights: map[graph.Output]weightQ{}}
	for _, t := range targets {
		if err := in.quantize(t); err != nil {
			return fmt.Errorf("quantize: %s: %w", t.n, err)
		}
	}
	return nil
}

// quantize rewires t's inputs through DequantizeLinear.
func (in *inserter) quantize(t target) error {
	r := in.ranges[t.x]
	x, err := in.activation(t.x, r)
	if err != nil {
		return err
	}
	w, err := in.weight(t.n.Input(1), t.axis)
	if err != nil {
		return err
	}
	t.n.Inputs[0], t.n.Inputs[1] = x, w.dq
	if t.bias >= 0 {
		b, err := in.bias(t.n, t.n.Input(t.bias), r.Scale, w.scales)
		if err != nil {
			return err
		}
		t.n.Inputs[t.bias] = b
	}
	return graph.InferNode(t.n)
}

// constant adds a Constant named after base.
func (in *inserter) constant(base string, v *tensor.Tensor) graph.Output {
	return graph.NewConstant(in.names.Unique(base), v).Out(0)
}

// node adds a node named after base and infers its output.
func (in *inserter) node(op, base string, attrs graph.Attrs, inputs ...graph.Output) (graph.Output, error) {
	n := graph.NewNode(op, in.names.Unique(base), inputs, attrs, 1)
	if err := graph.InferNode(n); err != nil {
		return graph.Output{}, err
	}
	return n.Out(0), nil
}

// activation returns the DequantizeLinear of x quantized with r (one pair
// per value, shared by its quantized consumers).
func (in *inserter) activation(x graph.Output, r Range) (graph.Output, error) {
	if dq, ok := in.dq[x]; ok {
		return dq, nil
	}
	base := x.Port().Name
	if base == "" {
		base = x.Node.Name
	}
	in.report.Ranges[base] = r
	scale, err := tensor.FromF32(tensor.Shape{}, []float32{r.Scale})
	if err != nil {
		return graph.Output{}, err
	}
	zp, err := tensor.FromFloat64s(in.opts.Activations, tensor.Shape{}, []float64{float64(r.ZeroPoint)})
	if err != nil {
		return graph.Output{}, err
	}
	s, z := in.constant(base+"_scale", scale), in.constant(base+"_zero_point", zp)
	q, err := in.node("QuantizeLinear", base+"_QuantizeLinear", nil, x, s, z)
	if err != nil {
		return graph.Output{}, err
	}
	dq, err := in.node("DequantizeLinear", base+"_DequantizeLinear", nil, q, s, z)
	if err != nil {
		return graph.Output{}, err
	}
	in.dq[x] = dq
	return dq, nil
}

// weight returns the DequantizeLinear of the constant w quantized to
// symmetric int8, per channel along axis (or per tensor).
func (in *inserter) weight(w graph.Output, axis int) (weightQ, error) {
	if q, ok := in.weights[w]; ok && q.axis == axis {
		return q, nil
	}
	v := w.Node.Value.Contiguous()
	shape := v.Shape()
	channels, inner := int64(1), int64(1)
	if !in.opts.PerTensorWeights {
		channels = shape[axis]
		for _, d := range shape[axis+1:] {
			inner *= d
		}
	}
	f := v.F32()
	absMax := make([]float64, channels)
	for i, x := range f {
		c := (int64(i) / inner) % channels
		absMax[c] = max(absMax[c], math.Abs(float64(x)))
	}
	scales := make([]float32, channels)
	for c, a := range absMax {
		scales[c] = float32(a / 127)
		if scales[c] == 0 {
			scales[c] = 1
		}
	}
	q := make([]float64, len(f))
	for i, x := range f {
		c := (int64(i) / inner) % channels
		q[i] = max(-127, min(127, math.RoundToEven(float64(x)/float64(scales[c]))))
	}
	qt, err := tensor.FromFloat64s(tensor.I8, shape, q)
	if err != nil {
		return weightQ{}, err
	}
	scaleShape := tensor.Shape{channels}
	var attrs graph.Attrs
	if in.opts.PerTensorWeights {
		scaleShape = tensor.Shape{}
	} else {
		attrs = graph.Attrs{"axis": int64(axis)}
	}
	st, err := tensor.FromF32(scaleShape, scales)
	if err != nil {
		return weightQ{}, err
	}
	zt, err := tensor.New(tensor.I8, scaleShape)
	if err != nil {
		return weightQ{}, err
	}
	base := w.Port().Name
	if base == "" {
		base = w.Node.Name
	}
	dq, err := in.node("DequantizeLinear", base+"_DequantizeLinear", attrs,
		in.constant(base+"_quantized", qt), in.constant(base+"_scale", st), in.constant(base+"_zero_point", zt))
	if err != nil {
		return weightQ{}, err
	}
	r := weightQ{dq: dq, scales: scales, axis: axis}
	in.weights[w] = r
	return r, nil
}

// bias returns the DequantizeLinear of n's constant bias b quantized to
// int32 with scale xScale * wScales[c] (ONNX Runtime's bias
// quantization; the scale's product rounded to f32 first).
func (in *inserter) bias(n *graph.Node, b graph.Output, xScale float32, wScales []float32) (graph.Output, error) {
	v := b.Node.Value.Contiguous()
	f := v.F32()
	scales := make([]float32, len(f))
	q := make([]float64, len(f))
	for i, x := range f {
		s := xScale * wScales[min(i, len(wScales)-1)]
		if s == 0 {
			s = 1
		}
		scales[i] = s
		q[i] = max(math.MinInt32, min(math.MaxInt32, math.RoundToEven(float64(x)/float64(s))))
	}
	qt, err := tensor.FromFloat64s(tensor.I32, v.Shape(), q)
	if err != nil {
		return graph.Output{}, err
	}
	st, err := tensor.FromF32(v.Shape(), scales)
	if err != nil {
		return graph.Output{}, err
	}
	base := b.Port().Name
	if base == "" {
		base = n.Name + "_bias"
	}
	return in.node("DequantizeLinear", base+"_DequantizeLinear", graph.Attrs{"axis": int64(0)},
		in.constant(base+"_quantized", qt), in.constant(base+"_scale", st))
}
