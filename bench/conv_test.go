package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// convCase is one convolution of PP-OCR det at 1x3x640x640 (the layer
// named in the comment), run alone on the GPU device.
type convCase struct {
	name                       string
	op                         string // Conv or ConvTranspose
	n, c, h, w                 int64
	oc, k, stride, pad, groups int64
	// post makes the node a FusedConv with these post-ops.
	post []graph.PostOp
}

// hardSwishLinear is the post-op list of most of PP-OCR det's fused
// convolutions (HardSwish, then the learnable affine scale and bias).
var hardSwishLinear = []graph.PostOp{{Kind: graph.PostHardSwish}, {Kind: graph.PostLinear, Alpha: 0.9, Beta: 0.1}}

// convCases cover each kernel the GPU lowers PP-OCR's convolutions to:
// regular KxK (fused_conv2d_blocked), 1x1 (fused_gemm), depthwise
// (fused_dwconv2d) and the head's 2x2 stride-2 ConvTranspose
// (fused_deconv2d). The names encode op, window, channels and input size.
var convCases = []convCase{
	{"regular3x3_96to24_160x160", "Conv", 1, 96, 160, 160, 24, 3, 1, 1, 1, nil},           // p2o.Conv.58, .61
	{"regular3x3s2_3to16_640x640", "Conv", 1, 3, 640, 640, 16, 3, 2, 1, 1, nil},           // p2o.Conv.0 (stem)
	{"regular3x3_96to24_20x20", "Conv", 1, 96, 20, 20, 24, 3, 1, 1, 1, nil},               // p2o.Conv.49
	{"pointwise_192to192_40x40", "Conv", 1, 192, 40, 40, 192, 1, 1, 0, 1, nil},            // p2o.Conv.14..20
	{"pointwise_48to48_160x160", "Conv", 1, 48, 160, 160, 48, 1, 1, 0, 1, nil},            // p2o.Conv.6
	{"pointwise_16to32_320x320", "Conv", 1, 16, 320, 320, 32, 1, 1, 0, 1, nil},            // p2o.Conv.2
	{"pointwise_384to384_20x20", "Conv", 1, 384, 20, 20, 384, 1, 1, 0, 1, nil},            // p2o.Conv.28..32
	{"depthwise3x3_16_320x320", "Conv", 1, 16, 320, 320, 16, 3, 1, 1, 16, nil},            // p2o.Conv.1
	{"depthwise3x3s2_32_320x320", "Conv", 1, 32, 320, 320, 32, 3, 2, 1, 32, nil},          // p2o.Conv.3
	{"depthwise5x5_192_40x40", "Conv", 1, 192, 40, 40, 192, 5, 1, 2, 192, nil},            // p2o.Conv.13..19
	{"deconv2x2s2_24to24_160x160", "ConvTranspose", 1, 24, 160, 160, 24, 2, 2, 0, 1, nil}, // p2o.ConvTranspose.0
	// PP-OCRv4 rec's backbone at 1x3x48x320 (PPLCNetV3: hardswish and a
	// learned affine after every pointwise and depthwise convolution).
	{"pointwise_hswish_affine_240to240_12x80", "Conv", 1, 240, 12, 80, 240, 1, 1, 0, 1, hardSwishLinear},   // p2o.Add.126..158
	{"pointwise_hswish_affine_64to64_24x160", "Conv", 1, 64, 24, 160, 64, 1, 1, 0, 1, hardSwishLinear},     // p2o.Add.46
	{"depthwise5x5_hswish_affine_240_12x80", "Conv", 1, 240, 12, 80, 240, 5, 1, 2, 240, hardSwishLinear},   // p2o.Div.12..18
	{"depthwise3x3_hswish_affine_128_12x160", "Conv", 1, 128, 12, 160, 128, 3, 1, 1, 128, hardSwishLinear}, // p2o.Div.8
	// The same kernels with det's usual epilogue, as FusedConv.
	{"regular3x3_hswish_affine_96to24_160x160", "Conv", 1, 96, 160, 160, 24, 3, 1, 1, 1, hardSwishLinear},
	{"pointwise_hswish_affine_16to32_320x320", "Conv", 1, 16, 320, 320, 32, 1, 1, 0, 1, hardSwishLinear},
	{"depthwise3x3_hswish_affine_16_320x320", "Conv", 1, 16, 320, 320, 16, 3, 1, 1, 16, hardSwishLinear},
}

// flops is the multiply-adds of the convolution, times 2.
func (c convCase) flops() float64 {
	oh := (c.h+2*c.pad-c.k)/c.stride + 1
	ow := (c.w+2*c.pad-c.k)/c.stride + 1
	if c.op == "ConvTranspose" {
		return 2 * float64(c.n*c.c*c.h*c.w) * float64(c.oc/c.groups*c.k*c.k)
	}
	return 2 * float64(c.n*c.oc*oh*ow) * float64(c.c/c.groups*c.k*c.k)
}

// model is the convolution with seeded weights and bias, as one node.
func (c convCase) model() (*graph.Model, error) {
	ws := tensor.Shape{c.oc, c.c / c.groups, c.k, c.k}
	if c.op == "ConvTranspose" {
		ws = tensor.Shape{c.c, c.oc / c.groups, c.k, c.k}
	}
	wt, err := tensor.FromF32(ws, seeded.Float32s(2, int(ws.NumElements()), -0.5, 0.5))
	if err != nil {
		return nil, err
	}
	bt, err := tensor.FromF32(tensor.Shape{c.oc}, seeded.Float32s(3, int(c.oc), -1, 1))
	if err != nil {
		return nil, err
	}
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(c.n, c.c, c.h, c.w))
	attrs := graph.Attrs{"group": c.groups, "kernel_shape": []int64{c.k, c.k},
		"strides": []int64{c.stride, c.stride}}
	if c.op == "Conv" {
		attrs["pads"] = []int64{c.pad, c.pad, c.pad, c.pad}
	}
	op := c.op
	if c.post != nil {
		op = graph.OpFusedConv
	}
	conv := graph.NewNode(op, "conv", []graph.Output{x.Out(0), graph.NewConstant("w", wt).Out(0), graph.NewConstant("b", bt).Out(0)}, attrs, 1)
	if c.post != nil {
		graph.SetPostOps(conv, c.post)
	}
	return graph.NewModel(c.name, []*graph.Node{x}, []*graph.Node{graph.NewResult("y", conv.Out(0))}), nil
}

// BenchmarkConv measures the GPU device's convolution kernels on PP-OCR
// det's shapes: each case compiled alone (ENABLE_PROFILING=YES) and
// inferred once per iteration. It reports the median device time of the
// kernel launches of the convolution (kernel-ms, from OpenCL event
// profiling, without the input upload and output download) and GFLOPS
// from it (gflops); -v logs the kernel that ran:
//
//	go test -run '^$' -bench BenchmarkConv -benchtime 20x ./bench/
func BenchmarkConv(b *testing.B) {
	for _, c := range convCases {
		b.Run(c.name, func(b *testing.B) { benchConv(b, c) })
	}
}

func benchConv(b *testing.B, c convCase) {
	m, err := c.model()
	if err != nil {
		b.Fatal(err)
	}
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	cm, err := core.CompileModel(ctx, m, "GPU", map[string]string{driver.KeyEnableProfiling: "YES"})
	if err != nil {
		b.Fatalf("compiling %s on GPU: %v", c.name, err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		b.Fatal(err)
	}
	defer req.Close()
	x, err := tensor.FromF32(tensor.Shape{c.n, c.c, c.h, c.w}, seeded.Float32s(1, int(c.n*c.c*c.h*c.w), -1, 1))
	if err != nil {
		b.Fatal(err)
	}
	if err := req.SetTensor("x", x); err != nil {
		b.Fatal(err)
	}
	if err := req.Infer(ctx); err != nil { // warm up
		b.Fatal(err)
	}
	var times []time.Duration
	var kernels []string
	for b.Loop() {
		if err := req.Infer(ctx); err != nil {
			b.Fatal(err)
		}
		var t time.Duration
		kernels = kernels[:0]
		for _, p := range req.ProfilingInfo() {
			if p.Status == driver.Executed && p.NodeType != "Stage" {
				t += p.RealTime
				kernels = append(kernels, p.ExecType)
			}
		}
		times = append(times, t)
	}
	slices.Sort(times)
	med := times[len(times)/2].Seconds()
	if med <= 0 {
		b.Fatalf("%s: the profiled inference reported no kernel time", c.name)
	}
	b.Logf("%s ran %v", c.name, kernels)
	b.ReportMetric(c.flops()/med/1e9, "gflops")
	b.ReportMetric(med*1e3, "kernel-ms")
}

// TestConvCaseNames checks that every BenchmarkConv case name is unique
// and encodes its input size.
func TestConvCaseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range convCases {
		if seen[c.name] {
			t.Errorf("duplicate case %s", c.name)
		}
		seen[c.name] = true
		if want := fmt.Sprintf("_%dx%d", c.h, c.w); len(c.name) < len(want) || c.name[len(c.name)-len(want):] != want {
			t.Errorf("case %s: the name does not end in its input size %s", c.name, want)
		}
	}
}
