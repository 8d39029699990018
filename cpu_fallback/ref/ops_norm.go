package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// nnChannelParams reads per-channel parameter inputs, each of c elements.
func nnChannelParams(n *graph.Node, in []*tensor.Tensor, c int64, idx ...int) ([][]float32, error) {
	out := make([][]float32, len(idx))
	for j, i := range idx {
		if i >= len(in) || in[i] == nil {
			return nil, n.Errorf("missing input %d", i)
		}
		if in[i].NumElements() != c {
			return nil, n.Errorf("input %d has shape %v, want %d elements (one per channel)", i, in[i].Shape(), c)
		}
		out[j] = in[i].F32()
	}
	return out, nil
}

// batchNormKernel is ONNX BatchNormalization in inference mode:
// Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1).
func batchNormKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if n.Attrs.Int("training_mode", 0) != 0 {
		return nil, n.Errorf("training_mode=1 is not supported (inference only)")
	}
	x, err := nnInput(n, in, 0, 2)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	C := xs[1]
	p, err := nnChannelParams(n, in, C, 1, 2, 3, 4)
	if err != nil {
		return nil, err
	}
	scale, bias, mean, variance := p[0], p[1], p[2], p[3]
	eps := float64(n.Attrs.Float("epsilon", 1e-5))
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	X, Y := x.F32(), y.F32()
	plane := int(nnProd(xs[2:]))
	nnPlanes(int(xs[0]*C), func(pl int) {
		c := pl % int(C)
		a := float32(float64(scale[c]) / math.Sqrt(float64(variance[c])+eps))
		b := bias[c] - a*mean[c]
		src, dst := X[pl*plane:(pl+1)*plane], Y[pl*plane:(pl+1)*plane]
		for i, v := range src {
			dst[i] = a*v + b
		}
	})
	return []*tensor.Tensor{y}, nil
}

// instanceNormKernel is ONNX InstanceNormalization: each (batch, channel)
// plane is normalised by its own mean and variance, then scaled and shifted
// per channel.
func instanceNormKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 2)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	C := xs[1]
	p, err := nnChannelParams(n, in, C, 1, 2)
	if err != nil {
		return nil, err
	}
	scale, bias := p[0], p[1]
	eps := float64(n.Attrs.Float("epsilon", 1e-5))
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	X, Y := x.F32(), y.F32()
	plane := int(nnProd(xs[2:]))
	nnPlanes(int(xs[0]*C), func(pl int) {
		c := pl % int(C)
		src, dst := X[pl*plane:(pl+1)*plane], Y[pl*plane:(pl+1)*plane]
		mean, inv := nnMeanInvStd(src, eps)
		a := float32(inv) * scale[c]
		for i, v := range src {
			dst[i] = (v-float32(mean))*a + bias[c]
		}
	})
	return []*tensor.Tensor{y}, nil
}

// nnMeanInvStd returns the mean and 1/sqrt(variance+eps) of v, accumulated in
// float64.
func nnMeanInvStd(v []float32, eps float64) (mean, inv float64) {
	if len(v) == 0 {
		return 0, 1 / math.Sqrt(eps)
	}
	for _, e := range v {
		mean += float64(e)
	}
	mean /= float64(len(v))
	var ss float64
	for _, e := range v {
		d := float64(e) - mean
		ss += d * d
	}
	return mean, 1 / math.Sqrt(ss/float64(len(v))+eps)
}

// layerNormKernel is ONNX LayerNormalization over the dims from axis on,
// with Scale and optional B broadcast (unidirectionally) to those dims, and
// the optional Mean and InvStdDev outputs (f32, dims from axis set to 1).
func layerNormKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 1)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	axis, err := normAxis(n, n.Attrs.Int("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	eps := float64(n.Attrs.Float("epsilon", 1e-5))
	inner := xs[axis:]
	D := int(nnProd(inner))
	rows := int(nnProd(xs[:axis]))
	expand := func(i int, def float32) ([]float32, error) {
		full := make([]float32, D)
		if i >= len(in) || in[i] == nil {
			for j := range full {
				full[j] = def
			}
			return full, nil
		}
		s := in[i].Shape()
		if len(s) > len(inner) {
			return nil, n.Errorf("input %d has shape %v, which does not broadcast to %v", i, s, inner)
		}
		shift := len(inner) - len(s)
		for d, v := range s {
			if v != 1 && v != inner[d+shift] {
				return nil, n.Errorf("input %d has shape %v, which does not broadcast to %v", i, s, inner)
			}
		}
		src := in[i].F32()
		str := tensor.ContiguousStrides(s)
		idx := make([]int64, len(inner))
		for j := 0; j < D; j++ {
			o := int64(0)
			for d := range s {
				if s[d] != 1 {
					o += idx[d+shift] * str[d]
				}
			}
			full[j] = src[o]
			for d := len(inner) - 1; d >= 0; d-- {
				idx[d]++
				if idx[d] < inner[d] {
					break
				}
				idx[d] = 0
			}
		}
		return full, nil
	}
	if len(in) < 2 || in[1] == nil {
		return nil, n.Errorf("missing input 1 (Scale)")
	}
	scale, err := expand(1, 1)
	if err != nil {
		return nil, err
	}
	bias, err := expand(2, 0)
	if err != nil {
		return nil, err
	}
	y, err := nnNewF32(n, xs)
	if err != nil {
		return nil, err
	}
	statShape := xs.Clone()
	for d := axis; d < len(statShape); d++ {
		statShape[d] = 1
	}
	meanT, err := nnNewF32(n, statShape)
	if err != nil {
		return nil, err
	}
	invT, err := nnNewF32(n, statShape)
	if err != nil {
		return nil, err
	}
	X, Y, Mean, Inv := x.F32(), y.F32(), meanT.F32(), invT.F32()
	nnPlanes(rows, func(r int) {
		src, dst := X[r*D:(r+1)*D], Y[r*D:(r+1)*D]
		mean, inv := nnMeanInvStd(src, eps)
		Mean[r], Inv[r] = float32(mean), float32(inv)
		for i, v := range src {
			dst[i] = float32((float64(v)-mean)*inv)*scale[i] + bias[i]
		}
	})
	outs := []*tensor.Tensor{y, meanT, invT}
	return outs[:max(1, min(len(n.Outputs), 3))], nil
}

// lrnKernel is LRN: x / (bias + alpha/size * S)^beta, S the sum of the
// squares over the channels c-floor((size-1)/2) .. c+ceil((size-1)/2).
func lrnKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	size := n.Attrs.Int("size", 0)
	if len(xs) < 2 || size < 1 {
		return nil, n.Errorf("%w: input %v with size %d: want rank >= 2 and size >= 1", driver.ErrInvalidArgument, xs, size)
	}
	alpha := float64(graph.ParamValue(n, "alpha"))
	beta := float64(graph.ParamValue(n, "beta"))
	bias := float64(graph.ParamValue(n, "bias"))
	y, err := newOut(n, x.Type(), xs)
	if err != nil {
		return nil, err
	}
	C, inner := xs[1], nnProd(xs[2:])
	before, after := (size-1)/2, size/2 // floor and ceil of (size-1)/2
	X, out := x.Float64s(), make([]float64, x.NumElements())
	for b := range xs[0] {
		for c := range C {
			for i := range inner {
				s := 0.0
				for k := max(c-before, 0); k <= min(c+after, C-1); k++ {
					v := X[(b*C+k)*inner+i]
					s += v * v
				}
				p := (b*C+c)*inner + i
				out[p] = X[p] / math.Pow(bias+alpha/float64(size)*s, beta)
			}
		}
	}
	storeF64(y, out)
	return one(y), nil
}

// normKernels are the normalisations.
func normKernels() map[string]Kernel {
	return map[string]Kernel{
		"LRN":                   lrnKernel,
		"BatchNormalization":    nnFloatKernel(batchNormKernel),
		"LayerNormalization":    nnFloatKernel(layerNormKernel, 1, 2),
		"InstanceNormalization": nnFloatKernel(instanceNormKernel),
	}
}

// normImpls name the implementations of the normalisations (see Impl).
var normImpls = map[string]string{
	"BatchNormalization": "ref_batchnorm", "LayerNormalization": "ref_layernorm", "InstanceNormalization": "ref_instancenorm",
}
