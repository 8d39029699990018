package fusion

import (
	"context"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PassFoldInputScaleShift names FoldInputScaleShift.
const PassFoldInputScaleShift = "FoldInputScaleShift"

// FoldInputScaleShift folds a per-channel constant Mul or Div before a Conv
// into its weights (conv(x * s) = conv'(x) with w'[o,i] = w[o,i] * s[i]),
// and a per-channel Add or Sub into its bias (conv(x - m) = conv(x) -
// sum_i m[i] sum_k w[o,i,k]) when the Conv does not pad: zero padding of
// x - m is not x's zero padding shifted. This is where a preprocessed
// model's normalisation (preprocess's Mean and Scale) meets its first
// convolution. A scale is exact in real arithmetic; in f32 it moves the
// rounding of one product per tap (relative differences of order 1e-7).
func FoldInputScaleShift() Pass {
	return Pass{Name: PassFoldInputScaleShift, Doc: "fold a per-channel constant Mul/Div (and, without padding, Add/Sub) before a Conv into its weights and bias",
		Run: foldInputScaleShift, Ops: []string{"Add", "Conv", "Div", "Mul", "Sub"}}
}

func foldInputScaleShift(_ context.Context, m *graph.Model, _ *Options) (int, error) {
	count := 0
	for {
		nodes, err := m.Nodes()
		if err != nil {
			return count, err
		}
		cons, err := m.Consumers()
		if err != nil {
			return count, err
		}
		changed := false
		for _, cv := range nodes {
			if cv.OpType != "Conv" || cv.Domain != "" {
				continue
			}
			if foldInputOf(m, cv, cons) {
				count++
				changed = true
				break // the graph changed: order and consumers again
			}
		}
		if !changed {
			return count, nil
		}
	}
}

// foldInputOf folds the producer of cv's data input into cv when it can.
func foldInputOf(m *graph.Model, cv *graph.Node, cons map[graph.Output][]graph.Input) bool {
	in := cv.Input(0)
	w, ok := cv.ConstInput(1)
	if !in.Valid() || !ok || !w.Type().IsFloat() || w.Rank() < 3 || len(cons[in]) != 1 || isResultInput(m, in) {
		return false
	}
	p := in.Node
	var x graph.Output
	var c *tensor.Tensor
	switch p.OpType {
	case "Mul", "Add":
		for side := 0; side < 2; side++ {
			if t, ok := p.ConstInput(side); ok {
				x, c = p.Input(1-side), t
				break
			}
		}
	case "Div", "Sub":
		if t, ok := p.ConstInput(1); ok {
			x, c = p.Input(0), t
		}
	}
	if c == nil || !x.Valid() || c.Type() != w.Type() || p.Domain != "" {
		return false
	}
	g := cv.Attrs.Int("group", 1)
	ws := w.Shape()
	channels := ws[1] * g
	rank := in.Shape().Rank()
	if g < 1 || rank != w.Rank() {
		return false
	}
	vals, ok := channelValues(c, rank, 1, channels)
	if !ok {
		return false
	}
	// The data keeps its shape (the constant only broadcasts along C).
	if xs, ps := x.Shape(), in.Shape(); !graph.SameShape(xs, ps) {
		return false
	}
	wv := w.Float64s()
	perOut := ws[0] / g // output channels per group
	k := int64(1)
	for _, d := range ws[2:] {
		k *= d
	}
	inOf := func(i int) int64 { // the input channel weight element i reads
		o, j := int64(i)/(ws[1]*k), int64(i)/k%ws[1]
		return o/perOut*ws[1] + j
	}
	var bias []float64
	switch p.OpType {
	case "Mul", "Div":
		for i := range wv {
			s := vals[inOf(i)]
			if p.OpType == "Div" {
				if s == 0 {
					return false
				}
				wv[i] /= s
			} else {
				wv[i] *= s
			}
		}
	case "Add", "Sub":
		if !unpadded(cv) {
			return false
		}
		b, ok := constBias(cv, 2, ws[0])
		if !ok {
			return false
		}
		bias = b
		for i, v := range wv {
			sh := vals[inOf(i)]
			if p.OpType == "Sub" {
				sh = -sh
			}
			bias[int64(i)/(ws[1]*k)] += v * sh
		}
	}
	inputs := []graph.Output{x, cv.Input(1)}
	if cv.Input(2).Valid() {
		inputs = append(inputs, cv.Input(2))
	}
	if bias == nil {
		w2, err := tensor.FromFloat64s(w.Type(), ws, wv)
		if err != nil {
			return false
		}
		inputs[1] = graph.NewConstant(cv.Name+"/folded_weights", w2).Out(0)
	} else {
		b2, err := tensor.FromFloat64s(w.Type(), tensor.Shape{ws[0]}, bias)
		if err != nil {
			return false
		}
		bo := graph.NewConstant(cv.Name+"/folded_bias", b2).Out(0)
		if len(inputs) == 3 {
			inputs[2] = bo
		} else {
			inputs = append(inputs, bo)
		}
	}
	cv.RT.FusedNames = append(p.OriginalNames(), cv.OriginalNames()...)
	cv.Inputs = inputs
	return true
}

// unpadded reports whether a Conv reads no padding.
func unpadded(cv *graph.Node) bool {
	switch cv.Attrs.String("auto_pad", "NOTSET") {
	case "VALID":
		return true
	case "NOTSET":
	default:
		return false
	}
	for _, p := range cv.Attrs.Ints("pads", nil) {
		if p != 0 {
			return false
		}
	}
	return true
}

// isResultInput reports whether o is read by a Result.
func isResultInput(m *graph.Model, o graph.Output) bool {
	for _, r := range m.Results {
		if r.Input(0) == o {
			return true
		}
	}
	return false
}
