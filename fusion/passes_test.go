package fusion_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// convAttrs are 3x3, pad 1 convolution attributes.
func convAttrs(group int64) graph.Attrs {
	return graph.Attrs{"kernel_shape": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}, "strides": []int64{1, 1}, "group": group}
}

// conv is a 3x3 convolution from c to m channels with a random bias.
func (b *builder) conv(x graph.Output, c, m int64) graph.Output {
	return b.op("Conv", convAttrs(1), x, b.rand(-0.5, 0.5, m, c, 3, 3), b.rand(-0.1, 0.1, m))
}

// bn is an inference BatchNormalization over c channels.
func (b *builder) bn(x graph.Output, c int64) graph.Output {
	return b.op("BatchNormalization", graph.Attrs{"epsilon": float32(1e-5)}, x,
		b.rand(0.5, 1.5, c), b.rand(-0.2, 0.2, c), b.rand(-0.3, 0.3, c), b.rand(0.5, 2, c))
}

// hardSwishChain is x*clip(x+3,0,6)/6 as Paddle writes it.
func (b *builder) hardSwishChain(x graph.Output) graph.Output {
	clip := b.op("Clip", nil, b.op("Add", nil, x, b.scalar(3)), b.scalar(0), b.scalar(6))
	return b.op("Div", nil, b.op("Mul", nil, x, clip), b.scalar(6))
}

// layerNormChain is layer normalisation over the last axis, written out.
func (b *builder) layerNormChain(x graph.Output, d int64) graph.Output {
	mean := b.op("ReduceMean", nil, x, b.ints(-1))
	sub := b.op("Sub", nil, x, mean)
	v := b.op("ReduceMean", nil, b.op("Pow", nil, sub, b.scalar(2)), b.ints(-1))
	den := b.op("Sqrt", nil, b.op("Add", nil, v, b.scalar(1e-5)))
	norm := b.op("Div", nil, sub, den)
	return b.op("Add", nil, b.op("Mul", nil, norm, b.rand(0.5, 1.5, d)), b.rand(-0.5, 0.5, d))
}

func TestPasses(t *testing.T) {
	cases := []struct {
		name   string
		passes []fusion.Pass
		build  func(b *builder) *graph.Model
		// after maps op types to their expected count after the passes.
		after map[string]int
		// fusedAtLeast is how many original names the node producing
		// output 0 must stand for afterwards.
		fusedAtLeast int
		// check, when set, inspects the transformed model further.
		check func(t *testing.T, tm *graph.Model)
	}{{
		name:   "ConstantFolding",
		passes: []fusion.Pass{fusion.ConstantFolding()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 6)
			w := b.op("Mul", nil, b.op("Sqrt", nil, b.rand(0.5, 2, 6)), b.scalar(2))
			shape := b.op("Shape", nil, x) // static shape: folds too
			y := b.op("Reshape", nil, b.op("Add", nil, x, w), shape)
			return b.model(y)
		},
		after: map[string]int{"Sqrt": 0, "Mul": 0, "Shape": 0, "Add": 1, "Reshape": 1},
		check: func(t *testing.T, tm *graph.Model) {
			reshape := tm.Results[0].Input(0).Node
			w := reshape.Input(0).Node.Input(1).Node
			require.Equal(t, graph.OpConstant, w.OpType)
			assert.Equal(t, []string{"Sqrt_2", "Mul_4"}, w.RT.FusedNames, "the folded constant stands for the ops it replaced")
			assert.Equal(t, graph.OpConstant, reshape.Input(1).Node.OpType)
		},
	}, {
		name:   "DeadCodeRemoval",
		passes: []fusion.Pass{fusion.DeadCodeRemoval()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 2, 6, 6)
			mp := graph.NewNode("MaxPool", "pool", []graph.Output{x}, graph.Attrs{"kernel_shape": []int64{2, 2}}, 2)
			return b.model(b.op("Relu", nil, mp.Out(0)))
		},
		after: map[string]int{"MaxPool": 1},
	}, {
		name:   "RemoveIdentity",
		passes: []fusion.Pass{fusion.RemoveIdentity()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 3)
			y := b.op("Identity", nil, b.op("Relu", nil, x))
			d := graph.NewNode("Dropout", "drop", []graph.Output{y}, nil, 1)
			c := b.op("Cast", graph.Attrs{"to": int64(tensor.F32)}, b.op("Sigmoid", nil, d.Out(0)))
			return b.model(b.op("Identity", nil, c))
		},
		after:        map[string]int{"Identity": 0, "Dropout": 0, "Cast": 0, "Relu": 1, "Sigmoid": 1},
		fusedAtLeast: 2,
	}, {
		// Slices of a whole tensor go (steps of 1 or none, a whole axis
		// past its end or from before its start); a part, a reversal and
		// a stride stay (TestRemoveIdentitySliceDynamic: axes of unknown
		// size).
		name:   "RemoveIdentitySlice",
		passes: []fusion.Pass{fusion.RemoveIdentity()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 6, 4)
			whole := b.op("Slice", nil, b.op("Relu", nil, x), b.ints(0), b.ints(6), b.ints(1), b.ints(1))
			past := b.op("Slice", nil, whole, b.ints(-5, 0), b.ints(9, 100))
			open := b.op("Slice", nil, past, b.ints(0), b.ints(math.MaxInt64), b.ints(-1))
			part := b.op("Slice", nil, open, b.ints(1), b.ints(6), b.ints(1))
			rev := b.op("Slice", nil, part, b.ints(-1), b.ints(-100), b.ints(1), b.ints(-1))
			strided := b.op("Slice", nil, rev, b.ints(0), b.ints(5), b.ints(1), b.ints(2))
			return b.model(strided)
		},
		after: map[string]int{"Slice": 3, "Relu": 1},
	}, {
		name:   "FoldBatchNormConv",
		passes: []fusion.Pass{fusion.FoldBatchNorm()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 3, 8, 8)
			return b.model(b.bn(b.conv(x, 3, 4), 4))
		},
		after:        map[string]int{"BatchNormalization": 0, "Conv": 1},
		fusedAtLeast: 2,
	}, {
		name:   "FoldBatchNormConvNoBias",
		passes: []fusion.Pass{fusion.FoldBatchNorm()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 3, 8, 8)
			c := b.op("Conv", convAttrs(1), x, b.rand(-0.5, 0.5, 4, 3, 3, 3))
			return b.model(b.bn(c, 4))
		},
		after: map[string]int{"BatchNormalization": 0, "Conv": 1},
	}, {
		name:   "FoldBatchNormGemm",
		passes: []fusion.Pass{fusion.FoldBatchNorm()},
		build: func(b *builder) *graph.Model {
			a := b.param("a", 3, 5)
			g := b.op("Gemm", graph.Attrs{"transB": int64(1), "alpha": float32(0.5), "beta": float32(2)}, a, b.rand(-1, 1, 4, 5), b.rand(-1, 1, 4))
			return b.model(b.bn(g, 4))
		},
		after: map[string]int{"BatchNormalization": 0, "Gemm": 1},
	}, {
		name:   "FoldBatchNormMatMul",
		passes: []fusion.Pass{fusion.FoldBatchNorm()},
		build: func(b *builder) *graph.Model {
			a := b.param("a", 3, 5)
			return b.model(b.bn(b.op("MatMul", nil, a, b.rand(-1, 1, 5, 4)), 4))
		},
		after: map[string]int{"BatchNormalization": 0, "MatMul": 0, "Gemm": 1},
	}, {
		name:   "FoldConvScaleShift",
		passes: []fusion.Pass{fusion.FoldConvScaleShift()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 3, 8, 8)
			c := b.op("Mul", nil, b.rand(0.5, 1.5, 1), b.conv(x, 3, 4))
			c = b.op("Add", nil, c, b.rand(-1, 1, 4, 1, 1))
			return b.model(b.op("Sub", nil, c, b.scalar(0.25)))
		},
		after: map[string]int{"Mul": 0, "Add": 0, "Sub": 0, "Conv": 1},
	}, {
		// A deconvolution with two groups (weights [C, M/g, kh, kw]),
		// its bias as a per-channel Add, then BatchNormalization, as
		// PP-OCR det's head has it.
		name:   "FoldBatchNormConvTransposeAdd",
		passes: []fusion.Pass{fusion.FoldBatchNorm()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 4, 5, 5)
			attrs := graph.Attrs{"group": int64(2), "strides": []int64{2, 2}, "kernel_shape": []int64{2, 2}}
			d := b.op("ConvTranspose", attrs, x, b.rand(-0.5, 0.5, 4, 3, 2, 2))
			return b.model(b.bn(b.op("Add", nil, d, b.rand(-1, 1, 1, 6, 1, 1)), 6))
		},
		after:        map[string]int{"BatchNormalization": 0, "Add": 0, "ConvTranspose": 1},
		fusedAtLeast: 3,
	}, {
		name:   "FoldConvTransposeScaleShift",
		passes: []fusion.Pass{fusion.FoldConvScaleShift()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 4, 5, 5)
			attrs := graph.Attrs{"group": int64(2), "strides": []int64{2, 2}, "kernel_shape": []int64{3, 3}}
			d := b.op("ConvTranspose", attrs, x, b.rand(-0.5, 0.5, 4, 2, 3, 3), b.rand(-0.1, 0.1, 4))
			c := b.op("Mul", nil, d, b.rand(0.5, 1.5, 4, 1, 1))
			return b.model(b.op("Add", nil, c, b.rand(-1, 1, 4, 1, 1)))
		},
		after: map[string]int{"Mul": 0, "Add": 0, "ConvTranspose": 1},
	}, {
		name:   "RecognizeHardSwish",
		passes: []fusion.Pass{fusion.RecognizeHardActivations()},
		build: func(b *builder) *graph.Model {
			x := b.op("Mul", nil, b.param("x", 2, 40), b.scalar(5))
			return b.model(b.hardSwishChain(x))
		},
		after:        map[string]int{"HardSwish": 1, "Clip": 0, "Div": 0, "Add": 0, "Mul": 1},
		fusedAtLeast: 4,
	}, {
		name:   "RecognizeHardSigmoidAndSwishFromIt",
		passes: []fusion.Pass{fusion.RecognizeHardActivations()},
		build: func(b *builder) *graph.Model {
			x := b.op("Mul", nil, b.param("x", 2, 40), b.scalar(5))
			clip := b.op("Clip", nil, b.op("Add", nil, b.scalar(3), x), b.scalar(0), b.scalar(6))
			hsig := b.op("Mul", nil, clip, b.scalar(1.0/6))                                                                            // relu6(x+3)/6
			paddle := b.op("Clip", nil, b.op("Add", nil, b.op("Mul", nil, x, b.scalar(0.2)), b.scalar(0.5)), b.scalar(0), b.scalar(1)) // Paddle hardsigmoid
			return b.model(b.op("Mul", nil, x, hsig), paddle)
		},
		after: map[string]int{"HardSwish": 1, "HardSigmoid": 1, "Clip": 0, "Add": 0, "Mul": 1},
	}, {
		name:   "FuseLayerNorm",
		passes: []fusion.Pass{fusion.FuseLayerNorm()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 5, 16)
			return b.model(b.layerNormChain(x, 16))
		},
		after:        map[string]int{"LayerNormalization": 1, "ReduceMean": 0, "Sqrt": 0, "Pow": 0, "Div": 0},
		fusedAtLeast: 9,
	}, {
		name:   "DivToMul",
		passes: []fusion.Pass{fusion.DivToMul()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 4)
			return b.model(b.op("Div", nil, x, b.rand(1, 3, 4)), b.op("Div", nil, x, b.param("y", 2, 4)))
		},
		after: map[string]int{"Div": 1, "Mul": 1},
	}, {
		name:   "EliminateDoubleRelu",
		passes: []fusion.Pass{fusion.EliminateDoubleRelu()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 4)
			return b.model(b.op("Relu", nil, b.op("Relu", nil, b.op("Relu", nil, x))))
		},
		after:        map[string]int{"Relu": 1},
		fusedAtLeast: 3,
	}, {
		name:   "CollapseReshapeTranspose",
		passes: []fusion.Pass{fusion.CollapseReshapeTranspose()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 3, 4)
			r := b.op("Reshape", nil, b.op("Reshape", nil, x, b.ints(6, 4)), b.ints(4, -1))
			t1 := b.op("Transpose", graph.Attrs{"perm": []int64{1, 2, 0}}, x)
			t2 := b.op("Transpose", graph.Attrs{"perm": []int64{2, 0, 1}}, t1) // cancels t1
			t3 := b.op("Transpose", graph.Attrs{"perm": []int64{0, 2, 1}}, b.op("Transpose", graph.Attrs{"perm": []int64{1, 0, 2}}, x))
			same := b.op("Reshape", nil, x, b.ints(2, 3, 4))
			return b.model(r, b.op("Relu", nil, t2), t3, same)
		},
		after: map[string]int{"Reshape": 1, "Transpose": 1},
	}, {
		name:   "ConvertF16Weights",
		passes: []fusion.Pass{fusion.ConvertF16Weights()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 2, 4)
			w, err := b.rand(-2, 2, 4).Node.Value.Convert(tensor.F16)
			require.NoError(t, err)
			c := b.op("Cast", graph.Attrs{"to": int64(tensor.F32)}, graph.NewConstant("w16", w).Out(0))
			return b.model(b.op("Add", nil, x, c))
		},
		after: map[string]int{"Cast": 0, "Add": 1},
	}, {
		name:   "FuseConvActivations",
		passes: []fusion.Pass{fusion.FuseConv()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 3, 8, 8)
			var outs []graph.Output
			for _, act := range []struct {
				op    string
				attrs graph.Attrs
			}{{"Relu", nil}, {"HardSwish", nil}, {"HardSigmoid", graph.Attrs{"alpha": float32(0.2), "beta": float32(0.5)}},
				{"Sigmoid", nil}, {"Gelu", nil}, {"Gelu", graph.Attrs{"approximate": "tanh"}}, {"LeakyRelu", graph.Attrs{"alpha": float32(0.1)}}, {"Tanh", nil}} {
				outs = append(outs, b.op(act.op, act.attrs, b.conv(x, 3, 4)))
			}
			relu6 := b.op("Clip", nil, b.conv(x, 3, 4), b.scalar(0), b.scalar(6))
			c := b.conv(x, 3, 4)
			swish := b.op("Mul", nil, b.op("Sigmoid", nil, c), c)
			cb := b.conv(x, 3, 4) // Swish with a slope, as Paddle exports it
			swishBeta := b.op("Mul", nil, cb, b.op("Sigmoid", nil, b.op("Mul", nil, b.scalar(1.7), cb)))
			return b.model(append(outs, relu6, swish, swishBeta)...)
		},
		after: map[string]int{"FusedConv": 11, "Conv": 0, "Relu": 0, "Sigmoid": 0, "Mul": 0, "Clip": 0, "Gelu": 0},
	}, {
		name:   "FuseConvResidualActivation",
		passes: []fusion.Pass{fusion.FuseConv()},
		build: func(b *builder) *graph.Model {
			x := b.param("x", 1, 4, 8, 8)
			y := b.op("Add", nil, x, b.conv(x, 4, 4)) // residual, conv on the right
			y = b.op("HardSwish", nil, y)
			z := b.op("Add", nil, b.conv(y, 4, 4), b.conv(y, 4, 4)) // two convs: one absorbs the other
			return b.model(b.op("Relu", nil, z))
		},
		after:        map[string]int{"FusedConv": 2, "Conv": 1, "Add": 0, "HardSwish": 0, "Relu": 0},
		fusedAtLeast: 3,
	}, {
		name:   "FuseFullyConnected",
		passes: []fusion.Pass{fusion.FuseFullyConnected()},
		build: func(b *builder) *graph.Model {
			a := b.param("a", 3, 8)
			g := b.op("Gemm", graph.Attrs{"transB": int64(1), "beta": float32(0.5)}, a, b.rand(-1, 1, 6, 8), b.rand(-1, 1, 6))
			g = b.op("Relu", nil, g)
			m := b.op("MatMul", nil, g, b.rand(-1, 1, 6, 5))
			m = b.op("Add", nil, b.rand(-1, 1, 5), m)
			m = b.op("Add", nil, m, b.param("r", 3, 5))
			m = b.op("Sigmoid", nil, m)
			x3 := b.param("x3", 2, 3, 8)
			s := b.op("MatMul", nil, x3, b.rand(-1, 1, 8, 4))
			s = b.op("Mul", nil, s, b.op("Sigmoid", nil, s))
			sb := b.op("MatMul", nil, x3, b.rand(-1, 1, 8, 4))
			sb = b.op("Mul", nil, b.op("Sigmoid", nil, b.op("Mul", nil, sb, b.scalar(0.6))), sb)
			return b.model(m, s, sb)
		},
		after: map[string]int{"FullyConnected": 4, "Gemm": 0, "MatMul": 0, "Add": 0, "Relu": 0, "Sigmoid": 0, "Mul": 0},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			m := tc.build(b)
			before := map[string]int{}
			for op := range tc.after {
				before[op] = opCount(t, m, op)
			}
			in := randomInputs(t, m, 7, nil)
			tm, rep := transform(t, m, in, tc.passes...)
			for op, want := range tc.after {
				assert.Equal(t, want, opCount(t, tm, op), "%s nodes after (%d before)", op, before[op])
			}
			require.Len(t, rep.Passes, len(tc.passes))
			assert.Positive(t, rep.Passes[0].Rewrites, "the pass rewrote nothing")
			if tc.fusedAtLeast > 0 {
				prod := tm.Results[0].Input(0).Node
				assert.GreaterOrEqual(t, len(prod.OriginalNames()), tc.fusedAtLeast, "%s records fused names %v", prod, prod.RT.FusedNames)
			}
			if tc.check != nil {
				tc.check(t, tm)
			}
		})
	}
}

// TestFusedConvPostOps checks the post-op list a chain becomes.
func TestFusedConvPostOps(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 4, 6, 6)
	c := b.conv(x, 4, 4)
	y := b.op("Clip", nil, b.op("Add", nil, c, x), b.scalar(0), b.scalar(6))
	m := b.model(b.op("LeakyRelu", graph.Attrs{"alpha": float32(0.3)}, y))
	tm, _ := transform(t, m, randomInputs(t, m, 3, nil), fusion.FuseConv())
	n := tm.Results[0].Input(0).Node
	require.Equal(t, graph.OpFusedConv, n.OpType)
	ops, err := graph.PostOps(n)
	require.NoError(t, err)
	assert.Equal(t, []graph.PostOp{{Kind: graph.PostSum}, {Kind: graph.PostClip, Alpha: 0, Beta: 6}, {Kind: graph.PostLeakyRelu, Alpha: 0.3}}, ops)
	assert.Equal(t, x, n.Input(3), "residual operand is input 3")
	assert.ElementsMatch(t, []string{"Conv_3", "Add_4", "Clip_7", "LeakyRelu_8"}, n.RT.FusedNames)
	for _, k := range []string{"kernel_shape", "pads", "strides", "group"} {
		assert.True(t, n.Attrs.Has(k), "FusedConv keeps Conv attribute %s", k)
	}
}

// TestFusionDeclinesSharedValues checks the closure condition: a node whose
// output is also read outside the pattern is not fused away.
func TestFusionDeclinesSharedValues(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 6, 6)
	c := b.conv(x, 3, 4)
	r := b.op("Relu", nil, c)
	m := b.model(r, b.op("Sigmoid", nil, c)) // c feeds two activations
	tm, rep := transform(t, m, randomInputs(t, m, 5, nil), fusion.FuseConv())
	assert.Zero(t, rep.Passes[0].Rewrites)
	assert.Equal(t, 1, opCount(t, tm, "Conv"))
	assert.Equal(t, 0, opCount(t, tm, graph.OpFusedConv))
}

// TestFusedLinearPostOps checks that scalar Mul/Add/Sub after an activation
// become one merged "linear" post-op.
func TestFusedLinearPostOps(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 6, 6)
	y := b.op("HardSwish", nil, b.conv(x, 3, 4))
	y = b.op("Mul", nil, b.scalar(0.5), y)
	y = b.op("Add", nil, y, b.scalar(0.25))
	y = b.op("Sub", nil, y, b.scalar(1))
	m := b.model(y)
	tm, _ := transform(t, m, randomInputs(t, m, 9, nil), fusion.FuseConv())
	n := tm.Results[0].Input(0).Node
	require.Equal(t, graph.OpFusedConv, n.OpType)
	ops, err := graph.PostOps(n)
	require.NoError(t, err)
	require.Len(t, ops, 2)
	assert.Equal(t, graph.PostHardSwish, ops[0].Kind)
	assert.Equal(t, graph.PostLinear, ops[1].Kind)
	assert.InDelta(t, 0.5, ops[1].Alpha, 1e-7)
	assert.InDelta(t, -0.75, ops[1].Beta, 1e-7)
	assert.Len(t, n.RT.FusedNames, 5)
}

// TestFusedOpInference checks the shape inference of the fused ops and the
// errors it gives for bad post-op configurations.
func TestFusedOpInference(t *testing.T) {
	c := func(shape ...int64) graph.Output {
		return graph.NewConstant("c", tensor.MustNew(tensor.F32, tensor.Shape(shape))).Out(0)
	}
	post := func(kinds ...string) graph.Attrs {
		a := graph.Attrs{"kernel_shape": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}}
		ops := make([]graph.PostOp, len(kinds))
		for i, k := range kinds {
			ops[i] = graph.PostOp{Kind: k}
		}
		graph.SetPostOps(&graph.Node{Attrs: a}, ops)
		return a
	}
	cases := []struct {
		name   string
		op     string
		inputs []graph.Output
		attrs  graph.Attrs
		shape  string
		err    string
	}{
		{"conv relu", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3)}, post("relu"), "[1,4,8,8]", ""},
		{"conv sum", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3), {}, c(4, 1, 1)}, post("sum"), "[1,4,8,8]", ""},
		{"conv sum missing", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3)}, post("sum"), "", "needs input 3"},
		{"conv residual without sum", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3), {}, c(1, 4, 8, 8)}, post("relu"), "", "no \"sum\""},
		{"conv residual too big", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3), {}, c(2, 4, 8, 8)}, post("sum"), "", "cannot be broadcast"},
		{"two sums", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3), {}, c(1, 4, 8, 8)}, post("sum", "sum"), "", "at most one"},
		{"unknown", graph.OpFusedConv, []graph.Output{c(1, 3, 8, 8), c(4, 3, 3, 3)}, post("cube"), "", "unknown kind"},
		{"fc", graph.OpFullyConnected, []graph.Output{c(2, 5, 8), c(8, 3), c(3)}, post("gelu"), "[2,5,3]", ""},
		{"fc bias mismatch", graph.OpFullyConnected, []graph.Output{c(2, 8), c(8, 3), c(4)}, post(), "", "does not match"},
		{"fc 3-D weights", graph.OpFullyConnected, []graph.Output{c(2, 8), c(1, 8, 3)}, post(), "", "[K, N] matrix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := graph.NewNode(tc.op, "f", tc.inputs, tc.attrs, 1)
			err := graph.InferNode(n)
			if tc.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tc.err)
				assert.ErrorContains(t, err, `"f"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.shape, n.Outputs[0].Shape.String())
		})
	}
}

// TestRemoveIdentitySliceDynamic checks whole-tensor Slices on an axis
// whose size is unknown (a body's shapes before planning): from 0 to
// INT64_MAX goes, to a smaller end or from another start stays.
func TestRemoveIdentitySliceDynamic(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 2, -1)
	open := b.op("Slice", nil, x, b.ints(0), b.ints(math.MaxInt64), b.ints(1))
	short := b.op("Slice", nil, open, b.ints(0), b.ints(1<<40), b.ints(1))
	late := b.op("Slice", nil, short, b.ints(1), b.ints(math.MaxInt64), b.ints(-1))
	m := b.model(late)
	rep, err := fusion.NewManager(fusion.RemoveIdentity()).Run(context.Background(), m, fusion.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Passes[0].Rewrites)
	assert.Equal(t, 2, opCount(t, m, "Slice"))
}

// TestRemoveIdentityKeepsTrainingDropout checks that a Dropout in training
// mode (random, not an identity) is left alone.
func TestRemoveIdentityKeepsTrainingDropout(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 2, 3)
	on, err := tensor.FromBool(tensor.Shape{}, []bool{true})
	require.NoError(t, err)
	d := graph.NewNode("Dropout", "drop", []graph.Output{x, b.scalar(0.5), graph.NewConstant("train", on).Out(0)}, nil, 1)
	m := b.model(d.Out(0))
	rep, err := fusion.NewManager(fusion.RemoveIdentity()).Run(context.Background(), m, fusion.Options{})
	require.NoError(t, err)
	assert.Zero(t, rep.Passes[0].Rewrites)
	assert.Equal(t, 1, opCount(t, m, "Dropout"))
}

// TestCollapseUnitReduce: a reduction over axes of size 1 (each output
// element its one input element) becomes a Reshape computing the same
// values, or nothing when it keeps its input's shape (keepdims: the
// Reshape is a no-op, removed too), for each reduction it takes; one over
// a larger axis, or ReduceL2 (|x|, not x), stays.
func TestCollapseUnitReduce(t *testing.T) {
	for _, c := range []struct {
		op       string
		axes     []int64
		keep     int64
		rewrites int
		reduces  int // reductions left
		reshapes int
	}{
		{"ReduceMean", []int64{1}, 0, 1, 0, 1},
		{"ReduceSum", []int64{1, 3}, 1, 2, 0, 0},
		{"ReduceMax", []int64{-1}, 0, 1, 0, 1},
		{"ReduceMin", []int64{1}, 1, 2, 0, 0},
		{"ReduceProd", []int64{3}, 0, 1, 0, 1},
		{"ReduceMean", []int64{0, 1}, 0, 0, 1, 0},
		{"ReduceL2", []int64{1}, 0, 0, 1, 0},
	} {
		t.Run(fmt.Sprintf("%s%v_keep%d", c.op, c.axes, c.keep), func(t *testing.T) {
			b := newBuilder(t)
			x := b.param("x", 2, 1, 3, 1)
			y := b.op(c.op, graph.Attrs{"keepdims": c.keep}, b.op("Relu", nil, x), b.ints(c.axes...))
			m := b.model(b.op("Sigmoid", nil, y))
			tm, rep := transform(t, m, randomInputs(t, m, 3, nil), fusion.CollapseReshapeTranspose())
			assert.Equal(t, c.rewrites, rep.Passes[0].Rewrites)
			assert.Equal(t, c.reduces, opCount(t, tm, c.op))
			assert.Equal(t, c.reshapes, opCount(t, tm, "Reshape"))
		})
	}
}
