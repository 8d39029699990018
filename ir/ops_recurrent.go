package ir

import (
	"maps"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// recurrentImports are OpenVINO's recurrent sequences and cells, read as
// the op set's LSTM, GRU and RNN (ONNX's, which the writer writes in
// clinfer's opset). A sequence runs batch first (ONNX's layout 1): X
// [N, S, I] and the states [N, D, H] are ONNX's, Y [N, D, S, H] is ONNX's
// [N, S, D, H] transposed. The weights are ONNX's but for the gate order
// (LSTM f, i, c, o: ONNX's i, o, f, c; GRU z, r, h and RNN as ONNX) and
// the bias, one per gate (GRU with linear_before_reset: four, the last
// R's of the candidate gate) where ONNX has W's and R's: the bias becomes
// ONNX's W half, its R half zeros. A cell is a sequence of one step of
// one direction, without the sequence axes.
var recurrentImports = []importRow{
	{"RNNCell", 1, importRecurrent("RNN", false)},
	{"GRUCell", 3, importRecurrent("GRU", false)},
	{"LSTMCell", 1, importRecurrent("LSTM", false)},
	{"LSTMSequence", 1, importRecurrent("LSTM", true)},
	{"LSTMCell", 4, importRecurrent("LSTM", false)},
	{"LSTMSequence", 5, importRecurrent("LSTM", true)},
	{"GRUSequence", 5, importRecurrent("GRU", true)},
	{"RNNSequence", 5, importRecurrent("RNN", true)},
}

// recurrentActivations are the activation functions OpenVINO's recurrent
// ops take, by their IR and op-set names.
var recurrentActivations = map[string]string{"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}

// importRecurrent reads a sequence (seq) or cell layer of op.
func importRecurrent(op string, seq bool) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		_, nact := graph.RecurrentGates(op)
		lstm := op == "LSTM"
		// Sequence: X, H, [C], sequence_lengths, W, R, B. Cell: X, H,
		// [C], W, R, B.
		want := 6
		if !seq {
			want = 5
		}
		if lstm {
			want++
		}
		// LSTMCell-1 and LSTMSequence-1 (v0) take peepholes P after B,
		// B optional in the cell.
		v0 := lstm && ((seq && c.opset < 5) || (!seq && c.opset < 4))
		lo, hi := want, want
		if v0 {
			lo, hi = want-map[bool]int{true: 0, false: 1}[seq], want+1
		}
		if err := c.inputs(lo, hi); err != nil {
			return nil, err
		}
		x, h0 := c.in[0], c.in[1]
		var c0, lens graph.Output
		k := 2
		if lstm {
			c0, k = c.in[2], 3
		}
		if seq {
			lens, k = c.in[k], k+1
		}
		w, r, b, p := c.in[k], c.in[k+1], c.input(k+2), c.input(k+3)
		hidden, err := c.int("hidden_size", -1)
		if err != nil {
			return nil, err
		}
		if hidden < 1 {
			return nil, c.badAttr("hidden_size", errf("%d is not a positive size", hidden))
		}
		if !b.Valid() {
			zero, err := tensor.FromFloat64s(x.Type(), tensor.Shape{4 * hidden}, make([]float64, 4*hidden))
			if err != nil {
				return nil, c.errorf(ErrUnsupportedType, "X is %v: %v", x.Type(), err)
			}
			b = c.constant("B", zero)
		}
		dir := "forward"
		if seq {
			if dir, err = c.enum("direction", "forward", "forward", "reverse", "bidirectional"); err != nil {
				return nil, err
			}
		}
		dirs := int64(1)
		if dir == "bidirectional" {
			dirs = 2
		}
		clip, err := c.float("clip", 0)
		if err != nil {
			return nil, err
		}
		if clip < 0 {
			return nil, c.badAttr("clip", errf("%g is negative", clip))
		}
		lbr := false
		if op == "GRU" {
			if lbr, err = c.boolean("linear_before_reset", false); err != nil {
				return nil, err
			}
		}
		acts, err := c.activations(op, nact)
		if err != nil {
			return nil, err
		}
		var all []string
		for range dirs {
			all = append(all, acts...)
		}
		order := gateOrder(op, hidden)
		forget := false
		if v0 {
			if order, forget, err = c.lstmV0Order(seq, hidden, acts[0]); err != nil {
				return nil, err
			}
		}
		if !seq {
			// A cell's tensors lack the direction axis (and X and the
			// states the sequence's): ONNX's layout 0 with one step.
			for _, v := range []*graph.Output{&x, &h0, &c0, &w, &r, &b, &p} {
				if v.Valid() {
					if *v, err = c.unsqueeze0(*v); err != nil {
						return nil, err
					}
				}
			}
		}
		gates, _ := graph.RecurrentGates(op)
		attrs0 := graph.Attrs{}
		bw := int64(gates) * hidden
		if lbr {
			bw += hidden
		}
		for _, in := range []struct {
			name string
			v    graph.Output
			rows int64
		}{{"W", w, int64(gates) * hidden}, {"R", r, int64(gates) * hidden}, {"B", b, bw}, {"P", p, 3 * hidden}} {
			if !in.v.Valid() {
				continue
			}
			if s := in.v.Shape(); s.RankKnown && s.Rank() >= 2 && s.Dims[1].IsStatic() && s.Dims[1].Size != in.rows {
				return nil, c.errorf(ErrInvalidModel, "input %s has %d rows, want %d for %s's %d gates of hidden_size %d", in.name, s.Dims[1].Size, in.rows, op, gates, hidden)
			}
		}
		if order != nil {
			if w, err = c.gatherAxis1(w, order, false, "W"); err != nil {
				return nil, err
			}
			if r, err = c.gatherAxis1(r, order, false, "R"); err != nil {
				return nil, err
			}
		}
		if b, err = c.gatherAxis1(b, biasOrder(op, hidden, lbr, order), true, "B"); err != nil {
			return nil, err
		}
		if p.Valid() {
			// OpenVINO's peepholes are f, i, o; ONNX's i, o, f.
			pg := []int64{1, 2, 0}
			if forget {
				pg[0] = 0
			}
			if p, err = c.gatherAxis1(p, blockRows(pg, hidden), false, "P"); err != nil {
				return nil, err
			}
		}
		if forget {
			// ONNX's input gate holds OpenVINO's forget gate negated:
			// sigmoid(-a) = 1 - sigmoid(a) is OpenVINO's input gate, and
			// the op set's coupled forget gate 1 - that is OpenVINO's.
			for _, v := range []*graph.Output{&w, &r, &b, &p} {
				if v.Valid() {
					if *v, err = c.negateRows(*v, hidden); err != nil {
						return nil, err
					}
				}
			}
			attrs0["input_forget"] = int64(1)
		}
		if seq && lens.Type() != tensor.I32 {
			if lens, err = c.op("Cast", "sequence_lengths", graph.Attrs{"to": int64(tensor.I32)}, lens); err != nil {
				return nil, err
			}
		}
		attrs := graph.Attrs{"hidden_size": hidden, "direction": dir, "activations": all}
		maps.Copy(attrs, attrs0)
		if clip != 0 {
			attrs["clip"] = clip
		}
		if seq {
			attrs["layout"] = int64(1)
		}
		if lbr {
			attrs["linear_before_reset"] = int64(1)
		}
		in := []graph.Output{x, w, r, b, lens, h0}
		if lstm {
			in = append(in, c0, p)
		}
		states := 1
		if lstm {
			states = 2
		}
		if !seq {
			n, err := c.node(op, "", in, attrs, 1+states)
			if err != nil {
				return nil, err
			}
			var out []graph.Output
			for i := 1; i <= states; i++ {
				s, err := c.op("Squeeze", "state", nil, n.Out(i), c.constI64("axis", false, 0))
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, nil
		}
		n, err := c.node(op, "", in, attrs, 1+states)
		if err != nil {
			return nil, err
		}
		y, err := c.op("Transpose", "y", graph.Attrs{"perm": []int64{0, 2, 1, 3}}, n.Out(0))
		if err != nil {
			return nil, err
		}
		out := []graph.Output{y}
		for i := 1; i <= states; i++ {
			out = append(out, n.Out(i))
		}
		return out, nil
	}
}

// activations reads the layer's activation functions (the op's defaults
// when unset), as the op set names them. Their alphas and betas are left
// out: sigmoid, tanh and relu take none.
func (c *layerCtx) activations(op string, n int) ([]string, error) {
	def := map[string]string{"LSTM": "sigmoid,tanh,tanh", "GRU": "sigmoid,tanh", "RNN": "tanh"}[op]
	list := strings.Split(c.str("activations", def), ",")
	if len(list) != n {
		return nil, c.badAttr("activations", errf("lists %d functions, %s takes %d", len(list), op, n))
	}
	out := make([]string, n)
	for i, a := range list {
		name, ok := recurrentActivations[strings.ToLower(strings.TrimSpace(a))]
		if !ok {
			return nil, c.attrErrorf("activations", "%q is not sigmoid, tanh or relu", a)
		}
		out[i] = name
	}
	return out, nil
}

// lstmV0Order reads LSTMCell-1's and LSTMSequence-1's weights_format
// (the order of the gates' rows; OpenVINO's LSTMCell-1 is ifco when it is
// absent, an LSTMSequence-1 without it is refused, OpenVINO leaving it
// unset) and input_forget (the input gate is 1 - the forget gate, which
// needs a sigmoid f), and returns the rows in ONNX's order: with
// input_forget, ONNX's input gate takes the forget gate's rows.
func (c *layerCtx) lstmV0Order(seq bool, hidden int64, f string) ([]int64, bool, error) {
	def := "ifco"
	if seq {
		def = ""
	}
	format, err := c.enum("weights_format", def, "fico", "icof", "ifco", "ifoc", "iofc")
	if err != nil {
		return nil, false, err
	}
	if format == "" {
		return nil, false, c.errorf(ErrInvalidModel, "attribute weights_format is required (OpenVINO leaves LSTMSequence-1's unset)")
	}
	forget, err := c.boolean("input_forget", false)
	if err != nil {
		return nil, false, err
	}
	if forget && f != "Sigmoid" {
		return nil, false, c.attrErrorf("input_forget", "true needs the sigmoid gate activation, not %s", f)
	}
	pos := func(g byte) int64 { return int64(strings.IndexByte(format, g)) }
	blocks := []int64{pos('i'), pos('o'), pos('f'), pos('c')}
	if forget {
		blocks[0] = pos('f')
	}
	return blockRows(blocks, hidden), forget, nil
}

// blockRows lists the rows of blocks of hidden rows, block by block.
func blockRows(blocks []int64, hidden int64) []int64 {
	var rows []int64
	for _, g := range blocks {
		for j := range hidden {
			rows = append(rows, g*hidden+j)
		}
	}
	return rows
}

// negateRows negates x's first hidden slices along axis 1 (a constant's
// values here, another value by a Mul).
func (c *layerCtx) negateRows(x graph.Output, hidden int64) (graph.Output, error) {
	s := x.Shape()
	if !s.RankKnown || s.Rank() < 2 || !s.Dims[1].IsStatic() {
		return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "input_forget needs the weights' rows static (%v)", s)
	}
	shape := make(tensor.Shape, s.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[1] = s.Dims[1].Size
	sign := make([]float64, shape[1])
	for j := range sign {
		sign[j] = 1
		if int64(j) < hidden {
			sign[j] = -1
		}
	}
	st, err := tensor.FromFloat64s(x.Type(), shape, sign)
	if err != nil {
		return graph.Output{}, c.errorf(ErrUnsupportedType, "weights of %v: %v", x.Type(), err)
	}
	if x.Node.OpType == graph.OpConstant && x.Node.Value != nil {
		v, inner := slices.Clone(x.Node.Value.Float64s()), tensor.Shape(x.Node.Value.Shape()[2:]).NumElements()
		for i := range v {
			if (int64(i)/inner)%shape[1] < hidden {
				v[i] = -v[i]
			}
		}
		nt, err := tensor.FromFloat64s(x.Type(), x.Node.Value.Shape(), v)
		if err != nil {
			return graph.Output{}, c.errorf(ErrInvalidModel, "weights: %v", err)
		}
		return c.constant("coupled", nt), nil
	}
	return c.op("Mul", "coupled", nil, x, c.constant("sign", st))
}

// gateOrder is the rows of OpenVINO's weights in ONNX's gate order (LSTM:
// f, i, c, o to i, o, f, c), nil where the orders agree.
func gateOrder(op string, hidden int64) []int64 {
	if op != "LSTM" {
		return nil
	}
	return blockRows([]int64{1, 3, 0, 2}, hidden)
}

// biasOrder is, for each column of ONNX's bias [D, 2*G*H] (W's biases,
// then R's), the column of OpenVINO's bias it takes; the index one past
// OpenVINO's bias is a zero. ONNX adds W's and R's biases wherever
// OpenVINO has their sum, so R's are zero there; GRU with
// linear_before_reset keeps the candidate gate's R bias apart (OpenVINO's
// fourth).
func biasOrder(op string, hidden int64, lbr bool, order []int64) []int64 {
	gates, _ := graph.RecurrentGates(op)
	gh := int64(gates) * hidden
	width := gh
	if lbr {
		width += hidden
	}
	idx := make([]int64, 2*gh)
	for j := range gh {
		idx[j] = j
		if order != nil {
			idx[j] = order[j]
		}
		idx[gh+j] = width // zero
	}
	if lbr {
		for j := range hidden {
			idx[gh+2*hidden+j] = gh + j
		}
	}
	return idx
}

// gatherAxis1 returns x's slices along axis 1 in the order idx; with pad,
// the index equal to x's size along axis 1 reads zeros. A constant is
// rearranged here (weights stay constants); another value goes through
// Concat and Gather nodes.
func (c *layerCtx) gatherAxis1(x graph.Output, idx []int64, pad bool, what string) (graph.Output, error) {
	s := x.Shape()
	if !s.RankKnown || s.Rank() < 2 || !s.Dims[0].IsStatic() || !s.Dims[1].IsStatic() {
		return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "input %s is %v: the reader needs its first two dims static", what, s)
	}
	width := s.Dims[1].Size
	for _, i := range idx {
		if i < 0 || i > width || (i == width && !pad) {
			return graph.Output{}, c.errorf(ErrInvalidModel, "input %s is %v, too narrow for hidden_size", what, s)
		}
	}
	if x.Node.OpType == graph.OpConstant && x.Node.Value != nil && x.Type().IsFloat() {
		t := x.Node.Value
		ts := t.Shape()
		inner := tensor.Shape(ts[2:]).NumElements()
		v := t.Float64s()
		out := make([]float64, 0, ts[0]*int64(len(idx))*inner)
		for o := range ts[0] {
			for _, j := range idx {
				if j == width {
					out = append(out, make([]float64, inner)...)
					continue
				}
				at := (o*width + j) * inner
				out = append(out, v[at:at+inner]...)
			}
		}
		shape := append(tensor.Shape{ts[0], int64(len(idx))}, ts[2:]...)
		nt, err := tensor.FromFloat64s(t.Type(), shape, out)
		if err != nil {
			return graph.Output{}, c.errorf(ErrInvalidModel, "input %s: %v", what, err)
		}
		return c.constant(what, nt), nil
	}
	if pad {
		if s.Rank() != 2 {
			return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "input %s is %v, want rank 2", what, s)
		}
		zero, err := tensor.FromFloat64s(x.Type(), tensor.Shape{s.Dims[0].Size, 1}, make([]float64, s.Dims[0].Size))
		if err != nil {
			return graph.Output{}, c.errorf(ErrUnsupportedType, "input %s: %v", what, err)
		}
		if x, err = c.op("Concat", what+"_zero", graph.Attrs{"axis": int64(1)}, x, c.constant(what+"_zeros", zero)); err != nil {
			return graph.Output{}, err
		}
	}
	return c.op("Gather", what, graph.Attrs{"axis": int64(1)}, x, c.constI64(what+"_order", false, idx...))
}

// unsqueeze0 adds a leading axis of 1 to x (to a constant's value).
func (c *layerCtx) unsqueeze0(x graph.Output) (graph.Output, error) {
	if x.Node.OpType == graph.OpConstant && x.Node.Value != nil {
		t, err := x.Node.Value.Reshape(append(tensor.Shape{1}, x.Node.Value.Shape()...))
		if err == nil {
			return c.constant("step", t), nil
		}
	}
	return c.op("Unsqueeze", "step", nil, x, c.constI64("axis", false, 0))
}
