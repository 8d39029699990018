package fusion

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// isFloatConst accepts floating-point constants.
func isFloatConst(t *tensor.Tensor) bool { return t.Type().IsFloat() }

// relu6Plus3 is Clip(Add(x, 3), 0, 6), capturing x.
func relu6Plus3() *Pattern {
	return Op("Clip", Op("Add", Any().As("x"), ConstScalar(3)).Commutative(), ConstScalar(0), ConstScalar(6))
}

// div6 matches p/6 written as a Div or as a Mul by 1/6.
func div6(p *Pattern) *Pattern {
	return OneOf(Op("Div", p, ConstScalar(6)), Op("Mul", p, ConstScalar(1.0/6)).Commutative())
}

// RecognizeHardActivations rewrites HardSwish and HardSigmoid written out
// as Add/Clip/Div/Mul chains (PaddlePaddle exports, PP-OCR) into the
// single ops: x*relu6(x+3)/6 -> HardSwish(x); relu6(x+3)/6 ->
// HardSigmoid(x, 1/6, 0.5); clip(a*x+b, 0, 1) -> HardSigmoid(x, a, b);
// x*HardSigmoid(x, 1/6, 0.5) -> HardSwish(x).
func RecognizeHardActivations() Pass {
	hardSwish := func(m *Match) (graph.Output, error) {
		return m.NewNode("HardSwish", []graph.Output{m.Value("x")}, nil, 1).Out(0), nil
	}
	return PatternPass(PassRecognizeHardActivations, "recognise HardSwish/HardSigmoid written out as Add/Clip/Div/Mul", Rule{
		Name:    "HardSwishDivAfterMul",
		Pattern: div6(Op("Mul", relu6Plus3(), Same("x")).Commutative()),
		Rewrite: hardSwish,
	}, Rule{
		Name:    "HardSigmoidRelu6",
		Pattern: div6(relu6Plus3()),
		Rewrite: func(m *Match) (graph.Output, error) {
			return m.NewNode("HardSigmoid", []graph.Output{m.Value("x")}, graph.Attrs{"alpha": float32(1.0 / 6), "beta": float32(0.5)}, 1).Out(0), nil
		},
	}, Rule{
		Name: "HardSigmoidAffineClip",
		Pattern: Op("Clip", Op("Add", Op("Mul", Any().As("x"), Const().As("a").ConstWhere(isScalarFloat)).Commutative(),
			Const().As("b").ConstWhere(isScalarFloat)).Commutative(), ConstScalar(0), ConstScalar(1)),
		Rewrite: func(m *Match) (graph.Output, error) {
			a, _ := scalarValue(m.Const("a"))
			b, _ := scalarValue(m.Const("b"))
			return m.NewNode("HardSigmoid", []graph.Output{m.Value("x")}, graph.Attrs{"alpha": float32(a), "beta": float32(b)}, 1).Out(0), nil
		},
	}, Rule{
		Name: "HardSwishFromHardSigmoid",
		Pattern: Op("Mul", Op("HardSigmoid", Any().As("x")).Attr("alpha", float32(1.0/6), float32(0.2)).Attr("beta", float32(0.5), float32(0.5)),
			Same("x")).Commutative(),
		Rewrite: hardSwish,
	})
}

func isScalarFloat(t *tensor.Tensor) bool { return t.Type().IsFloat() && t.NumElements() == 1 }

// FuseLayerNorm rewrites layer normalisation written out as
// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div (PyTorch and Paddle exports)
// into LayerNormalization over the trailing reduced axes, then folds the
// constant Mul (gamma) and Add (beta) that follow into its scale and bias.
func FuseLayerNorm() Pass {
	core := Op("Div",
		Op("Sub", Any().As("x"), Op("ReduceMean", Same("x"), Const().As("axes1")).As("mean")).As("d"),
		Op("Sqrt", Op("Add", Op("ReduceMean", Op("Pow", Same("d"), ConstScalar(2)), Const().As("axes2")).As("var"),
			Const().As("eps").ConstWhere(isScalarFloat)).Commutative()))
	noBias := func(n *graph.Node) bool { return !n.Input(2).Valid() && len(n.Outputs) == 1 }
	return PatternPass(PassFuseLayerNorm, "fuse written-out layer normalisation into LayerNormalization", Rule{
		Name: "LayerNorm", Pattern: core, Rewrite: layerNorm,
	}, Rule{
		Name:    "LayerNormGamma",
		Pattern: Op("Mul", Op("LayerNormalization").As("ln").Where(noBias), Const().As("c").ConstWhere(isFloatConst)).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) { return foldLayerNormAffine(m, false) },
	}, Rule{
		Name:    "LayerNormBeta",
		Pattern: Op("Add", Op("LayerNormalization").As("ln").Where(noBias), Const().As("c").ConstWhere(isFloatConst)).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) { return foldLayerNormAffine(m, true) },
	})
}

func layerNorm(m *Match) (graph.Output, error) {
	x := m.Value("x")
	rank := x.Shape().Rank()
	if rank < 1 || !x.Type().IsFloat() {
		return graph.Output{}, nil
	}
	axis, ok := trailingAxes(m.Const("axes1"), rank)
	if axis2, ok2 := trailingAxes(m.Const("axes2"), rank); !ok || !ok2 || axis != axis2 {
		return graph.Output{}, nil
	}
	for _, r := range []string{"mean", "var"} {
		if m.Node(r).Attrs.Int("keepdims", 1) != 1 {
			return graph.Output{}, nil
		}
	}
	eps, _ := scalarValue(m.Const("eps"))
	// Only the normalised dims need to be static (for the scale).
	normShape := make(tensor.Shape, rank-axis)
	for i, d := range x.Shape().Dims[axis:] {
		if !d.IsStatic() {
			return graph.Output{}, nil
		}
		normShape[i] = d.Size
	}
	ones := make([]float64, normShape.NumElements())
	for i := range ones {
		ones[i] = 1
	}
	t, err := tensor.FromFloat64s(x.Type(), normShape, ones)
	if err != nil {
		return graph.Output{}, err
	}
	attrs := graph.Attrs{"axis": int64(axis - rank), "epsilon": float32(eps)}
	return m.NewNode("LayerNormalization", []graph.Output{x, m.NewConst("scale", t)}, attrs, 1).Out(0), nil
}

// foldLayerNormAffine folds a constant Mul (into the scale) or Add (as the
// bias) after a bias-less LayerNormalization with a constant scale. The
// constant must have one element or as many as the scale.
func foldLayerNormAffine(m *Match, isBias bool) (graph.Output, error) {
	ln, c := m.Node("ln"), m.Const("c")
	scale, ok := ln.ConstInput(1)
	if !ok || c.Type() != scale.Type() {
		return graph.Output{}, nil
	}
	if _, ok := affineParam(m, "c", scale.Type(), scale.Shape()); !ok {
		return graph.Output{}, nil
	}
	n := scale.NumElements()
	cv := c.Float64s()
	if int64(len(cv)) != n && len(cv) != 1 {
		return graph.Output{}, nil
	}
	at := func(i int) float64 { return cv[min(i, len(cv)-1)] }
	v := make([]float64, n)
	sv := scale.Float64s()
	for i := range v {
		if isBias {
			v[i] = at(i)
		} else {
			v[i] = sv[i] * at(i)
		}
	}
	t, err := tensor.FromFloat64s(scale.Type(), scale.Shape(), v)
	if err != nil {
		return graph.Output{}, err
	}
	inputs := []graph.Output{ln.Inputs[0], ln.Inputs[1]}
	if isBias {
		inputs = append(inputs, m.NewConst("bias", t))
	} else {
		inputs[1] = m.NewConst("scale", t)
	}
	return m.NewNode("LayerNormalization", inputs, ln.Attrs.Clone(), 1).Out(0), nil
}

// trailingAxes returns the first axis when axes are exactly the last k axes
// of a rank-r tensor.
func trailingAxes(t *tensor.Tensor, rank int) (int, bool) {
	v, ok := graph.IntValues(t)
	if !ok || len(v) == 0 || len(v) > rank {
		return 0, false
	}
	seen := map[int64]bool{}
	for _, a := range v {
		if a < 0 {
			a += int64(rank)
		}
		if a < 0 || a >= int64(rank) || seen[a] {
			return 0, false
		}
		seen[a] = true
	}
	first := rank - len(v)
	for a := first; a < rank; a++ {
		if !seen[int64(a)] {
			return 0, false
		}
	}
	return first, true
}

// affineParam returns the captured gamma/beta when it has x's type and
// broadcasts to the normalised shape without growing the output.
func affineParam(m *Match, name string, t tensor.ElementType, norm tensor.Shape) (graph.Output, bool) {
	c := m.Const(name)
	if c.Type() != t || c.Rank() > len(norm) {
		return graph.Output{}, false
	}
	off := len(norm) - c.Rank()
	for i, d := range c.Shape() {
		if d != 1 && d != norm[off+i] {
			return graph.Output{}, false
		}
	}
	return m.Value(name), true
}

// activationPostOp maps a standalone activation node to the post-op that
// does the same; ok is false for ops or parameters a post-op cannot take.
func activationPostOp(n *graph.Node) (graph.PostOp, bool) {
	switch n.OpType {
	case "Relu":
		return graph.PostOp{Kind: graph.PostRelu}, true
	case "Clip":
		lo, hi := math.Inf(-1), math.Inf(1)
		for i, dst := range []*float64{&lo, &hi} {
			if !n.Input(i + 1).Valid() {
				continue
			}
			t, ok := n.ConstInput(i + 1)
			if !ok {
				return graph.PostOp{}, false
			}
			v, ok := scalarValue(t)
			if !ok {
				return graph.PostOp{}, false
			}
			*dst = v
		}
		return graph.PostOp{Kind: graph.PostClip, Alpha: float32(lo), Beta: float32(hi)}, true
	case "HardSwish":
		return graph.PostOp{Kind: graph.PostHardSwish}, true
	case "HardSigmoid":
		return graph.PostOp{Kind: graph.PostHardSigmoid, Alpha: n.Attrs.Float("alpha", 0.2), Beta: n.Attrs.Float("beta", 0.5)}, true
	case "Sigmoid":
		return graph.PostOp{Kind: graph.PostSigmoid}, true
	case "Tanh":
		return graph.PostOp{Kind: graph.PostTanh}, true
	case "Gelu":
		switch n.Attrs.String("approximate", "none") {
		case "none":
			return graph.PostOp{Kind: graph.PostGelu}, true
		case "tanh":
			return graph.PostOp{Kind: graph.PostGelu, Alpha: 1}, true
		}
	case "LeakyRelu":
		return graph.PostOp{Kind: graph.PostLeakyRelu, Alpha: n.Attrs.Float("alpha", 0.01)}, true
	}
	return graph.PostOp{}, false
}

// activationOps are the op types activationPostOp takes.
const activationOps = "Relu|Clip|HardSwish|HardSigmoid|Sigmoid|Tanh|Gelu|LeakyRelu"

// hasSum reports whether a fused node already has a "sum" post-op.
func hasSum(n *graph.Node) bool {
	for _, k := range n.Attrs.Strings(graph.AttrPostOps, nil) {
		if k == graph.PostSum {
			return true
		}
	}
	return false
}

// toFused returns a fused-op node standing for base (a base op or an
// existing fused node) with post-op p appended; residual, when valid, is
// the operand of a "sum".
func toFused(m *Match, fusedOp string, base *graph.Node, p graph.PostOp, residual graph.Output) (graph.Output, error) {
	var ops []graph.PostOp
	if base.OpType == fusedOp {
		var err error
		if ops, err = graph.PostOps(base); err != nil {
			return graph.Output{}, err
		}
	}
	// Inputs 0-2 are the op's, 3 the residual; the fused integer ops have
	// more after it (their scales and zero points), kept as they are.
	inputs := make([]graph.Output, max(4, len(base.Inputs)))
	copy(inputs, base.Inputs)
	if residual.Valid() {
		inputs[3] = residual
	}
	last := len(inputs)
	for last > 2 && !inputs[last-1].Valid() {
		last--
	}
	n := m.NewNode(fusedOp, inputs[:last], base.Attrs.Clone(), 1)
	graph.SetPostOps(n, append(ops, p))
	return n.Out(0), nil
}

// residualFits reports whether r broadcasts to out without growing it,
// as far as the partial shapes tell (the kernel checks at run time).
func residualFits(r graph.Output, out graph.PartialShape) bool {
	rs := r.Shape()
	if !rs.RankKnown || !out.RankKnown || len(rs.Dims) > len(out.Dims) {
		return false
	}
	off := len(out.Dims) - len(rs.Dims)
	for i, d := range rs.Dims {
		o := out.Dims[off+i]
		switch {
		case d.IsStatic() && d.Size == 1:
		case d.IsStatic() && o.IsStatic():
			if d.Size != o.Size {
				return false
			}
		case d.IsStatic():
			return false // out may be 1 and broadcast up to d
		case o.IsStatic() && o.Size == 1:
			return false
		}
	}
	return true
}

// postOpRules are the absorption rules of a fused op: an activation, a
// Swish (x*Sigmoid(x), or x*Sigmoid(beta*x) with a scalar beta), a scalar
// scale or shift, or a residual Add after baseOps (the plain op or the
// fused op itself) becomes one more post-op.
func postOpRules(fusedOp, baseOps string) []Rule {
	return postOpRulesOn(fusedOp, func() *Pattern { return Op(baseOps).As("base") })
}

// postOpRulesOn are postOpRules for the nodes base matches (captured as
// "base").
func postOpRulesOn(fusedOp string, base func() *Pattern) []Rule {
	return []Rule{{
		Name:    fusedOp + "Activation",
		Pattern: Op(activationOps, base()),
		Rewrite: func(m *Match) (graph.Output, error) {
			p, ok := activationPostOp(m.Root)
			if !ok {
				return graph.Output{}, nil
			}
			return toFused(m, fusedOp, m.Node("base"), p, graph.Output{})
		},
	}, {
		Name:    fusedOp + "Swish",
		Pattern: Op("Mul", base(), Op("Sigmoid", Same("base"))).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) {
			return toFused(m, fusedOp, m.Node("base"), graph.PostOp{Kind: graph.PostSwish, Alpha: 1}, graph.Output{})
		},
	}, {
		// Swish with a slope, x*Sigmoid(beta*x), as Paddle exports it
		// (PP-OCRv4 rec's neck: Mul by a scalar, Sigmoid, Mul).
		Name:    fusedOp + "SwishBeta",
		Pattern: Op("Mul", base(), Op("Sigmoid", Op("Mul", Same("base"), Const().As("c").ConstWhere(isScalarFloat)).Commutative())).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) {
			b, c := m.Node("base"), m.Const("c")
			if c.Type() != b.Outputs[0].Type || c.Rank() > max(b.Outputs[0].Shape.Rank(), 0) {
				return graph.Output{}, nil // a scalar of higher rank would grow the output
			}
			v, _ := scalarValue(c)
			return toFused(m, fusedOp, b, graph.PostOp{Kind: graph.PostSwish, Alpha: float32(v)}, graph.Output{})
		},
	}, {
		Name:    fusedOp + "Scale",
		Pattern: Op("Mul", base(), Const().As("c").ConstWhere(isScalarFloat)).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) { return linearPostOp(m, fusedOp, "Mul") },
	}, {
		Name:    fusedOp + "Shift",
		Pattern: Op("Add", base(), Const().As("c").ConstWhere(isScalarFloat)).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) { return linearPostOp(m, fusedOp, "Add") },
	}, {
		Name:    fusedOp + "ShiftSub",
		Pattern: Op("Sub", base(), Const().As("c").ConstWhere(isScalarFloat)),
		Rewrite: func(m *Match) (graph.Output, error) { return linearPostOp(m, fusedOp, "Sub") },
	}, {
		Name:    fusedOp + "Residual",
		Pattern: Op("Add", base().Where(func(n *graph.Node) bool { return !hasSum(n) }), Any().As("r")).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) {
			b, r := m.Node("base"), m.Value("r")
			if r.Node == b || r.Type() != b.Outputs[0].Type || !residualFits(r, b.Outputs[0].Shape) {
				return graph.Output{}, nil
			}
			return toFused(m, fusedOp, b, graph.PostOp{Kind: graph.PostSum}, r)
		},
	}}
}

// linearPostOp absorbs a scalar constant Mul, Add or Sub as a "linear"
// post-op, merged into a linear post-op just before it.
func linearPostOp(m *Match, fusedOp, kind string) (graph.Output, error) {
	b, c := m.Node("base"), m.Const("c")
	if c.Type() != b.Outputs[0].Type || c.Rank() > max(b.Outputs[0].Shape.Rank(), 0) {
		return graph.Output{}, nil // a scalar of higher rank would grow the output
	}
	v, _ := scalarValue(c)
	p := graph.PostOp{Kind: graph.PostLinear, Alpha: 1}
	switch kind {
	case "Mul":
		p.Alpha = float32(v)
	case "Add":
		p.Beta = float32(v)
	case "Sub":
		p.Beta = float32(-v)
	}
	if b.OpType == fusedOp {
		ops, err := graph.PostOps(b)
		if err != nil {
			return graph.Output{}, err
		}
		if k := len(ops) - 1; k >= 0 && ops[k].Kind == graph.PostLinear {
			// a2*(a1*y + b1) + b2 = (a1*a2)*y + (b1*a2 + b2)
			prev := ops[k]
			merged := graph.PostOp{Kind: graph.PostLinear, Alpha: prev.Alpha * p.Alpha, Beta: prev.Beta*p.Alpha + p.Beta}
			n := m.NewNode(fusedOp, append([]graph.Output(nil), b.Inputs...), b.Attrs.Clone(), 1)
			graph.SetPostOps(n, append(ops[:k:k], merged))
			return n.Out(0), nil
		}
	}
	return toFused(m, fusedOp, b, p, graph.Output{})
}

// FuseConv fuses Conv (with its bias) and the chain after it — an optional
// residual Add, activations (Relu, Clip/Relu6, HardSwish, HardSigmoid,
// Sigmoid, Swish, Gelu, LeakyRelu, Tanh) and scalar Mul/Add (PP-OCRv4's
// learnable affine blocks) — into one FusedConv whose post-op list replays
// the chain. Per-channel constants right after the Conv are folded into its
// weights by FoldConvScaleShift first.
func FuseConv() Pass {
	return PatternPass(PassFuseConv, "fuse Conv + residual Add + activations into FusedConv",
		postOpRules(graph.OpFusedConv, "Conv|"+graph.OpFusedConv)...)
}

// FuseFullyConnected turns MatMul/Gemm with constant 2-D weights into
// FullyConnected, then absorbs a constant bias Add, a residual Add and
// activations as post-ops.
func FuseFullyConnected() Pass {
	rank2 := func(t *tensor.Tensor) bool { return isFloatConst(t) && t.Rank() == 2 }
	rules := []Rule{{
		Name:    "MatMulToFullyConnected",
		Pattern: Op("MatMul", Any().As("a"), Const().As("w").ConstWhere(rank2)),
		Rewrite: func(m *Match) (graph.Output, error) {
			return m.NewNode(graph.OpFullyConnected, []graph.Output{m.Value("a"), m.Value("w")}, nil, 1).Out(0), nil
		},
	}, {
		Name: "GemmToFullyConnected",
		Pattern: Op("Gemm", Any().As("a"), Const().As("w").ConstWhere(rank2)).
			Attr("transA", int64(0), int64(0)).Attr("alpha", float32(1), float32(1)),
		Rewrite: func(m *Match) (graph.Output, error) {
			g, w := m.Root, m.Const("w")
			wOut := m.Value("w")
			N := w.Shape()[1]
			if g.Attrs.Int("transB", 0) != 0 {
				N = w.Shape()[0]
				wt, err := transpose2D(w)
				if err != nil {
					return graph.Output{}, err
				}
				wOut = m.NewConst("weights", wt)
			}
			inputs := []graph.Output{m.Value("a"), wOut}
			if g.Input(2).Valid() {
				ct, ok := g.ConstInput(2)
				if !ok || ct.Type() != w.Type() {
					return graph.Output{}, nil
				}
				c, ok := channelValues(ct, 2, 1, N)
				if !ok {
					return graph.Output{}, nil
				}
				beta := float64(g.Attrs.Float("beta", 1))
				for i := range c {
					c[i] *= beta
				}
				bt, err := tensor.FromFloat64s(w.Type(), tensor.Shape{N}, c)
				if err != nil {
					return graph.Output{}, err
				}
				inputs = append(inputs, m.NewConst("bias", bt))
			}
			return m.NewNode(graph.OpFullyConnected, inputs, nil, 1).Out(0), nil
		},
	}, {
		Name: "FullyConnectedBias",
		Pattern: Op("Add", Op(graph.OpFullyConnected).As("fc").Where(func(n *graph.Node) bool {
			return !n.Input(2).Valid() && len(n.Inputs) <= 2 && len(n.Attrs.Strings(graph.AttrPostOps, nil)) == 0
		}), Const().As("c").ConstWhere(isFloatConst)).Commutative(),
		Rewrite: func(m *Match) (graph.Output, error) {
			fc := m.Node("fc")
			rank := fc.Outputs[0].Shape.Rank()
			w, ok := fc.ConstInput(1)
			if !ok || rank < 1 || m.Const("c").Type() != w.Type() {
				return graph.Output{}, nil
			}
			N := w.Shape()[1]
			c, ok := channelValues(m.Const("c"), rank, rank-1, N)
			if !ok {
				return graph.Output{}, nil
			}
			bt, err := tensor.FromFloat64s(w.Type(), tensor.Shape{N}, c)
			if err != nil {
				return graph.Output{}, err
			}
			n := m.NewNode(graph.OpFullyConnected, []graph.Output{fc.Inputs[0], fc.Inputs[1], m.NewConst("bias", bt)}, fc.Attrs.Clone(), 1)
			return n.Out(0), nil
		},
	}}
	rules = append(rules, postOpRules(graph.OpFullyConnected, graph.OpFullyConnected)...)
	return PatternPass(PassFuseFullyConnected, "fuse MatMul/Gemm + bias + activations into FullyConnected", rules...)
}

// transpose2D returns the transpose of a 2-D tensor.
func transpose2D(w *tensor.Tensor) (*tensor.Tensor, error) {
	r, c := w.Shape()[0], w.Shape()[1]
	v := w.Float64s()
	out := make([]float64, len(v))
	for i := int64(0); i < r; i++ {
		for j := int64(0); j < c; j++ {
			out[j*r+i] = v[i*c+j]
		}
	}
	return tensor.FromFloat64s(w.Type(), tensor.Shape{c, r}, out)
}
