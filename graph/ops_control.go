package graph

import (
	"github.com/clinfer/clinfer/tensor"
)

// The control-flow ops: If, Loop and Scan (ONNX semantics of the newest
// opset). Each owns bodies (see bodies.go) that read the outer scope only
// through the node's trailing captured inputs: the last AttrCaptures
// inputs of the node are bound, in order, to the last AttrCaptures
// Parameters of every body.
//
//   - If(cond, captures...) -> outputs: then_branch and else_branch have
//     one Parameter per capture and one Result per output. The branches'
//     outputs may differ in shape; the node's outputs then have the merged
//     (dynamic) shape.
//   - Loop(M?, cond?, v_initial[N]..., captures...) -> v_final[N]...,
//     scan_outputs[S]...: body(iteration_num i64[], cond bool[],
//     v[N]..., captures...) -> cond_out, v_out[N]..., scan[S]...
//   - Scan(initial_state[N]..., scan_inputs[M]..., captures...) ->
//     final_state[N]..., scan_outputs[S]... with num_scan_inputs = M and
//     the axes and directions attributes of opset 11: body(state[N]...,
//     slice[M]..., captures...) -> state_out[N]..., slice_out[S]....
//     (The frontend converts opset 8's batched form.)
const (
	OpIf   = "If"
	OpLoop = "Loop"
	OpScan = "Scan"
)

// Attribute names of the control-flow ops (AttrBody is Loop's and Scan's
// body, as it is KernelFusion's).
const (
	// AttrThenBranch and AttrElseBranch are If's branches (*Model).
	AttrThenBranch = "then_branch"
	AttrElseBranch = "else_branch"
	// AttrCaptures is how many trailing inputs of a control node carry
	// values of the outer scope into its bodies (int64, default 0).
	AttrCaptures = "captures"
)

// Captures returns how many trailing inputs of n are captured outer-scope
// values (AttrCaptures), checked against its input count.
func Captures(n *Node) (int, error) {
	k := n.Attrs.Int(AttrCaptures, 0)
	if k < 0 || int(k) > len(n.Inputs) {
		return 0, n.Errorf("%s %d is out of range for %d inputs", AttrCaptures, k, len(n.Inputs))
	}
	return int(k), nil
}

// body returns the *Model attribute attr of n.
func body(n *Node, attr string) (*Model, error) {
	m, ok := n.Attrs[attr].(*Model)
	if !ok || m == nil {
		return nil, n.Errorf("attribute %q (a subgraph) is missing", attr)
	}
	return m, nil
}

// IfBranches returns If node n's then and else branches after checking
// that each has one Parameter per captured input and one Result per
// output.
func IfBranches(n *Node) (then, els *Model, err error) {
	if then, err = body(n, AttrThenBranch); err != nil {
		return nil, nil, err
	}
	if els, err = body(n, AttrElseBranch); err != nil {
		return nil, nil, err
	}
	for _, b := range []*Model{then, els} {
		if len(b.Parameters) != len(n.Inputs)-1 {
			return nil, nil, n.Errorf("branch %q has %d parameters for %d captured inputs", b.Name, len(b.Parameters), len(n.Inputs)-1)
		}
		if len(b.Results) != len(n.Outputs) {
			return nil, nil, n.Errorf("branch %q has %d results for %d outputs", b.Name, len(b.Results), len(n.Outputs))
		}
	}
	return then, els, nil
}

// ConstCond returns the value of a condition known before inference (a
// constant or static shape arithmetic): ok is false when it is not known.
func ConstCond(o Output) (cond, ok bool) {
	t, ok := StaticValue(o)
	if !ok || t.NumElements() != 1 {
		return false, false
	}
	return t.Float64s()[0] != 0, true
}

// inferIf binds both branches to the captured inputs and takes the
// outputs from the branch a known condition picks, or the merge of both.
func inferIf(n *Node) error {
	cond, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if cond.Shape().IsStatic() {
		if s, _ := cond.Shape().ToShape(); s.NumElements() != 1 {
			return n.Errorf("condition has shape %v, want one element", cond.Shape())
		}
	}
	then, els, err := IfBranches(n)
	if err != nil {
		return err
	}
	ports := inputPorts(n, 1, len(n.Inputs))
	// A known condition binds only the branch it takes: the other may not
	// even be valid for these shapes (Silero's 8 kHz network given a
	// 16 kHz chunk), which is why it is not taken.
	c, known := ConstCond(cond)
	if n.Attrs.Has(AttrDataSize) {
		// A device read the condition back (an If whose branches' outputs
		// differ in shape is a DataSized op): the rest is planned for it.
		c, known = n.Attrs.Int(AttrDataSize, 0) != 0, true
	}
	var thenErr, elseErr error
	if !known || c {
		thenErr = bindBody(n, AttrThenBranch, then, ports)
	}
	if !known || !c {
		elseErr = bindBody(n, AttrElseBranch, els, ports)
	}
	switch {
	case known && c && thenErr != nil:
		return thenErr
	case known && !c && elseErr != nil:
		return elseErr
	case thenErr != nil && elseErr != nil:
		return thenErr
	case thenErr != nil:
		// A branch the inputs' shapes make invalid can only fail when it
		// runs (ONNX Runtime checks nothing else): the node has the
		// other's outputs, and a device that plans branches refuses to
		// run this one.
		known, c = true, false
	case elseErr != nil:
		known, c = true, true
	}
	for j := range n.Outputs {
		a, b := resultPort(then, j), resultPort(els, j)
		switch {
		case known && c:
			setOutput(n, j, a.Type, a.Shape.Clone())
		case known:
			setOutput(n, j, b.Type, b.Shape.Clone())
		default:
			if a.Type != b.Type {
				return n.Errorf("output %d is %v in branch %q and %v in branch %q", j, a.Type, then.Name, b.Type, els.Name)
			}
			setOutput(n, j, a.Type, MergeShapes(a.Shape, b.Shape))
		}
	}
	return nil
}

// LoopLayout is how a Loop node's inputs and outputs map onto its body.
type LoopLayout struct {
	// Carried is N, the loop-carried values.
	Carried int
	// ScanOutputs is S, the values each iteration appends to.
	ScanOutputs int
	// Captures is K, the trailing captured inputs.
	Captures int
}

// LoopBody returns Loop node n's body and layout after checking them:
// inputs M?, cond?, N carried, K captures; body parameters iteration,
// cond, N carried, K captures; body results cond, N carried, S scan
// outputs; node outputs N carried, S scan outputs.
func LoopBody(n *Node) (*Model, LoopLayout, error) {
	b, err := body(n, AttrBody)
	if err != nil {
		return nil, LoopLayout{}, err
	}
	k, err := Captures(n)
	if err != nil {
		return nil, LoopLayout{}, err
	}
	l := LoopLayout{Captures: k, Carried: len(n.Inputs) - 2 - k}
	if l.Carried < 0 {
		return nil, l, n.Errorf("has %d inputs with %d captures, want M, cond and the carried values first", len(n.Inputs), k)
	}
	if len(b.Parameters) != 2+l.Carried+k {
		return nil, l, n.Errorf("body %q has %d parameters, want %d (iteration, condition, %d carried, %d captured)", b.Name, len(b.Parameters), 2+l.Carried+k, l.Carried, k)
	}
	l.ScanOutputs = len(b.Results) - 1 - l.Carried
	if l.ScanOutputs < 0 {
		return nil, l, n.Errorf("body %q has %d results, want the condition and %d carried values first", b.Name, len(b.Results), l.Carried)
	}
	if len(n.Outputs) != l.Carried+l.ScanOutputs {
		return nil, l, n.Errorf("has %d outputs, want %d (%d carried, %d scan outputs)", len(n.Outputs), l.Carried+l.ScanOutputs, l.Carried, l.ScanOutputs)
	}
	return b, l, nil
}

// LoopTripCount returns the number of iterations a Loop node runs when it
// is known before inference: a known M, no condition or a known true one,
// and a body whose condition output is its condition input passed on or a
// constant true. ok is false otherwise.
func LoopTripCount(n *Node) (int64, bool) {
	b, l, err := LoopBody(n)
	if err != nil || !n.Input(0).Valid() {
		return 0, false
	}
	mv, ok := StaticValue(n.Input(0))
	if !ok || mv.NumElements() != 1 {
		return 0, false
	}
	if l.ScanOutputs < 0 {
		return 0, false
	}
	if n.Input(1).Valid() {
		if c, ok := ConstCond(n.Input(1)); !ok || !c {
			if ok && !c {
				return 0, true
			}
			return 0, false
		}
	}
	if !LoopCondPassThrough(b) {
		return 0, false
	}
	return max(int64(mv.Float64s()[0]), 0), true
}

// LoopCondPassThrough reports whether a Loop body's condition output is
// its condition input (possibly through Identity) or a constant true: the
// loop then stops only at its trip count.
func LoopCondPassThrough(b *Model) bool {
	if len(b.Results) == 0 || len(b.Parameters) < 2 {
		return false
	}
	src := b.Results[0].Input(0)
	for src.Valid() && src.Node.OpType == "Identity" {
		src = src.Node.Input(0)
	}
	if src.Node == b.Parameters[1] {
		return true
	}
	c, ok := ConstCond(src)
	return ok && c
}

// inferLoop binds the body, widening the carried values' shapes until
// they agree with what the body makes of them, and stacks the scan
// outputs along a new leading axis of the trip count (dynamic unless
// LoopTripCount knows it).
func inferLoop(n *Node) error {
	b, l, err := LoopBody(n)
	if err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		if in := n.Input(i); in.Valid() && in.Shape().IsStatic() {
			if s, _ := in.Shape().ToShape(); s.NumElements() != 1 {
				return n.Errorf("input %d has shape %v, want one element", i, in.Shape())
			}
		}
	}
	ports := append([]PortType{{Type: tensor.I64, Shape: ShapeOf()}, {Type: tensor.Bool, Shape: ShapeOf()}},
		inputPorts(n, 2, len(n.Inputs))...)
	// A carried value may change shape between iterations: widen its
	// Parameter to the merge of what goes in and what comes out, until
	// nothing changes (each round makes a dimension dynamic or stops).
	for round := 0; ; round++ {
		if err := bindBody(n, AttrBody, b, ports); err != nil {
			return err
		}
		changed := false
		for i := 0; i < l.Carried; i++ {
			out := resultPort(b, 1+i)
			p := &ports[2+i]
			if !p.Type.Valid() {
				p.Type, p.Shape, p.Kind = out.Type, out.Shape.Clone(), out.Kind
				changed = true
				continue
			}
			if out.Type != p.Type && out.Type.Valid() {
				return n.Errorf("carried value %d goes in as %v and the body makes it %v", i, p.Type, out.Type)
			}
			if m := MergeShapes(p.Shape, out.Shape); !SameShape(m, p.Shape) {
				p.Shape = m
				changed = true
			}
		}
		if !changed {
			break
		}
		if round > 8 {
			return n.Errorf("the carried values' shapes do not settle")
		}
	}
	trip := DynamicDim("")
	if t, ok := LoopTripCount(n); ok {
		trip = StaticDim(t)
	}
	for i := 0; i < l.Carried; i++ {
		setOutput(n, i, ports[2+i].Type, ports[2+i].Shape.Clone())
		n.Outputs[i].Kind = resultPort(b, 1+i).Kind // what the body makes of a carried value: a sequence stays one
	}
	for j := 0; j < l.ScanOutputs; j++ {
		r := resultPort(b, 1+l.Carried+j)
		setOutput(n, l.Carried+j, r.Type, prependDim(trip, r.Shape))
	}
	return nil
}

// prependDim returns s with d inserted before its first dimension.
func prependDim(d Dim, s PartialShape) PartialShape {
	return insertDim(s, 0, d)
}

// insertDim returns s with d inserted at axis (0 <= axis <= rank).
func insertDim(s PartialShape, axis int, d Dim) PartialShape {
	if !s.RankKnown {
		return DynamicRank
	}
	out := PartialShape{RankKnown: true, Dims: make([]Dim, 0, len(s.Dims)+1)}
	out.Dims = append(out.Dims, s.Dims[:axis]...)
	out.Dims = append(out.Dims, d)
	out.Dims = append(out.Dims, s.Dims[axis:]...)
	return out
}

// ScanLayout is how a Scan node's inputs and outputs map onto its body,
// with its axes and directions (normalised, reverse = true).
type ScanLayout struct {
	// States is N, ScanInputs M, ScanOutputs S, Captures K.
	States, ScanInputs, ScanOutputs, Captures int
	// InAxes and InReverse are per scan input; OutAxes and OutReverse per
	// scan output (axes of the node's output, rank of the body's + 1).
	InAxes, OutAxes       []int
	InReverse, OutReverse []bool
}

// ScanBody returns Scan node n's body and layout after checking them.
// Axes are normalised against the ranks the inputs and body results have
// when known (a negative axis of an unknown rank stays negative).
func ScanBody(n *Node) (*Model, ScanLayout, error) {
	b, err := body(n, AttrBody)
	if err != nil {
		return nil, ScanLayout{}, err
	}
	k, err := Captures(n)
	if err != nil {
		return nil, ScanLayout{}, err
	}
	l := ScanLayout{Captures: k, ScanInputs: int(n.Attrs.Int("num_scan_inputs", -1))}
	if l.ScanInputs < 1 {
		return nil, l, n.Errorf("num_scan_inputs is %d, want at least 1", l.ScanInputs)
	}
	l.States = len(n.Inputs) - l.ScanInputs - k
	if l.States < 0 {
		return nil, l, n.Errorf("has %d inputs for %d scan inputs and %d captures", len(n.Inputs), l.ScanInputs, k)
	}
	if len(b.Parameters) != l.States+l.ScanInputs+k {
		return nil, l, n.Errorf("body %q has %d parameters, want %d", b.Name, len(b.Parameters), l.States+l.ScanInputs+k)
	}
	l.ScanOutputs = len(b.Results) - l.States
	if l.ScanOutputs < 0 || len(n.Outputs) != len(b.Results) {
		return nil, l, n.Errorf("body %q has %d results for %d outputs and %d states", b.Name, len(b.Results), len(n.Outputs), l.States)
	}
	inAxes, err := n.IntsAttr("scan_input_axes", l.ScanInputs, 0)
	if err != nil {
		return nil, l, err
	}
	inDirs, err := n.IntsAttr("scan_input_directions", l.ScanInputs, 0)
	if err != nil {
		return nil, l, err
	}
	outAxes, err := n.IntsAttr("scan_output_axes", l.ScanOutputs, 0)
	if err != nil {
		return nil, l, err
	}
	outDirs, err := n.IntsAttr("scan_output_directions", l.ScanOutputs, 0)
	if err != nil {
		return nil, l, err
	}
	for j := 0; j < l.ScanInputs; j++ {
		in := n.Input(l.States + j)
		if !in.Valid() {
			return nil, l, n.Errorf("scan input %d is missing", j)
		}
		ax := int(inAxes[j])
		if r := in.Shape().Rank(); r >= 0 {
			if ax, err = NormalizeAxis(n, inAxes[j], r); err != nil {
				return nil, l, err
			}
		}
		l.InAxes = append(l.InAxes, ax)
		l.InReverse = append(l.InReverse, inDirs[j] != 0)
	}
	for j := 0; j < l.ScanOutputs; j++ {
		ax := int(outAxes[j])
		if r := b.Results[l.States+j].Outputs[0].Shape.Rank(); r >= 0 {
			if ax, err = NormalizeAxis(n, outAxes[j], r+1); err != nil {
				return nil, l, err
			}
		}
		l.OutAxes = append(l.OutAxes, ax)
		l.OutReverse = append(l.OutReverse, outDirs[j] != 0)
	}
	return b, l, nil
}

// inferScan binds the body to the states and one slice of each scan
// input, and inserts the number of iterations into the scan outputs.
func inferScan(n *Node) error {
	b, l, err := ScanBody(n)
	if err != nil {
		return err
	}
	ports := inputPorts(n, 0, len(n.Inputs))
	trip := DynamicDim("")
	tripSet := false
	for j := 0; j < l.ScanInputs; j++ {
		p := &ports[l.States+j]
		ax := l.InAxes[j]
		if !p.Shape.RankKnown || ax < 0 {
			p.Shape = DynamicRank
			continue
		}
		if ax >= len(p.Shape.Dims) {
			return n.Errorf("scan input %d has rank %d, too small for axis %d", j, len(p.Shape.Dims), ax)
		}
		d := p.Shape.Dims[ax]
		if !tripSet || (!trip.IsStatic() && d.IsStatic()) {
			trip, tripSet = d, true
		} else if d.IsStatic() && trip.IsStatic() && d.Size != trip.Size {
			return n.Errorf("scan inputs have %d and %d iterations along their axes", trip.Size, d.Size)
		}
		dims := append(append([]Dim{}, p.Shape.Dims[:ax]...), p.Shape.Dims[ax+1:]...)
		p.Shape = PartialShape{RankKnown: true, Dims: dims}
	}
	if err := bindBody(n, AttrBody, b, ports); err != nil {
		return err
	}
	// ScanBody normalised the output axes before the body was bound: do it
	// again now that the body's result ranks are known.
	if _, l, err = ScanBody(n); err != nil {
		return err
	}
	for i := 0; i < l.States; i++ {
		out := resultPort(b, i)
		in := ports[i]
		if in.Type.Valid() && out.Type != in.Type {
			return n.Errorf("state %d goes in as %v and the body makes it %v", i, in.Type, out.Type)
		}
		setOutput(n, i, out.Type, MergeShapes(in.Shape, out.Shape))
	}
	for j := 0; j < l.ScanOutputs; j++ {
		r := resultPort(b, l.States+j)
		shape := DynamicRank
		if ax := l.OutAxes[j]; ax >= 0 && r.Shape.RankKnown {
			shape = insertDim(r.Shape, ax, trip)
		}
		setOutput(n, l.States+j, r.Type, shape)
	}
	return nil
}

// controlOps are the control-flow ops. Loop's M and cond are host inputs:
// the GPU plans a loop for a trip count it knows. If is DataSized: when its
// branches' outputs differ in shape, the shapes after it depend on the
// condition's value, which a device may read back and plan the rest for
// (AttrDataSize carries it: 1 for then, 0 for else).
var controlOps = []OpSpec{
	{Name: OpIf, MinInputs: 1, MaxInputs: -1, DataSized: true, Values: true, Infer: branchKinds(inferIf)},
	{Name: OpLoop, MinInputs: 2, MaxInputs: -1, HostInputs: []int{0, 1}, Values: true, Infer: inferLoop},
	{Name: OpScan, MinInputs: 1, MaxInputs: -1, Infer: inferScan},
}
