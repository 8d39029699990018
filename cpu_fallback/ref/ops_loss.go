package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// nllValues computes the per-target losses -lp[n, t, d] * w[t] and weights
// w[t] (0 for an ignored target) of log-probabilities lp [N, C, D...]
// (flattened to N, C, D) and targets [N, D]; an out-of-range target is an
// error.
func nllValues(n *graph.Node, lp []float64, tgt []int64, w []float64, N, C, D int) (loss, wt []float64, err error) {
	ignore, hasIgnore := int64(0), false
	if _, ok := n.Attrs["ignore_index"]; ok {
		ignore, hasIgnore = n.Attrs.Int("ignore_index", 0), true
	}
	loss, wt = make([]float64, N*D), make([]float64, N*D)
	for i := range N {
		for d := range D {
			t := tgt[i*D+d]
			if hasIgnore && t == ignore {
				continue
			}
			if t < 0 || t >= int64(C) {
				return nil, nil, n.Errorf("%w: target %d at [%d, %d] is outside [0, %d) and not ignore_index", driver.ErrInvalidArgument, t, i, d, C)
			}
			wv := 1.0
			if w != nil {
				wv = w[t]
			}
			loss[i*D+d] = -lp[(i*C+int(t))*D+d] * wv
			wt[i*D+d] = wv
		}
	}
	return loss, wt, nil
}

// lossKernel is NegativeLogLikelihoodLoss (input: log-probabilities) and
// SoftmaxCrossEntropyLoss (input: scores, whose log-softmax along axis 1 is
// the optional second output), computed in float64.
func lossKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	tg, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	red, err := graph.LossReduction(n)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) < 2 {
		return nil, n.Errorf("%w: input %v, want [N, C, d1..dk]", tensor.ErrShape, s)
	}
	N, C := int(s[0]), int(s[1])
	D := int(nnProd(s[2:]))
	if tg.NumElements() != int64(N*D) {
		return nil, n.Errorf("%w: targets %v do not match scores %v", tensor.ErrShape, tg.Shape(), s)
	}
	lp := toF64s(x)
	var outs []*tensor.Tensor
	if n.OpType == "SoftmaxCrossEntropyLoss" {
		logSoftmaxAxis1(lp, N, C, D)
		if len(n.Outputs) > 1 {
			o, err := newOut(n, x.Type(), s)
			if err != nil {
				return nil, err
			}
			storeF64(o, lp)
			outs = append(outs, o)
		}
	}
	var w []float64
	if wv := opt(in, 2); wv != nil {
		if wv.NumElements() != int64(C) {
			return nil, n.Errorf("%w: weights %v, want [%d]", tensor.ErrShape, wv.Shape(), C)
		}
		w = toF64s(wv)
	}
	loss, wt, err := nllValues(n, lp, toI64s(tg), w, N, C, D)
	if err != nil {
		return nil, err
	}
	var y *tensor.Tensor
	if red == "none" {
		if y, err = newOut(n, x.Type(), tg.Shape()); err != nil {
			return nil, err
		}
		storeF64(y, loss)
	} else {
		sum, ws := 0.0, 0.0
		for i, v := range loss {
			sum += v
			ws += wt[i]
		}
		if red == "mean" {
			sum /= ws // no target left: 0/0, NaN as in ONNX's reference
		}
		if y, err = newOut(n, x.Type(), tensor.Shape{}); err != nil {
			return nil, err
		}
		storeF64(y, []float64{sum})
	}
	return append([]*tensor.Tensor{y}, outs...), nil
}

// logSoftmaxAxis1 replaces v [N, C, D] by its log-softmax along C.
func logSoftmaxAxis1(v []float64, N, C, D int) {
	for i := range N {
		for d := range D {
			m := math.Inf(-1)
			for c := range C {
				m = math.Max(m, v[(i*C+c)*D+d])
			}
			s := 0.0
			for c := range C {
				s += math.Exp(v[(i*C+c)*D+d] - m)
			}
			l := m + math.Log(s)
			for c := range C {
				v[(i*C+c)*D+d] -= l
			}
		}
	}
}

// lossKernels are the loss family's kernels.
func lossKernels() map[string]Kernel {
	return map[string]Kernel{
		"NegativeLogLikelihoodLoss": lossKernel,
		"SoftmaxCrossEntropyLoss":   lossKernel,
	}
}
