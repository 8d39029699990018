package cpufallback

import (
	"runtime"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// nnKernels is the neural-network family: convolutions, GEMM, pooling,
// normalisation, resize, softmax and pad.
func nnKernels() map[string]kernel {
	return map[string]kernel{
		"Conv":                  nnFloatKernel(convKernel),
		"ConvTranspose":         nnFloatKernel(convTransposeKernel),
		"MatMul":                matMulKernel,
		"Gemm":                  gemmKernel,
		"MaxPool":               maxPoolAnyKernel,
		"AveragePool":           nnFloatKernel(averagePoolKernel),
		"GlobalAveragePool":     nnFloatKernel(globalAveragePoolKernel),
		"GlobalMaxPool":         nnFloatKernel(globalMaxPoolKernel),
		"BatchNormalization":    nnFloatKernel(batchNormKernel),
		"LayerNormalization":    nnFloatKernel(layerNormKernel, 1, 2),
		"InstanceNormalization": nnFloatKernel(instanceNormKernel),
		"Resize":                nnFloatKernel(resizeKernel),
		"Softmax":               nnFloatKernel(softmaxKernel),
		"LogSoftmax":            nnFloatKernel(logSoftmaxKernel),
		"Hardmax":               nnFloatKernel(hardmaxKernel),
		"Pad":                   padKernel,
	}
}

// nnImplNames names the implementation each NN kernel runs, for profiling
// and the runtime model.
var nnImplNames = map[string]string{
	"Conv":                  "ref_conv_gonum", // depthwise direct, Winograd F(2x2,3x3), 1x1 GEMM or im2col GEMM by shape (convShape.path)
	"ConvTranspose":         "ref_convtranspose_col2im_gonum",
	"MatMul":                "ref_matmul_gonum",
	"Gemm":                  "ref_gemm_gonum",
	"MaxPool":               "ref_maxpool",
	"AveragePool":           "ref_avgpool",
	"GlobalAveragePool":     "ref_global_avgpool",
	"GlobalMaxPool":         "ref_global_maxpool",
	"BatchNormalization":    "ref_batchnorm",
	"LayerNormalization":    "ref_layernorm",
	"InstanceNormalization": "ref_instancenorm",
	"Resize":                "ref_resize_separable",
	"Softmax":               "ref_softmax",
	"LogSoftmax":            "ref_logsoftmax",
	"Hardmax":               "ref_hardmax",
	"Pad":                   "ref_pad",
}

// nnFloatKernel adapts a kernel written for f32 data to every float type:
// f16, bf16 and f64 inputs are converted to f32, and f32 outputs are
// converted back to the type of input 0, except the outputs listed in
// keepF32 (statistics outputs whose type does not follow the input).
// Integer inputs (axes, pads, sizes) pass through untouched.
func nnFloatKernel(k kernel, keepF32 ...int) kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return nil, n.Errorf("missing input 0")
		}
		t := in[0].Type()
		if !t.IsFloat() {
			return nil, n.Errorf("input 0 has element type %v, want a float type", t)
		}
		if t == tensor.F32 {
			return k(n, in)
		}
		conv := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			if x != nil && x.Type().IsFloat() && x.Type() != tensor.F32 {
				c, err := x.Convert(tensor.F32)
				if err != nil {
					return nil, n.Errorf("input %d: %w", i, err)
				}
				conv[i] = c
				continue
			}
			conv[i] = x
		}
		outs, err := k(n, conv)
		if err != nil {
			return nil, err
		}
	next:
		for i, o := range outs {
			if o == nil || o.Type() != tensor.F32 {
				continue
			}
			for _, keep := range keepF32 {
				if keep == i {
					continue next
				}
			}
			c, err := o.Convert(t)
			if err != nil {
				return nil, n.Errorf("output %d: %w", i, err)
			}
			outs[i] = c
		}
		return outs, nil
	}
}

// nnParallel runs f over [0, n) split into chunks on at most GOMAXPROCS
// goroutines and waits for all of them; no goroutine outlives the call.
func nnParallel(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}

// nnInts reads an optional integer input (i64 or i32) as []int64. ok is
// false when the input is omitted or empty.
func nnInts(n *graph.Node, in []*tensor.Tensor, i int) ([]int64, bool, error) {
	if i >= len(in) || in[i] == nil {
		return nil, false, nil
	}
	x := in[i]
	switch x.Type() {
	case tensor.I64:
		v := x.I64()
		return append([]int64(nil), v...), len(v) > 0, nil
	case tensor.I32:
		v := x.I32()
		out := make([]int64, len(v))
		for j, e := range v {
			out[j] = int64(e)
		}
		return out, len(v) > 0, nil
	}
	return nil, false, n.Errorf("input %d has element type %v, want i64 or i32", i, x.Type())
}

// nnFloats reads an optional float input as []float32.
func nnFloats(n *graph.Node, in []*tensor.Tensor, i int) ([]float32, bool, error) {
	if i >= len(in) || in[i] == nil {
		return nil, false, nil
	}
	x := in[i]
	if x.Type() != tensor.F32 {
		c, err := x.Convert(tensor.F32)
		if err != nil {
			return nil, false, n.Errorf("input %d: %w", i, err)
		}
		x = c
	}
	v := x.F32()
	return v, len(v) > 0, nil
}

// nnProd multiplies dims.
func nnProd(s []int64) int64 {
	p := int64(1)
	for _, d := range s {
		p *= d
	}
	return p
}

// nnNewF32 allocates a zeroed f32 output tensor.
func nnNewF32(n *graph.Node, shape tensor.Shape) (*tensor.Tensor, error) {
	t, err := tensor.New(tensor.F32, shape)
	if err != nil {
		return nil, n.Errorf("output shape %v: %w", shape, err)
	}
	return t, nil
}

// nnInput returns input i, checking it is present with a rank of at least minRank.
func nnInput(n *graph.Node, in []*tensor.Tensor, i, minRank int) (*tensor.Tensor, error) {
	if i >= len(in) || in[i] == nil {
		return nil, n.Errorf("missing input %d", i)
	}
	if in[i].Rank() < minRank {
		return nil, n.Errorf("input %d has shape %v, want rank >= %d", i, in[i].Shape(), minRank)
	}
	return in[i], nil
}
