package clbackend

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// typed is a constant of type t holding v.
func (g *caseGen) typed(t tensor.ElementType, dims []int64, v ...float64) graph.Output {
	x, err := tensor.FromFloat64s(t, tensor.Shape(dims), v)
	require.NoError(g.t, err)
	return graph.NewConstant(fmt.Sprintf("k%d", g.r.Uint32()), x).Out(0)
}

// randInts returns n integers in [lo, hi].
func (g *caseGen) randInts(n, lo, hi int64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(lo + g.r.Int64N(hi-lo+1))
	}
	return v
}

// parityCases returns TestLoweringsMatchCPU's cases for the lowerings and
// op forms added so that the GPU passes the ONNX backend suite cases the
// CPU passes: more element types (f64, f16, bf16, mixed Pow, integer
// Clip), order- and index-driven ops, LayerNormalization's statistics,
// cubic and cropping Resize, 3-D and integer pooling with indices, and
// 3-D convolutions. Integer parameters hold values in [-5, 5].
func parityCases() map[string][]lowerCase {
	cases := map[string][]lowerCase{}
	add := func(op, name string, build func(g *caseGen) *graph.Model) {
		cases[op] = append(cases[op], lowerCase{name, build})
	}
	for _, c := range []struct{ from, to tensor.ElementType }{
		{tensor.F32, tensor.BF16}, {tensor.BF16, tensor.F32}, {tensor.F32, tensor.F64}, {tensor.F64, tensor.F16},
		{tensor.F16, tensor.F64}, {tensor.I64, tensor.F64}, {tensor.F16, tensor.Bool},
	} {
		add("Cast", fmt.Sprintf("%s_to_%s", c.from, c.to), func(g *caseGen) *graph.Model {
			return g.one("Cast", graph.Attrs{"to": int64(c.to)}, g.param("x", c.from, g.dim(2, 4), g.dim(2, 6)))
		})
	}
	add("CastLike", "f32_like_f64", func(g *caseGen) *graph.Model {
		return g.one("CastLike", nil, g.x("x", g.dim(2, 4), g.dim(2, 6)), g.typed(tensor.F64, []int64{1}, 0))
	})
	for _, c := range []struct{ a, b tensor.ElementType }{
		{tensor.F32, tensor.I64}, {tensor.I32, tensor.I32}, {tensor.F64, tensor.F64}, {tensor.F32, tensor.F64},
	} {
		add("Pow", fmt.Sprintf("%s_pow_%s", c.a, c.b), func(g *caseGen) *graph.Model {
			d0, d1 := g.dim(2, 4), g.dim(2, 5)
			return g.one("Pow", nil, g.param("a", c.a, d0, d1), g.param("b", c.b, d1))
		})
	}
	add("Pow", "i64_pow_f32", func(g *caseGen) *graph.Model {
		// Positive bases: a NaN or infinite power has no integer value,
		// and the CPU device's conversion of one is platform-dependent.
		d0, d1 := g.dim(2, 4), g.dim(2, 5)
		return g.one("Pow", nil, g.typed(tensor.I64, []int64{d0, d1}, g.randInts(d0*d1, 1, 5)...), g.x("b", d1))
	})
	add("Clip", "i32_both_bounds", func(g *caseGen) *graph.Model {
		return g.one("Clip", nil, g.param("i", tensor.I32, g.dim(2, 4), g.dim(2, 6)), g.ints32(-2), g.ints32(3))
	})
	add("Clip", "i8_max_only", func(g *caseGen) *graph.Model {
		return g.one("Clip", nil, g.param("i", tensor.I8, g.dim(2, 9)), graph.Output{}, g.typed(tensor.I8, nil, 1))
	})
	add("Clip", "i64_no_bounds", func(g *caseGen) *graph.Model {
		return g.one("Clip", nil, g.param("i", tensor.I64, g.dim(2, 9)))
	})
	for _, op := range []string{"Max", "Min"} {
		for _, t := range []tensor.ElementType{tensor.F16, tensor.F64} {
			add(op, t.String(), func(g *caseGen) *graph.Model {
				d0, d1 := g.dim(2, 4), g.dim(2, 6)
				return g.one(op, nil, g.param("a", t, d0, d1), g.param("b", t, d1))
			})
		}
	}
	add("Mod", "i64_fmod", func(g *caseGen) *graph.Model {
		d1 := g.dim(2, 5)
		div := g.randInts(d1, 1, 4)
		for i := range div {
			if i%2 == 1 {
				div[i] = -div[i]
			}
		}
		return g.one("Mod", graph.Attrs{"fmod": int64(1)}, g.param("a", tensor.I64, g.dim(2, 4), d1), g.typed(tensor.I64, []int64{d1}, div...))
	})
	add("Mod", "f16_fmod", func(g *caseGen) *graph.Model {
		d1 := g.dim(2, 5)
		return g.one("Mod", graph.Attrs{"fmod": int64(1)}, g.param("a", tensor.F16, g.dim(2, 4), d1), g.typed(tensor.F16, []int64{d1}, g.randInts(d1, 1, 3)...))
	})
	add("Add", "f64", func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(2, 6)
		return g.one("Add", nil, g.param("a", tensor.F64, d0, d1), g.param("b", tensor.F64, d1))
	})
	add("CumSum", "f64_reverse", func(g *caseGen) *graph.Model {
		return g.one("CumSum", graph.Attrs{"reverse": int64(1)}, g.param("x", tensor.F64, g.dim(2, 3), g.dim(2, 6)), g.ints(1))
	})
	add("ReduceLogSumExp", "f64", func(g *caseGen) *graph.Model {
		return g.one("ReduceLogSumExp", nil, g.param("x", tensor.F64, g.dim(2, 3), g.dim(2, 5), g.dim(2, 4)), g.ints(1))
	})
	add("Dropout", "mask", func(g *caseGen) *graph.Model {
		return g.model(graph.NewNode("Dropout", "node", []graph.Output{g.x("x", g.dim(2, 4), g.dim(2, 5))}, nil, 2))
	})
	add("EyeLike", "k_dtype", func(g *caseGen) *graph.Model {
		return g.one("EyeLike", graph.Attrs{"k": int64(1), "dtype": int64(tensor.F32)}, g.param("i", tensor.I32, g.dim(2, 5), g.dim(2, 5)))
	})
	add("EyeLike", "negative_k", func(g *caseGen) *graph.Model {
		return g.one("EyeLike", graph.Attrs{"k": int64(-2)}, g.param("i", tensor.I64, g.dim(3, 5), g.dim(2, 4)))
	})
	for _, outs := range []int{2, 3} {
		add("LayerNormalization", fmt.Sprintf("%d_outputs", outs), func(g *caseGen) *graph.Model {
			d := g.dim(3, 9)
			n := graph.NewNode("LayerNormalization", "node", []graph.Output{g.x("x", g.dim(1, 3), g.dim(2, 5), d), g.c(0.5, 1.5, d)},
				graph.Attrs{"axis": int64(-1), "epsilon": float32(1e-3)}, outs)
			return g.model(n)
		})
	}
	add("Hardmax", "axis_1", func(g *caseGen) *graph.Model {
		return g.one("Hardmax", graph.Attrs{"axis": int64(1)}, g.x("x", g.dim(1, 3), g.dim(2, 6), g.dim(1, 4)))
	})
	add("Hardmax", "ties", func(g *caseGen) *graph.Model {
		// Rounded values tie: the first maximum wins.
		r := graph.NewNode("Round", "r", []graph.Output{g.x("x", g.dim(2, 4), g.dim(3, 8))}, nil, 1)
		return g.model(graph.NewNode("Hardmax", "node", []graph.Output{r.Out(0)}, nil, 1))
	})
	add("TopK", "largest_f32", func(g *caseGen) *graph.Model {
		d1 := g.dim(3, 8)
		n := graph.NewNode("TopK", "node", []graph.Output{g.x("x", g.dim(1, 3), d1, g.dim(1, 3)), g.ints(g.dim(1, d1))}, graph.Attrs{"axis": int64(1)}, 2)
		return g.model(n)
	})
	add("TopK", "smallest_i32_ties", func(g *caseGen) *graph.Model {
		d1 := g.dim(4, 9)
		n := graph.NewNode("TopK", "node", []graph.Output{g.param("i", tensor.I32, g.dim(2, 3), d1), g.ints(3)}, graph.Attrs{"largest": int64(0)}, 2)
		return g.model(n)
	})
	add("OneHot", "i64_axis_1", func(g *caseGen) *graph.Model {
		// Indices in [-5, 5] with depth 4: some negative, some outside.
		return g.one("OneHot", graph.Attrs{"axis": int64(1)}, g.param("i", tensor.I64, g.dim(2, 3), g.dim(1, 4)), g.ints(4), g.c(-1, 1, 2))
	})
	add("OneHot", "f32_indices_last_axis", func(g *caseGen) *graph.Model {
		return g.one("OneHot", nil, g.x("x", g.dim(2, 5)), g.typed(tensor.F32, nil, 3), g.typed(tensor.I32, []int64{2}, 5, 7))
	})
	add("GatherND", "batch_dims_1", func(g *caseGen) *graph.Model {
		b, d1, d2 := g.dim(1, 3), g.dim(2, 4), g.dim(2, 3)
		idx := g.randInts(b*2, -d1, d1-1)
		return g.one("GatherND", graph.Attrs{"batch_dims": int64(1)}, g.x("x", b, d1, d2), g.typed(tensor.I64, []int64{b, 2, 1}, idx...))
	})
	add("GatherND", "full_tuples", func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(2, 4)
		var idx []float64
		for range 3 {
			idx = append(idx, float64(g.r.Int64N(d0)), float64(g.r.Int64N(d1)))
		}
		return g.one("GatherND", nil, g.param("i", tensor.I32, d0, d1, 2), g.typed(tensor.I64, []int64{3, 2}, idx...))
	})
	for _, red := range []string{"none", "add", "mul", "max", "min"} {
		add("ScatterElements", red, func(g *caseGen) *graph.Model {
			// Updates [2, d1] along axis 0 of [3, d1]: indices repeat.
			d1 := g.dim(2, 5)
			idx := g.randInts(2*d1, -3, 2)
			return g.one("ScatterElements", graph.Attrs{"axis": int64(0), "reduction": red}, g.x("x", 3, d1),
				g.typed(tensor.I64, []int64{2, d1}, idx...), g.x("u", 2, d1))
		})
	}
	for _, red := range []string{"none", "add", "mul"} {
		add("ScatterND", red, func(g *caseGen) *graph.Model {
			d0, d1 := g.dim(2, 4), g.dim(2, 5)
			idx := g.randInts(3, -d0, d0-1) // three row tuples, repeats likely
			return g.one("ScatterND", graph.Attrs{"reduction": red}, g.x("x", d0, d1), g.typed(tensor.I64, []int64{3, 1}, idx...), g.x("u", 3, d1))
		})
	}
	add("ScatterND", "elements_i32", func(g *caseGen) *graph.Model {
		return g.one("ScatterND", nil, g.param("i", tensor.I32, 3, 4), g.typed(tensor.I64, []int64{2, 2}, 0, 1, 2, -1), g.param("u", tensor.I32, 2))
	})
	for _, c := range []struct {
		name  string
		attrs graph.Attrs
	}{
		{"cubic", graph.Attrs{"mode": "cubic"}},
		{"cubic_exclude_outside", graph.Attrs{"mode": "cubic", "cubic_coeff_a": float32(-0.5), "exclude_outside": int64(1)}},
		{"cubic_align_corners", graph.Attrs{"mode": "cubic", "coordinate_transformation_mode": "align_corners"}},
		{"nearest_half_pixel_symmetric", graph.Attrs{"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"}},
	} {
		add("Resize", c.name, func(g *caseGen) *graph.Model {
			return g.one("Resize", c.attrs, g.x("x", 1, g.dim(1, 2), g.dim(3, 6), g.dim(3, 6)), graph.Output{},
				g.typed(tensor.F32, []int64{4}, 1, 1, 1.5, 0.75))
		})
	}
	// Integers interpolate in f64 and truncate toward zero (ONNX's
	// reference); f64 computes in double on both devices.
	for _, typ := range []tensor.ElementType{tensor.U8, tensor.I32, tensor.I64, tensor.F64} {
		for _, mode := range []string{"linear", "cubic"} {
			add("Resize", mode+"_"+typ.String(), func(g *caseGen) *graph.Model {
				return g.one("Resize", graph.Attrs{"mode": mode}, g.param("x", typ, 1, 2, 3, 5), graph.Output{},
					g.typed(tensor.F32, []int64{4}, 1, 1, 1.5, 0.75))
			})
		}
	}
	add("Resize", "tf_crop_and_resize_i16", func(g *caseGen) *graph.Model {
		roi := g.typed(tensor.F32, []int64{8}, 0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2)
		return g.one("Resize", graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": float32(-7)},
			g.param("x", tensor.I16, 1, 2, 4, 5), roi, graph.Output{}, g.ints(1, 2, 4, 5))
	})
	add("Resize", "tf_crop_and_resize", func(g *caseGen) *graph.Model {
		roi := g.typed(tensor.F32, []int64{8}, 0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2) // partly outside along W
		return g.one("Resize", graph.Attrs{"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": float32(7)},
			g.x("x", 1, 2, g.dim(3, 6), g.dim(3, 6)), roi, graph.Output{}, g.ints(1, 2, 4, 5))
	})
	for _, order := range []int64{0, 1} {
		add("MaxPool", fmt.Sprintf("indices_storage_order_%d", order), func(g *caseGen) *graph.Model {
			n := graph.NewNode("MaxPool", "node", []graph.Output{g.x("x", g.dim(1, 2), g.dim(1, 3), g.dim(4, 7), g.dim(4, 7))},
				graph.Attrs{"kernel_shape": []int64{3, 2}, "strides": []int64{2, 1}, "pads": []int64{1, 0, 1, 1}, "storage_order": order}, 2)
			return g.model(n)
		})
	}
	add("MaxPool", "u8", func(g *caseGen) *graph.Model {
		x := graph.NewNode("Cast", "u", []graph.Output{g.param("i", tensor.I32, 1, 2, g.dim(4, 6), g.dim(4, 6))}, graph.Attrs{"to": int64(tensor.U8)}, 1)
		return g.model(graph.NewNode("MaxPool", "node", []graph.Output{x.Out(0)}, graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}, 1))
	})
	// IS-Net's downsampling: 2x2 stride 2 with ceil_mode on odd sizes
	// (max_pool2d_2x2's whole parts of max(8, PV) outputs as vectors, its
	// partial windows at the ends through the loop): rows of 67-81
	// columns give a CPU device's first run of 32 outputs whole parts at
	// every width PV (4, 8, 16) and its second run a tail.
	add("MaxPool", "2x2_stride2_ceil_mode", func(g *caseGen) *graph.Model {
		return g.one("MaxPool", graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}, "ceil_mode": int64(1)},
			g.x("x", g.dim(1, 2), g.dim(1, 3), 2*g.dim(2, 5)+1, 2*g.dim(33, 40)+1))
	})
	for _, op := range []string{"MaxPool", "AveragePool"} {
		add(op, "3d", func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"kernel_shape": []int64{2, 3, 2}, "strides": []int64{1, 2, 2}, "pads": []int64{0, 1, 1, 1, 1, 0},
				"count_include_pad": int64(1)}, g.x("x", 1, g.dim(1, 3), g.dim(2, 4), g.dim(4, 7), g.dim(4, 7)))
		})
	}
	add("Conv", "3d_groups", func(g *caseGen) *graph.Model {
		ic, oc := int64(2), 2*g.dim(1, 3)
		return g.one("Conv", graph.Attrs{"group": int64(2), "strides": []int64{1, 2, 1}, "pads": []int64{1, 0, 1, 0, 1, 1}, "dilations": []int64{1, 1, 2}},
			g.x("x", g.dim(1, 2), ic, g.dim(3, 5), g.dim(4, 6), g.dim(4, 7)), g.c(-0.5, 0.5, oc, 1, 2, 3, 2), g.c(-1, 1, oc))
	})
	add("ConvTranspose", "3d", func(g *caseGen) *graph.Model {
		ic, oc := g.dim(1, 3), g.dim(1, 3)
		return g.one("ConvTranspose", graph.Attrs{"strides": []int64{2, 1, 2}, "pads": []int64{1, 0, 0, 0, 1, 1}},
			g.x("x", 1, ic, g.dim(2, 3), g.dim(2, 4), g.dim(2, 4)), g.c(-0.5, 0.5, ic, oc, 2, 3, 3))
	})
	// bf16 runs in f32 between casts (lowerWidened); integer values in
	// [-5, 5] keep these results exact in bf16 on both devices.
	bf16 := func(op string, attrs graph.Attrs, inputs int) {
		add(op, "bf16", func(g *caseGen) *graph.Model {
			d0, d1 := g.dim(2, 4), g.dim(2, 6)
			ins := []graph.Output{g.param("a", tensor.BF16, d0, d1)}
			for i := 1; i < inputs; i++ {
				ins = append(ins, g.param(fmt.Sprintf("b%d", i), tensor.BF16, d1))
			}
			return g.one(op, attrs, ins...)
		})
	}
	bf16("Add", nil, 2)
	bf16("Max", nil, 2)
	bf16("Relu", nil, 1)
	bf16("Abs", nil, 1)
	bf16("ReduceSum", graph.Attrs{"keepdims": int64(0)}, 1)
	add("Clip", "bf16", func(g *caseGen) *graph.Model {
		return g.one("Clip", nil, g.param("a", tensor.BF16, g.dim(2, 4), g.dim(2, 6)), g.typed(tensor.BF16, []int64{}, -2), g.typed(tensor.BF16, []int64{}, 3))
	})
	// The selecting ops on the integers the kernels lack run in f32 (8 and
	// 16 bits) or f64 (32 bits) between casts (lowerWidened).
	for _, c := range []struct {
		op  string
		typ tensor.ElementType
	}{{"ReduceMax", tensor.I8}, {"ReduceMin", tensor.U16}, {"ReduceMax", tensor.U32}, {"ArgMax", tensor.U8}, {"ArgMin", tensor.I16}, {"Relu", tensor.I8}} {
		add(c.op, c.typ.String(), func(g *caseGen) *graph.Model {
			var attrs graph.Attrs
			if c.op != "Relu" {
				attrs = graph.Attrs{"keepdims": int64(0)}
			}
			return g.one(c.op, attrs, g.param("a", c.typ, g.dim(2, 4), g.dim(2, 6)))
		})
	}
	add("MatMul", "bf16", func(g *caseGen) *graph.Model {
		k := g.dim(2, 5)
		return g.one("MatMul", nil, g.param("a", tensor.BF16, g.dim(2, 4), k), g.param("b", tensor.BF16, k, g.dim(2, 6)))
	})
	for op, cs := range typeCases() {
		cases[op] = append(cases[op], cs...)
	}
	return cases
}

// typeCases are TestLoweringsMatchCPU's cases of the integer, f64 and
// 8-bit float forms of the kernels (TestElementTypesMatchCPU walks every
// pair; these put each build option set the lowerings emit for them into
// the portability matrix, TestLoweringOptionsBuildEverywhere).
func typeCases() map[string][]lowerCase {
	cases := map[string][]lowerCase{}
	add := func(op string, typ tensor.ElementType, attrs graph.Attrs, inputs int) {
		cases[op] = append(cases[op], lowerCase{typ.String(), func(g *caseGen) *graph.Model {
			d0, d1 := g.dim(2, 4), g.dim(2, 6)
			ins := []graph.Output{g.param("a", typ, d0, d1)}
			for i := 1; i < inputs; i++ {
				ins = append(ins, g.param(fmt.Sprintf("b%d", i), typ, d1))
			}
			return g.one(op, attrs, ins...)
		}})
	}
	keep0 := graph.Attrs{"keepdims": int64(0)}
	for _, c := range []struct {
		op  string
		typ tensor.ElementType
	}{
		{"ReduceSum", tensor.U64}, {"ReduceSum", tensor.I8}, {"ReduceMean", tensor.I32}, {"ReduceProd", tensor.I16},
		{"ReduceL1", tensor.I64}, {"ReduceL2", tensor.U16}, {"ReduceSumSquare", tensor.U32}, {"ReduceMax", tensor.I64},
		{"ReduceMin", tensor.U64}, {"ReduceLogSumExp", tensor.I32}, {"ArgMax", tensor.F64},
	} {
		add(c.op, c.typ, keep0, 1)
	}
	for _, c := range []struct {
		op  string
		typ tensor.ElementType
	}{
		{"Relu", tensor.I64}, {"Neg", tensor.I32}, {"Abs", tensor.F64}, {"Erf", tensor.I16}, {"Sigmoid", tensor.F64},
		{"Softmax", tensor.F64}, {"LogSoftmax", tensor.F64}, {"Hardmax", tensor.F64}, {"Hardmax", tensor.F16}, {"CumSum", tensor.F16},
	} {
		if c.op == "CumSum" {
			cases[c.op] = append(cases[c.op], lowerCase{c.typ.String(), func(g *caseGen) *graph.Model {
				return g.one("CumSum", nil, g.param("a", c.typ, g.dim(2, 4), g.dim(2, 6)), g.ints(1))
			}})
			continue
		}
		add(c.op, c.typ, nil, 1)
	}
	cases["CumSum"] = append(cases["CumSum"], lowerCase{"u8_reverse", func(g *caseGen) *graph.Model {
		return g.one("CumSum", graph.Attrs{"reverse": int64(1)}, g.param("a", tensor.U8, g.dim(2, 4), g.dim(2, 6)), g.ints(0))
	}})
	add("Mean", tensor.F64, nil, 3)
	add("PRelu", tensor.I32, nil, 2)
	add("Equal", tensor.F8E4M3FN, nil, 2)
	add("MatMul", tensor.F8E5M2, nil, 2)
	for _, typ := range []tensor.ElementType{tensor.I32, tensor.U8} {
		cases["MatMul"] = append(cases["MatMul"], lowerCase{typ.String(), func(g *caseGen) *graph.Model {
			k := g.dim(2, 5)
			return g.one("MatMul", nil, g.param("a", typ, g.dim(1, 3), g.dim(2, 4), k), g.param("b", typ, k, g.dim(2, 6)))
		}})
	}
	for _, c := range []struct {
		typ         tensor.ElementType
		alpha, beta float32
	}{{tensor.I64, 2, -1}, {tensor.U32, 0.7, 1.3}} {
		cases["Gemm"] = append(cases["Gemm"], lowerCase{fmt.Sprintf("%s_alpha_%g", c.typ, c.alpha), func(g *caseGen) *graph.Model {
			m, k, n := g.dim(2, 4), g.dim(2, 5), g.dim(2, 6)
			return g.one("Gemm", graph.Attrs{"transB": int64(1), "alpha": c.alpha, "beta": c.beta},
				g.param("a", c.typ, m, k), g.param("b", c.typ, n, k), g.param("c", c.typ, n))
		}})
	}
	cases["Einsum"] = append(cases["Einsum"], lowerCase{"i16", func(g *caseGen) *graph.Model {
		k := g.dim(2, 5)
		return g.one("Einsum", graph.Attrs{"equation": "ij,jk->ik"}, g.param("a", tensor.I16, g.dim(2, 4), k), g.param("b", tensor.I16, k, g.dim(2, 6)))
	}})
	for _, c := range []struct{ from, to tensor.ElementType }{
		{tensor.F32, tensor.F8E4M3FN}, {tensor.F8E4M3FNUZ, tensor.F32}, {tensor.F16, tensor.F8E5M2}, {tensor.F8E5M2FNUZ, tensor.I32},
	} {
		cases["Cast"] = append(cases["Cast"], lowerCase{fmt.Sprintf("%s_to_%s", c.from, c.to), func(g *caseGen) *graph.Model {
			return g.one("Cast", graph.Attrs{"to": int64(c.to)}, g.param("x", c.from, g.dim(2, 4), g.dim(2, 6)))
		}})
	}
	cases["Cast"] = append(cases["Cast"], lowerCase{"f32_to_f8e4m3_no_saturate", func(g *caseGen) *graph.Model {
		return g.one("Cast", graph.Attrs{"to": int64(tensor.F8E4M3FN), "saturate": int64(0)}, g.x("x", g.dim(2, 4), g.dim(2, 6)))
	}})
	cases["LpNormalization"] = append(cases["LpNormalization"], lowerCase{"f64_l1", func(g *caseGen) *graph.Model {
		return g.one("LpNormalization", graph.Attrs{"p": int64(1), "axis": int64(0)}, g.param("x", tensor.F64, g.dim(2, 4), g.dim(2, 6)))
	}})
	cases["BatchNormalization"] = append(cases["BatchNormalization"], lowerCase{"f64", func(g *caseGen) *graph.Model {
		c := g.dim(2, 4)
		return g.one("BatchNormalization", nil, g.param("x", tensor.F64, 2, c, g.dim(2, 5)), g.param("s", tensor.F64, c),
			g.param("b", tensor.F64, c), g.param("m", tensor.F64, c), g.typed(tensor.F64, []int64{c}, g.randInts(c, 1, 3)...))
	}})
	cases["InstanceNormalization"] = append(cases["InstanceNormalization"], lowerCase{"f64", func(g *caseGen) *graph.Model {
		c := g.dim(2, 4)
		return g.one("InstanceNormalization", nil, g.param("x", tensor.F64, 2, c, g.dim(3, 6)), g.param("s", tensor.F64, c), g.param("b", tensor.F64, c))
	}})
	cases["Conv"] = append(cases["Conv"], lowerCase{"f64_in_f32", func(g *caseGen) *graph.Model {
		return g.one("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, g.param("x", tensor.F64, 1, 2, g.dim(3, 6), g.dim(3, 6)), g.param("w", tensor.F64, 3, 2, 3, 3))
	}})
	for _, op := range []string{"MaxPool", "AveragePool", "LpPool"} {
		cases[op] = append(cases[op], lowerCase{"f64", func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}},
				g.param("x", tensor.F64, 1, 2, g.dim(4, 7), g.dim(4, 7)))
		}})
	}
	cases["CenterCropPad"] = append(cases["CenterCropPad"], lowerCase{"i8", func(g *caseGen) *graph.Model {
		return g.one("CenterCropPad", nil, g.param("a", tensor.I8, 3, 5), g.ints(5, 2))
	}})
	cases["Col2Im"] = append(cases["Col2Im"], lowerCase{"i32", func(g *caseGen) *graph.Model {
		return g.one("Col2Im", nil, g.param("a", tensor.I32, 1, 4, 6), g.ints(3, 4), g.ints(2, 2))
	}})
	return cases
}

// TestFP64NeedsExtension: on a device without cl_khr_fp64 an f64 node is
// refused at compile time with driver.ErrUnsupported naming the extension,
// and the f32 form of the same model still compiles.
func TestFP64NeedsExtension(t *testing.T) {
	p := newGPU(t)
	for _, d := range p.devices {
		d.fp64 = false // as a device without the extension reports
	}
	build := func(typ tensor.ElementType) *graph.Model {
		a := graph.NewParameter("a", typ, graph.ShapeOf(2, 3))
		b := graph.NewParameter("b", typ, graph.ShapeOf(3))
		add := graph.NewNode("Add", "add", []graph.Output{a.Out(0), b.Out(0)}, nil, 1)
		return graph.NewModel("f64", []*graph.Node{a, b}, []*graph.Node{graph.NewResult("y", add.Out(0))})
	}
	_, err := p.CompileModel(context.Background(), build(tensor.F64), nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), fp64Extension)
	assert.Contains(t, err.Error(), `"add"`)
	cm, err := p.CompileModel(context.Background(), build(tensor.F32), nil)
	require.NoError(t, err)
	require.NoError(t, cm.Close())
}
