package graph

import "github.com/clinfer/clinfer/tensor"

// Sequences and optionals (tensor.Kind). A sequence port's Type and Shape
// describe its tensors (Shape merges what is common to them); an
// optional's describe its content. The ops' values live on the host: the
// GPU places them in host parts.

// AttrValueKind is Optional's attribute, set by the ONNX frontend from its
// type attribute, that says what an empty optional would hold: the
// tensor.Kind KindOptional or KindOptionalSequence (with "dtype", the
// element type).
const AttrValueKind = "value_kind"

// setValue sets output i's type, shape and kind.
func setValue(n *Node, i int, t tensor.ElementType, s PartialShape, k tensor.Kind) {
	setOutput(n, i, t, s)
	n.Outputs[i].Kind = k
}

// needKind returns input i, checking that it is of kind k.
func needKind(n *Node, i int, k tensor.Kind) (Output, error) {
	in, err := requiredInput(n, i)
	if err != nil {
		return Output{}, err
	}
	if in.Kind() != k {
		return Output{}, n.Errorf("input %d is %v, want a %v", i, in.Port(), k)
	}
	return in, nil
}

// tensorInput returns input i, checking that it is a tensor.
func tensorInput(n *Node, i int) (Output, error) { return needKind(n, i, tensor.KindTensor) }

// checkPosition checks that optional input i, a position, is an integer
// scalar.
func checkPosition(n *Node, i int) error {
	p := n.Input(i)
	if !p.Valid() {
		return nil
	}
	if p.Kind() != tensor.KindTensor || (p.Type() != tensor.I32 && p.Type() != tensor.I64) {
		return n.Errorf("position (input %d) is %v, want an i32 or i64 scalar", i, p.Port())
	}
	if s, ok := p.Shape().ToShape(); ok && s.NumElements() != 1 {
		return n.Errorf("position (input %d) has shape %v, want a scalar", i, s)
	}
	return nil
}

func inferSequenceEmpty(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	t := tensor.ElementType(n.Attrs.Int("dtype", int64(tensor.F32)))
	if !t.Valid() {
		return n.Errorf("dtype %d is not an element type", int64(t))
	}
	setValue(n, 0, t, DynamicRank, tensor.KindSequence)
	return nil
}

func inferSequenceConstruct(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	first, err := tensorInput(n, 0)
	if err != nil {
		return err
	}
	shape := first.Shape()
	for i := 1; i < len(n.Inputs); i++ {
		in, err := tensorInput(n, i)
		if err != nil {
			return err
		}
		if in.Type() != first.Type() {
			return n.Errorf("input %d has element type %v, want %v as input 0", i, in.Type(), first.Type())
		}
		shape = MergeShapes(shape, in.Shape())
	}
	setValue(n, 0, first.Type(), shape.Clone(), tensor.KindSequence)
	return nil
}

func inferSequenceAt(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	s, err := needKind(n, 0, tensor.KindSequence)
	if err != nil {
		return err
	}
	if _, err := requiredInput(n, 1); err != nil {
		return err
	}
	if err := checkPosition(n, 1); err != nil {
		return err
	}
	setValue(n, 0, s.Type(), s.Shape().Clone(), tensor.KindTensor)
	return nil
}

func inferSequenceInsert(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	s, err := needKind(n, 0, tensor.KindSequence)
	if err != nil {
		return err
	}
	x, err := tensorInput(n, 1)
	if err != nil {
		return err
	}
	if x.Type() != s.Type() {
		return n.Errorf("inserts %v into a sequence of %v", x.Type(), s.Type())
	}
	if err := checkPosition(n, 2); err != nil {
		return err
	}
	setValue(n, 0, s.Type(), MergeShapes(s.Shape(), x.Shape()), tensor.KindSequence)
	return nil
}

func inferSequenceErase(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	s, err := needKind(n, 0, tensor.KindSequence)
	if err != nil {
		return err
	}
	if err := checkPosition(n, 1); err != nil {
		return err
	}
	setValue(n, 0, s.Type(), s.Shape().Clone(), tensor.KindSequence)
	return nil
}

func inferSequenceLength(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if _, err := needKind(n, 0, tensor.KindSequence); err != nil {
		return err
	}
	setValue(n, 0, tensor.I64, ShapeOf(), tensor.KindTensor)
	return nil
}

// inferSplitToSequence is SplitToSequence(input, split?) with axis and
// keepdims: the pieces along axis (of split's sizes, of a scalar split's
// size with a shorter last one, or of size 1 without split, the axis
// removed when keepdims=0).
func inferSplitToSequence(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := tensorInput(n, 0)
	if err != nil {
		return err
	}
	if sp := n.Input(1); sp.Valid() && (sp.Kind() != tensor.KindTensor || !sp.Type().IsInteger()) {
		return n.Errorf("split (input 1) is %v, want an integer tensor", sp.Port())
	}
	xs := x.Shape()
	if !xs.RankKnown {
		setValue(n, 0, x.Type(), DynamicRank, tensor.KindSequence)
		return nil
	}
	ax, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), len(xs.Dims))
	if err != nil {
		return err
	}
	out := xs.Clone()
	switch {
	case !n.Input(1).Valid() && n.Attrs.Int("keepdims", 1) == 0:
		out.Dims = append(out.Dims[:ax:ax], out.Dims[ax+1:]...)
	case !n.Input(1).Valid():
		out.Dims[ax] = StaticDim(1)
	default:
		out.Dims[ax] = DynamicDim("")
	}
	setValue(n, 0, x.Type(), out, tensor.KindSequence)
	return nil
}

// inferConcatFromSequence is ConcatFromSequence(seq) with axis and
// new_axis: the tensors concatenated along axis, or stacked along a new
// axis (-r-1 <= axis <= r) with new_axis=1.
func inferConcatFromSequence(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	s, err := needKind(n, 0, tensor.KindSequence)
	if err != nil {
		return err
	}
	if _, ok := n.Attrs["axis"]; !ok {
		return n.Errorf("attribute axis is required")
	}
	es := s.Shape()
	if !es.RankKnown {
		setValue(n, 0, s.Type(), DynamicRank, tensor.KindTensor)
		return nil
	}
	r := len(es.Dims)
	newAxis := n.Attrs.Int("new_axis", 0) == 1
	if newAxis {
		r++
	}
	ax, err := NormalizeAxis(n, n.Attrs.Int("axis", 0), r)
	if err != nil {
		return err
	}
	out := es.Clone()
	if newAxis {
		out = insertDim(out, ax, DynamicDim(""))
	} else {
		out.Dims[ax] = DynamicDim("")
	}
	setValue(n, 0, s.Type(), out, tensor.KindTensor)
	return nil
}

// inferSequenceMap binds the body's Parameters to one element of each
// sequence input and to each tensor input as a whole (then the captured
// values) and makes each body output a sequence.
func inferSequenceMap(n *Node) error {
	b, err := body(n, AttrBody)
	if err != nil {
		return err
	}
	if _, err := needKind(n, 0, tensor.KindSequence); err != nil {
		return err
	}
	if len(b.Results) != len(n.Outputs) {
		return n.Errorf("body %q has %d outputs, the node %d", b.Name, len(b.Results), len(n.Outputs))
	}
	ports := inputPorts(n, 0, len(n.Inputs))
	for i := range ports {
		switch ports[i].Kind {
		case tensor.KindSequence:
			ports[i].Kind = tensor.KindTensor
		case tensor.KindTensor:
		default:
			return n.Errorf("input %d is %v, want a sequence or a tensor", i, n.Inputs[i].Port())
		}
	}
	if err := bindBody(n, AttrBody, b, ports); err != nil {
		return err
	}
	for j := range n.Outputs {
		r := resultPort(b, j)
		if r.Kind != tensor.KindTensor {
			return n.Errorf("body output %d is a %v, want a tensor", j, r.Kind)
		}
		setValue(n, j, r.Type, r.Shape.Clone(), tensor.KindSequence)
	}
	return nil
}

// inferOptional is Optional(input?): an optional holding input, or, with
// no input, an empty one of the kind and element type its attributes say
// (AttrValueKind, dtype).
func inferOptional(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if in := n.Input(0); in.Valid() {
		switch in.Kind() {
		case tensor.KindTensor:
			setValue(n, 0, in.Type(), in.Shape().Clone(), tensor.KindOptional)
		case tensor.KindSequence:
			setValue(n, 0, in.Type(), in.Shape().Clone(), tensor.KindOptionalSequence)
		default:
			return n.Errorf("input is %v; an optional holds a tensor or a sequence", in.Port())
		}
		return nil
	}
	k := tensor.Kind(n.Attrs.Int(AttrValueKind, int64(tensor.KindOptional)))
	t := tensor.ElementType(n.Attrs.Int("dtype", 0))
	if !k.IsOptional() || !t.Valid() {
		return n.Errorf("an Optional without input needs its type attribute (an optional tensor or sequence type)")
	}
	setValue(n, 0, t, DynamicRank, k)
	return nil
}

// inferOptionalHasElement is OptionalHasElement(input?): whether an
// optional holds a value (true for a tensor or sequence, false when the
// input is omitted).
func inferOptionalHasElement(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	setValue(n, 0, tensor.Bool, ShapeOf(), tensor.KindTensor)
	return nil
}

// inferOptionalGetElement is OptionalGetElement(input): an optional's
// content; a tensor or sequence passes through.
func inferOptionalGetElement(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	in, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	setValue(n, 0, in.Type(), in.Shape().Clone(), in.Kind().Elem())
	return nil
}

// branchKinds wraps If's inference: its outputs are sequences or
// optionals where the branches' results are (both branches must agree).
func branchKinds(infer func(*Node) error) func(*Node) error {
	return func(n *Node) error {
		if err := infer(n); err != nil {
			return err
		}
		then, els, err := IfBranches(n)
		if err != nil {
			return err
		}
		for j := range n.Outputs {
			a, b := resultPort(then, j).Kind, resultPort(els, j).Kind
			if a != b {
				return n.Errorf("output %d is a %v in branch %q and a %v in branch %q", j, a, then.Name, b, els.Name)
			}
			n.Outputs[j].Kind = a
		}
		return nil
	}
}

// sequenceOps are the rows of the sequence family. SequenceMap and
// Optional import through onnx/ops_sequence.go (a body; a type
// attribute).
var sequenceOps = []OpSpec{
	{Name: "SequenceEmpty", MinInputs: 0, MaxInputs: 0, Values: true, Infer: inferSequenceEmpty},
	{Name: "SequenceConstruct", Since: 11, MinInputs: 1, MaxInputs: -1, Values: true, Infer: inferSequenceConstruct},
	{Name: "SequenceAt", Since: 11, MinInputs: 2, MaxInputs: 2, Values: true, Infer: inferSequenceAt},
	{Name: "SequenceInsert", Since: 11, MinInputs: 2, MaxInputs: 3, Values: true, Infer: inferSequenceInsert},
	{Name: "SequenceErase", Since: 11, MinInputs: 1, MaxInputs: 2, Values: true, Infer: inferSequenceErase},
	{Name: "SequenceLength", Since: 11, MinInputs: 1, MaxInputs: 1, Values: true, Infer: inferSequenceLength},
	{Name: "SplitToSequence", Since: 11, MinInputs: 1, MaxInputs: 2, Values: true, Infer: inferSplitToSequence},
	{Name: "ConcatFromSequence", Since: 11, MinInputs: 1, MaxInputs: 1, Values: true, Infer: inferConcatFromSequence},
	{Name: "SequenceMap", MinInputs: 1, MaxInputs: -1, Values: true, Infer: inferSequenceMap},
	{Name: "Optional", MinInputs: 0, MaxInputs: 1, Values: true, Infer: inferOptional},
	{Name: "OptionalHasElement", Since: 15, MinInputs: 0, MaxInputs: 1, Values: true, Infer: inferOptionalHasElement},
	{Name: "OptionalGetElement", Since: 15, MinInputs: 1, MaxInputs: 1, Values: true, Infer: inferOptionalGetElement},
}
