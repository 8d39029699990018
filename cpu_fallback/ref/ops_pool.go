package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// poolSetup reads X and the window geometry of a MaxPool/AveragePool node.
func poolSetup(n *graph.Node, in []*tensor.Tensor) (*tensor.Tensor, *windowGeom, error) {
	x, err := nnInput(n, in, 0, 3)
	if err != nil {
		return nil, nil, err
	}
	k := n.Attrs.Ints("kernel_shape", nil)
	if len(k) != x.Rank()-2 {
		return nil, nil, n.Errorf("kernel_shape %v: want %d values for input %v", k, x.Rank()-2, x.Shape())
	}
	g, err := windowGeometry(n, x.Shape()[2:], k, n.Attrs.Int("ceil_mode", 0) != 0)
	if err != nil {
		return nil, nil, err
	}
	return x, g, nil
}

// nnPlanes calls f for every (batch, channel) plane index, in parallel.
func nnPlanes(planes int, f func(p int)) {
	nnParallel(planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			f(p)
		}
	})
}

// maxPoolKernel is ONNX MaxPool with optional Indices output (flat indices
// into X, row-major or column-major within a plane per storage_order).
func maxPoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, g, err := poolSetup(n, in)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	planes := int(xs[0] * xs[1])
	yShape := append(tensor.Shape{xs[0], xs[1]}, g.out...)
	y, err := nnNewF32(n, yShape)
	if err != nil {
		return nil, err
	}
	wantIdx := len(n.Outputs) > 1
	var idx *tensor.Tensor
	var I []int64
	if wantIdx {
		if idx, err = tensor.New(tensor.I64, yShape); err != nil {
			return nil, n.Errorf("indices output shape %v: %w", yShape, err)
		}
		I = idx.I64()
	}
	colMajor := n.Attrs.Int("storage_order", 0) != 0
	X, Y := x.F32(), y.F32()
	r := len(g.in)
	inPlane, outPlane := int(nnProd(g.in)), int(nnProd(g.out))
	inStr := tensor.ContiguousStrides(g.in)
	colStr := make([]int64, r) // column-major strides within a plane
	acc := int64(1)
	for d := 0; d < r; d++ {
		colStr[d] = acc
		acc *= g.in[d]
	}
	K := int(nnProd(g.k))
	nnPlanes(planes, func(p int) {
		src := X[p*inPlane : (p+1)*inPlane]
		oidx := make([]int64, r)
		kidx := make([]int64, r)
		for o := 0; o < outPlane; o++ {
			best := float32(math.Inf(-1))
			bestAt := int64(-1)
			clear(kidx)
			for ki := 0; ki < K; ki++ {
				off, cOff := int64(0), int64(0)
				ok := true
				for d := 0; d < r; d++ {
					i := oidx[d]*g.stride[d] - g.padB[d] + kidx[d]*g.dil[d]
					if i < 0 || i >= g.in[d] {
						ok = false
						break
					}
					off += i * inStr[d]
					cOff += i * colStr[d]
				}
				if ok {
					v := src[off]
					if bestAt < 0 || v > best || (v != v && best == best) {
						best = v
						if colMajor {
							bestAt = cOff
						} else {
							bestAt = off
						}
					}
				}
				for d := r - 1; d >= 0; d-- {
					kidx[d]++
					if kidx[d] < g.k[d] {
						break
					}
					kidx[d] = 0
				}
			}
			Y[p*outPlane+o] = best
			if I != nil {
				I[p*outPlane+o] = int64(p*inPlane) + bestAt
			}
			for d := r - 1; d >= 0; d-- {
				oidx[d]++
				if oidx[d] < g.out[d] {
					break
				}
				oidx[d] = 0
			}
		}
	})
	if wantIdx {
		return []*tensor.Tensor{y, idx}, nil
	}
	return []*tensor.Tensor{y}, nil
}

// averagePoolKernel is ONNX AveragePool: count_include_pad counts window
// taps inside the padded input, otherwise only taps inside the input.
func averagePoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return sumPool(n, in, 0)
}

// sumPool is AveragePool (p = 0: the mean of the window's taps inside the
// input, or inside the padded input with count_include_pad) and LpPool
// (p >= 1: the p-norm of the window's taps, padding counting as zeros).
func sumPool(n *graph.Node, in []*tensor.Tensor, p float64) ([]*tensor.Tensor, error) {
	x, g, err := poolSetup(n, in)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	planes := int(xs[0] * xs[1])
	y, err := nnNewF32(n, append(tensor.Shape{xs[0], xs[1]}, g.out...))
	if err != nil {
		return nil, err
	}
	includePad := n.Attrs.Int("count_include_pad", 0) != 0
	X, Y := x.F32(), y.F32()
	r := len(g.in)
	inPlane, outPlane := int(nnProd(g.in)), int(nnProd(g.out))
	inStr := tensor.ContiguousStrides(g.in)
	K := int(nnProd(g.k))
	nnPlanes(planes, func(pl int) {
		src := X[pl*inPlane : (pl+1)*inPlane]
		oidx := make([]int64, r)
		kidx := make([]int64, r)
		for o := 0; o < outPlane; o++ {
			var sum float64
			count := 0
			clear(kidx)
			for ki := 0; ki < K; ki++ {
				off := int64(0)
				inside, inPad := true, true
				for d := 0; d < r; d++ {
					i := oidx[d]*g.stride[d] - g.padB[d] + kidx[d]*g.dil[d]
					if i < -g.padB[d] || i >= g.in[d]+g.padE[d] {
						inPad = false
					}
					if i < 0 || i >= g.in[d] {
						inside = false
					}
					off += i * inStr[d]
				}
				if inside && p > 0 {
					sum += math.Pow(math.Abs(float64(src[off])), p)
				} else if inside {
					sum += float64(src[off])
				}
				if inside || (includePad && inPad) {
					count++
				}
				for d := r - 1; d >= 0; d-- {
					kidx[d]++
					if kidx[d] < g.k[d] {
						break
					}
					kidx[d] = 0
				}
			}
			switch {
			case p > 0:
				Y[pl*outPlane+o] = float32(math.Pow(sum, 1/p))
			case count > 0:
				Y[pl*outPlane+o] = float32(sum / float64(count))
			}
			for d := r - 1; d >= 0; d-- {
				oidx[d]++
				if oidx[d] < g.out[d] {
					break
				}
				oidx[d] = 0
			}
		}
	})
	return []*tensor.Tensor{y}, nil
}

// globalPool reduces every (batch, channel) plane to one value.
func globalPool(n *graph.Node, in []*tensor.Tensor, reduce func(plane []float32) float32) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 2)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	yShape := tensor.Shape{xs[0], xs[1]}
	for range xs[2:] {
		yShape = append(yShape, 1)
	}
	y, err := nnNewF32(n, yShape)
	if err != nil {
		return nil, err
	}
	X, Y := x.F32(), y.F32()
	plane := int(nnProd(xs[2:]))
	nnPlanes(int(xs[0]*xs[1]), func(p int) {
		Y[p] = reduce(X[p*plane : (p+1)*plane])
	})
	return []*tensor.Tensor{y}, nil
}

// globalAveragePoolKernel is ONNX GlobalAveragePool.
func globalAveragePoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return globalPool(n, in, func(p []float32) float32 {
		var s float64
		for _, v := range p {
			s += float64(v)
		}
		return float32(s / float64(len(p)))
	})
}

// globalMaxPoolKernel is ONNX GlobalMaxPool.
func globalMaxPoolKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return globalPool(n, in, func(p []float32) float32 {
		m := float32(math.Inf(-1))
		for _, v := range p {
			if v > m || v != v {
				m = v
			}
		}
		return m
	})
}

// maxPoolAnyKernel is MaxPool on float, i8 and u8 inputs: 8-bit integers
// are exact in float32, so they are pooled as f32 and converted back
// (the i64 Indices output is unaffected).
func maxPoolAnyKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	k := nnFloatKernel(maxPoolKernel)
	if len(in) == 0 || in[0] == nil || (in[0].Type() != tensor.I8 && in[0].Type() != tensor.U8) {
		return k(n, in)
	}
	t := in[0].Type()
	x, err := in[0].Convert(tensor.F32)
	if err != nil {
		return nil, n.Errorf("input 0: %w", err)
	}
	outs, err := k(n, []*tensor.Tensor{x})
	if err != nil {
		return nil, err
	}
	if outs[0], err = outs[0].Convert(t); err != nil {
		return nil, n.Errorf("output 0: %w", err)
	}
	return outs, nil
}

// poolKernels are the windowed and global poolings.
func poolKernels() map[string]Kernel {
	return map[string]Kernel{
		"MaxPool":           maxPoolAnyKernel,
		"AveragePool":       nnFloatKernel(averagePoolKernel),
		"GlobalAveragePool": nnFloatKernel(globalAveragePoolKernel),
		"GlobalMaxPool":     nnFloatKernel(globalMaxPoolKernel),
	}
}

// poolImpls name the implementations of the poolings (see Impl).
var poolImpls = map[string]string{
	"AveragePool": "ref_avgpool", "GlobalAveragePool": "ref_global_avgpool", "GlobalMaxPool": "ref_global_maxpool",
}
