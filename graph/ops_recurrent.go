package graph

import (
	"slices"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// The recurrent family: LSTM, GRU and RNN with ONNX's semantics (opset 14:
// every attribute of the spec: direction forward, reverse or
// bidirectional; hidden_size; activations with activation_alpha and
// activation_beta; clip; layout; LSTM's input_forget; GRU's
// linear_before_reset), and the inputs X, W, R, B?, sequence_lens?,
// initial_h? (LSTM: initial_c?, P?) and outputs Y?, Y_h? (LSTM: Y_c?).
//
// Shapes, with D directions, S steps, N batch entries, H hidden units and
// G gates (LSTM 4: i, o, f, c; GRU 3: z, r, h; RNN 1): X [S, N, I] (layout
// 1: [N, S, I]); W [D, G*H, I]; R [D, G*H, H]; B [D, 2*G*H] (W's biases,
// then R's); sequence_lens [N] i32; initial states [D, N, H] (layout 1:
// [N, D, H]); P [D, 3*H] (i, o, f). Y [S, D, N, H] (layout 1: [N, S, D,
// H]); Y_h, Y_c like the initial states. Steps at or past a batch entry's
// length give zeros in Y and keep its state.

// RecurrentGates returns the number of gates of a recurrent op (LSTM 4,
// GRU 3, RNN 1) and the number of activations each direction lists.
func RecurrentGates(op string) (gates, activations int) {
	switch op {
	case "LSTM":
		return 4, 3
	case "GRU":
		return 3, 2
	case "RNN":
		return 1, 1
	}
	return 0, 0
}

// Activation is one activation function of a recurrent op, with its alpha
// and beta (the spec's defaults where the node gives none).
type Activation struct {
	Name        string
	Alpha, Beta float32
}

// activationParams are the activation functions of the RNN spec, with how
// many of activation_alpha and activation_beta each takes and their
// defaults (ONNX Runtime's).
var activationParams = map[string]struct {
	n           int
	alpha, beta float32
}{
	"relu": {0, 0, 0}, "tanh": {0, 0, 0}, "sigmoid": {0, 0, 0}, "softsign": {0, 0, 0}, "softplus": {0, 0, 0},
	"affine": {2, 1, 0}, "leakyrelu": {1, 0.01, 0}, "thresholdedrelu": {1, 1, 0},
	"scaledtanh": {2, 1, 1}, "hardsigmoid": {2, 0.2, 0.5}, "elu": {1, 1, 0},
}

// ActivationNames returns the recurrent activation functions, in lower
// case, sorted.
func ActivationNames() []string { return sortedKeys(activationParams) }

// RecurrentLayout is what a recurrent node's attributes and inputs say:
// its directions, hidden size, the activations of each direction (in the
// order the spec lists them), clip (0: none) and layout.
type RecurrentLayout struct {
	Gates, Directions int
	Hidden            int64
	// Reverse[d] is set for a direction that runs from the last step.
	Reverse []bool
	// Activations[d] are direction d's functions: LSTM f, g, h; GRU f, g;
	// RNN f.
	Activations [][]Activation
	Clip        float32
	// BatchFirst is layout 1.
	BatchFirst bool
	// InputForget couples LSTM's input and forget gates; LinearBeforeReset
	// is GRU's.
	InputForget, LinearBeforeReset bool
}

// Recurrent returns n's RecurrentLayout after checking its attributes
// against its op and, where known, W's shape.
func Recurrent(n *Node) (RecurrentLayout, error) {
	g, na := RecurrentGates(n.OpType)
	if g == 0 {
		return RecurrentLayout{}, n.Errorf("not a recurrent op")
	}
	l := RecurrentLayout{Gates: g, Directions: 1, Clip: n.Attrs.Float("clip", 0),
		BatchFirst: n.Attrs.Int("layout", 0) != 0, InputForget: n.Attrs.Int("input_forget", 0) != 0,
		LinearBeforeReset: n.Attrs.Int("linear_before_reset", 0) != 0}
	switch d := n.Attrs.String("direction", "forward"); d {
	case "forward":
		l.Reverse = []bool{false}
	case "reverse":
		l.Reverse = []bool{true}
	case "bidirectional":
		l.Directions, l.Reverse = 2, []bool{false, true}
	default:
		return l, n.Errorf("direction %q is not forward, reverse or bidirectional", d)
	}
	if l.Clip < 0 {
		return l, n.Errorf("clip %g is negative", l.Clip)
	}
	l.Hidden = n.Attrs.Int("hidden_size", -1)
	if w := n.Input(1); w.Valid() && w.Shape().RankKnown && len(w.Shape().Dims) == 3 {
		if d := w.Shape().Dims[1]; d.IsStatic() {
			if l.Hidden < 0 && d.Size%int64(g) == 0 {
				l.Hidden = d.Size / int64(g)
			}
			if d.Size != int64(g)*l.Hidden {
				return l, n.Errorf("W has %d rows, want %d gates of hidden_size %d", d.Size, g, l.Hidden)
			}
		}
		if d := w.Shape().Dims[0]; d.IsStatic() && d.Size != int64(l.Directions) {
			return l, n.Errorf("W is for %d directions, the node runs %d", d.Size, l.Directions)
		}
	}
	names := n.Attrs.Strings("activations", nil)
	if names == nil {
		def := map[string][]string{"LSTM": {"Sigmoid", "Tanh", "Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "RNN": {"Tanh"}}[n.OpType]
		for range l.Directions {
			names = append(names, def...)
		}
	}
	if len(names) != na*l.Directions {
		return l, n.Errorf("activations lists %d functions, want %d per direction", len(names), na)
	}
	alphas, betas := n.Attrs.Floats("activation_alpha", nil), n.Attrs.Floats("activation_beta", nil)
	ai, bi := 0, 0
	l.Activations = make([][]Activation, l.Directions)
	for i, name := range names {
		p, ok := activationParams[strings.ToLower(name)]
		if !ok {
			return l, n.Errorf("activation %q is not one of %s", name, strings.Join(ActivationNames(), ", "))
		}
		a := Activation{Name: strings.ToLower(name), Alpha: p.alpha, Beta: p.beta}
		// ONNX Runtime takes the lists in order, one alpha for each
		// function with a parameter and one beta for each with two.
		if p.n >= 1 && ai < len(alphas) {
			a.Alpha = alphas[ai]
			ai++
		}
		if p.n >= 2 && bi < len(betas) {
			a.Beta = betas[bi]
			bi++
		}
		l.Activations[i/na] = append(l.Activations[i/na], a)
	}
	return l, nil
}

// inferRecurrent checks the inputs' shapes and sets Y, Y_h (and Y_c).
func inferRecurrent(n *Node) error {
	l, err := Recurrent(n)
	if err != nil {
		return err
	}
	maxOut := 2
	if n.OpType == "LSTM" {
		maxOut = 3
	}
	if err := checkOutputs(n, 1, maxOut); err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	if !t.IsFloat() {
		return n.Errorf("element type %v, want a float type", t)
	}
	x := n.Inputs[0].Shape()
	seq, batch := DynamicDim(""), DynamicDim("")
	if x.RankKnown {
		if len(x.Dims) != 3 {
			return n.Errorf("X has shape %v, want rank 3", x)
		}
		seq, batch = x.Dims[0], x.Dims[1]
		if l.BatchFirst {
			seq, batch = batch, seq
		}
	}
	hidden := DynamicDim("")
	if l.Hidden >= 0 {
		hidden = StaticDim(l.Hidden)
	}
	d := StaticDim(int64(l.Directions))
	for i, want := range map[int]int{4: 1, 5: 3, 6: 3, 7: 2} {
		if i == 6 && n.OpType != "LSTM" || i == 7 && n.OpType != "LSTM" {
			continue
		}
		if in := n.Input(i); in.Valid() && in.Shape().RankKnown && len(in.Shape().Dims) != want {
			return n.Errorf("input %d has shape %v, want rank %d", i, in.Shape(), want)
		}
	}
	if sl := n.Input(4); sl.Valid() && !isIndexType(sl.Type()) {
		return n.Errorf("sequence_lens is %v, want i32", sl.Type())
	}
	ys := []Dim{seq, d, batch, hidden}
	hs := []Dim{d, batch, hidden}
	if l.BatchFirst {
		ys = []Dim{batch, seq, d, hidden}
		hs = []Dim{batch, d, hidden}
	}
	setOutput(n, 0, t, PartialShape{RankKnown: true, Dims: ys})
	for i := 1; i < len(n.Outputs); i++ {
		setOutput(n, i, t, PartialShape{RankKnown: true, Dims: slices.Clone(hs)})
	}
	return nil
}

// recurrentExample is a small instance of a recurrent op over every input
// it takes, for the device tests.
func recurrentExample(op, name string, attrs Attrs, layout bool, lens bool) Example {
	g, _ := RecurrentGates(op)
	const s, nb, in, h = 3, 2, 4, 5
	dirs := int64(1)
	if attrs.String("direction", "") == "bidirectional" {
		dirs = 2
	}
	x := []int64{s, nb, in}
	st := []int64{dirs, nb, h}
	if layout {
		x, st = []int64{nb, s, in}, []int64{nb, dirs, h}
		attrs["layout"] = int64(1)
	}
	attrs["hidden_size"] = int64(h)
	ins := []ExampleInput{{Shape: x}, {Shape: []int64{dirs, int64(g) * h, in}}, {Shape: []int64{dirs, int64(g) * h, h}},
		{Shape: []int64{dirs, 2 * int64(g) * h}}}
	if lens {
		ins = append(ins, ExampleInput{Type: tensor.I32, Shape: []int64{nb}, Ints: []int64{s, 2}})
	} else {
		ins = append(ins, ExampleInput{Omit: true})
	}
	ins = append(ins, ExampleInput{Shape: st})
	outs := 2
	if op == "LSTM" {
		ins = append(ins, ExampleInput{Shape: st}, ExampleInput{Shape: []int64{dirs, 3 * h}})
		outs = 3
	}
	return Example{Name: name, Attrs: attrs, Inputs: ins, Outputs: outs}
}

// recurrentOps are the recurrent ops. Only Y is computed unconditionally:
// dead-code removal drops Y_h and Y_c when nothing reads them.
var recurrentOps = []OpSpec{
	{Name: "LSTM", Since: 7, MinInputs: 3, MaxInputs: 8, KeepOutputs: 1, Infer: inferRecurrent, Examples: []Example{
		recurrentExample("LSTM", "bidirectional_peepholes_lens", Attrs{"direction": "bidirectional"}, false, true),
		recurrentExample("LSTM", "layout_clip_forget", Attrs{"direction": "reverse", "clip": float32(0.5), "input_forget": int64(1)}, true, false),
		recurrentExample("LSTM", "activations", Attrs{"activations": []string{"HardSigmoid", "LeakyRelu", "ScaledTanh"},
			"activation_alpha": []float32{0.3, 0.1, 0.8}, "activation_beta": []float32{0.4, 1.2}}, false, true),
	}},
	{Name: "GRU", Since: 7, MinInputs: 3, MaxInputs: 6, KeepOutputs: 1, Infer: inferRecurrent, Examples: []Example{
		recurrentExample("GRU", "bidirectional_lens", Attrs{"direction": "bidirectional"}, false, true),
		recurrentExample("GRU", "linear_before_reset_layout", Attrs{"linear_before_reset": int64(1), "direction": "reverse"}, true, true),
		recurrentExample("GRU", "activations_clip", Attrs{"activations": []string{"Affine", "Elu"},
			"activation_alpha": []float32{0.5, 0.7}, "activation_beta": []float32{0.1}, "clip": float32(2)}, false, false),
	}},
	{Name: "RNN", Since: 7, MinInputs: 3, MaxInputs: 6, KeepOutputs: 1, Infer: inferRecurrent, Examples: []Example{
		recurrentExample("RNN", "bidirectional_lens", Attrs{"direction": "bidirectional", "activations": []string{"Relu", "Softsign"}}, false, true),
		recurrentExample("RNN", "layout_thresholded", Attrs{"activations": []string{"ThresholdedRelu"}, "activation_alpha": []float32{0.2}}, true, false),
	}},
}
