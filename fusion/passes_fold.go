package fusion

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The folding passes: BatchNormalization and per-channel constant
// Mul/Add/Sub folded into the weights and bias of the convolution or GEMM
// before them.

// channelValues expands a constant that broadcasts against an output of the
// given rank only along axis (sizes 1 elsewhere, 1 or size along axis) into
// size values; ok is false for any other shape.
func channelValues(c *tensor.Tensor, rank, axis int, size int64) ([]float64, bool) {
	if !c.Type().IsFloat() || c.Rank() > rank || size < 0 {
		return nil, false
	}
	off := rank - c.Rank()
	for i, d := range c.Shape() {
		if d == 1 {
			continue
		}
		if off+i != axis || d != size {
			return nil, false
		}
	}
	v := c.Float64s()
	out := make([]float64, size)
	for i := range out {
		if len(v) == 1 {
			out[i] = v[0]
		} else {
			out[i] = v[i]
		}
	}
	return out, true
}

// scaleWeights multiplies row r (the slice of w along axis 0) by s[r];
// with cols it scales the columns of a 2-D w instead.
func scaleWeights(w *tensor.Tensor, s []float64, cols bool) (*tensor.Tensor, error) {
	v := w.Float64s()
	rows := w.Shape()[0]
	inner := int64(len(v)) / max(rows, 1)
	for i := range v {
		if cols {
			v[i] *= s[int64(i)%inner]
		} else {
			v[i] *= s[int64(i)/inner]
		}
	}
	return tensor.FromFloat64s(w.Type(), w.Shape(), v)
}

// batchNormScale returns s = scale/sqrt(var+eps) and the shift B - mean*s,
// each of c elements; ok is false when the parameters do not have c
// elements.
func batchNormScale(m *Match, c int64) (s, shift []float64, ok bool) {
	eps := float64(m.Root.Attrs.Float("epsilon", 1e-5))
	params := make([][]float64, 4)
	for i, name := range []string{"scale", "b", "mean", "var"} {
		t := m.Const(name)
		if !t.Type().IsFloat() || t.NumElements() != c {
			return nil, nil, false
		}
		params[i] = t.Float64s()
	}
	s, shift = make([]float64, c), make([]float64, c)
	for i := range s {
		s[i] = params[0][i] / math.Sqrt(params[3][i]+eps)
		shift[i] = params[1][i] - params[2][i]*s[i]
	}
	return s, shift, true
}

// bnOf is BatchNormalization(p, consts...).
func bnOf(p *Pattern) *Pattern {
	return Op("BatchNormalization", p, Const().As("scale"), Const().As("b"), Const().As("mean"), Const().As("var"))
}

// FoldBatchNorm folds inference BatchNormalization into the weights and
// bias of a preceding Conv or ConvTranspose (also through a per-channel
// constant bias Add between them, as PaddlePaddle exports a deconvolution's
// bias), Gemm or 2-D MatMul with constant weights.
func FoldBatchNorm() Pass {
	convBN := func(m *Match) (graph.Output, error) {
		cv := m.Node("conv")
		M, ok := outChannels(cv, m.Const("w"))
		if !ok {
			return graph.Output{}, nil
		}
		s, shift, ok := batchNormScale(m, M)
		if !ok {
			return graph.Output{}, nil
		}
		var add []float64
		if m.Value("c").Valid() {
			if add, ok = channelValues(m.Const("c"), cv.Outputs[0].Shape.Rank(), 1, M); !ok || m.Const("c").Type() != m.Const("w").Type() {
				return graph.Output{}, nil
			}
		}
		return foldConvAffine(m, cv, M, add, s, shift)
	}
	return PatternPass(PassFoldBatchNorm, "fold BatchNormalization into Conv/ConvTranspose/Gemm/MatMul weights", Rule{
		Name:    "ConvBN",
		Pattern: bnOf(convLike()),
		Rewrite: convBN,
	}, Rule{
		Name:    "ConvAddBN",
		Pattern: bnOf(Op("Add", convLike(), Const().As("c").ConstWhere(isFloatConst)).Commutative()),
		Rewrite: convBN,
	}, Rule{
		Name: "GemmBN",
		Pattern: bnOf(Op("Gemm", Any().As("a"), Const().As("w").ConstWhere(func(t *tensor.Tensor) bool {
			return isFloatConst(t) && t.Rank() == 2
		})).As("gemm")),
		Rewrite: func(m *Match) (graph.Output, error) {
			g := m.Node("gemm")
			transB := g.Attrs.Int("transB", 0) != 0
			return foldBNIntoGemm(m, g, transB, float64(g.Attrs.Float("beta", 1)), g.Attrs)
		},
	}, Rule{
		Name: "MatMulBN",
		Pattern: bnOf(Op("MatMul", Any().As("a"), Const().As("w").ConstWhere(func(t *tensor.Tensor) bool {
			return isFloatConst(t) && t.Rank() == 2
		})).As("gemm")),
		Rewrite: func(m *Match) (graph.Output, error) {
			if m.Value("a").Shape().Rank() != 2 {
				return graph.Output{}, nil
			}
			return foldBNIntoGemm(m, m.Node("gemm"), false, 1, graph.Attrs{})
		},
	})
}

// constBias returns input i of n as float64s (zeros when omitted); ok is
// false when it is present but not a constant of size elements.
func constBias(n *graph.Node, i int, size int64) ([]float64, bool) {
	if !n.Input(i).Valid() {
		return make([]float64, size), true
	}
	t, ok := n.ConstInput(i)
	if !ok || !t.Type().IsFloat() || t.NumElements() != size {
		return nil, false
	}
	return t.Float64s(), true
}

// foldBNIntoGemm rewrites BN(A*op(W) + beta*C) over the N axis into a Gemm
// with scaled weights and C' = (beta*C - mean)*s + B.
func foldBNIntoGemm(m *Match, g *graph.Node, transB bool, beta float64, attrs graph.Attrs) (graph.Output, error) {
	w := m.Const("w")
	N := w.Shape()[1]
	if transB {
		N = w.Shape()[0]
	}
	if g.Outputs[0].Shape.Rank() != 2 {
		return graph.Output{}, nil
	}
	s, shift, ok := batchNormScale(m, N)
	if !ok {
		return graph.Output{}, nil
	}
	c := make([]float64, N)
	if g.OpType == "Gemm" && g.Input(2).Valid() {
		ct, ok := g.ConstInput(2)
		if !ok {
			return graph.Output{}, nil
		}
		v, ok := channelValues(ct, 2, 1, N)
		if !ok {
			return graph.Output{}, nil
		}
		c = v
	}
	w2, err := scaleWeights(w, s, !transB)
	if err != nil {
		return graph.Output{}, err
	}
	for i := range c {
		c[i] = beta*c[i]*s[i] + shift[i]
	}
	ct, err := tensor.FromFloat64s(w.Type(), tensor.Shape{N}, c)
	if err != nil {
		return graph.Output{}, err
	}
	a := attrs.Clone()
	a["beta"] = float32(1)
	n := m.NewNode("Gemm", []graph.Output{m.Value("a"), m.NewConst("weights", w2), m.NewConst("bias", ct)}, a, 1)
	return n.Out(0), nil
}

// FoldConvScaleShift folds a per-channel constant Mul, Add or Sub after a
// Conv or ConvTranspose with constant weights into the weights and bias
// (PP-OCRv4's learnable affine blocks, BatchNorm already written out; a
// deconvolution's bias exported as an Add).
func FoldConvScaleShift() Pass {
	perChannel := Const().As("c").ConstWhere(isFloatConst)
	fold := func(kind string) func(m *Match) (graph.Output, error) {
		return func(m *Match) (graph.Output, error) {
			cv, w := m.Node("conv"), m.Const("w")
			M, ok := outChannels(cv, w)
			rank := cv.Outputs[0].Shape.Rank()
			if !ok || rank < 3 || m.Const("c").Type() != w.Type() {
				return graph.Output{}, nil
			}
			c, ok := channelValues(m.Const("c"), rank, 1, M)
			if !ok {
				return graph.Output{}, nil
			}
			switch kind {
			case "Mul":
				return foldConvAffine(m, cv, M, nil, c, nil)
			case "Sub":
				for i := range c {
					c[i] = -c[i]
				}
			}
			return foldConvAffine(m, cv, M, c, nil, nil)
		}
	}
	return PatternPass(PassFoldConvScaleShift, "fold per-channel constant Mul/Add/Sub after Conv/ConvTranspose into its weights and bias",
		Rule{Name: "ConvMul", Pattern: Op("Mul", convLike(), perChannel).Commutative(), Rewrite: fold("Mul")},
		Rule{Name: "ConvAdd", Pattern: Op("Add", convLike(), perChannel).Commutative(), Rewrite: fold("Add")},
		Rule{Name: "ConvSub", Pattern: Op("Sub", convLike(), perChannel), Rewrite: fold("Sub")},
	)
}

// convLike matches a Conv or ConvTranspose with constant float weights,
// captured as "conv", its data input as "x" and its weights as "w".
func convLike() *Pattern {
	return Op("Conv|ConvTranspose", Any().As("x"), Const().As("w").ConstWhere(isFloatConst)).As("conv")
}

// outChannels is the number of output channels of a Conv (weights
// [M, C/group, k...]) or ConvTranspose (weights [C, M/group, k...]); ok is
// false for weights of rank below 3 or a group that does not divide them.
func outChannels(cv *graph.Node, w *tensor.Tensor) (int64, bool) {
	ws := w.Shape()
	g := cv.Attrs.Int("group", 1)
	if len(ws) < 3 || g < 1 || ws[0]%g != 0 {
		return 0, false
	}
	if cv.OpType == "ConvTranspose" {
		return ws[1] * g, true
	}
	return ws[0], true
}

// foldConvAffine rewrites ((conv + add) * s + shift), per output channel,
// into the same conv with scaled weights and bias; nil add, s or shift
// mean 0, 1 and 0.
func foldConvAffine(m *Match, cv *graph.Node, M int64, add, s, shift []float64) (graph.Output, error) {
	w := m.Const("w")
	bias, ok := constBias(cv, 2, M)
	if !ok {
		return graph.Output{}, nil
	}
	wOut := m.Value("w")
	if s != nil {
		w2, err := scaleOutChannels(cv, w, s)
		if err != nil {
			return graph.Output{}, err
		}
		wOut = m.NewConst("weights", w2)
	}
	for i := range bias {
		if add != nil {
			bias[i] += add[i]
		}
		if s != nil {
			bias[i] *= s[i]
		}
		if shift != nil {
			bias[i] += shift[i]
		}
	}
	b2, err := tensor.FromFloat64s(w.Type(), tensor.Shape{M}, bias)
	if err != nil {
		return graph.Output{}, err
	}
	return m.NewNode(cv.OpType, []graph.Output{m.Value("x"), wOut, m.NewConst("bias", b2)}, cv.Attrs.Clone(), 1).Out(0), nil
}

// scaleOutChannels multiplies the weights of output channel o of a Conv or
// ConvTranspose by s[o] (outChannels says how many there are).
func scaleOutChannels(cv *graph.Node, w *tensor.Tensor, s []float64) (*tensor.Tensor, error) {
	if cv.OpType != "ConvTranspose" {
		return scaleWeights(w, s, false)
	}
	// ConvTranspose: w [C, M/g, k...]; input channel c belongs to group
	// c / (C/g), whose output channels are g*(M/g) + j.
	ws := w.Shape()
	g := cv.Attrs.Int("group", 1)
	k := int64(1)
	for _, d := range ws[2:] {
		k *= d
	}
	perIn, cg := ws[1], ws[0]/g
	v := w.Float64s()
	for i := range v {
		c, j := int64(i)/(perIn*k), int64(i)/k%perIn
		v[i] *= s[c/cg*perIn+j]
	}
	return tensor.FromFloat64s(w.Type(), ws, v)
}
