package ir

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// irb builds small IR documents for tests: layers in the order they are
// made, edges from the ports they read, constants in the weights.
type irb struct {
	layers []string
	edges  []string
	bin    bytes.Buffer
	next   int
	inputs []*tensor.Tensor
}

// port is one output port of a built layer.
type port struct{ layer, port int }

// input declares a Parameter taking x (its values are what run feeds).
func (b *irb) input(x *tensor.Tensor) port {
	return b.param(fmt.Sprintf("in%d", len(b.inputs)), x.Type().String(), formatInts(x.Shape()), x)
}

// param declares a Parameter of type t and IR shape s; x, when not nil,
// is the value run feeds it.
func (b *irb) param(name, t, s string, x *tensor.Tensor) port {
	id := b.next
	b.next++
	b.layers = append(b.layers, fmt.Sprintf(`<layer id="%d" name="%s" type="Parameter" version="opset1"><data element_type="%s" shape="%s"/><output><port id="0" names="%s"/></output></layer>`, id, name, t, s, name))
	if x != nil {
		b.inputs = append(b.inputs, x)
	}
	return port{id, 0}
}

// constant declares a Const of x.
func (b *irb) constant(x *tensor.Tensor) port {
	raw, err := constBytes(x)
	if err != nil {
		panic(err)
	}
	off := b.bin.Len()
	b.bin.Write(raw)
	id := b.next
	b.next++
	b.layers = append(b.layers, fmt.Sprintf(`<layer id="%d" name="c%d" type="Const" version="opset1"><data element_type="%s" shape="%s" offset="%d" size="%d"/><output><port id="0"/></output></layer>`,
		id, id, x.Type(), formatInts(x.Shape()), off, len(raw)))
	return port{id, 0}
}

// i64 declares a 1-D i64 Const.
func (b *irb) i64(v ...int64) port { return b.constant(ti64(v...)) }

// scalar declares a 0-D Const of type t.
func (b *irb) scalar(t tensor.ElementType, v float64) port { return b.constant(scalarOf(t, v)) }

// op declares a layer of type typ and version with the <data> attributes
// data ("" for none) reading in, with nout output ports.
func (b *irb) op(typ, version, data string, nout int, in ...port) []port {
	id := b.next
	b.next++
	var l strings.Builder
	fmt.Fprintf(&l, `<layer id="%d" name="%s%d" type="%s" version="%s">`, id, strings.ToLower(typ), id, typ, version)
	if data != "" {
		fmt.Fprintf(&l, `<data %s/>`, data)
	}
	if len(in) > 0 {
		l.WriteString("<input>")
		for i := range in {
			fmt.Fprintf(&l, `<port id="%d"/>`, i)
		}
		l.WriteString("</input>")
	}
	out := make([]port, nout)
	if nout > 0 {
		l.WriteString("<output>")
		for i := range out {
			fmt.Fprintf(&l, `<port id="%d"/>`, len(in)+i)
			out[i] = port{id, len(in) + i}
		}
		l.WriteString("</output>")
	}
	l.WriteString("</layer>")
	b.layers = append(b.layers, l.String())
	for i, p := range in {
		b.edges = append(b.edges, fmt.Sprintf(`<edge from-layer="%d" from-port="%d" to-layer="%d" to-port="%d"/>`, p.layer, p.port, id, i))
	}
	return out
}

// op1 is op with one output.
func (b *irb) op1(typ, version, data string, in ...port) port {
	return b.op(typ, version, data, 1, in...)[0]
}

// result declares a Result reading p.
func (b *irb) result(p port) {
	b.op("Result", "opset1", "", 0, p)
}

// doc is the document.
func (b *irb) doc() []byte {
	return []byte(`<?xml version="1.0"?><net name="test" version="11"><layers>` + strings.Join(b.layers, "") +
		`</layers><edges>` + strings.Join(b.edges, "") + `</edges></net>`)
}

// read reads the built document.
func (b *irb) read(t testing.TB) *graph.Model {
	t.Helper()
	m, err := Read(b.doc(), WithWeights(b.bin.Bytes()))
	require.NoError(t, err, "%s", b.doc())
	return m
}

// run runs m on the CPU reference with the inputs.
func run(t testing.TB, m *graph.Model, in []*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	p, err := ref.Compile(m)
	require.NoError(t, err)
	out, err := p.Run(in)
	require.NoError(t, err)
	return out
}

func tf32(shape tensor.Shape, v ...float32) *tensor.Tensor {
	x, err := tensor.FromF32(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

func ti64(v ...int64) *tensor.Tensor {
	x, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	return x
}

func ti32(shape tensor.Shape, v ...int32) *tensor.Tensor {
	x, err := tensor.FromI32(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

// iota32 is an f32 tensor of shape holding 0, 1, 2, ...
func iota32(shape ...int64) *tensor.Tensor {
	s := tensor.Shape(shape)
	v := make([]float32, s.NumElements())
	for i := range v {
		v[i] = float32(i)
	}
	return tf32(s, v...)
}

// near checks got against want elementwise within tol (NaN matches NaN).
func near(t testing.TB, want, got *tensor.Tensor, tol float64) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape(), "shape")
	require.Equal(t, want.Type(), got.Type(), "type")
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) {
			continue
		}
		if math.IsInf(w[i], 0) && w[i] == g[i] {
			continue
		}
		require.InDelta(t, w[i], g[i], tol*(1+math.Abs(w[i])), "element %d of %v", i, want.Shape())
	}
}

// mainNode returns the node of m named name.
func nodeNamed(t testing.TB, m *graph.Model, name string) *graph.Node {
	t.Helper()
	n := m.Node(name)
	require.NotNil(t, n, "no node %q in\n%s", name, text(m))
	return n
}
