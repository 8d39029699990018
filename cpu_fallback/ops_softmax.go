package cpufallback

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// softmaxKernel is ONNX Softmax (opset 13) over one axis.
func softmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return softmaxAlong(n, in, false)
}

// logSoftmaxKernel is ONNX LogSoftmax (opset 13) over one axis.
func logSoftmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return softmaxAlong(n, in, true)
}

// softmaxAlong computes the (log-)softmax of every fibre along the axis,
// subtracting the maximum first for stability and accumulating in float64.
func softmaxAlong(n *graph.Node, in []*tensor.Tensor, log bool) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		// A scalar is a one-element fibre.
		if log {
			y.F32()[0] = 0
		} else {
			y.F32()[0] = 1
		}
		return []*tensor.Tensor{y}, nil
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	outer := int(nnProd(xs[:axis]))
	L := int(xs[axis])
	inner := int(nnProd(xs[axis+1:]))
	X, Y := x.F32(), y.F32()
	if L == 0 {
		return []*tensor.Tensor{y}, nil
	}
	nnParallel(outer*inner, func(lo, hi int) {
		for f := lo; f < hi; f++ {
			o, i := f/inner, f%inner
			base := o*L*inner + i
			m := float32(math.Inf(-1))
			for j := 0; j < L; j++ {
				if v := X[base+j*inner]; v > m {
					m = v
				}
			}
			var s float64
			for j := 0; j < L; j++ {
				s += math.Exp(float64(X[base+j*inner] - m))
			}
			if log {
				ls := math.Log(s)
				for j := 0; j < L; j++ {
					Y[base+j*inner] = float32(float64(X[base+j*inner]-m) - ls)
				}
			} else {
				for j := 0; j < L; j++ {
					Y[base+j*inner] = float32(math.Exp(float64(X[base+j*inner]-m)) / s)
				}
			}
		}
	})
	return []*tensor.Tensor{y}, nil
}

// hardmaxKernel is ONNX Hardmax (opset 13): 1 at the first maximum of every
// fibre along the axis (default -1), 0 elsewhere.
func hardmaxKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 1)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	outer := int(nnProd(xs[:axis]))
	L := int(xs[axis])
	inner := int(nnProd(xs[axis+1:]))
	X, Y := x.F32(), y.F32()
	if L == 0 {
		return []*tensor.Tensor{y}, nil
	}
	for f := 0; f < outer*inner; f++ {
		o, i := f/inner, f%inner
		base := o*L*inner + i
		best := 0
		for j := 1; j < L; j++ {
			if X[base+j*inner] > X[base+best*inner] {
				best = j
			}
		}
		Y[base+best*inner] = 1
	}
	return []*tensor.Tensor{y}, nil
}
