package clbackend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// qconvSpec is one fused integer convolution case: data and weight types
// and shapes, attributes, post-ops, per-channel weight zero points, a
// residual, and the output's quantized type (Undefined: f32 out).
type qconvSpec struct {
	xt, wt, out tensor.ElementType
	x, w        []int64
	attrs       graph.Attrs
	post        []graph.PostOp
	perCh, res  bool
	onLoad      bool // f32 data quantized to xt on load (graph.QuantizesOnLoad)
}

// ints8 is a constant of type t (i8 or u8) with random values of its
// range.
func (g *caseGen) ints8(t tensor.ElementType, dims ...int64) graph.Output {
	s := tensor.Shape(dims)
	v := make([]float64, s.NumElements())
	lo, hi, _ := t.IntRange()
	for i := range v {
		v[i] = float64(lo + g.r.Int64N(hi-lo+1))
	}
	x, _ := tensor.FromFloat64s(t, s, v)
	return graph.NewConstant(fmt.Sprintf("q%d", g.r.Uint32()), x).Out(0)
}

// scalarOf is a scalar constant of type t.
func (g *caseGen) scalarOf(t tensor.ElementType, v float64) graph.Output {
	x, _ := tensor.FromFloat64s(t, tensor.Shape{}, []float64{v})
	return graph.NewConstant(fmt.Sprintf("s%d", g.r.Uint32()), x).Out(0)
}

// quantized is parameter "x" (f32, normal values) quantized to t with
// scale 0.02: data spanning most of t's range.
func (g *caseGen) quantized(t tensor.ElementType, dims ...int64) (graph.Output, float64) {
	zp := 128.0
	if t == tensor.I8 {
		zp = -3
	}
	q := graph.NewNode("QuantizeLinear", "quantize", []graph.Output{g.x("x", dims...), g.scalarOf(tensor.F32, 0.02), g.scalarOf(t, zp)}, nil, 1)
	return q.Out(0), zp
}

// qconvModel builds the case's graph.OpQuantizedConv (or
// graph.OpQuantizedFullyConnected when op says so).
func qconvModel(op string, s qconvSpec) func(g *caseGen) *graph.Model {
	return func(g *caseGen) *graph.Model {
		x, zp := g.quantized(s.xt, s.x...)
		if s.onLoad {
			x = x.Node.Input(0)
		}
		c := s.w[0]
		if op == graph.OpQuantizedFullyConnected {
			c = s.w[1]
		}
		wz := g.scalarOf(s.wt, 0)
		if s.wt == tensor.U8 {
			wz = g.scalarOf(s.wt, 131)
		}
		if s.perCh {
			wz = g.ints8(s.wt, c)
		}
		ins := []graph.Output{x, g.ints8(s.wt, s.w...), g.c(-1, 1, c), {}, g.scalarOf(tensor.F32, 0.02), g.scalarOf(s.xt, zp),
			g.c(0.001, 0.01, c), wz}
		if s.out != tensor.Undefined {
			ins = append(ins, g.scalarOf(tensor.F32, 0.07), g.scalarOf(s.out, 5))
		}
		node := graph.NewNode(op, "node", ins, s.attrs.Clone(), 1) // SetPostOps writes the attributes
		if s.res {                                                 // the residual has the output's shape: infer it first
			tmp := graph.NewModel("tmp", g.params, []*graph.Node{graph.NewResult("y", node.Out(0))})
			require.NoError(g.t, tmp.InferShapes())
			os, _ := node.Outputs[0].Shape.ToShape()
			node.Inputs[graph.QuantInResidual] = g.x("res", os...)
		}
		if s.post != nil {
			graph.SetPostOps(node, s.post)
		}
		return g.model(node)
	}
}

// quantFusedCases are the cases of the fused integer ops, by family: every
// algorithm of each family applies to every case.
func quantFusedCases() map[string][]lowerCase {
	relu := []graph.PostOp{{Kind: graph.PostRelu}}
	sumHardSwish := []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostHardSwish}}
	clip := []graph.PostOp{{Kind: graph.PostClip, Alpha: -0.5, Beta: 3}}
	u8, i8 := tensor.U8, tensor.I8
	return map[string][]lowerCase{
		"qconv": {
			{"3x3_pad1_u8xi8_relu_u8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{2, 5, 9, 13}, w: []int64{10, 5, 3, 3},
				attrs: graph.Attrs{"pads": []int64{1, 1, 1, 1}}, post: relu})},
			{"3x3_stride2_i8xu8_sum_hardswish_f32", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: i8, wt: u8, x: []int64{1, 6, 11, 10}, w: []int64{7, 6, 3, 3},
				attrs: graph.Attrs{"pads": []int64{1, 0, 1, 1}, "strides": []int64{2, 2}}, post: sumHardSwish, perCh: true, res: true})},
			{"1x1_wide_clip_i8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: i8, x: []int64{1, 300, 4, 19}, w: []int64{9, 300, 1, 1},
				post: clip, perCh: true})},
			{"1x1_batch2_sum_u8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{2, 7, 5, 6}, w: []int64{11, 7, 1, 1},
				post: []graph.PostOp{{Kind: graph.PostSum}}, perCh: true, res: true})},
			{"1d_k5", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: u8, out: u8, x: []int64{1, 3, 23}, w: []int64{4, 3, 5},
				attrs: graph.Attrs{"pads": []int64{2, 2}}})},
			{"1x1_deep_runs_u8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{1, 1100, 2, 5}, w: []int64{3, 1100, 1, 1}})},
			{"3x3_stride2_on_load_u8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{1, 3, 9, 14}, w: []int64{5, 3, 3, 3},
				attrs: graph.Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}}, post: relu, perCh: true, onLoad: true})},
			{"1x1_on_load_i8_f32", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: i8, wt: i8, x: []int64{2, 6, 1, 1}, w: []int64{4, 6, 1, 1}, onLoad: true})},
			{"3x3_dilation4_pad4", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: u8, out: u8, x: []int64{1, 5, 13, 18}, w: []int64{6, 5, 3, 3},
				attrs: graph.Attrs{"pads": []int64{4, 4, 4, 4}, "dilations": []int64{4, 4}}, post: relu, perCh: true})},
		},
		"qdwconv": {
			{"3x3_pad1_relu_u8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{2, 5, 13, 17}, w: []int64{5, 1, 3, 3},
				attrs: graph.Attrs{"group": int64(5), "pads": []int64{1, 1, 1, 1}}, post: relu, perCh: true})},
			{"3x3_on_load_i8", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: i8, wt: i8, out: i8, x: []int64{1, 4, 7, 21}, w: []int64{4, 1, 3, 3},
				attrs: graph.Attrs{"group": int64(4), "pads": []int64{1, 1, 1, 1}}, onLoad: true})},
			{"5x5_stride2_u8w_f32", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8, wt: u8, x: []int64{1, 3, 11, 19}, w: []int64{3, 1, 5, 5},
				attrs: graph.Attrs{"group": int64(3), "strides": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}}})},
		},
		"qgemm": {
			{"batch_rows_requant", qconvModel(graph.OpQuantizedFullyConnected, qconvSpec{xt: u8, wt: i8, out: u8, x: []int64{2, 3, 37}, w: []int64{37, 21},
				post: relu, perCh: true})},
			{"long_k_f32_sum", qconvModel(graph.OpQuantizedFullyConnected, qconvSpec{xt: i8, wt: u8, x: []int64{5, 700}, w: []int64{700, 9},
				post: []graph.PostOp{{Kind: graph.PostSum}}, res: true})},
		},
	}
}

// quantGenericCases are fused integer convolutions no family takes
// (dilation, grouped): conv_integer's FUSED form.
func quantGenericCases() []lowerCase {
	return []lowerCase{
		{"dilated_grouped_requant", qconvModel(graph.OpQuantizedConv, qconvSpec{xt: u8(), wt: tensor.I8, out: tensor.I8, x: []int64{1, 4, 9, 9}, w: []int64{6, 2, 3, 3},
			attrs: graph.Attrs{"group": int64(2), "dilations": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}}, post: []graph.PostOp{{Kind: graph.PostLeakyRelu, Alpha: 0.1}}, perCh: true})},
	}
}

func u8() tensor.ElementType { return tensor.U8 }

// TestQuantizedVariantsBitExact runs every declared variant of the qconv,
// qdwconv and qgemm families that fits this device, and the generic
// form, on their cases and requires the CPU reference's bits: the
// integer accumulation is exact and the epilogue the same f32 operations.
// Like TestVariantsMatchCPU, which runs the same variants on the same
// cases (variantCases), the variants run on the device's worker threads
// (GPU_IN_THREAD=NO) on the same seeded instances: POCL keys its kernel
// cache by OpenCL device, and on the in-thread companion (AUTO's choice
// for these small models), or with other weights, each of their ~185
// programs was built and compiled a second time on a cold POCL cache.
func TestQuantizedVariantsBitExact(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	lim := deviceLimits(gpu.devices[gpu.def])
	check := func(t *testing.T, c lowerCase, name string, ci int, props map[string]string, want string) {
		m, ins := c.instance(t, name, ci)
		exp, _ := inferAll(t, cpu, m, ins)
		got, cm := inferAllWith(t, gpu, m, ins, props)
		require.Len(t, got, len(exp))
		for i := range exp {
			require.Equal(t, exp[i].Type(), got[i].Type())
			assert.Equal(t, exp[i].Contiguous().Bytes(), got[i].Contiguous().Bytes(), "output %d differs from the CPU's bits", i)
		}
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		nodes, err := rm.Nodes()
		require.NoError(t, err)
		impls := ""
		for _, n := range nodes {
			impls += n.RT.Extra["IMPL_TYPE"] + " " + n.RT.Extra[KeyKernelVariant] + ";"
		}
		assert.Contains(t, impls, want)
	}
	for fam, cs := range quantFusedCases() {
		f, ok := kernels.LookupFamily(fam)
		require.True(t, ok, fam)
		for _, v := range f.Variants(lim) {
			for ci, c := range cs {
				t.Run(v.String()+"/"+c.name, func(t *testing.T) {
					// TestVariantsMatchCPU's instance of the case: the
					// same weights, so the same programs (the fma
					// algorithm's CHUNK follows the weights' range).
					check(t, c, "variant/"+fam+"/"+c.name, ci, pinned(v.String()), v.String())
				})
			}
		}
	}
	for ci, c := range quantGenericCases() {
		t.Run("generic/"+c.name, func(t *testing.T) {
			// The generic form on AUTO's device, as TestLoweringsMatchCPU
			// runs these cases: the same programs.
			check(t, c, "quant/generic/"+c.name, ci, nil, "conv_integer")
		})
	}
	var unfit []string
	for _, fam := range []string{"qconv", "qdwconv", "qgemm"} {
		f, _ := kernels.LookupFamily(fam)
		for _, v := range f.Variants(kernels.Limits{}) {
			if why := v.Fits(lim); why != "" {
				unfit = append(unfit, v.String()+": "+why)
			}
		}
	}
	if len(unfit) > 0 {
		t.Logf("variants this device cannot run (the kernel tests run them under emulation):\n%s", strings.Join(unfit, "\n"))
	}
}
