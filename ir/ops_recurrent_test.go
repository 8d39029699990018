package ir

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// ovGates are, for each gate of OpenVINO's order, the gate of ONNX's
// order that holds it (LSTM: OpenVINO f, i, c, o; ONNX i, o, f, c), as
// OpenVINO's LSTMSequence-5 specification and ONNX's LSTM give them.
var ovGates = map[string][]int64{"LSTM": {2, 0, 3, 1}, "GRU": {0, 1, 2}, "RNN": {0}}

// ovRows are the rows of ONNX's weights in OpenVINO's gate order.
func ovRows(op string, hidden int64) []int64 {
	var rows []int64
	for _, g := range ovGates[op] {
		for j := range hidden {
			rows = append(rows, g*hidden+j)
		}
	}
	return rows
}

func zerosF32(shape ...int64) *tensor.Tensor {
	return tf32(shape, make([]float32, tensor.Shape(shape).NumElements())...)
}

// TestRecurrentAgainstONNX expresses each LSTM, GRU and RNN case of the
// ONNX backend suite that OpenVINO's sequences can express (one direction,
// no peepholes) as IR: the case's inputs taken to OpenVINO's layout with
// IR ops (X batch first, W and R in OpenVINO's gate order, W's and R's
// biases summed), an LSTMSequence-5, GRUSequence-5 or RNNSequence-5, and
// the outputs taken back to ONNX's layout. Read and run on the CPU, it
// must give the case's expected outputs (ONNX's reference, not clinfer's).
// Those cases give every gate the same weights, so the gate order is
// TestRecurrentSequences' to check.
func TestRecurrentAgainstONNX(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	_, dirs, err := conformance.CaseDirs()
	require.NoError(t, err)
	root := filepath.Dir(dirs[0])
	for _, name := range []string{"test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_batchwise",
		"test_gru_defaults", "test_gru_seq_length", "test_gru_with_initial_bias", "test_gru_batchwise",
		"test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias", "test_simple_rnn_batchwise", "test_rnn_seq_length"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			src, err := onnx.ReadFile(filepath.Join(dir, "model.onnx"))
			require.NoError(t, err)
			nodes, err := src.Nodes()
			require.NoError(t, err)
			var rnn *graph.Node
			for _, n := range nodes {
				if g, _ := graph.RecurrentGates(n.OpType); g > 0 {
					rnn = n
				}
			}
			require.NotNil(t, rnn)
			op := rnn.OpType
			gates, _ := graph.RecurrentGates(op)
			hidden := rnn.Attrs.Int("hidden_size", 0)
			batchFirst := rnn.Attrs.Int("layout", 0) == 1
			xs := src.Parameters[0].Outputs[0].Shape
			n, s := xs.Dims[1].Size, xs.Dims[0].Size
			if batchFirst {
				n, s = s, n
			}
			b := &irb{}
			ps := make([]port, len(src.Parameters))
			for i, p := range src.Parameters {
				dims := make([]int64, len(p.Outputs[0].Shape.Dims))
				for j, d := range p.Outputs[0].Shape.Dims {
					dims[j] = d.Size
				}
				ps[i] = b.param(p.Name, "f32", formatInts(dims), nil)
			}
			x := ps[0]
			if !batchFirst {
				x = b.op1("Transpose", "opset1", "", x, b.i64(1, 0, 2))
			}
			toOV := func(p port) port {
				return b.op1("Gather", "opset8", `batch_dims="0"`, p, b.i64(ovRows(op, hidden)...), b.scalar(tensor.I64, 1))
			}
			gh := int64(gates) * hidden
			bias := b.constant(zerosF32(1, gh))
			if len(ps) == 4 {
				halves := b.op("VariadicSplit", "opset1", "", 2, ps[3], b.scalar(tensor.I64, 1), b.i64(gh, gh))
				bias = toOV(b.op1("Add", "opset1", "", halves[0], halves[1]))
			}
			in := []port{x, b.constant(zerosF32(n, 1, hidden))}
			if op == "LSTM" {
				in = append(in, b.constant(zerosF32(n, 1, hidden)))
			}
			lens := make([]int64, n)
			for i := range lens {
				lens[i] = s
			}
			in = append(in, b.i64(lens...), toOV(ps[1]), toOV(ps[2]), bias)
			outs := b.op(op+"Sequence", "opset5", fmt.Sprintf(`hidden_size="%d" direction="forward"`, hidden), len(in)-4, in...)
			y, yh := outs[0], outs[1]
			if batchFirst {
				y = b.op1("Transpose", "opset1", "", y, b.i64(0, 2, 1, 3))
			} else {
				y = b.op1("Transpose", "opset1", "", y, b.i64(2, 1, 0, 3))
				yh = b.op1("Transpose", "opset1", "", yh, b.i64(1, 0, 2))
			}
			for _, r := range src.Results {
				if r.Inputs[0] == rnn.Out(0) {
					b.result(y)
				} else {
					require.Equal(t, rnn.Out(1), r.Inputs[0])
					b.result(yh)
				}
			}
			m := b.read(t)
			out, err := conformance.RunModel(context.Background(), core, "CPU", m, dir)
			require.Equal(t, conformance.Passed, out, "%v", err)
		})
	}
}

// recurrentCase is a sequence layer's configuration and data, in
// OpenVINO's layout and gate order.
type recurrentCase struct {
	op                string
	dir               string
	n, s, in, hidden  int64
	lens              []int64
	clip              float32
	activations       string
	linearBeforeReset bool
}

func (c recurrentCase) dirs() int64 {
	if c.dir == "bidirectional" {
		return 2
	}
	return 1
}

func (c recurrentCase) gates() int64 { g, _ := graph.RecurrentGates(c.op); return int64(g) }

func (c recurrentCase) biasWidth() int64 {
	w := c.gates() * c.hidden
	if c.linearBeforeReset {
		w += c.hidden
	}
	return w
}

// data is the case's X, H, C (LSTM), W, R, B: seeded, OpenVINO's shapes.
func (c recurrentCase) data() (x, h, cs, w, r, b *tensor.Tensor) {
	d, gh := c.dirs(), c.gates()*c.hidden
	f := func(seed uint32, shape ...int64) *tensor.Tensor {
		return tf32(shape, seeded.Float32s(seed, int(tensor.Shape(shape).NumElements()), -1, 1)...)
	}
	x, h, w, r, b = f(1, c.n, c.s, c.in), f(2, c.n, d, c.hidden), f(4, d, gh, c.in), f(5, d, gh, c.hidden), f(6, d, c.biasWidth())
	if c.op == "LSTM" {
		cs = f(3, c.n, d, c.hidden)
	}
	return x, h, cs, w, r, b
}

func (c recurrentCase) attrs() string {
	a := fmt.Sprintf(`hidden_size="%d" direction="%s" clip="%g"`, c.hidden, c.dir, c.clip)
	if c.activations != "" {
		a += fmt.Sprintf(` activations="%s"`, c.activations)
	}
	if c.linearBeforeReset {
		a += ` linear_before_reset="true"`
	}
	return a
}

// ir is the case as an IR sequence layer, its weights constants or
// Parameters (fed after X, H, C and the lengths).
func (c recurrentCase) ir(t *testing.T, constWeights bool) (*graph.Model, []*tensor.Tensor) {
	x, h, cs, w, r, bias := c.data()
	b := &irb{}
	in := []port{b.input(x), b.input(h)}
	if cs != nil {
		in = append(in, b.input(cs))
	}
	lens, err := tensor.FromI32(tensor.Shape{c.n}, func() []int32 {
		v := make([]int32, len(c.lens))
		for i, l := range c.lens {
			v[i] = int32(l)
		}
		return v
	}())
	require.NoError(t, err)
	in = append(in, b.input(lens))
	for _, v := range []*tensor.Tensor{w, r, bias} {
		if constWeights {
			in = append(in, b.constant(v))
		} else {
			in = append(in, b.input(v))
		}
	}
	outs := b.op(c.op+"Sequence", "opset5", c.attrs(), len(in)-4, in...)
	for _, o := range outs {
		b.result(o)
	}
	return b.read(t), b.inputs
}

// onnxModel is the case as ONNX's op (layout 1), the weights converted
// to ONNX's gate order and bias layout here, and its Y [N, S, D, H]
// transposed to OpenVINO's [N, D, S, H].
func (c recurrentCase) onnxModel(t *testing.T) (*graph.Model, []*tensor.Tensor) {
	x, h, cs, w, r, bias := c.data()
	d, hid, g := c.dirs(), c.hidden, c.gates()
	// OpenVINO's gate k is ONNX's gate ovGates[k]: invert it.
	toONNX := func(v *tensor.Tensor, cols int64) *tensor.Tensor {
		src := v.F32()
		out := make([]float32, len(src))
		for di := range d {
			for k, og := range ovGates[c.op] {
				for j := range hid {
					for q := range cols {
						out[((di*g+og)*hid+j)*cols+q] = src[((di*g+int64(k))*hid+j)*cols+q]
					}
				}
			}
		}
		return tf32(v.Shape(), out...)
	}
	ob := make([]float32, d*2*g*hid)
	bv := bias.F32()
	for di := range d {
		row := ob[di*2*g*hid:]
		for k, og := range ovGates[c.op] {
			copy(row[og*hid:(og+1)*hid], bv[di*c.biasWidth()+int64(k)*hid:])
		}
		if c.linearBeforeReset { // R's bias of the candidate gate h
			copy(row[(g+2)*hid:(g+3)*hid], bv[di*c.biasWidth()+g*hid:])
		}
	}
	names := map[string]string{"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}
	def := map[string][]string{"LSTM": {"sigmoid", "tanh", "tanh"}, "GRU": {"sigmoid", "tanh"}, "RNN": {"tanh"}}[c.op]
	if c.activations != "" {
		def = splitNames(c.activations)
	}
	var acts []string
	for range d {
		for _, a := range def {
			acts = append(acts, names[a])
		}
	}
	attrs := graph.Attrs{"hidden_size": hid, "direction": c.dir, "layout": int64(1), "activations": acts}
	if c.clip != 0 {
		attrs["clip"] = c.clip
	}
	if c.linearBeforeReset {
		attrs["linear_before_reset"] = int64(1)
	}
	px := graph.NewParameter("X", tensor.F32, graph.StaticShape(x.Shape()))
	ph := graph.NewParameter("H", tensor.F32, graph.StaticShape(h.Shape()))
	pl := graph.NewParameter("lens", tensor.I32, graph.ShapeOf(c.n))
	params := []*graph.Node{px, ph}
	feeds := []*tensor.Tensor{x, h}
	var pc graph.Output
	if cs != nil {
		n := graph.NewParameter("C", tensor.F32, graph.StaticShape(cs.Shape()))
		params, feeds, pc = append(params, n), append(feeds, cs), n.Out(0)
	}
	lens := make([]int32, c.n)
	for i, l := range c.lens {
		lens[i] = int32(l)
	}
	lt, err := tensor.FromI32(tensor.Shape{c.n}, lens)
	require.NoError(t, err)
	params, feeds = append(params, pl), append(feeds, lt)
	konst := func(name string, v *tensor.Tensor) graph.Output { return graph.NewConstant(name, v).Out(0) }
	in := []graph.Output{px.Out(0), konst("W", toONNX(w, c.in)), konst("R", toONNX(r, hid)), konst("B", tf32(tensor.Shape{d, 2 * g * hid}, ob...)), pl.Out(0), ph.Out(0)}
	nout := 2
	if cs != nil {
		in, nout = append(in, pc), 3
	}
	n := graph.NewNode(c.op, "rnn", in, attrs, nout)
	y := graph.NewNode("Transpose", "y", []graph.Output{n.Out(0)}, graph.Attrs{"perm": []int64{0, 2, 1, 3}}, 1)
	results := []*graph.Node{graph.NewResult("Y", y.Out(0))}
	for i := 1; i < nout; i++ {
		results = append(results, graph.NewResult(fmt.Sprintf("state%d", i), n.Out(i)))
	}
	m := graph.NewModel("onnx", params, results)
	require.NoError(t, m.InferShapes())
	return m, feeds
}

// TestRecurrentSequences checks the mapping of what the backend suite
// leaves out (both directions, reverse, initial states, lengths shorter
// than the sequence, clip, other activations, GRU's linear_before_reset):
// each sequence layer, its weights constants (which the reader
// rearranges) or Parameters (rearranged by Gather nodes), computes what
// ONNX's op computes on the weights converted here.
func TestRecurrentSequences(t *testing.T) {
	for _, c := range []recurrentCase{
		{op: "LSTM", dir: "bidirectional", n: 2, s: 4, in: 3, hidden: 5, lens: []int64{4, 2}, clip: 0.9},
		{op: "LSTM", dir: "reverse", n: 1, s: 3, in: 2, hidden: 3, lens: []int64{3}, activations: "sigmoid,relu,tanh"},
		{op: "GRU", dir: "reverse", n: 2, s: 3, in: 4, hidden: 3, lens: []int64{1, 3}, linearBeforeReset: true},
		{op: "GRU", dir: "bidirectional", n: 2, s: 3, in: 2, hidden: 4, lens: []int64{3, 2}, activations: "sigmoid,relu"},
		{op: "RNN", dir: "bidirectional", n: 3, s: 2, in: 3, hidden: 2, lens: []int64{2, 1, 2}, activations: "relu", clip: 1.5},
	} {
		want, feeds := c.onnxModel(t)
		expected := run(t, want, feeds)
		for _, constWeights := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s_%s_const_%v", c.op, c.dir, constWeights), func(t *testing.T) {
				m, in := c.ir(t, constWeights)
				got := run(t, m, in)
				require.Len(t, got, len(expected))
				for i := range got {
					near(t, expected[i], got[i], 1e-5)
				}
			})
		}
	}
}

// TestRecurrentCells: a cell computes one step of its sequence.
func TestRecurrentCells(t *testing.T) {
	for _, c := range []struct {
		cell    string
		version string
		seq     recurrentCase
	}{
		{"LSTMCell", "opset4", recurrentCase{op: "LSTM", dir: "forward", n: 2, s: 1, in: 3, hidden: 4, lens: []int64{1, 1}}},
		{"GRUCell", "opset3", recurrentCase{op: "GRU", dir: "forward", n: 2, s: 1, in: 3, hidden: 4, lens: []int64{1, 1}, linearBeforeReset: true, clip: 0.5}},
		{"RNNCell", "opset1", recurrentCase{op: "RNN", dir: "forward", n: 3, s: 1, in: 2, hidden: 3, lens: []int64{1, 1, 1}, activations: "relu"}},
	} {
		t.Run(c.cell, func(t *testing.T) {
			seq, feeds := c.seq.ir(t, true)
			want := run(t, seq, feeds)
			x, h, cs, w, r, bias := c.seq.data()
			reshape := func(v *tensor.Tensor, shape ...int64) *tensor.Tensor {
				out, err := v.Reshape(shape)
				require.NoError(t, err)
				return out
			}
			b := &irb{}
			n, hid, gh := c.seq.n, c.seq.hidden, c.seq.gates()*c.seq.hidden
			in := []port{b.input(reshape(x, n, c.seq.in)), b.input(reshape(h, n, hid))}
			if cs != nil {
				in = append(in, b.input(reshape(cs, n, hid)))
			}
			in = append(in, b.constant(reshape(w, gh, c.seq.in)), b.constant(reshape(r, gh, hid)), b.constant(reshape(bias, c.seq.biasWidth())))
			attrs := fmt.Sprintf(`hidden_size="%d" clip="%g"`, hid, c.seq.clip)
			if c.seq.activations != "" {
				attrs += fmt.Sprintf(` activations="%s"`, c.seq.activations)
			}
			if c.seq.linearBeforeReset {
				attrs += ` linear_before_reset="true"`
			}
			outs := b.op(c.cell, c.version, attrs, len(want)-1, in...)
			for _, o := range outs {
				b.result(o)
			}
			got := run(t, b.read(t), b.inputs)
			for i := range got {
				near(t, reshape(want[i+1], n, hid), got[i], 1e-6)
			}
		})
	}
}

// TestRecurrentErrors: what the reader refuses names the layer.
func TestRecurrentErrors(t *testing.T) {
	c := recurrentCase{op: "LSTM", dir: "forward", n: 1, s: 2, in: 2, hidden: 2, lens: []int64{2}}
	for _, tc := range []struct {
		name, attrs, want string
	}{
		{"activation", `hidden_size="2" activations="sigmoid,elu,tanh"`, `"elu" is not sigmoid, tanh or relu`},
		{"count", `hidden_size="2" activations="sigmoid,tanh"`, "lists 2 functions, LSTM takes 3"},
		{"hidden", `hidden_size="0"`, "hidden_size: 0 is not a positive size"},
		{"narrow", `hidden_size="3"`, "input W has 8 rows, want 12 for LSTM's 4 gates of hidden_size 3"},
		{"wide", `hidden_size="1"`, "input W has 8 rows, want 4 for LSTM's 4 gates of hidden_size 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, h, cs, w, r, bias := c.data()
			b := &irb{}
			l := b.op("LSTMSequence", "opset5", tc.attrs, 3, b.input(x), b.input(h), b.input(cs), b.i64(2), b.constant(w), b.constant(r), b.constant(bias))
			b.result(l[1])
			_, err := Read(b.doc(), WithWeights(b.bin.Bytes()))
			require.Error(t, err)
			assert.ErrorContains(t, err, "LSTMSequence")
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestTensorIteratorLSTMCell reads the form OpenVINO's legacy converter
// gave recurrent networks: a TensorIterator slicing X [N, S, I] along
// axis 1 (forward, and backward with stride -1), its body an LSTMCell-4
// whose H and C go round by back edges, concatenating the body's Ho along
// axis 1. It must compute what LSTMSequence-5 computes on the same data.
func TestTensorIteratorLSTMCell(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		dynamic bool // X's length is "?": the iterations are counted at run time
	}{{"forward", false}, {"reverse", false}, {"reverse", true}} {
		dir := tc.dir
		t.Run(fmt.Sprintf("%s_dynamic_%v", dir, tc.dynamic), func(t *testing.T) {
			c := recurrentCase{op: "LSTM", dir: dir, n: 2, s: 4, in: 3, hidden: 5, lens: []int64{4, 4}}
			seq, feeds := c.ir(t, true)
			want := run(t, seq, feeds) // Y [N,1,S,H], Ho, Co [N,1,H]
			x, h, cs, w, r, bias := c.data()
			n, hid, gh := c.n, c.hidden, c.gates()*c.hidden
			reshape := func(v *tensor.Tensor, shape ...int64) *tensor.Tensor {
				out, err := v.Reshape(shape)
				require.NoError(t, err)
				return out
			}
			bb := &irb{}
			xt := bb.param("x_t", "f32", formatInts([]int64{n, 1, c.in}), nil)
			hp := bb.param("h", "f32", formatInts([]int64{n, hid}), nil)
			cp := bb.param("c", "f32", formatInts([]int64{n, hid}), nil)
			x2 := bb.op1("Squeeze", "opset1", "", xt, bb.i64(1))
			cell := bb.op("LSTMCell", "opset4", fmt.Sprintf(`hidden_size="%d"`, hid), 2, x2, hp, cp,
				bb.constant(reshape(w, gh, c.in)), bb.constant(reshape(r, gh, hid)), bb.constant(reshape(bias, gh)))
			y := bb.op1("Unsqueeze", "opset1", "", cell[0], bb.i64(1))
			bb.result(cell[0])
			bb.result(cell[1])
			bb.result(y)
			ids := func(p port) int { return p.layer }
			hoRes, coRes, yRes := bb.next-3, bb.next-2, bb.next-1
			slicing := `axis="1" start="0" end="-1" stride="1" part_size="1"`
			if dir == "reverse" {
				slicing = `axis="1" start="-1" end="0" stride="-1" part_size="1"`
			}
			b := &irb{}
			b.bin.Write(bb.bin.Bytes())
			xs := formatInts(x.Shape())
			if tc.dynamic {
				xs = fmt.Sprintf("%d,?,%d", n, c.in)
			}
			xin := b.param("x", "f32", xs, x)
			in := []port{xin, b.input(reshape(h, n, hid)), b.input(reshape(cs, n, hid))}
			id := b.next
			b.next++
			b.layers = append(b.layers, fmt.Sprintf(`<layer id="%d" name="ti" type="TensorIterator" version="opset1">`+
				`<input><port id="0"/><port id="1"/><port id="2"/></input><output><port id="3"/><port id="4"/><port id="5"/></output>`+
				`<port_map><input external_port_id="0" internal_layer_id="%d" %s/><input external_port_id="1" internal_layer_id="%d"/>`+
				`<input external_port_id="2" internal_layer_id="%d"/><output external_port_id="3" internal_layer_id="%d" %s/>`+
				`<output external_port_id="4" internal_layer_id="%d"/><output external_port_id="5" internal_layer_id="%d"/></port_map>`+
				`<back_edges><edge from-layer="%d" to-layer="%d"/><edge from-layer="%d" to-layer="%d"/></back_edges>`+
				`<body><layers>%s</layers><edges>%s</edges></body></layer>`,
				id, ids(xt), slicing, ids(hp), ids(cp), yRes, slicing, hoRes, coRes, hoRes, ids(hp), coRes, ids(cp),
				strings.Join(bb.layers, ""), strings.Join(bb.edges, "")))
			for i, p := range in {
				b.edges = append(b.edges, fmt.Sprintf(`<edge from-layer="%d" from-port="%d" to-layer="%d" to-port="%d"/>`, p.layer, p.port, id, i))
			}
			for i := 0; i < 3; i++ {
				b.result(port{id, 3 + i})
			}
			got := run(t, b.read(t), b.inputs)
			require.Len(t, got, 3)
			near(t, reshape(want[0], n, c.s, hid), got[0], 1e-5)
			near(t, reshape(want[1], n, hid), got[1], 1e-5)
			near(t, reshape(want[2], n, hid), got[2], 1e-5)
		})
	}
}
