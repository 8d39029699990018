package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// applyPostOps applies ops in order to the f32 tensor y, in place where it
// can; residual is the operand of a "sum" post-op.
func applyPostOps(n *graph.Node, ops []graph.PostOp, y, residual *tensor.Tensor) (*tensor.Tensor, error) {
	for _, p := range ops {
		if p.Kind == graph.PostSum {
			if residual == nil {
				return nil, n.Errorf("post-op %q needs input 3", graph.PostSum)
			}
			if residual.Shape().Equal(y.Shape()) {
				Y, R := y.F32(), residual.F32()
				for i := range Y {
					Y[i] += R[i]
				}
				continue
			}
			s, err := arith(n, opAdd, y, residual)
			if err != nil {
				return nil, err
			}
			if !s.Shape().Equal(y.Shape()) {
				return nil, n.Errorf("residual %v does not broadcast to output %v", residual.Shape(), y.Shape())
			}
			y = s
			continue
		}
		f, err := compileRowOp(n, p)
		if err != nil {
			return nil, err
		}
		applyRowOps(y.F32(), f)
	}
	return y, nil
}

// postOpFunc returns the elementwise function of an activation post-op,
// computed in float64 like the standalone unary kernels.
func postOpFunc(n *graph.Node, p graph.PostOp) (func(float64) float64, error) {
	a, b := float64(p.Alpha), float64(p.Beta)
	switch p.Kind {
	case graph.PostRelu:
		return func(x float64) float64 { return math.Max(x, 0) }, nil
	case graph.PostClip:
		return func(x float64) float64 {
			// Written so NaN passes through, as in clipRun.
			if x < a {
				x = a
			}
			if x > b {
				x = b
			}
			return x
		}, nil
	case graph.PostHardSwish:
		return func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }, nil
	case graph.PostHardSigmoid:
		return func(x float64) float64 { return math.Max(0, math.Min(1, a*x+b)) }, nil
	case graph.PostSigmoid:
		return sigmoid, nil
	case graph.PostSwish:
		return func(x float64) float64 { return x * sigmoid(a*x) }, nil
	case graph.PostGelu:
		if a != 0 {
			k := math.Sqrt(2 / math.Pi)
			return func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(k*(x+0.044715*x*x*x))) }, nil
		}
		return func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, nil
	case graph.PostLeakyRelu:
		return func(x float64) float64 {
			if x < 0 {
				return a * x
			}
			return x
		}, nil
	case graph.PostTanh:
		return math.Tanh, nil
	case graph.PostLinear:
		return func(x float64) float64 { return a*x + b }, nil
	}
	return nil, n.Errorf("post-op kind %q has no CPU implementation", p.Kind)
}
