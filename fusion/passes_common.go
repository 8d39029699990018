package fusion

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Pass names of the standard pipeline, in order.
const (
	PassConvertF16Weights        = "ConvertF16Weights"
	PassRemoveIdentity           = "RemoveIdentity"
	PassConstantFolding          = "ConstantFolding"
	PassCollapseReshapeTranspose = "CollapseReshapeTranspose"
	PassEliminateDoubleRelu      = "EliminateDoubleRelu"
	PassRecognizeHardActivations = "RecognizeHardActivations"
	PassFuseLayerNorm            = "FuseLayerNorm"
	PassFoldBatchNorm            = "FoldBatchNorm"
	PassFoldConvScaleShift       = "FoldConvScaleShift"
	PassDivToMul                 = "DivToMul"
	PassFuseConv                 = "FuseConv"
	PassFuseFullyConnected       = "FuseFullyConnected"
	PassDeadCodeRemoval          = "DeadCodeRemoval"
)

// DefaultPasses returns the standard pipeline: common clean-ups first,
// then pattern recognition, folding into weights, and last the fusions
// into kernel-shaped ops, the kernel fusions of KernelFusions among them.
func DefaultPasses() []Pass {
	return append(append([]Pass{
		ConvertF16ToF32(),
		ConvertF16Weights(),
		RemoveIdentity(),
		ConstantFolding(),
		FoldControlFlow(),
		CollapseReshapeTranspose(),
		EliminateDoubleRelu(),
		RecognizeHardActivations(),
		FuseLayerNorm(),
		FoldBatchNorm(),
		FoldConvScaleShift(),
		FoldInputScaleShift(),
		DivToMul(),
		FuseQuantized(),
		FuseConv(),
		FuseFullyConnected(),
		FuseQuantizeChains(),
		FuseDenseChain(),
	}, KernelFusionPasses()...),
		FuseSEBlock(),
		FuseDeconvActivation(),
		FuseElementwiseChains(),
		DeadCodeRemoval(),
	)
}

// ConvertF16Weights folds Cast(Constant f16/bf16, to=f32) into an f32
// Constant, so f16-stored weights run in f32 without a runtime Cast.
func ConvertF16Weights() Pass {
	return PatternPass(PassConvertF16Weights, "fold f16/bf16 constants cast to f32 into f32 constants", Rule{
		Name: "CastF16Const",
		Pattern: Op("Cast", Const().As("w").ConstWhere(func(t *tensor.Tensor) bool {
			return t.Type() == tensor.F16 || t.Type() == tensor.BF16
		})).Where(func(n *graph.Node) bool {
			to := tensor.ElementType(n.Attrs.Int("to", 0))
			return to == tensor.F32 || to == tensor.F64
		}),
		Rewrite: func(m *Match) (graph.Output, error) {
			to := tensor.ElementType(m.Root.Attrs.Int("to", 0))
			v, err := m.Const("w").Convert(to)
			if err != nil {
				return graph.Output{}, err
			}
			return m.NewConst("f32", v), nil
		},
	})
}

// RemoveIdentity removes Identity, inference-mode Dropout (mask unused),
// Cast to the type the value already has and Slice of every element in
// order (exporters write x[:, 0:n] for a whole axis: Silero VAD's STFT has
// three, each a launch on the GPU).
func RemoveIdentity() Pass {
	pass := func(m *Match) (graph.Output, error) { return m.Value("x"), nil }
	return PatternPass(PassRemoveIdentity, "remove Identity, Dropout, no-op Cast and whole-tensor Slice", Rule{
		Name: "WholeSlice", Pattern: Op("Slice", Any().As("x")).Where(wholeSlice), Rewrite: pass,
	}, Rule{
		Name: "Identity", Pattern: Op("Identity", Any().As("x")), Rewrite: pass,
	}, Rule{
		Name: "Dropout",
		Pattern: Op("Dropout", Any().As("x")).Where(func(n *graph.Node) bool {
			// Only the inference form: training_mode absent or a constant false.
			if !n.Input(2).Valid() {
				return true
			}
			t, ok := n.ConstInput(2)
			if !ok || t.NumElements() != 1 {
				return false
			}
			return t.Float64s()[0] == 0
		}),
		Rewrite: pass,
	}, Rule{
		Name: "NoopCast",
		Pattern: Op("Cast", Any().As("x")).Where(func(n *graph.Node) bool {
			return n.Input(0).Valid() && tensor.ElementType(n.Attrs.Int("to", 0)) == n.Input(0).Type()
		}),
		Rewrite: pass,
	})
}

// unitReduce reports whether reduction node n of the default domain
// keeps every element: its input's and output's shapes are static and
// hold as many elements (so every reduced axis has size 1).
func unitReduce(n *graph.Node) bool {
	if n.Domain != "" || len(n.Outputs) != 1 || !n.Input(0).Valid() {
		return false
	}
	a, ok1 := n.Input(0).Shape().ToShape()
	b, ok2 := n.Outputs[0].Shape.ToShape()
	return ok1 && ok2 && a.NumElements() == b.NumElements() && n.Outputs[0].Type == n.Input(0).Type()
}

// wholeSlice reports whether Slice node n (the opset-10 form: starts,
// ends, axes and steps as inputs, all constants) takes every element of
// its input in order: on each sliced axis a step of 1 from the start to
// the end, judged on the input's dimension where it is known (start at or
// before 0, end at or past the dimension) and, where it is not (a body's
// shapes before planning), from start 0 to an end of at least 2^62 (the
// INT64_MAX exporters write for "to the end").
func wholeSlice(n *graph.Node) bool {
	in := n.Input(0)
	if !in.Valid() || len(n.Inputs) < 3 || in.Shape().Rank() < 0 {
		return false
	}
	dims := in.Shape().Dims
	ints := func(i int) ([]int64, bool) {
		t, ok := n.ConstInput(i)
		if !ok || !t.Type().IsInteger() {
			return nil, false
		}
		return t.Int64s()
	}
	starts, ok1 := ints(1)
	ends, ok2 := ints(2)
	if !ok1 || !ok2 || len(starts) != len(ends) {
		return false
	}
	axes := make([]int64, len(starts))
	for i := range axes {
		axes[i] = int64(i)
	}
	if len(n.Inputs) > 3 && n.Input(3).Valid() {
		var ok bool
		if axes, ok = ints(3); !ok || len(axes) != len(starts) {
			return false
		}
	}
	if len(n.Inputs) > 4 && n.Input(4).Valid() {
		steps, ok := ints(4)
		if !ok || len(steps) != len(starts) || slices.ContainsFunc(steps, func(v int64) bool { return v != 1 }) {
			return false
		}
	}
	for i, ax := range axes {
		if ax < 0 {
			ax += int64(len(dims))
		}
		if ax < 0 || ax >= int64(len(dims)) {
			return false
		}
		start, end := starts[i], ends[i]
		if d := dims[ax]; d.IsStatic() {
			if start < 0 {
				start += d.Size
			}
			if end < 0 {
				end += d.Size
			}
			if start > 0 || end < d.Size {
				return false
			}
		} else if start != 0 || end < 1<<62 {
			return false
		}
	}
	return true
}

// maxFoldElements bounds the size of a folded value (16 MiB of f32), so
// folding never materialises a huge ConstantOfShape or Expand: such a node
// stays in the graph and runs at inference, where the device's memory
// budget (MAX_HOST_MEMORY, the device's own) judges it.
const maxFoldElements = 1 << 22

// tooLargeToFold reports whether a value of shape s is over maxFoldElements
// (or so large its element count overflows).
func tooLargeToFold(s tensor.Shape) bool {
	n, ok := s.Bytes(tensor.U8) // one byte per element: the element count
	return !ok || n > maxFoldElements
}

// errNoEval means the built-in evaluator cannot compute a node.
var errNoEval = errors.New("fusion: no built-in evaluator")

// ConstantFolding evaluates every node whose inputs are all constants (or
// whose value graph.StaticValue knows, such as Shape of a static shape) on
// the host and replaces it with a Constant carrying its fused names. It
// leaves DequantizeLinear alone, as ONNX Runtime's folding does: the
// dequantization of quantized weights is part of the QDQ patterns
// FuseQuantized turns into integer ops, and FuseQuantized folds the ones
// it leaves.
func ConstantFolding() Pass {
	return Pass{Name: PassConstantFolding, Doc: "evaluate constant subgraphs on the host (but DequantizeLinear)",
		Run: func(ctx context.Context, m *graph.Model, opts *Options) (int, error) {
			return foldConstants(ctx, m, opts, notDequantize)
		}}
}

// notDequantize is ConstantFolding's filter: every node but
// DequantizeLinear.
func notDequantize(n *graph.Node) bool { return n.OpType != "DequantizeLinear" }

// nodesAndConsumers returns m's nodes in topological order and the
// consumers of each output.
func nodesAndConsumers(m *graph.Model) ([]*graph.Node, map[graph.Output][]graph.Input, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, nil, err
	}
	cons, err := m.Consumers()
	return nodes, cons, err
}

// foldConstants folds the constant nodes fold accepts.
func foldConstants(ctx context.Context, m *graph.Model, opts *Options, fold func(*graph.Node) bool) (int, error) {
	rw, err := newRewriter(m)
	if err != nil {
		return 0, err
	}
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
			continue
		}
		if !fold(n) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return count, err
		}
		outs, ok, err := evalConst(n, opts)
		if err != nil {
			return count, err
		}
		if !ok {
			continue
		}
		// Producers first, the folded node last, as in ApplyRules.
		var names []string
		for _, in := range n.Inputs {
			if in.Valid() && in.Node.OpType == graph.OpConstant && len(in.Node.RT.FusedNames) > 0 {
				names = mergeNames(names, in.Node.RT.FusedNames)
			}
		}
		names = mergeNames(names, n.OriginalNames())
		for i, v := range outs {
			old := n.Out(i)
			if len(cons[old]) == 0 {
				continue
			}
			// A single-output node goes away entirely, so its constant
			// can take its name.
			name := n.Name
			if len(n.Outputs) > 1 {
				name = rw.uniqueName(n.Outputs[i].Name)
			}
			c := graph.NewConstant(name, v)
			c.Outputs[0].Name = n.Outputs[i].Name
			c.RT.FusedNames = names
			c.RT.Affinity = n.RT.Affinity
			replaceUses(cons, old, c.Out(0))
			for _, u := range cons[old] {
				cons[c.Out(0)] = append(cons[c.Out(0)], u)
			}
		}
		count++
	}
	return count, nil
}

// evalConst computes n's outputs when they are known before inference.
func evalConst(n *graph.Node, opts *Options) ([]*tensor.Tensor, bool, error) {
	if len(n.Outputs) == 1 {
		if s, ok := n.Outputs[0].Shape.ToShape(); ok && tooLargeToFold(s) {
			return nil, false, nil
		}
		if n.OpType != graph.OpConstant {
			if v, ok := graph.StaticValue(n.Out(0)); ok {
				return []*tensor.Tensor{v.Clone()}, true, nil
			}
		}
	}
	in := make([]*tensor.Tensor, len(n.Inputs))
	for i, x := range n.Inputs {
		if !x.Valid() {
			continue
		}
		if x.Node.OpType != graph.OpConstant || x.Node.Value == nil {
			return nil, false, nil
		}
		in[i] = x.Node.Value
	}
	if len(n.Inputs) == 0 || graph.FoldOf(n) == graph.FoldNever {
		return nil, false, nil // a source op (e.g. RandomNormal) is not constant data
	}
	eval := opts.Eval
	if eval == nil {
		eval = builtinEval
	}
	outs, err := eval(n, in)
	if errors.Is(err, errNoEval) || errors.Is(err, tensor.ErrTooLarge) {
		return nil, false, nil // left to run at inference, under its budget
	}
	if err != nil {
		return nil, false, err
	}
	if len(outs) < len(n.Outputs) {
		return nil, false, n.Errorf("evaluator returned %d outputs, want %d", len(outs), len(n.Outputs))
	}
	for i, o := range outs[:len(n.Outputs)] {
		if o == nil {
			return nil, false, n.Errorf("evaluator returned no value for output %d", i)
		}
		if o.NumElements() > maxFoldElements {
			return nil, false, nil
		}
		if o.Type() != n.Outputs[i].Type {
			return nil, false, n.Errorf("folded output %d is %v, inference says %v", i, o.Type(), n.Outputs[i].Type)
		}
	}
	return outs[:len(n.Outputs)], true, nil
}

// builtinEval computes the few ops folding needs without a device: Cast,
// Identity and reshapes to a statically inferred shape.
func builtinEval(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, errNoEval
	}
	switch n.OpType {
	case "Cast":
		v, err := in[0].Convert(tensor.ElementType(n.Attrs.Int("to", 0)))
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		return []*tensor.Tensor{v}, nil
	case "Identity":
		return []*tensor.Tensor{in[0].Clone()}, nil
	case "Reshape", "Flatten", "Squeeze", "Unsqueeze":
		s, ok := n.Outputs[0].Shape.ToShape()
		if !ok {
			return nil, errNoEval
		}
		v, err := in[0].Clone().Reshape(s)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		return []*tensor.Tensor{v}, nil
	}
	return nil, errNoEval
}

// DeadCodeRemoval drops trailing optional outputs nobody reads (MaxPool
// Indices, Dropout mask, LayerNormalization statistics) so devices do not
// compute them. Nodes no Result depends on are not part of the model
// (Model.Nodes walks from the Results) and vanish with the first pass that
// rewrites their consumers; the count reports both kinds.
func DeadCodeRemoval() Pass {
	return Pass{Name: PassDeadCodeRemoval, Doc: "drop unused optional outputs and unreachable nodes", Run: removeDeadCode}
}

func removeDeadCode(_ context.Context, m *graph.Model, _ *Options) (int, error) {
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		spec, ok := graph.Lookup(n.OpType)
		keep := spec.KeepOutputs // > 0: the outputs after keep are optional
		if !ok || n.Domain != "" || keep == 0 {
			continue
		}
		last := len(n.Outputs)
		for last > keep && len(cons[n.Out(last-1)]) == 0 {
			last--
		}
		if last < len(n.Outputs) {
			n.Outputs = n.Outputs[:last]
			count++
		}
	}
	return count, nil
}

// CollapseReshapeTranspose collapses Reshape(Reshape(x)) into one Reshape,
// Transpose(Transpose(x)) into one Transpose (or nothing when the
// permutations cancel), removes Reshapes to the shape x already has, and
// makes a ReduceMean, ReduceSum, ReduceMax, ReduceMin or ReduceProd over
// axes of size 1 (each output element is its one input element: Silero
// VAD's mean over one frame, static once FoldControlFlow has inlined its
// If) a Reshape, a view on the GPU instead of a launch.
func CollapseReshapeTranspose() Pass {
	return PatternPass(PassCollapseReshapeTranspose, "collapse consecutive Reshape and Transpose; a reduction over axes of size 1 becomes a Reshape", Rule{
		Name: "UnitReduce", Pattern: Op("ReduceMean|ReduceSum|ReduceMax|ReduceMin|ReduceProd", Any().As("x")).Where(unitReduce),
		Rewrite: func(m *Match) (graph.Output, error) {
			s, _ := m.Root.Outputs[0].Shape.ToShape()
			shape, err := tensor.FromI64(tensor.Shape{int64(len(s))}, slices.Clone([]int64(s)))
			if err != nil {
				return graph.Output{}, err
			}
			return m.NewNode("Reshape", []graph.Output{m.Value("x"), m.NewConst("shape", shape)}, nil, 1).Out(0), nil
		},
	}, Rule{
		Name: "ReshapeReshape",
		Pattern: Op("Reshape", Op("Reshape", Any().As("x")).As("inner"), Const().As("shape").ConstWhere(func(t *tensor.Tensor) bool {
			v, ok := graph.IntValues(t)
			if !ok {
				return false
			}
			for _, d := range v {
				if d == 0 {
					return false // 0 copies a dim of the inner reshape's output
				}
			}
			return true
		})),
		Rewrite: func(m *Match) (graph.Output, error) {
			n := m.NewNode("Reshape", []graph.Output{m.Value("x"), m.Value("shape")}, m.Root.Attrs.Clone(), 1)
			return n.Out(0), nil
		},
	}, Rule{
		Name: "NoopReshape",
		Pattern: Op("Reshape", Any().As("x")).Where(func(n *graph.Node) bool {
			a, ok1 := n.Input(0).Shape().ToShape()
			b, ok2 := n.Outputs[0].Shape.ToShape()
			return ok1 && ok2 && a.Equal(b)
		}),
		Rewrite: func(m *Match) (graph.Output, error) { return m.Value("x"), nil },
	}, Rule{
		Name:    "TransposeTranspose",
		Pattern: Op("Transpose", Op("Transpose", Any().As("x")).As("inner")),
		Rewrite: func(m *Match) (graph.Output, error) {
			x := m.Value("x")
			rank := x.Shape().Rank()
			p1, ok1 := perm(m.Node("inner"), rank)
			p2, ok2 := perm(m.Root, rank)
			if !ok1 || !ok2 {
				return graph.Output{}, nil
			}
			q := make([]int64, rank)
			identity := true
			for i := range q {
				q[i] = p1[p2[i]]
				identity = identity && q[i] == int64(i)
			}
			if identity {
				return x, nil
			}
			return m.NewNode("Transpose", []graph.Output{x}, graph.Attrs{"perm": q}, 1).Out(0), nil
		},
	})
}

// perm returns a Transpose's permutation (default: reversed axes).
func perm(n *graph.Node, rank int) ([]int64, bool) {
	if rank < 0 {
		return nil, false
	}
	p := n.Attrs.Ints("perm", nil)
	if p == nil {
		p = make([]int64, rank)
		for i := range p {
			p[i] = int64(rank - 1 - i)
		}
	}
	if len(p) != rank {
		return nil, false
	}
	return p, true
}

// EliminateDoubleRelu replaces Relu(Relu(x)) by Relu(x).
func EliminateDoubleRelu() Pass {
	return PatternPass(PassEliminateDoubleRelu, "Relu after Relu is one Relu", Rule{
		Name:    "ReluRelu",
		Pattern: Op("Relu", Op("Relu").As("inner")),
		Rewrite: func(m *Match) (graph.Output, error) { return m.Value("inner"), nil },
	})
}

// DivToMul turns Div(x, c) with a floating-point constant c into Mul(x,
// 1/c): one multiply per element instead of a divide.
func DivToMul() Pass {
	return PatternPass(PassDivToMul, "divide by a constant -> multiply by its reciprocal", Rule{
		Name: "DivConst",
		Pattern: Op("Div", Any().As("x"), Const().As("c").ConstWhere(func(t *tensor.Tensor) bool {
			if !t.Type().IsFloat() {
				return false
			}
			for _, v := range t.Float64s() {
				if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
			return true
		})),
		Rewrite: func(m *Match) (graph.Output, error) {
			c := m.Const("c")
			v := c.Float64s()
			for i := range v {
				v[i] = 1 / v[i]
			}
			r, err := tensor.FromFloat64s(c.Type(), c.Shape(), v)
			if err != nil {
				return graph.Output{}, err
			}
			return m.NewNode("Mul", []graph.Output{m.Value("x"), m.NewConst("reciprocal", r)}, nil, 1).Out(0), nil
		},
	})
}
