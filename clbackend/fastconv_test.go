package clbackend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// fastBuilder makes the models of TestRegisterBlockedKernels: seeded
// constants and parameters whose values inferAll's callers fill.
type fastBuilder struct {
	t      *testing.T
	seed   uint32
	params []*graph.Node
	values map[string]*tensor.Tensor
}

// x is a parameter with seeded values in [-1, 1).
func (f *fastBuilder) x(name string, dims ...int64) graph.Output {
	f.seed++
	p := graph.NewParameter(name, tensor.F32, graph.ShapeOf(dims...))
	s := tensor.Shape(dims)
	v, err := tensor.FromF32(s, seeded.Float32s(f.seed, int(s.NumElements()), -1, 1))
	require.NoError(f.t, err)
	f.params = append(f.params, p)
	f.values[name] = v
	return p.Out(0)
}

// c is a constant with seeded values in [-0.5, 0.5).
func (f *fastBuilder) c(dims ...int64) graph.Output {
	f.seed++
	s := tensor.Shape(dims)
	v, err := tensor.FromF32(s, seeded.Float32s(f.seed, int(s.NumElements()), -0.5, 0.5))
	require.NoError(f.t, err)
	return graph.NewConstant(fmt.Sprintf("c%d", f.seed), v).Out(0)
}

// node is a model of one node with output y.
func (f *fastBuilder) node(op string, attrs graph.Attrs, post []graph.PostOp, ins ...graph.Output) *graph.Model {
	n := graph.NewNode(op, "node", ins, attrs, 1)
	if post != nil {
		graph.SetPostOps(n, post)
	}
	return graph.NewModel(op, f.params, []*graph.Node{graph.NewResult("y", n.Out(0))})
}

// TestRegisterBlockedKernels runs each form that lower_conv_blocked.go and lower_gemm.go give a
// register-blocked kernel on odd shapes (partial row and column blocks,
// rows that end inside a vector, pads on every side, strides 1, 2 and 3,
// dilations, batches, dense and broadcast residuals) and compares it with
// the CPU reference; it also checks which kernel ran (grouped and dilated
// depthwise convolutions fall back to conv2d). Each form runs again with
// INFERENCE_PRECISION_HINT=f16 (emulated), its kernel built with -DHALF,
// within f16 tolerance.
func TestRegisterBlockedKernels(t *testing.T) {
	t.Setenv(EnvEmulateFP16, "1")
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	relu := []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostRelu}}
	for _, c := range []struct {
		name, kernel string
		build        func(f *fastBuilder) *graph.Model
	}{
		{"pointwise_batch2_dense_residual", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFusedConv, graph.Attrs{"kernel_shape": []int64{1, 1}}, relu,
				f.x("x", 2, 7, 5, 9), f.c(13, 7, 1, 1), f.c(13), f.x("r", 2, 13, 5, 9))
		}},
		{"pointwise_no_bias", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", nil, nil, f.x("x", 1, 5, 6, 7), f.c(3, 5, 1, 1))
		}},
		{"3x3_pad1_broadcast_residual_hardswish", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFusedConv, graph.Attrs{"pads": []int64{1, 1, 1, 1}},
				[]graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostHardSwish}},
				f.x("x", 1, 4, 6, 37), f.c(10, 4, 3, 3), f.c(10), f.x("r", 1, 10, 1, 37))
		}},
		{"3x3_stride2_asymmetric_pads", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"strides": []int64{2, 2}, "pads": []int64{0, 1, 2, 1}},
				nil, f.x("x", 2, 3, 9, 41), f.c(17, 3, 3, 3), f.c(17))
		}},
		{"5x3_stride1x2", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"strides": []int64{1, 2}, "pads": []int64{2, 1, 2, 1}},
				nil, f.x("x", 1, 2, 7, 35), f.c(5, 2, 5, 3), f.c(5))
		}},
		{"1d_k3", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"pads": []int64{1, 1}}, nil, f.x("x", 1, 3, 50), f.c(6, 3, 3), f.c(6))
		}},
		{"3x3_stride3", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"strides": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}},
				nil, f.x("x", 1, 2, 10, 52), f.c(4, 2, 3, 3))
		}},
		{"depthwise_3x3_batch2_clip", "fused_dwconv2d", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFusedConv, graph.Attrs{"group": int64(5), "pads": []int64{1, 1, 1, 1}},
				[]graph.PostOp{{Kind: graph.PostClip, Alpha: -0.3, Beta: 0.4}},
				f.x("x", 2, 5, 19, 35), f.c(5, 1, 3, 3), f.c(5))
		}},
		{"depthwise_5x5_stride2", "fused_dwconv2d", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"group": int64(3), "strides": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
				nil, f.x("x", 1, 3, 11, 40), f.c(3, 1, 5, 5), f.c(3))
		}},
		{"deconv_2x2_stride2", "fused_deconv2d", func(f *fastBuilder) *graph.Model {
			return f.node("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}}, nil,
				f.x("x", 2, 3, 5, 21), f.c(3, 11, 2, 2), f.c(11))
		}},
		{"matmul_batch_broadcast", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node("MatMul", nil, nil, f.x("x", 2, 3, 17, 40), f.x("b", 40, 37))
		}},
		{"matmul_constant_a", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node("MatMul", nil, nil, f.c(19, 23), f.x("x", 2, 23, 50))
		}},
		{"gemm_transposed_constant_b_and_c", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node("Gemm", graph.Attrs{"transA": int64(1), "transB": int64(1), "alpha": float32(1.3), "beta": float32(0.5)},
				nil, f.x("x", 29, 11), f.c(21, 29), f.c(21))
		}},
		{"fully_connected_sum_gelu", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFullyConnected, nil, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostGelu}},
				f.x("x", 3, 7, 30), f.c(30, 21), f.c(21), f.x("r", 3, 7, 21))
		}},
		{"3x3_dilated", "fused_conv2d_blocked", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"dilations": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
				nil, f.x("x", 1, 2, 8, 9), f.c(3, 2, 3, 3))
		}},
		// Few output pixels, many taps: through the patches
		// (lower_conv_patches.go), read in place, copied, or the whole
		// (padded) input as the one window.
		{"patches_1ch_strided_in_place", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"strides": []int64{48}}, nil, f.x("x", 1, 1, 160), f.c(40, 1, 64), f.c(40))
		}},
		{"patches_copied_batch2_relu", "strided_copy", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFusedConv, graph.Attrs{"strides": []int64{2, 2}}, []graph.PostOp{{Kind: graph.PostRelu}},
				f.x("x", 2, 8, 5, 6), f.c(20, 8, 3, 3), f.c(20))
		}},
		{"patches_whole_input_pads_residual", "fused_gemm", func(f *fastBuilder) *graph.Model {
			return f.node(graph.OpFusedConv, graph.Attrs{"strides": []int64{2}, "pads": []int64{1, 1}}, relu,
				f.x("x", 2, 32, 2), f.c(24, 32, 3), f.c(24), f.x("r", 2, 24, 1))
		}},
		{"grouped_falls_back", "conv2d", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"group": int64(2), "dilations": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
				nil, f.x("x", 1, 4, 8, 9), f.c(6, 2, 3, 3))
		}},
		{"depthwise_dilated_falls_back", "conv2d", func(f *fastBuilder) *graph.Model {
			return f.node("Conv", graph.Attrs{"group": int64(3), "dilations": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
				nil, f.x("x", 1, 3, 8, 9), f.c(3, 1, 3, 3), f.c(3))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fastBuilder{t: t, values: map[string]*tensor.Tensor{}}
			m := c.build(f)
			got, cm := inferAll(t, gpu, m, f.values)
			want, _ := inferAll(t, cpu, m, f.values)
			assertClose(t, want[0], got[0])
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			impl := rm.Node("node").RT.Extra["IMPL_TYPE"]
			assert.True(t, strings.HasPrefix(impl, c.kernel+":"), "node ran %q, want kernel %s", impl, c.kernel)
			t.Run("f16", func(t *testing.T) {
				got, cm := inferAllWith(t, gpu, m, f.values, map[string]string{driver.KeyInferencePrecisionHint: "f16"})
				assertOutputsClose(t, want, got, 1e-2, 1e-2)
				rm, err := cm.RuntimeModel()
				require.NoError(t, err)
				n := rm.Node("node")
				assert.True(t, readsHalf(n), "node did not run on f16 values")
				impl := n.RT.Extra["IMPL_TYPE"]
				assert.True(t, strings.HasPrefix(impl, c.kernel+":"), "node ran %q, want kernel %s", impl, c.kernel)
			})
		})
	}
}
