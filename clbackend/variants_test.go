package clbackend

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// variantCases are, per hot family (kernels.Families), seeded models whose
// nodes every algorithm of the family can run: 3x3 stride-1 windows
// (Winograd), nearest upsampling by integer factors (resize_upsample), a
// kernel width that divides every vector width (fused_deconv2d), odd
// sizes that leave partial blocks and tiles. TestVariantsMatchCPU runs
// every declared variant on them; a new variant needs nothing here.
func variantCases() map[string][]lowerCase {
	conv := func(op string, attrs graph.Attrs, post []graph.PostOp, x []int64, w []int64, res bool) func(g *caseGen) *graph.Model {
		return func(g *caseGen) *graph.Model {
			ins := []graph.Output{g.x("x", x...), g.c(-0.5, 0.5, w...), g.c(-1, 1, w[0])}
			node := graph.NewNode(op, "node", ins, attrs, 1)
			if res {
				tmp := graph.NewModel("tmp", g.params, []*graph.Node{graph.NewResult("y", node.Out(0))})
				require.NoError(g.t, tmp.InferShapes())
				os, _ := node.Outputs[0].Shape.ToShape()
				node.Inputs = append(node.Inputs, g.x("res", os...))
			}
			if post != nil {
				graph.SetPostOps(node, post)
			}
			return g.model(node)
		}
	}
	sumHardSwish := []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostHardSwish}}
	cases := map[string][]lowerCase{
		"gemm": {
			{"matmul_batch", func(g *caseGen) *graph.Model {
				return g.one("MatMul", nil, g.x("a", 2, 19, 23), g.x("b", 23, 53)) // 53 columns: a full vector and a partial one past the last block of 32
			}},
			{"matmul_10x10", func(g *caseGen) *graph.Model {
				return g.one("MatMul", nil, g.x("a", 2, 5, 7), g.c(-1, 1, 7, 100)) // a 10x10 image's 100 columns: 4 past the last whole vector whatever VW
			}},
			{"fully_connected_sum_relu", func(g *caseGen) *graph.Model {
				node := graph.NewNode(graph.OpFullyConnected, "node",
					[]graph.Output{g.x("a", 3, 29), g.c(-0.5, 0.5, 29, 41), g.c(-1, 1, 41), g.x("res", 3, 41)}, nil, 1)
				graph.SetPostOps(node, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostRelu}})
				return g.model(node)
			}},
			{"pointwise_conv_hardswish", conv(graph.OpFusedConv, graph.Attrs{"kernel_shape": []int64{1, 1}},
				[]graph.PostOp{{Kind: graph.PostHardSwish}}, []int64{1, 7, 9, 11}, []int64{13, 7, 1, 1}, false)},
		},
		"conv": {
			{"3x3_pad1_batch2", conv("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, nil, []int64{2, 3, 11, 13}, []int64{10, 3, 3, 3}, false)},
			{"3x3_asymmetric_pads_sum_hardswish", conv(graph.OpFusedConv, graph.Attrs{"pads": []int64{1, 0, 2, 1}}, sumHardSwish,
				[]int64{1, 4, 9, 10}, []int64{5, 4, 3, 3}, true)},
			// U-Net-like dilated windows (IS-Net's RSU blocks): partial
			// dilated Winograd tiles on both axes, unequal dilations.
			{"3x3_dilation2x3_relu", conv(graph.OpFusedConv, graph.Attrs{"pads": []int64{2, 3, 2, 3}, "dilations": []int64{2, 3}},
				[]graph.PostOp{{Kind: graph.PostRelu}}, []int64{1, 3, 11, 14}, []int64{6, 3, 3, 3}, false)},
			// More input channels than a chunk of the grouped kernel (67:
			// a partial last chunk) and output channels past a group of
			// blocks (70 = 9 blocks of 8, the last partial), with a sum.
			{"3x3_many_channels_sum_relu", conv(graph.OpFusedConv, graph.Attrs{"pads": []int64{1, 1, 1, 1}},
				[]graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostRelu}}, []int64{1, 67, 5, 7}, []int64{70, 67, 3, 3}, true)},
			// Rows wider than a broadcast item's 8 tiles (three items per
			// row: inside the row and across both ends), dilated, 33
			// output channels (a partial block of two vectors).
			{"3x3_wide_rows_dilation2_relu", conv(graph.OpFusedConv, graph.Attrs{"pads": []int64{2, 2, 2, 2}, "dilations": []int64{2, 2}},
				[]graph.PostOp{{Kind: graph.PostRelu}}, []int64{1, 5, 3, 150}, []int64{33, 5, 3, 3}, false)},
		},
		"dwconv": {
			// Rows wide enough that every vector width has items whose
			// window lies inside the row (the unchecked loads) beside the
			// rows' first and last items.
			{"3x3_pad1_batch2", conv("Conv", graph.Attrs{"group": int64(5), "pads": []int64{1, 1, 1, 1}}, nil, []int64{2, 5, 13, 41}, []int64{5, 1, 3, 3}, false)},
			{"5x5_stride2_clip", conv(graph.OpFusedConv, graph.Attrs{"group": int64(3), "strides": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
				[]graph.PostOp{{Kind: graph.PostClip, Alpha: -0.3, Beta: 0.4}}, []int64{1, 3, 11, 70}, []int64{3, 1, 5, 5}, false)},
		},
		"deconv": {
			{"2x2_stride2", func(g *caseGen) *graph.Model {
				return g.one("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}},
					g.x("x", 1, 3, 5, 9), g.c(-0.5, 0.5, 3, 6, 2, 2), g.c(-1, 1, 6))
			}},
		},
		"resize": {
			{"nearest_2x", func(g *caseGen) *graph.Model {
				t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 2, 2})
				return g.one("Resize", graph.Attrs{"mode": "nearest"}, g.x("x", 1, 3, 5, 7), graph.Output{}, graph.NewConstant("scales", t).Out(0))
			}},
			// Factors of 4 and 8 (PP-OCR det's FPN): the splat-store paths.
			{"nearest_4x8", func(g *caseGen) *graph.Model {
				t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 4, 8})
				return g.one("Resize", graph.Attrs{"mode": "nearest"}, g.x("x", 1, 2, 3, 5), graph.Output{}, graph.NewConstant("scales", t).Out(0))
			}},
			// Bilinear (resize_linear2d): half_pixel 2x up, and to sizes
			// whose height shrinks while the width grows.
			{"linear_2x", func(g *caseGen) *graph.Model {
				t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 2, 2})
				return g.one("Resize", graph.Attrs{"mode": "linear"}, g.x("x", 1, 3, 5, 7), graph.Output{}, graph.NewConstant("scales", t).Out(0))
			}},
			// Rows wide enough for resize_linear2d's vector runs of a 2x
			// column upsampling (up2), with the scalar loop at both ends.
			{"linear_2x_wide", func(g *caseGen) *graph.Model {
				t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 2, 2})
				return g.one("Resize", graph.Attrs{"mode": "linear"}, g.x("x", 1, 2, 3, 21), graph.Output{}, graph.NewConstant("scales", t).Out(0))
			}},
			{"linear_sizes_align_corners", func(g *caseGen) *graph.Model {
				return g.one("Resize", graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "align_corners"},
					g.x("x", 2, 2, 9, 4), graph.Output{}, graph.Output{}, g.ints(2, 2, 5, 11))
			}},
			{"nearest_8x4", func(g *caseGen) *graph.Model {
				t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 8, 4})
				return g.one("Resize", graph.Attrs{"mode": "nearest"}, g.x("x", 2, 2, 2, 3), graph.Output{}, graph.NewConstant("scales", t).Out(0))
			}},
		},
		"eltwise": {
			{"add_channel_broadcast", func(g *caseGen) *graph.Model {
				return g.one("Add", nil, g.x("a", 2, 3, 5, 7), g.x("b", 3, 1, 1))
			}},
			{"mul_row_broadcast", func(g *caseGen) *graph.Model {
				return g.one("Mul", nil, g.x("a", 3, 20), g.x("b", 20))
			}},
		},
		"reduce": {
			{"mean_spatial", func(g *caseGen) *graph.Model {
				return g.one("ReduceMean", nil, g.x("x", 2, 3, 9, 17), g.ints(2, 3))
			}},
			{"log_sum_exp_long_axis", func(g *caseGen) *graph.Model {
				return g.one("ReduceLogSumExp", graph.Attrs{"keepdims": int64(0)}, g.x("x", 4, 300), g.ints(1))
			}},
		},
		"se": kernelFusionCases(),
		"copy": {
			{"concat_channels", func(g *caseGen) *graph.Model {
				return g.one("Concat", graph.Attrs{"axis": int64(1)}, g.x("a", 2, 3, 5, 7), g.x("b", 2, 4, 5, 7))
			}},
			{"transpose", func(g *caseGen) *graph.Model {
				return g.one("Transpose", graph.Attrs{"perm": []int64{0, 2, 1}}, g.x("x", 2, 9, 37))
			}},
		},
	}
	maps.Copy(cases, postprocessVariantCases())
	maps.Copy(cases, quantFusedCases())
	return cases
}

// TestVariantsMatchCPU runs every declared kernel variant (kernels.Families)
// that fits this device on its family's variantCases, forced with
// GPU_KERNEL_VARIANTS, and compares the outputs with the CPU reference;
// the first variant of each algorithm and vector width runs again on f16
// activations (the width picks half.clh's vector loads and stores). It
// fails for a declared variant that no case ran (the runtime model's
// KERNEL_VARIANT), so a new variant is tested the moment it is declared.
// Every case runs on the device's worker threads, never on its in-thread
// companion (GPU_IN_THREAD=NO: AUTO, the default, would run these small
// models in the calling thread on POCL's basic device, one work group
// after another), since the kernels must hold where work groups run at
// once, as they do for every large model.
// Variants the device cannot launch (wider vectors, larger groups, more
// local memory) are listed, not run. The check that every variant ran is
// made per family, for each family whose variants all ran, so `make test`
// runs the families in more than one process (-run and -skip by family)
// with every family still checked.
func TestVariantsMatchCPU(t *testing.T) {
	t.Setenv(EnvEmulateFP16, "1")
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	lim := deviceLimits(gpu.devices[gpu.def])
	cases := variantCases()
	exercised := map[string]bool{}
	var unfit []string
	ran, declared := map[string]int{}, map[string]int{} // per family: variants run (a -run or -skip pattern may select some), and fitting
	for _, f := range kernels.Families() {
		cs := cases[f.Name]
		require.NotEmpty(t, cs, "family %s has no variantCases", f.Name)
		type instance struct {
			m    *graph.Model
			ins  map[string]*tensor.Tensor
			want []*tensor.Tensor
		}
		var insts []instance
		for ci, c := range cs {
			m, ins := c.instance(t, "variant/"+f.Name+"/"+c.name, ci)
			want, _ := inferAll(t, cpu, m, ins)
			insts = append(insts, instance{m, ins, want})
		}
		firstOfAlg := map[string]bool{} // algorithm and VW
		for _, v := range f.Variants(kernels.Limits{}) {
			if why := v.Fits(lim); why != "" {
				unfit = append(unfit, v.String()+": "+why)
				continue
			}
			alg := fmt.Sprintf("%s VW=%d", v.Algorithm, v.Get("VW"))
			full := !firstOfAlg[alg]
			firstOfAlg[alg] = true
			declared[f.Name]++
			t.Run(v.String(), func(t *testing.T) {
				ran[f.Name]++
				props := pinned(v.String())
				halfRan := false
				for _, in := range insts {
					got, cm := inferAllWith(t, gpu, in.m, in.ins, props)
					assertOutputsClose(t, in.want, got, 1e-4, 1e-3)
					ranOn, err := cm.Property(KeyOpenCLDevice)
					require.NoError(t, err)
					assert.Equal(t, openCLName(gpu.devices[gpu.def]), ranOn, "the device, not its in-thread companion")
					if ranVariant(t, cm, v) {
						exercised[v.String()] = true
					}
					if full {
						half := pinned(v.String(), driver.KeyInferencePrecisionHint, "f16")
						got, cm := inferAllWith(t, gpu, in.m, in.ins, half)
						assertOutputsClose(t, in.want, got, 2e-2, 2e-2)
						halfRan = halfRan || ranVariant(t, cm, v)
					}
				}
				assert.True(t, !full || halfRan, "no case ran %s on f16 activations", v)
			})
		}
	}
	if len(unfit) > 0 {
		t.Logf("declared variants this device (%s) cannot launch, not run here:\n%s", gpu.devices[gpu.def].fullName, strings.Join(unfit, "\n"))
	}
	for _, f := range kernels.Families() {
		if ran[f.Name] < declared[f.Name] {
			continue // a -run or -skip pattern selected some of its variants
		}
		for _, v := range f.Variants(lim) {
			assert.True(t, exercised[v.String()], "declared variant %s ran on no case of variantCases[%q]: add a case every algorithm of the family applies to", v, f.Name)
		}
	}
}

// ranVariant reports whether a node of cm's runtime model ran variant v.
func ranVariant(t *testing.T, cm driver.CompiledModel, v kernels.Variant) bool {
	t.Helper()
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	return slices.ContainsFunc(nodes, func(n *graph.Node) bool { return n.RT.Extra[KeyKernelVariant] == v.String() })
}
