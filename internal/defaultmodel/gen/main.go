package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/tensor"
)

func main() {
	out := flag.String("o", "smallcnn.onnx", "output file")
	flag.Parse()
	if err := os.WriteFile(*out, build(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func build() []byte {
	rng := rand.New(rand.NewPCG(2026, 11))
	// He-style init keeps activations in a sensible range through the net.
	w := func(shape ...int64) *tensor.Tensor {
		s := tensor.Shape(shape)
		fanIn := s.NumElements() / s[0]
		std := math.Sqrt(2 / float64(fanIn))
		v := make([]float32, s.NumElements())
		for i := range v {
			v[i] = float32(rng.NormFloat64() * std)
		}
		t, _ := tensor.FromF32(s, v)
		return t
	}
	uniform := func(lo, hi float64, shape ...int64) *tensor.Tensor {
		s := tensor.Shape(shape)
		v := make([]float32, s.NumElements())
		for i := range v {
			v[i] = float32(lo + (hi-lo)*rng.Float64())
		}
		t, _ := tensor.FromF32(s, v)
		return t
	}
	scalar := func(v float32) *tensor.Tensor { t, _ := tensor.FromF32(tensor.Shape{}, []float32{v}); return t }

	m := onnxbuild.New("smallcnn", 17)
	m.Input("image", tensor.F32, []onnxbuild.Dim{{Param: "batch"}, {Size: 3}, {Size: 64}, {Size: 64}})
	m.Output("probs", tensor.F32, []onnxbuild.Dim{{Param: "batch"}, {Size: 10}})

	m.Initializer("conv1.w", w(16, 3, 3, 3)).Initializer("conv1.b", uniform(-0.1, 0.1, 16))
	m.Initializer("bn1.scale", uniform(0.8, 1.2, 16)).Initializer("bn1.bias", uniform(-0.1, 0.1, 16))
	m.Initializer("bn1.mean", uniform(-0.2, 0.2, 16)).Initializer("bn1.var", uniform(0.5, 1.5, 16))
	m.Initializer("dw.w", w(16, 1, 3, 3)).Initializer("dw.b", uniform(-0.1, 0.1, 16))
	m.Initializer("pw.w", w(16, 16, 1, 1)).Initializer("pw.b", uniform(-0.1, 0.1, 16))
	m.Initializer("conv3.w", w(32, 16, 3, 3)).Initializer("conv3.b", uniform(-0.1, 0.1, 32))
	m.Initializer("relu6.min", scalar(0)).Initializer("relu6.max", scalar(6))
	m.Initializer("fc.w", w(10, 32)).Initializer("fc.b", uniform(-0.1, 0.1, 10))

	pads1 := []int64{1, 1, 1, 1}
	m.Node("Conv", "conv1", []string{"image", "conv1.w", "conv1.b"}, []string{"conv1.out"},
		map[string]any{"kernel_shape": []int64{3, 3}, "pads": pads1, "strides": []int64{1, 1}})
	m.Node("BatchNormalization", "bn1", []string{"conv1.out", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"}, []string{"bn1.out"},
		map[string]any{"epsilon": float32(1e-5)})
	m.Node("Relu", "relu1", []string{"bn1.out"}, []string{"relu1.out"}, nil)
	m.Node("MaxPool", "pool1", []string{"relu1.out"}, []string{"pool1.out"},
		map[string]any{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}})
	m.Node("Conv", "dw", []string{"pool1.out", "dw.w", "dw.b"}, []string{"dw.out"},
		map[string]any{"kernel_shape": []int64{3, 3}, "pads": pads1, "group": int64(16)})
	m.Node("HardSwish", "dw.hswish", []string{"dw.out"}, []string{"dw.act"}, nil)
	m.Node("Conv", "pw", []string{"dw.act", "pw.w", "pw.b"}, []string{"pw.out"},
		map[string]any{"kernel_shape": []int64{1, 1}})
	m.Node("Add", "residual", []string{"pw.out", "pool1.out"}, []string{"res.out"}, nil)
	m.Node("Conv", "conv3", []string{"res.out", "conv3.w", "conv3.b"}, []string{"conv3.out"},
		map[string]any{"kernel_shape": []int64{3, 3}, "pads": pads1, "strides": []int64{2, 2}})
	m.Node("Clip", "relu6", []string{"conv3.out", "relu6.min", "relu6.max"}, []string{"relu6.out"}, nil)
	m.Node("GlobalAveragePool", "gap", []string{"relu6.out"}, []string{"gap.out"}, nil)
	m.Node("Flatten", "flatten", []string{"gap.out"}, []string{"flat.out"}, map[string]any{"axis": int64(1)})
	m.Node("Gemm", "fc", []string{"flat.out", "fc.w", "fc.b"}, []string{"logits"}, map[string]any{"transB": int64(1)})
	m.Node("Softmax", "softmax", []string{"logits"}, []string{"probs"}, map[string]any{"axis": int64(-1)})
	return m.Bytes()
}
