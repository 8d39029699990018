package fusion

import (
	"context"
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PassFuseQuantized is the name of the QDQ fusion pass.
const PassFuseQuantized = "FuseQuantized"

// KeyQuantization is the runtime-model key (a node's RT.Extra) that says
// why a convolution or matrix product next to quantized values runs in
// float ("f32: ..."); the fused integer ops do not carry it.
const KeyQuantization = "QUANTIZATION"

// FuseQuantized turns quantized convolutions and matrix products into the
// fused integer ops (graph.OpQuantizedConv,
// graph.OpQuantizedFullyConnected), as ONNX Runtime's QDQ selectors and
// OpenVINO's low-precision transformations do:
//
//   - QDQ: Conv / MatMul / Gemm whose data is DequantizeLinear of i8/u8
//     (per tensor) and whose weights are DequantizeLinear of constant
//     i8/u8 (per tensor or per output channel), with a float or
//     dequantized i32 bias;
//   - dynamic: ConvInteger / MatMulInteger followed by Cast to f32 and the
//     product of the scales (ONNX Runtime's quantize_dynamic, IS-Net);
//
// then, on the fused op's f32 output, a constant per-channel bias Add, the
// activations, scalar affine ops and a residual Add as post-ops (the
// rules of FuseConv), and a QuantizeLinear to i8/u8 as the
// requantization. DequantizeLinear nodes shared by several convolutions or
// products are duplicated first, so each can be fused; the
// DequantizeLinear of constants left over are folded; a convolution or
// product fed by DequantizeLinear that stays in float gets RT.Extra
// KeyQuantization saying why (the runtime model shows it).
func FuseQuantized() Pass {
	rules := quantRules(&Options{})
	var ops []string
	for _, r := range rules {
		r.Pattern.walk(func(p *Pattern) {
			if p.kind == patOp {
				ops = append(ops, p.ops...)
			}
		})
	}
	slices.Sort(ops)
	return Pass{Name: PassFuseQuantized, Doc: "fuse QDQ and dynamically quantized Conv/MatMul/Gemm into int8 ops with a requantization epilogue",
		Ops: slices.Compact(ops),
		Run: func(ctx context.Context, m *graph.Model, opts *Options) (int, error) {
			n, err := uniqueDequantize(m)
			if err != nil {
				return 0, err
			}
			c, err := ApplyRules(ctx, m, quantRules(opts)...)
			if err != nil {
				return n + c, err
			}
			l, err := quantizeOnLoad(m)
			if c += l; err != nil {
				return n + c, err
			}
			why, err := floatReasons(m) // before the weights' DequantizeLinear fold away
			if err != nil {
				return n + c, err
			}
			f, err := foldConstants(ctx, m, opts, func(n *graph.Node) bool { return n.OpType == "DequantizeLinear" })
			for n, r := range why {
				if n.RT.Extra == nil {
					n.RT.Extra = map[string]string{}
				}
				n.RT.Extra[KeyQuantization] = r
			}
			return n + c + f, err
		}}
}

// quantCores are the op types the QDQ rules turn into integer ops.
var quantCores = []string{"Conv", "MatMul", "Gemm"}

// uniqueDequantize gives each Conv/MatMul/Gemm its own copy of a
// DequantizeLinear it shares with others (only when every consumer is one
// of them), so that each matches its QDQ pattern.
func uniqueDequantize(m *graph.Model) (int, error) {
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		uses := cons[n.Out(0)]
		if n.OpType != "DequantizeLinear" || len(uses) < 2 {
			continue
		}
		if slices.ContainsFunc(uses, func(u graph.Input) bool { return !slices.Contains(quantCores, u.Node.OpType) }) {
			continue
		}
		for i, u := range uses[1:] {
			d := graph.NewNode(n.OpType, fmt.Sprintf("%s/%d", n.Name, i+1), slices.Clone(n.Inputs), n.Attrs.Clone(), 1)
			d.RT = n.RT.Clone()
			if err := graph.InferNode(d); err != nil {
				return count, err
			}
			u.Node.Inputs[u.Index] = d.Out(0)
			count++
		}
	}
	return count, nil
}

// dequantized matches DequantizeLinear of data (captured as name+"q"),
// with the node captured as name.
func dequantized(name string, data *Pattern) *Pattern {
	return Op("DequantizeLinear", data.As(name+"q")).As(name)
}

// floatOut is a fused integer op with an f32 output (not requantized).
func floatOut(n *graph.Node) bool {
	return !n.Input(graph.QuantInYScale).Valid()
}

// quantFused matches a fused integer op with an f32 output.
func quantFused() *Pattern {
	return Op(graph.OpQuantizedConv + "|" + graph.OpQuantizedFullyConnected).Where(floatOut).As("base")
}

// quantRules are FuseQuantized's rules; opts evaluates the constant
// dequantization of biases.
func quantRules(opts *Options) []Rule {
	rules := []Rule{{
		Name:    "QDQConv",
		Pattern: Op("Conv", dequantized("x", Any()), dequantized("w", Const())),
		Rewrite: func(m *Match) (graph.Output, error) { return qdqCore(m, opts) },
	}, {
		Name:    "QDQMatMul",
		Pattern: Op("MatMul", dequantized("x", Any()), dequantized("w", Const())),
		Rewrite: func(m *Match) (graph.Output, error) { return qdqCore(m, opts) },
	}, {
		Name:    "QDQGemm",
		Pattern: Op("Gemm", dequantized("x", Any()), dequantized("w", Const())),
		Rewrite: func(m *Match) (graph.Output, error) { return qdqCore(m, opts) },
	}, {
		Name: "DynamicConvInteger",
		Pattern: Op("Mul", Op("Cast", Op("ConvInteger", Any().As("x"), Const().As("wq")).As("core")).Attr("to", int64(tensor.F32), nil),
			Op("Mul", Any().As("xs"), Const().As("ws")).Commutative()).Commutative(),
		Rewrite: dynamicCore,
	}, {
		Name: "DynamicMatMulInteger",
		Pattern: Op("Mul", Op("Cast", Op("MatMulInteger", Any().As("x"), Const().As("wq")).As("core")).Attr("to", int64(tensor.F32), nil),
			Op("Mul", Any().As("xs"), Const().As("ws")).Commutative()).Commutative(),
		Rewrite: dynamicCore,
	}, {
		Name: "QuantizedBias",
		Pattern: Op("Add", quantFused().Where(func(n *graph.Node) bool {
			return !n.Input(graph.QuantInBias).Valid() && len(n.Attrs.Strings(graph.AttrPostOps, nil)) == 0
		}), Const().As("c").ConstWhere(isFloatConst)).Commutative(),
		Rewrite: quantBias,
	}, {
		Name:    "QuantizedRequantize",
		Pattern: Op("QuantizeLinear", quantFused(), Any().As("ys")),
		Rewrite: quantOutput,
	}}
	for _, op := range []string{graph.OpQuantizedConv, graph.OpQuantizedFullyConnected} {
		rules = append(rules, postOpRulesOn(op, func() *Pattern { return Op(op).Where(floatOut).As("base") })...)
	}
	return rules
}

// zeroOf is a scalar zero of type t.
func zeroOf(m *Match, t tensor.ElementType) graph.Output {
	z, _ := tensor.New(t, tensor.Shape{})
	return m.NewConst("zero_point", z)
}

// scalarShape reports whether o is known to hold one element.
func scalarShape(o graph.Output) bool {
	s, ok := o.Shape().ToShape()
	return ok && s.NumElements() == 1
}

// perChannel returns a scale or zero point's constant as a vector of c
// values (a scalar stays one value); ok is false when it is neither.
func perChannel(t *tensor.Tensor, c int64) (*tensor.Tensor, bool) {
	switch t.NumElements() {
	case 1:
		r, err := t.Reshape(tensor.Shape{})
		return r, err == nil
	case c:
		r, err := t.Reshape(tensor.Shape{c})
		return r, err == nil
	}
	return nil, false
}

// qdqCore rewrites a QDQ Conv, MatMul or Gemm into its fused integer op
// (f32 out), or declines (explainFloat says why).
func qdqCore(m *Match, opts *Options) (graph.Output, error) {
	core := m.Root
	if quantReason(core) != "" {
		return graph.Output{}, nil
	}
	dx, dw := m.Node("x"), m.Node("w")
	x, wq := m.Value("xq"), m.Const("wq")
	xz := dx.Input(2)
	if !xz.Valid() {
		xz = zeroOf(m, x.Type())
	}
	ws, wz := dw.Input(1), dw.Input(2)
	op, attrs := graph.OpQuantizedConv, graph.Attrs{}
	c := wq.Shape()[0]
	var err error
	switch core.OpType {
	case "Conv":
		attrs = core.Attrs.Clone()
	case "MatMul":
		op, c = graph.OpQuantizedFullyConnected, wq.Shape()[1]
	case "Gemm":
		op, c = graph.OpQuantizedFullyConnected, wq.Shape()[1]
		if core.Attrs.Int("transB", 0) != 0 {
			c = wq.Shape()[0]
			if wq, err = transposeInts(wq); err != nil {
				return graph.Output{}, err
			}
		}
	}
	wOut := dw.Input(0)
	if wq != m.Const("wq") {
		wOut = m.NewConst("weights", wq)
	}
	wst, _ := perChannel(dw.Input(1).Node.Value, c)
	ws = m.NewConst("w_scale", wst)
	if wz.Valid() {
		wzt, _ := perChannel(wz.Node.Value, c)
		wz = m.NewConst("w_zero_point", wzt)
	}
	bias, err := quantCoreBias(m, core, c, opts)
	if err != nil || (core.Input(2).Valid() && !bias.Valid()) {
		return graph.Output{}, err
	}
	inputs := []graph.Output{x, wOut, bias, {}, dx.Input(1), xz, ws, wz}
	n := m.NewNode(op, inputs, attrs, 1)
	return n.Out(0), nil
}

// quantCoreBias is the f32 bias [c] of a QDQ core's input 2 (Conv B, Gemm
// C): a float constant, or the DequantizeLinear of a constant (folded
// here); the zero Output without one, or when it is neither (then the
// core stays float).
func quantCoreBias(m *Match, core *graph.Node, c int64, opts *Options) (graph.Output, error) {
	b := core.Input(2)
	if !b.Valid() {
		return graph.Output{}, nil
	}
	var t *tensor.Tensor
	switch {
	case b.Node.OpType == graph.OpConstant:
		t = b.Node.Value
	case b.Node.OpType == "DequantizeLinear":
		outs, ok, err := evalConst(b.Node, opts)
		if err != nil || !ok {
			return graph.Output{}, err
		}
		t = outs[0]
	default:
		return graph.Output{}, nil
	}
	if t.Type() != tensor.F32 {
		return graph.Output{}, nil
	}
	v, ok := channelValues(t, max(t.Rank(), 1), max(t.Rank(), 1)-1, c)
	if !ok {
		return graph.Output{}, nil
	}
	if core.OpType == "Gemm" {
		beta := float64(core.Attrs.Float("beta", 1))
		for i := range v {
			v[i] *= beta
		}
	}
	bt, err := tensor.FromFloat64s(tensor.F32, tensor.Shape{c}, v)
	if err != nil {
		return graph.Output{}, err
	}
	return m.NewConst("bias", bt), nil
}

// transposeInts returns the transpose of a 2-D integer tensor.
func transposeInts(w *tensor.Tensor) (*tensor.Tensor, error) {
	r, c := w.Shape()[0], w.Shape()[1]
	v, _ := w.Int64s()
	out := make([]float64, len(v))
	for i := int64(0); i < r; i++ {
		for j := int64(0); j < c; j++ {
			out[j*r+i] = float64(v[i*c+j])
		}
	}
	return tensor.FromFloat64s(w.Type(), tensor.Shape{c, r}, out)
}

// dynamicCore rewrites ConvInteger / MatMulInteger -> Cast(f32) ->
// Mul(x_scale * w_scale) into the fused integer op (f32 out).
func dynamicCore(m *Match) (graph.Output, error) {
	core, x, wq := m.Node("core"), m.Value("x"), m.Const("wq")
	xs, wsc := m.Value("xs"), m.Const("ws")
	if !isQuant8(x.Type()) || !isQuant8(wq.Type()) || xs.Type() != tensor.F32 || !scalarShape(xs) || wsc.Type() != tensor.F32 {
		return graph.Output{}, nil
	}
	op, c := graph.OpQuantizedConv, wq.Shape()[0]
	attrs := core.Attrs.Clone()
	if core.OpType == "MatMulInteger" {
		if wq.Rank() != 2 {
			return graph.Output{}, nil
		}
		op, c, attrs = graph.OpQuantizedFullyConnected, wq.Shape()[1], nil
	} else if r := core.Outputs[0].Shape.Rank(); r < 3 || r > 4 {
		return graph.Output{}, nil
	}
	// The weight scale multiplies the output: a scalar, or one per
	// channel on the output's channel axis (1, or the last for MatMul).
	rank := core.Outputs[0].Shape.Rank()
	axis := 1
	if op == graph.OpQuantizedFullyConnected {
		axis = rank - 1
	}
	v, ok := channelValues(wsc, max(rank, wsc.Rank()), axis+max(rank, wsc.Rank())-rank, c)
	if wsc.NumElements() == 1 {
		v, ok = []float64{wsc.Float64s()[0]}, true
	}
	if !ok {
		return graph.Output{}, nil
	}
	shape := tensor.Shape{int64(len(v))}
	if len(v) == 1 {
		shape = tensor.Shape{}
	}
	wst, err := tensor.FromFloat64s(tensor.F32, shape, v)
	if err != nil {
		return graph.Output{}, err
	}
	xz := core.Input(2)
	if !xz.Valid() {
		xz = zeroOf(m, x.Type())
	} else if !scalarShape(xz) {
		return graph.Output{}, nil
	}
	wz := core.Input(3)
	if wz.Valid() {
		zt, ok := core.ConstInput(3)
		if !ok {
			return graph.Output{}, nil
		}
		pc, ok := perChannel(zt, c)
		if !ok {
			return graph.Output{}, nil
		}
		wz = m.NewConst("w_zero_point", pc)
	}
	inputs := []graph.Output{x, m.Value("wq"), {}, {}, xs, xz, m.NewConst("w_scale", wst), wz}
	return m.NewNode(op, inputs, attrs, 1).Out(0), nil
}

// quantBias absorbs a constant per-channel Add after a fused integer op
// (without bias or post-ops yet) into its bias.
func quantBias(m *Match) (graph.Output, error) {
	b := m.Node("base")
	w, _ := b.ConstInput(graph.QuantInW)
	if w == nil {
		return graph.Output{}, nil
	}
	ch, axis := w.Shape()[0], 1
	rank := b.Outputs[0].Shape.Rank()
	if b.OpType == graph.OpQuantizedFullyConnected {
		ch, axis = w.Shape()[1], rank-1
	}
	v, ok := channelValues(m.Const("c"), rank, axis, ch)
	if !ok || rank < 1 {
		return graph.Output{}, nil
	}
	bt, err := tensor.FromFloat64s(tensor.F32, tensor.Shape{ch}, v)
	if err != nil {
		return graph.Output{}, err
	}
	inputs := slices.Clone(b.Inputs)
	inputs[graph.QuantInBias] = m.NewConst("bias", bt)
	return m.NewNode(b.OpType, inputs, b.Attrs.Clone(), 1).Out(0), nil
}

// quantOutput absorbs a QuantizeLinear of a fused integer op's f32 output
// (to i8 or u8, per tensor) as its requantization.
func quantOutput(m *Match) (graph.Output, error) {
	q, b, ys := m.Root, m.Node("base"), m.Value("ys")
	out := q.Outputs[0].Type
	if !isQuant8(out) || ys.Type() != tensor.F32 || !scalarShape(ys) || q.Attrs.Int("block_size", 0) != 0 {
		return graph.Output{}, nil
	}
	yz := q.Input(2)
	if !yz.Valid() {
		yz = zeroOf(m, out)
	} else if !scalarShape(yz) {
		return graph.Output{}, nil
	}
	inputs := make([]graph.Output, graph.QuantInYZero+1)
	copy(inputs, b.Inputs)
	inputs[graph.QuantInYScale], inputs[graph.QuantInYZero] = ys, yz
	return m.NewNode(b.OpType, inputs, b.Attrs.Clone(), 1).Out(0), nil
}

// isQuant8 reports whether t is i8 or u8, the int8 kernels' types.
func isQuant8(t tensor.ElementType) bool { return t == tensor.I8 || t == tensor.U8 }

// quantReason says why a Conv, MatMul or Gemm whose data or weights are
// DequantizeLinear outputs cannot run as a fused integer op ("" when it
// can, or when nothing about it is quantized).
func quantReason(n *graph.Node) string {
	if !slices.Contains(quantCores, n.OpType) || n.Domain != "" {
		return ""
	}
	dx, dw := n.Input(0), n.Input(1)
	isDQ := func(o graph.Output) bool { return o.Valid() && o.Node.OpType == "DequantizeLinear" }
	switch {
	case !isDQ(dx) && !isDQ(dw):
		return ""
	case !isDQ(dx):
		return "f32: the data is not quantized (no DequantizeLinear before input 0)"
	case !isDQ(dw):
		return "f32: the weights are not quantized (no DequantizeLinear before input 1)"
	}
	x, xd := dx.Node.Input(0), dx.Node
	if !isQuant8(x.Type()) {
		return fmt.Sprintf("f32: the data is quantized to %v; the int8 kernels take i8 and u8", x.Type())
	}
	if !scalarShape(xd.Input(1)) || (xd.Input(2).Valid() && !scalarShape(xd.Input(2))) || xd.Input(1).Type() != tensor.F32 {
		return "f32: the data is not quantized per tensor with an f32 scale"
	}
	wd := dw.Node
	wq, ok := wd.ConstInput(0)
	if !ok {
		return "f32: the quantized weights are not constant"
	}
	if !isQuant8(wq.Type()) {
		return fmt.Sprintf("f32: the weights are quantized to %v; the int8 kernels take i8 and u8 (dequantized at compile time)", wq.Type())
	}
	ws, ok := wd.ConstInput(1)
	if !ok || ws.Type() != tensor.F32 {
		return "f32: the weight scale is not an f32 constant"
	}
	if wd.Input(2).Valid() {
		if _, ok := wd.ConstInput(2); !ok {
			return "f32: the weight zero point is not constant"
		}
	}
	if wd.Attrs.Int("block_size", 0) != 0 {
		return "f32: the weights are quantized per block; the int8 kernels take per-tensor and per-channel scales (dequantized at compile time)"
	}
	rank := wq.Rank()
	axis := wd.Attrs.Int("axis", 1)
	if axis < 0 {
		axis += int64(rank)
	}
	switch n.OpType {
	case "Conv":
		if rank < 3 || rank > 4 {
			return fmt.Sprintf("f32: %d-D convolution; the int8 kernels take 1-D and 2-D ones", rank-2)
		}
		if ws.NumElements() != 1 && (axis != 0 || ws.NumElements() != wq.Shape()[0]) {
			return "f32: the weight scales are not per tensor or per output channel (axis 0)"
		}
	case "MatMul", "Gemm":
		if rank != 2 {
			return "f32: the weights are not a matrix"
		}
		outAxis := int64(1)
		if n.OpType == "Gemm" {
			if n.Attrs.Int("transA", 0) != 0 || n.Attrs.Float("alpha", 1) != 1 {
				return "f32: Gemm with transA or alpha"
			}
			if n.Attrs.Int("transB", 0) != 0 {
				outAxis = 0
			}
		}
		if ws.NumElements() != 1 && (axis != outAxis || ws.NumElements() != wq.Shape()[outAxis]) {
			return "f32: the weight scales are not per tensor or per output column"
		}
	}
	if b := n.Input(2); b.Valid() && b.Node.OpType != graph.OpConstant && b.Node.OpType != "DequantizeLinear" {
		return "f32: the bias is computed at run time"
	}
	return ""
}

// floatReasons says, for each Conv, MatMul and Gemm left next to quantized
// values, why it runs in float (KeyQuantization).
func floatReasons(m *graph.Model) (map[*graph.Node]string, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	out := map[*graph.Node]string{}
	for _, n := range nodes {
		why := quantReason(n)
		if why == "" && slices.Contains(quantCores, n.OpType) && n.Input(0).Valid() && n.Input(0).Node.OpType == "DequantizeLinear" {
			why = "f32: the pattern around it was not fused (its bias or layout)"
		}
		if why != "" {
			out[n] = why
		}
	}
	return out, nil
}
