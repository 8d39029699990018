package cpufallback_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

func fusedRand(t *testing.T, seed uint32, shape ...int64) *tensor.Tensor {
	s := tensor.Shape(shape)
	v, err := tensor.FromF32(s, seeded.Float32s(seed, int(s.NumElements()), -2, 2))
	require.NoError(t, err)
	return v
}

// evalOp runs one op on the CPU reference kernels; inputs are constants.
func evalOp(t *testing.T, op string, attrs graph.Attrs, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	ins := make([]graph.Output, len(in))
	for i, x := range in {
		if x != nil {
			ins[i] = graph.NewConstant("c", x).Out(0)
		}
	}
	n := graph.NewNode(op, op, ins, attrs, 1)
	require.NoError(t, graph.InferNode(n))
	out, err := ref.Evaluate(n, in)
	require.NoError(t, err)
	return out[0]
}

// reference applies one post-op with the standalone kernels.
func reference(t *testing.T, p graph.PostOp, y, residual *tensor.Tensor) *tensor.Tensor {
	switch p.Kind {
	case graph.PostSum:
		return evalOp(t, "Add", nil, y, residual)
	case graph.PostRelu:
		return evalOp(t, "Relu", nil, y)
	case graph.PostClip:
		return evalOp(t, "Clip", nil, y, tensor.Scalar(p.Alpha), tensor.Scalar(p.Beta))
	case graph.PostHardSwish:
		return evalOp(t, "HardSwish", nil, y)
	case graph.PostHardSigmoid:
		return evalOp(t, "HardSigmoid", graph.Attrs{"alpha": p.Alpha, "beta": p.Beta}, y)
	case graph.PostSigmoid:
		return evalOp(t, "Sigmoid", nil, y)
	case graph.PostSwish:
		return evalOp(t, "Mul", nil, y, evalOp(t, "Sigmoid", nil, y))
	case graph.PostGelu:
		a := "none"
		if p.Alpha != 0 {
			a = "tanh"
		}
		return evalOp(t, "Gelu", graph.Attrs{"approximate": a}, y)
	case graph.PostLeakyRelu:
		return evalOp(t, "LeakyRelu", graph.Attrs{"alpha": p.Alpha}, y)
	case graph.PostTanh:
		return evalOp(t, "Tanh", nil, y)
	case graph.PostLinear:
		return evalOp(t, "Add", nil, evalOp(t, "Mul", nil, y, tensor.Scalar(p.Alpha)), tensor.Scalar(p.Beta))
	}
	t.Fatalf("no reference for %v", p)
	return nil
}

func assertNear(t *testing.T, want, got *tensor.Tensor, tol float64) {
	t.Helper()
	require.True(t, want.Shape().Equal(got.Shape()), "shape %v, want %v", got.Shape(), want.Shape())
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		if math.Abs(w[i]-g[i]) > tol*(1+math.Abs(w[i])) {
			t.Fatalf("element %d: %g, want %g", i, g[i], w[i])
		}
	}
}

func TestFusedKernels(t *testing.T) {
	x := fusedRand(t, 1, 1, 4, 5, 5)
	w := fusedRand(t, 2, 6, 4, 3, 3)
	b := fusedRand(t, 3, 6)
	convAttrs := graph.Attrs{"kernel_shape": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}}
	res := fusedRand(t, 4, 1, 6, 5, 5)
	resBcast := fusedRand(t, 5, 6, 1, 1)
	a := fusedRand(t, 6, 2, 3, 4)
	fw := fusedRand(t, 7, 4, 6)
	fb := fusedRand(t, 8, 6)
	fres := fusedRand(t, 9, 2, 3, 6)

	chains := []struct {
		name string
		ops  []graph.PostOp
	}{
		{"none", nil},
		{"relu", []graph.PostOp{{Kind: graph.PostRelu}}},
		{"sum relu6", []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostClip, Alpha: 0, Beta: 6}}},
		{"hardswish sum", []graph.PostOp{{Kind: graph.PostHardSwish}, {Kind: graph.PostSum}}},
		{"hardsigmoid", []graph.PostOp{{Kind: graph.PostHardSigmoid, Alpha: 0.2, Beta: 0.5}}},
		{"sigmoid", []graph.PostOp{{Kind: graph.PostSigmoid}}},
		{"swish", []graph.PostOp{{Kind: graph.PostSwish, Alpha: 1}}},
		{"gelu both", []graph.PostOp{{Kind: graph.PostGelu}, {Kind: graph.PostGelu, Alpha: 1}}},
		{"leaky tanh", []graph.PostOp{{Kind: graph.PostLeakyRelu, Alpha: 0.1}, {Kind: graph.PostTanh}}},
		{"hardswish linear", []graph.PostOp{{Kind: graph.PostHardSwish}, {Kind: graph.PostLinear, Alpha: 0.7, Beta: -0.2}}},
	}
	for _, c := range chains {
		hasSum := false
		for _, p := range c.ops {
			hasSum = hasSum || p.Kind == graph.PostSum
		}
		t.Run("FusedConv/"+c.name, func(t *testing.T) {
			for _, r := range []*tensor.Tensor{res, resBcast} {
				in := []*tensor.Tensor{x, w, b}
				if hasSum {
					in = append(in, r)
				}
				attrs := convAttrs.Clone()
				n := &graph.Node{Attrs: attrs}
				graph.SetPostOps(n, c.ops)
				got := evalOp(t, graph.OpFusedConv, attrs, in...)
				want := evalOp(t, "Conv", convAttrs, x, w, b)
				for _, p := range c.ops {
					want = reference(t, p, want, r)
				}
				assertNear(t, want, got, 1e-5)
			}
		})
		t.Run("FullyConnected/"+c.name, func(t *testing.T) {
			in := []*tensor.Tensor{a, fw, fb}
			if hasSum {
				in = append(in, fres)
			}
			attrs := graph.Attrs{}
			graph.SetPostOps(&graph.Node{Attrs: attrs}, c.ops)
			got := evalOp(t, graph.OpFullyConnected, attrs, in...)
			want := evalOp(t, "Add", nil, evalOp(t, "MatMul", nil, a, fw), fb)
			for _, p := range c.ops {
				want = reference(t, p, want, fres)
			}
			assertNear(t, want, got, 1e-5)
		})
	}

	t.Run("f16", func(t *testing.T) {
		h := func(v *tensor.Tensor) *tensor.Tensor {
			c, err := v.Convert(tensor.F16)
			require.NoError(t, err)
			return c
		}
		attrs := convAttrs.Clone()
		graph.SetPostOps(&graph.Node{Attrs: attrs}, []graph.PostOp{{Kind: graph.PostRelu}})
		got := evalOp(t, graph.OpFusedConv, attrs, h(x), h(w), h(b))
		assert.Equal(t, tensor.F16, got.Type())
		want := evalOp(t, "Relu", nil, evalOp(t, "Conv", convAttrs, h(x), h(w), h(b)))
		assertNear(t, want, got, 1e-2)
	})
}

func TestFusedKernelErrors(t *testing.T) {
	x := fusedRand(t, 1, 1, 2, 4, 4)
	w := fusedRand(t, 2, 3, 2, 1, 1)
	cases := []struct {
		name  string
		attrs graph.Attrs
		in    []*tensor.Tensor
		msg   string
	}{
		{"unknown post-op", graph.Attrs{graph.AttrPostOps: []string{"cube"}, graph.AttrPostAlpha: []float32{0}, graph.AttrPostBeta: []float32{0}},
			[]*tensor.Tensor{x, w}, `unknown kind "cube"`},
		{"ragged lists", graph.Attrs{graph.AttrPostOps: []string{"relu"}}, []*tensor.Tensor{x, w}, "differ in length"},
		{"sum without residual", graph.Attrs{graph.AttrPostOps: []string{"sum"}, graph.AttrPostAlpha: []float32{0}, graph.AttrPostBeta: []float32{0}},
			[]*tensor.Tensor{x, w}, "needs input 3"},
		{"residual too big", graph.Attrs{graph.AttrPostOps: []string{"sum"}, graph.AttrPostAlpha: []float32{0}, graph.AttrPostBeta: []float32{0}},
			[]*tensor.Tensor{x, w, nil, fusedRand(t, 3, 2, 3, 4, 4)}, "does not broadcast"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := graph.NewNode(graph.OpFusedConv, "fc1", nil, tc.attrs, 1)
			_, err := ref.Evaluate(n, tc.in)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.msg)
			assert.ErrorContains(t, err, `"fc1"`)
		})
	}
}
