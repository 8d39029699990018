package clbackend

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
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

// lowerCase is one model exercising a lowered op: its parameters get
// seeded random values (names starting with "pos" get positive ones) and
// every output is compared with the CPU reference.
type lowerCase struct {
	name  string
	build func(g *caseGen) *graph.Model
}

// caseGen draws seeded random shapes and constants for a lowerCase.
type caseGen struct {
	t      *testing.T
	r      *rand.Rand
	params []*graph.Node
}

// dim is a random size in [lo, hi].
func (g *caseGen) dim(lo, hi int64) int64 { return lo + g.r.Int64N(hi-lo+1) }

func (g *caseGen) param(name string, t tensor.ElementType, dims ...int64) graph.Output {
	p := graph.NewParameter(name, t, graph.ShapeOf(dims...))
	g.params = append(g.params, p)
	return p.Out(0)
}

// x is an f32 parameter (positive values when its name starts with "pos").
func (g *caseGen) x(name string, dims ...int64) graph.Output {
	return g.param(name, tensor.F32, dims...)
}

// c is a random f32 constant in [lo, hi).
func (g *caseGen) c(lo, hi float64, dims ...int64) graph.Output {
	s := tensor.Shape(dims)
	v := make([]float32, s.NumElements())
	for i := range v {
		v[i] = float32(lo + (hi-lo)*g.r.Float64())
	}
	t, _ := tensor.FromF32(s, v)
	return graph.NewConstant(fmt.Sprintf("c%d", g.r.Uint32()), t).Out(0)
}

// ints is an i64 constant vector.
func (g *caseGen) ints(v ...int64) graph.Output {
	t, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	return graph.NewConstant(fmt.Sprintf("i%d", g.r.Uint32()), t).Out(0)
}

// ints32 is an i32 scalar constant.
func (g *caseGen) ints32(v int32) graph.Output {
	t, _ := tensor.FromI32(tensor.Shape{}, []int32{v})
	return graph.NewConstant(fmt.Sprintf("i%d", g.r.Uint32()), t).Out(0)
}

// model wraps node's outputs as results y, y1, y2... over the case's
// parameters.
func (g *caseGen) model(n *graph.Node) *graph.Model {
	var res []*graph.Node
	for i := range n.Outputs {
		name := "y"
		if i > 0 {
			name = fmt.Sprintf("y%d", i)
		}
		res = append(res, graph.NewResult(name, n.Out(i)))
	}
	return graph.NewModel(n.OpType, g.params, res)
}

// one is a model of a single node of op with one output.
func (g *caseGen) one(op string, attrs graph.Attrs, ins ...graph.Output) *graph.Model {
	return g.model(graph.NewNode(op, "node", ins, attrs, 1))
}

// single builds a one-case list.
func single(build func(g *caseGen) *graph.Model) []lowerCase {
	return []lowerCase{{name: "random", build: build}}
}

// lowerCases returns the test cases of every op the GPU lowers, by op
// type. TestLoweringsMatchCPU fails for a lowered op without cases.
func lowerCases() map[string][]lowerCase {
	cases := map[string][]lowerCase{}
	// The examples of the op table's rows (graph.OpSpec.Examples).
	for _, op := range graph.OpTypes() {
		s, _ := graph.Lookup(op)
		for _, ex := range s.Examples {
			name := ex.Name
			if name == "" {
				name = "example"
			}
			cases[op] = append(cases[op], lowerCase{name, func(g *caseGen) *graph.Model {
				m, err := ex.Build(op)
				require.NoError(g.t, err)
				return m
			}})
		}
	}
	for op, cs := range controlCases() {
		cases[op] = append(cases[op], cs...)
	}
	// One step with a hidden size of a multiple of 4: lstm_step (the
	// examples' three steps run the GEMMs and lstm_cell).
	cases["LSTM"] = append(cases["LSTM"], lowerCase{"one_step", func(g *caseGen) *graph.Model {
		n, in, h := g.dim(1, 3), g.dim(2, 6), int64(8)
		return g.one("LSTM", graph.Attrs{"hidden_size": h}, g.x("x", 1, n, in), g.c(-0.5, 0.5, 1, 4*h, in), g.c(-0.5, 0.5, 1, 4*h, h), g.c(-0.5, 0.5, 1, 8*h))
	}})
	positive := map[string]bool{"Sqrt": true, "Log": true, "Reciprocal": true, "Acosh": true}
	unit := map[string]bool{"Asin": true, "Acos": true, "Atanh": true}
	cases["Gelu"] = append(cases["Gelu"], lowerCase{"tanh", func(g *caseGen) *graph.Model {
		return g.one("Gelu", graph.Attrs{"approximate": "tanh"}, g.x("x", g.dim(1, 3), g.dim(2, 9)))
	}})
	for op, l := range lowerings() {
		if !slices.Contains(kernels.UnaryOps(), l.kernel) { // eltwise_unary.cl
			continue
		}
		cases[op] = append(cases[op], single(func(g *caseGen) *graph.Model {
			dims := []int64{g.dim(1, 3), g.dim(1, 5), g.dim(2, 9)}
			switch {
			case op == "Not":
				return g.one(op, nil, g.param("b", tensor.Bool, dims...))
			case op == "BitwiseNot":
				return g.one(op, nil, g.param("i", tensor.I16, dims...))
			case op == "Clip":
				return g.one(op, nil, g.x("x", dims...), g.c(-1, -0.5), g.c(0.5, 1))
			case positive[op]:
				return g.one(op, nil, g.x("pos", dims...))
			case unit[op]:
				// Inside (-1, 1): tanh of a normal parameter.
				return g.model(graph.NewNode(op, "node", []graph.Output{graph.NewNode("Tanh", "t", []graph.Output{g.x("x", dims...)}, nil, 1).Out(0)}, nil, 1))
			}
			return g.one(op, nil, g.x("x", dims...))
		})...)
	}
	for op, l := range lowerings() {
		if !slices.Contains(kernels.BinaryOps(), l.kernel) && op != "Pow" || slices.Contains([]string{"Max", "Min", "Sum", "Mean"}, op) {
			continue // eltwise_binary.cl (Pow: eltwise_pow.cl too); the variadic ops follow
		}
		cases[op] = single(func(g *caseGen) *graph.Model {
			d0, d1, d2 := g.dim(1, 3), g.dim(2, 4), g.dim(2, 7)
			switch op {
			case "And", "Or", "Xor":
				return g.one(op, nil, g.param("a", tensor.Bool, d0, d1, d2), g.param("b", tensor.Bool, d1, 1))
			case "BitwiseAnd", "BitwiseOr", "BitwiseXor":
				return g.one(op, nil, g.param("a", tensor.I64, d0, d1, d2), g.param("b", tensor.I64, d1, 1))
			case "Div", "Pow", "Mod":
				return g.one(op, graph.Attrs{"fmod": int64(1)}, g.x("posa", d0, d1, d2), g.x("posb", d2))
			case "PRelu":
				return g.one(op, nil, g.x("a", d0, d1, d2), g.c(0, 0.5, d2))
			}
			return g.one(op, nil, g.x("a", d0, d1, d2), g.x("b", d1, 1))
		})
	}
	for _, op := range []string{"Max", "Min", "Sum", "Mean"} {
		cases[op] = single(func(g *caseGen) *graph.Model {
			d0, d1 := g.dim(2, 4), g.dim(2, 6)
			return g.one(op, nil, g.x("a", d0, d1), g.x("b", d1), g.x("c", d0, 1))
		})
	}
	cases["Reshape"] = single(func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(2, 6)
		return g.one("Reshape", nil, g.x("x", d0, d1, 2), g.ints(-1, 2*d1))
	})
	cases["Flatten"] = single(func(g *caseGen) *graph.Model {
		return g.one("Flatten", graph.Attrs{"axis": int64(2)}, g.x("x", g.dim(1, 3), g.dim(1, 3), g.dim(2, 5)))
	})
	cases["Squeeze"] = single(func(g *caseGen) *graph.Model {
		return g.one("Squeeze", nil, g.x("x", g.dim(2, 4), 1, g.dim(2, 5)), g.ints(1))
	})
	cases["Unsqueeze"] = single(func(g *caseGen) *graph.Model {
		return g.one("Unsqueeze", nil, g.x("x", g.dim(2, 4), g.dim(2, 5)), g.ints(0, 3))
	})
	for _, op := range []string{"Identity", "Dropout"} {
		cases[op] = append(cases[op], single(func(g *caseGen) *graph.Model { // after the row's examples
			return g.one(op, nil, g.x("x", g.dim(2, 4), g.dim(2, 5)))
		})...)
	}
	cases["Where"] = single(func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(2, 6)
		return g.one("Where", nil, g.param("cond", tensor.Bool, d0, d1), g.x("a", d1), g.x("b", d0, 1))
	})
	cases["Cast"] = []lowerCase{
		{"f32_to_i32", func(g *caseGen) *graph.Model {
			return g.one("Cast", graph.Attrs{"to": int64(tensor.I32)}, g.x("x", g.dim(2, 4), g.dim(2, 6)))
		}},
		{"i64_to_f32", func(g *caseGen) *graph.Model {
			return g.one("Cast", graph.Attrs{"to": int64(tensor.F32)}, g.param("i", tensor.I64, g.dim(2, 4), g.dim(2, 6)))
		}},
	}
	cases["Transpose"] = single(func(g *caseGen) *graph.Model {
		return g.one("Transpose", graph.Attrs{"perm": []int64{2, 0, 1}}, g.x("x", g.dim(2, 4), g.dim(2, 5), g.dim(2, 6)))
	})
	cases["Slice"] = single(func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(4, 7), g.dim(5, 9)
		return g.one("Slice", nil, g.x("x", d0, d1), g.ints(1, -1), g.ints(d0, 0), g.ints(0, 1), g.ints(2, -2))
	})
	cases["Concat"] = single(func(g *caseGen) *graph.Model {
		d0 := g.dim(2, 4)
		return g.one("Concat", graph.Attrs{"axis": int64(1)}, g.x("a", d0, g.dim(1, 3)), g.x("b", d0, g.dim(1, 4)), g.x("c", d0, 2))
	})
	cases["Split"] = single(func(g *caseGen) *graph.Model {
		a, b := g.dim(1, 3), g.dim(2, 4)
		n := graph.NewNode("Split", "node", []graph.Output{g.x("x", 2, a+b), g.ints(a, b)}, graph.Attrs{"axis": int64(1)}, 2)
		return g.model(n)
	})
	cases["Expand"] = single(func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(2, 5)
		return g.one("Expand", nil, g.x("x", d1, 1), g.ints(d0, d1, 3))
	})
	cases["Tile"] = single(func(g *caseGen) *graph.Model {
		return g.one("Tile", nil, g.x("x", g.dim(1, 3), g.dim(2, 4)), g.ints(g.dim(1, 3), 2))
	})
	cases["Gather"] = single(func(g *caseGen) *graph.Model {
		d1 := g.dim(3, 6)
		return g.one("Gather", graph.Attrs{"axis": int64(1)}, g.x("x", g.dim(2, 3), d1, 2), g.ints(0, -1, d1-2, 1))
	})
	cases["Pad"] = single(func(g *caseGen) *graph.Model {
		return g.one("Pad", graph.Attrs{"mode": "constant"}, g.x("x", g.dim(2, 4), g.dim(2, 5)), g.ints(1, 0, 2, 3), g.c(0.5, 1))
	})
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
		"ReduceL1", "ReduceL2", "ReduceLogSumExp"} {
		cases[op] = single(func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"keepdims": int64(0)}, g.x("x", g.dim(2, 3), g.dim(2, 5), g.dim(2, 6)), g.ints(0, 2))
		})
	}
	for _, op := range []string{"ArgMax", "ArgMin"} {
		cases[op] = []lowerCase{}
		for _, last := range []int64{0, 1} {
			cases[op] = append(cases[op], lowerCase{fmt.Sprintf("select_last_%d", last), func(g *caseGen) *graph.Model {
				// Integers in [-5, 5] have ties, so first and last differ.
				return g.one(op, graph.Attrs{"axis": int64(1), "keepdims": last, "select_last_index": last},
					g.param("i", tensor.I32, g.dim(2, 3), g.dim(3, 9), g.dim(1, 4)))
			}})
		}
		cases[op] = append(cases[op], lowerCase{"f32_last_axis", func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"axis": int64(-1)}, g.x("x", g.dim(2, 3), g.dim(3, 9)))
		}})
	}
	cases["CumSum"] = []lowerCase{}
	for _, ex := range []int64{0, 1} {
		for _, rev := range []int64{0, 1} {
			cases["CumSum"] = append(cases["CumSum"], lowerCase{fmt.Sprintf("exclusive_%d_reverse_%d", ex, rev), func(g *caseGen) *graph.Model {
				return g.one("CumSum", graph.Attrs{"exclusive": ex, "reverse": rev}, g.x("x", g.dim(2, 3), g.dim(2, 6), g.dim(1, 4)), g.ints(-2))
			}})
		}
	}
	cases["CumSum"] = append(cases["CumSum"], lowerCase{"i64_runtime_axis", func(g *caseGen) *graph.Model {
		// The axis is a runtime i32 scalar in [-5, 5]: out-of-range draws
		// are invalid models, so keep it to the rank with Mod by 3.
		ax := graph.NewNode("Mod", "ax", []graph.Output{g.param("axis", tensor.I32), g.ints32(3)}, nil, 1).Out(0)
		return g.one("CumSum", nil, g.param("i", tensor.I64, g.dim(2, 3), g.dim(2, 6), g.dim(1, 4)), ax)
	}})
	cases["GatherElements"] = single(func(g *caseGen) *graph.Model {
		d0, d1 := g.dim(2, 4), g.dim(3, 6)
		idx := make([]int64, d0*2)
		for i := range idx {
			idx[i] = g.r.Int64N(2*d1) - d1
		}
		it, _ := tensor.FromI64(tensor.Shape{d0, 2}, idx)
		return g.one("GatherElements", graph.Attrs{"axis": int64(1)}, g.x("x", d0, d1), graph.NewConstant("idx", it).Out(0))
	})
	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool"} {
		cases[op] = single(func(g *caseGen) *graph.Model {
			return g.one(op, nil, g.x("x", g.dim(1, 2), g.dim(2, 5), g.dim(2, 6), g.dim(2, 6)))
		})
	}
	cases["IsInf"] = append(cases["IsInf"], lowerCase{"positive_only", func(g *caseGen) *graph.Model {
		// 1/x of a value with zeros gives infinities of both signs.
		x := g.param("i", tensor.I32, g.dim(2, 4), g.dim(2, 6))
		f := graph.NewNode("Cast", "f", []graph.Output{x}, graph.Attrs{"to": int64(tensor.F32)}, 1).Out(0)
		inv := graph.NewNode("Reciprocal", "inv", []graph.Output{f}, nil, 1).Out(0)
		return g.model(graph.NewNode("IsInf", "node", []graph.Output{inv}, graph.Attrs{"detect_negative": int64(0)}, 1))
	}})
	cases["IsNaN"] = append(cases["IsNaN"], lowerCase{"sqrt_of_negatives", func(g *caseGen) *graph.Model {
		s := graph.NewNode("Sqrt", "s", []graph.Output{g.x("x", g.dim(2, 4), g.dim(2, 6))}, nil, 1).Out(0)
		return g.model(graph.NewNode("IsNaN", "node", []graph.Output{s}, nil, 1))
	}})
	cases["Clip"] = append(cases["Clip"], lowerCase{"runtime_bounds", func(g *caseGen) *graph.Model {
		// Bounds computed at run time (Max and Min with f16 activations).
		lo := graph.NewNode("Neg", "lo", []graph.Output{g.x("pos_lo")}, nil, 1).Out(0)
		return g.one("Clip", nil, g.x("x", g.dim(2, 4), g.dim(2, 6)), lo, g.x("pos_hi"))
	}})
	cases["Shrink"] = append(cases["Shrink"], lowerCase{"lambd_bias", func(g *caseGen) *graph.Model {
		return g.one("Shrink", graph.Attrs{"lambd": float32(0.7), "bias": float32(0.3)}, g.x("x", g.dim(2, 4), g.dim(2, 6)))
	}})
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		cases[op] = single(func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"axis": int64(1)}, g.x("x", g.dim(2, 3), g.dim(3, 9), g.dim(2, 4)))
		})
		// Rows of at least softmaxRowsMin along the last axis (softmax_rows):
		// whole vectors and a partial last chunk.
		cases[op] = append(cases[op], lowerCase{"last_axis_rows", func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"axis": int64(-1)}, g.x("x", g.dim(1, 3), g.dim(2, 5), g.dim(softmaxRowsMin, 70)))
		}})
	}
	cases["MatMul"] = single(func(g *caseGen) *graph.Model {
		k := g.dim(3, 17)
		return g.one("MatMul", nil, g.x("a", g.dim(1, 3), g.dim(2, 6), k), g.x("b", k, g.dim(2, 9)))
	})
	cases["Gemm"] = single(func(g *caseGen) *graph.Model {
		k, n := g.dim(3, 17), g.dim(2, 9)
		return g.one("Gemm", graph.Attrs{"transB": int64(1), "alpha": float32(0.7), "beta": float32(1.3)},
			g.x("a", g.dim(2, 6), k), g.x("b", n, k), g.c(-1, 1, n))
	})
	conv := func(op string, g *caseGen, post []graph.PostOp) *graph.Model {
		n, ic, h, w := g.dim(1, 2), g.dim(1, 4), g.dim(4, 9), g.dim(4, 9)
		group := int64(1)
		if ic%2 == 0 && g.r.IntN(2) == 0 {
			group = 2
		}
		oc := group * g.dim(1, 9)
		k := g.dim(1, 3)
		ws := []int64{oc, ic / group, k, k}
		if op == "ConvTranspose" {
			ws = []int64{ic, oc / group, k, k}
		}
		attrs := graph.Attrs{"group": group, "strides": []int64{g.dim(1, 2), g.dim(1, 2)},
			"pads": []int64{g.dim(0, k-1), g.dim(0, k-1), g.dim(0, k-1), g.dim(0, k-1)}}
		ins := []graph.Output{g.x("x", n, ic, h, w), g.c(-0.5, 0.5, ws...), g.c(-1, 1, oc)}
		node := graph.NewNode(op, "node", ins, attrs, 1)
		for _, p := range post {
			if p.Kind == graph.PostSum {
				// The residual broadcasts over rows of the output: infer
				// its shape first.
				tmp := graph.NewModel("tmp", g.params, []*graph.Node{graph.NewResult("y", node.Out(0))})
				require.NoError(g.t, tmp.InferShapes())
				os, _ := node.Outputs[0].Shape.ToShape()
				node.Inputs = append(node.Inputs, g.x("res", os[0], os[1], 1, os[3]))
			}
		}
		if post != nil {
			graph.SetPostOps(node, post)
		}
		return g.model(node)
	}
	cases["Conv"] = single(func(g *caseGen) *graph.Model { return conv("Conv", g, nil) })
	// Forms that reach each conv kernel (lower_conv_blocked.go's fastConv):
	// dilated (fused_conv2d_blocked, a dilation apart), grouped but not
	// depthwise and dilated depthwise (conv2d), depthwise (fused_dwconv2d);
	// the random case above reaches fused_gemm and fused_conv2d_blocked.
	cases["Conv"] = append(cases["Conv"], lowerCase{"dilated", func(g *caseGen) *graph.Model {
		return g.one("Conv", graph.Attrs{"dilations": []int64{2, 1}, "pads": []int64{2, 1, 2, 1}},
			g.x("x", 1, 3, g.dim(5, 9), g.dim(5, 9)), g.c(-0.5, 0.5, 4, 3, 3, 3), g.c(-1, 1, 4))
	}}, lowerCase{"grouped_dilated", func(g *caseGen) *graph.Model {
		return g.one("Conv", graph.Attrs{"group": int64(2), "dilations": []int64{1, 2}, "pads": []int64{1, 2, 1, 2}},
			g.x("x", 1, 4, g.dim(5, 9), g.dim(5, 9)), g.c(-0.5, 0.5, 6, 2, 3, 3), g.c(-1, 1, 6))
	}}, lowerCase{"depthwise_dilated", func(g *caseGen) *graph.Model {
		c := g.dim(2, 5)
		return g.one("Conv", graph.Attrs{"group": c, "dilations": []int64{2, 2}, "pads": []int64{2, 2, 2, 2}},
			g.x("x", 1, c, g.dim(5, 12), g.dim(5, 12)), g.c(-0.5, 0.5, c, 1, 3, 3), g.c(-1, 1, c))
	}}, lowerCase{"depthwise", func(g *caseGen) *graph.Model {
		c := g.dim(2, 5)
		return g.one("Conv", graph.Attrs{"group": c, "strides": []int64{2, 2}, "pads": []int64{2, 1, 2, 2}},
			g.x("x", 2, c, g.dim(5, 40), g.dim(5, 40)), g.c(-0.5, 0.5, c, 1, 5, 5), g.c(-1, 1, c))
	}})
	cases["ConvTranspose"] = single(func(g *caseGen) *graph.Model { return conv("ConvTranspose", g, nil) })
	// Kernel = stride: lower_conv_blocked.go's fused_deconv2d.
	cases["ConvTranspose"] = append(cases["ConvTranspose"], lowerCase{"kernel_is_stride", func(g *caseGen) *graph.Model {
		ic, oc := g.dim(1, 4), g.dim(1, 9)
		return g.one("ConvTranspose", graph.Attrs{"strides": []int64{2, 2}},
			g.x("x", g.dim(1, 2), ic, g.dim(2, 7), g.dim(2, 13)), g.c(-0.5, 0.5, ic, oc, 2, 2), g.c(-1, 1, oc))
	}})
	for _, op := range []string{"MaxPool", "AveragePool"} {
		cases[op] = single(func(g *caseGen) *graph.Model {
			return g.one(op, graph.Attrs{"kernel_shape": []int64{3, 2}, "strides": []int64{2, 1}, "pads": []int64{1, 0, 1, 1}},
				g.x("x", g.dim(1, 2), g.dim(1, 4), g.dim(4, 9), g.dim(4, 9)))
		})
	}
	// avg_pool2d divides by the taps inside the padded input (a ceil_mode
	// window's taps past the end pads not counted); 1-D pools run pool.cl.
	cases["AveragePool"] = append(cases["AveragePool"], lowerCase{"count_include_pad_ceil", func(g *caseGen) *graph.Model {
		return g.one("AveragePool", graph.Attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1},
			"count_include_pad": int64(1), "ceil_mode": int64(1)}, g.x("x", g.dim(1, 2), g.dim(1, 4), g.dim(4, 10), g.dim(4, 10)))
	}}, lowerCase{"ceil_end_pad", func(g *caseGen) *graph.Model {
		// Strides past the window: a last window that would start past
		// the input is dropped, the one before ends in the end pad.
		return g.one("AveragePool", graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{4, 3}, "pads": []int64{0, 0, 1, 1},
			"ceil_mode": int64(1)}, g.x("x", g.dim(1, 2), g.dim(1, 3), g.dim(5, 11), g.dim(5, 11)))
	}}, lowerCase{"1d", func(g *caseGen) *graph.Model {
		return g.one("AveragePool", graph.Attrs{"kernel_shape": []int64{3}, "strides": []int64{2}, "pads": []int64{1, 1}},
			g.x("x", g.dim(1, 2), g.dim(1, 4), g.dim(4, 12)))
	}})
	cases["BatchNormalization"] = single(func(g *caseGen) *graph.Model {
		c := g.dim(1, 6)
		return g.one("BatchNormalization", nil, g.x("x", g.dim(1, 2), c, g.dim(2, 5), g.dim(2, 5)),
			g.c(0.5, 1.5, c), g.c(-1, 1, c), g.c(-1, 1, c), g.c(0.5, 2, c))
	})
	cases["InstanceNormalization"] = single(func(g *caseGen) *graph.Model {
		c := g.dim(1, 6)
		return g.one("InstanceNormalization", nil, g.x("x", g.dim(1, 2), c, g.dim(2, 5), g.dim(2, 5)), g.c(0.5, 1.5, c), g.c(-1, 1, c))
	})
	cases["LayerNormalization"] = single(func(g *caseGen) *graph.Model {
		d := g.dim(3, 12)
		return g.one("LayerNormalization", graph.Attrs{"axis": int64(-1)}, g.x("x", g.dim(1, 3), g.dim(2, 5), d), g.c(0.5, 1.5, d), g.c(-1, 1, d))
	})
	cases["Resize"] = []lowerCase{}
	for _, mode := range []string{"nearest", "linear"} {
		cases["Resize"] = append(cases["Resize"], lowerCase{mode, func(g *caseGen) *graph.Model {
			t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 2, 1.5})
			return g.one("Resize", graph.Attrs{"mode": mode}, g.x("x", 1, g.dim(1, 3), g.dim(2, 6), g.dim(2, 6)), graph.Output{},
				graph.NewConstant("scales", t).Out(0))
		}})
	}
	cases["Resize"] = append(cases["Resize"], lowerCase{"nearest_integer_factors", func(g *caseGen) *graph.Model {
		t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 2, 3})
		return g.one("Resize", graph.Attrs{"mode": "nearest"}, g.x("x", g.dim(1, 2), g.dim(1, 3), g.dim(2, 6), g.dim(2, 6)), graph.Output{},
			graph.NewConstant("scales", t).Out(0))
	}})
	cases["Resize"] = append(cases["Resize"], lowerCase{"nearest_factors_4_8", func(g *caseGen) *graph.Model {
		t, _ := tensor.FromF32(tensor.Shape{4}, []float32{1, 1, 4, 8})
		return g.one("Resize", graph.Attrs{"mode": "nearest"}, g.x("x", 1, g.dim(1, 3), g.dim(2, 5), g.dim(2, 5)), graph.Output{},
			graph.NewConstant("scales", t).Out(0))
	}})
	// Every post-op kind, alone on FusedConv and after a residual sum on
	// FullyConnected.
	for _, p := range []graph.PostOp{
		{Kind: graph.PostRelu}, {Kind: graph.PostClip, Alpha: -0.5, Beta: 0.7}, {Kind: graph.PostHardSwish},
		{Kind: graph.PostHardSigmoid, Alpha: 0.2, Beta: 0.5}, {Kind: graph.PostSigmoid}, {Kind: graph.PostSwish, Alpha: 1.3},
		{Kind: graph.PostGelu}, {Kind: graph.PostGelu, Alpha: 1}, {Kind: graph.PostLeakyRelu, Alpha: 0.1},
		{Kind: graph.PostTanh}, {Kind: graph.PostLinear, Alpha: 1.5, Beta: -0.3},
	} {
		cases[graph.OpFusedConv] = append(cases[graph.OpFusedConv], lowerCase{p.String(), func(g *caseGen) *graph.Model {
			return conv(graph.OpFusedConv, g, []graph.PostOp{p})
		}})
		cases[graph.OpFullyConnected] = append(cases[graph.OpFullyConnected], lowerCase{"sum_" + p.String(), func(g *caseGen) *graph.Model {
			k, n := g.dim(3, 20), g.dim(2, 9)
			node := graph.NewNode(graph.OpFullyConnected, "node",
				[]graph.Output{g.x("a", g.dim(1, 3), g.dim(1, 5), k), g.c(-0.5, 0.5, k, n), g.c(-1, 1, n), g.x("res", n)}, nil, 1)
			graph.SetPostOps(node, []graph.PostOp{{Kind: graph.PostSum}, p})
			return g.model(node)
		}})
	}
	cases[graph.OpFusedConv] = append(cases[graph.OpFusedConv], lowerCase{"sum_relu_hardswish", func(g *caseGen) *graph.Model {
		return conv(graph.OpFusedConv, g, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostRelu}, {Kind: graph.PostHardSwish}})
	}})
	// A 1x1 convolution of one pixel per image (a squeeze-excitation
	// gate): the images are the GEMM's rows (fastConv).
	cases[graph.OpFusedConv] = append(cases[graph.OpFusedConv], lowerCase{"one_pixel_sum_hardsigmoid", func(g *caseGen) *graph.Model {
		n, c, oc := g.dim(1, 3), g.dim(3, 40), g.dim(2, 50)
		node := graph.NewNode(graph.OpFusedConv, "node", []graph.Output{g.x("x", n, c, 1, 1), g.c(-0.5, 0.5, oc, c, 1, 1),
			g.c(-1, 1, oc), g.x("res", n, oc, 1, 1)}, nil, 1)
		graph.SetPostOps(node, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostHardSigmoid, Alpha: 0.2, Beta: 0.5}})
		return g.model(node)
	}})
	cases["Conv"] = append(cases["Conv"], lowerCase{"one_pixel_no_bias", func(g *caseGen) *graph.Model {
		c, oc := g.dim(3, 40), g.dim(2, 50)
		return g.one("Conv", nil, g.x("x", g.dim(1, 3), c, 1, 1), g.c(-0.5, 0.5, oc, c, 1, 1))
	}})
	cases[graph.OpFullyConnected] = append(cases[graph.OpFullyConnected], lowerCase{"no_bias_vector_input", func(g *caseGen) *graph.Model {
		k := g.dim(3, 20)
		return g.one(graph.OpFullyConnected, nil, g.x("a", k), g.c(-0.5, 0.5, k, g.dim(2, 9)))
	}})
	// Every declared kernel fusion, generated from its declaration
	// (kernelfusion_test.go): nothing to add here for a new one; and
	// chains whose kernel is generated (kernels/gen).
	cases[graph.OpKernelFusion] = append(append(kernelFusionCases(), generatedChainCases()...), append(append(denseChainCases(), seBlockCases()...), deconvFusionCases()...)...)
	// The lowerings added for ONNX backend-suite parity with the CPU
	// device (lower_parity_test.go).
	for op, cs := range parityCases() {
		cases[op] = append(cases[op], cs...)
	}
	// The fused integer ops with constant weights (quant_fused_test.go).
	for fam, cs := range quantFusedCases() {
		op := graph.OpQuantizedConv
		if fam == "qgemm" {
			op = graph.OpQuantizedFullyConnected
		}
		cases[op] = append(cases[op], cs...)
	}
	cases[graph.OpQuantizedConv] = append(cases[graph.OpQuantizedConv], quantGenericCases()...)
	return cases
}

// randomFill returns a seeded random tensor for parameter p: normal f32
// (positive in [0.5, 2) for names starting with "pos"), random bools,
// integers in [-5, 5].
func randomFill(t *testing.T, r *rand.Rand, p *graph.Node) *tensor.Tensor {
	s, ok := p.Outputs[0].Shape.ToShape()
	require.True(t, ok)
	v := make([]float64, s.NumElements())
	for i := range v {
		switch typ := p.Outputs[0].Type; {
		case typ == tensor.Bool:
			v[i] = float64(r.IntN(2))
		case typ != tensor.F32:
			v[i] = float64(r.IntN(11) - 5)
		case len(p.Name) >= 3 && p.Name[:3] == "pos":
			v[i] = 0.5 + 1.5*r.Float64()
		default:
			v[i] = r.NormFloat64()
		}
	}
	x, err := tensor.FromFloat64s(p.Outputs[0].Type, s, v)
	require.NoError(t, err)
	return x
}

// inferAll compiles m on p without transformations (so that the op under
// test is the one lowered), binds ins and returns every output.
func inferAll(t *testing.T, p driver.Plugin, m *graph.Model, ins map[string]*tensor.Tensor) ([]*tensor.Tensor, driver.CompiledModel) {
	t.Helper()
	return inferAllWith(t, p, m, ins, nil)
}

// inferAllWith is inferAll with more compile properties.
func inferAllWith(t *testing.T, p driver.Plugin, m *graph.Model, ins map[string]*tensor.Tensor, props map[string]string) ([]*tensor.Tensor, driver.CompiledModel) {
	t.Helper()
	all := map[string]string{driver.KeyDisableTransformations: "YES"}
	maps.Copy(all, props)
	cm, err := p.CompileModel(context.Background(), m, all)
	require.NoError(t, err, p.Name())
	t.Cleanup(func() { _ = cm.Close() })
	out, err := runCompiled(context.Background(), cm, ins)
	require.NoError(t, err, p.Name())
	return out, cm
}

// notLowered lists the catalogue kernels no GPU lowering launches, with the
// test that covers them instead.
var notLowered = map[string]string{
	"copy_bytes": "no lowering copies bytes; kernels.TestCatalogueKernels and the oclgrind run check its launch",
	"copy_words": "no lowering copies words; kernels.TestCatalogueKernels and the oclgrind run check its launch",
	"identity":   "Identity is a zero-copy alias; kernels.TestCatalogueKernels and the oclgrind run check its launch",
	"sgemm":      "not lowered yet (MatMul/Gemm use matmul); kernels/sgemm_test.go compares it with a host GEMM",
}

// TestLoweringsMatchCPU runs every op of the GPU lowering table on seeded
// random shapes and values and compares it with the CPU reference. A new
// lowering without a case in lowerCases fails here, and so does a
// catalogue kernel no case launches (unless notLowered says why), so every
// kernel the GPU launches is tested the moment it is added.
func TestLoweringsMatchCPU(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	all := lowerCases()
	used := map[string]bool{} // catalogue entries the cases launched
	lim := deviceLimits(gpu.devices[gpu.def])
	ran, total := 0, 0 // cases run (a -run pattern may select some), and all
	var ops []string
	for op, l := range lowerings() {
		if l.lower != nil { // host-only ops fold at plan time
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	for _, op := range ops {
		cs, ok := all[op]
		if !assert.True(t, ok && len(cs) > 0, "op %s is in the GPU lowering table but has no case: add Examples to its row in graph/ops_<family>.go, or cases to lowerCases (clbackend/lower_test.go)", op) {
			continue
		}
		for ci, c := range cs {
			total++
			t.Run(op+"/"+c.name, func(t *testing.T) {
				ran++
				m, ins := c.instance(t, op, ci)
				got, cm := inferAll(t, gpu, m, ins)
				want, _ := inferAll(t, cpu, m, ins)
				assertOutputsClose(t, want, got, 1e-4, 1e-3)
				// The op ran as a lowering, not folded on the host.
				rm, err := cm.RuntimeModel()
				require.NoError(t, err)
				nodes, err := rm.Nodes()
				require.NoError(t, err)
				found := false
				ran := map[string]bool{} // kernel variants the nodes ran
				for _, n := range nodes {
					markUsed(used, n)
					if v := n.RT.Extra[KeyKernelVariant]; v != "" {
						ran[v] = true
					}
					if n.OpType == op {
						found = true
						assert.False(t, slices.Contains([]string{"folded", "constant"}, n.RT.Extra["IMPL_TYPE"]), "%s was %s", op, n.RT.Extra["IMPL_TYPE"])
					}
				}
				assert.True(t, found, "the model has no %s node", op)
				// The other algorithms of the families the case reaches
				// (their first point on this device), so every kernel a
				// family can launch for this op is compared with the CPU;
				// pinned, on the worker threads as TestVariantsMatchCPU.
				for _, v := range otherAlgorithms(ran, lim) {
					t.Run(v.Family+"_"+v.Algorithm, func(t *testing.T) {
						got, cm := inferAllWith(t, gpu, m, ins, pinned(v.String()))
						assertOutputsClose(t, want, got, 1e-4, 1e-3)
						rm, err := cm.RuntimeModel()
						require.NoError(t, err)
						nodes, err := rm.Nodes()
						require.NoError(t, err)
						for _, n := range nodes {
							markUsed(used, n)
						}
					})
				}
			})
		}
	}
	// Every catalogue kernel is launched by some case, so a new kernel is
	// compared with the CPU the moment a lowering uses it.
	if !t.Failed() && ran == total {
		for _, name := range kernels.Names() {
			if why, ok := notLowered[name]; ok {
				assert.False(t, used[name], "catalogue kernel %s is listed in notLowered (%s) but a lowering launches it", name, why)
				continue
			}
			assert.True(t, used[name], "catalogue kernel %s is launched by no case in lowerCases (clbackend/lower_test.go): add a case that reaches it, or list it in notLowered with the reason", name)
		}
	}
	// Cases for ops the table does not have are stale.
	for op := range all {
		l, ok := lowerings()[op]
		assert.True(t, ok && l.lower != nil, "lowerCases has a case for %s, which the GPU does not lower", op)
	}
}

// markUsed records the catalogue entries runtime-model node n ran.
func markUsed(used map[string]bool, n *graph.Node) {
	for _, impl := range strings.Split(n.RT.Extra["IMPL_TYPE"], ",") {
		if name, _, ok := strings.Cut(impl, ":"); ok {
			used[name] = true
		}
	}
}

// otherAlgorithms returns, for each family of the variants in ran, the
// first point that fits lim of every algorithm none of them used.
func otherAlgorithms(ran map[string]bool, lim kernels.Limits) []kernels.Variant {
	var out []kernels.Variant
	seen := map[string]bool{}
	for s := range ran {
		v, err := kernels.ParseVariant(s)
		if err != nil {
			continue
		}
		seen[v.Family+"/"+v.Algorithm] = true
	}
	fams := map[string]bool{}
	for s := range ran {
		if v, err := kernels.ParseVariant(s); err == nil {
			fams[v.Family] = true
		}
	}
	for _, f := range kernels.Families() {
		if !fams[f.Name] {
			continue
		}
		for _, a := range f.Algorithms {
			if vs := f.AlgorithmVariants(a.Name, lim); !seen[f.Name+"/"+a.Name] && len(vs) > 0 {
				out = append(out, vs[0])
			}
		}
	}
	return out
}

// instance builds case ci of op's cases with its seeded inputs (the seed
// depends on op and ci only, so every test sees the same instance).
func (c lowerCase) instance(t *testing.T, op string, ci int) (*graph.Model, map[string]*tensor.Tensor) {
	t.Helper()
	seed := uint64(len(op))*1000 + uint64(ci)
	g := &caseGen{t: t, r: rand.New(rand.NewPCG(seed, 7))}
	m := c.build(g)
	ins := map[string]*tensor.Tensor{}
	for _, p := range m.Parameters {
		ins[p.Name] = randomFill(t, g.r, p)
	}
	return m, ins
}

// assertOutputsClose checks that got has want's outputs: the same shapes
// and types, and elements within atol + rtol*|want|.
func assertOutputsClose(t *testing.T, want, got []*tensor.Tensor, atol, rtol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Shape(), got[i].Shape(), "output %d", i)
		require.Equal(t, want[i].Type(), got[i].Type(), "output %d", i)
		w, gv := want[i].Float64s(), got[i].Float64s()
		for j := range w {
			assert.InDelta(t, w[j], gv[j], atol+rtol*abs64(w[j]), "output %d element %d", i, j)
		}
	}
}

func abs64(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
