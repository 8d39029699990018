package graph_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// dump renders a model independently of the encoding, so a round trip is
// checked against what the model means rather than against the encoder.
func dump(m *graph.Model) string {
	var b strings.Builder
	nodes, err := m.Nodes()
	if err != nil {
		return "error: " + err.Error()
	}
	fmt.Fprintf(&b, "model %q opsets=%v\n", m.Name, m.Opsets)
	for _, n := range nodes {
		fmt.Fprintf(&b, "node %q op=%s domain=%q\n", n.Name, n.OpType, n.Domain)
		keys := make([]string, 0, len(n.Attrs))
		for k := range n.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  attr %s=%s\n", k, dumpValue(n.Attrs[k]))
		}
		for i, in := range n.Inputs {
			fmt.Fprintf(&b, "  in%d=%s\n", i, in)
		}
		for i, p := range n.Outputs {
			fmt.Fprintf(&b, "  out%d name=%q type=%v kind=%v shape=%v dims=%#v\n", i, p.Name, p.Type, p.Kind, p.Shape, p.Shape.Dims)
		}
		if n.Value != nil {
			fmt.Fprintf(&b, "  value=%s\n", dumpValue(n.Value))
		}
		fmt.Fprintf(&b, "  rt fused=%q affinity=%q extra=%v\n", n.RT.FusedNames, n.RT.Affinity, n.RT.Extra)
	}
	for _, p := range m.Parameters {
		fmt.Fprintf(&b, "param %q\n", p.Name)
	}
	for _, r := range m.Results {
		fmt.Fprintf(&b, "result %q\n", r.Name)
	}
	return b.String()
}

func dumpValue(v any) string {
	switch v := v.(type) {
	case *tensor.Tensor:
		if v.Type() == tensor.String {
			return fmt.Sprintf("%v%v%q", v.Type(), v.Shape(), v.Contiguous().Strings())
		}
		return fmt.Sprintf("%v%v%x", v.Type(), v.Shape(), v.Contiguous().Bytes())
	case *graph.Model:
		return "{" + dump(v) + "}"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// richModel has every attribute type, every element type as a constant,
// dynamic and named dimensions, an unknown-rank port, an omitted optional
// input, a multi-output node and runtime info.
func richModel(t testing.TB) *graph.Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("batch"), graph.StaticDim(3), graph.DynamicDim(""), graph.BoundedDim(2, 9)}})
	y := graph.NewParameter("y", tensor.I64, graph.DynamicRank)
	var consts []*graph.Node
	for _, et := range tensor.ElementTypes() {
		v := tensor.MustNew(et, tensor.Shape{2, 3})
		if et == tensor.String {
			copy(v.Strings(), []string{"", "a", "héllo", "x\x00y", "long string", "z"})
			consts = append(consts, graph.NewConstant("c_"+et.String(), v))
			continue
		}
		raw := v.Bytes()
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		if et == tensor.Bool {
			for i := range raw {
				raw[i] &= 1
			}
		}
		consts = append(consts, graph.NewConstant("c_"+et.String(), v))
	}
	big := tensor.MustNew(tensor.F32, tensor.Shape{4, 4})
	for i := range big.F32() {
		big.F32()[i] = float32(i)
	}
	view, err := big.View([]int64{1, 1}, []int64{3, 4})
	require.NoError(t, err)
	consts = append(consts, graph.NewConstant("c_view", view))
	consts = append(consts, graph.NewConstant("c_scalar", tensor.Scalar(2.5)))
	empty := tensor.MustNew(tensor.F32, tensor.Shape{0, 5})
	consts = append(consts, graph.NewConstant("c_empty", empty))

	sub := graph.NewParameter("sub_in", tensor.F32, graph.ShapeOf(1))
	subModel := graph.NewModel("body", []*graph.Node{sub}, []*graph.Node{graph.NewResult("sub_out", sub.Out(0))})

	inputs := []graph.Output{x.Out(0), {}, y.Out(0)}
	for _, c := range consts {
		inputs = append(inputs, c.Out(0))
	}
	attrs := graph.Attrs{
		"i64":     int64(-7),
		"int":     int(42),
		"f32":     float32(-1.25),
		"f64":     3.5,
		"str":     "héllo",
		"ints":    []int64{1, -2, 1 << 40},
		"floats":  []float32{0.5, -0.0, 1e30},
		"strings": []string{"a", "", "c"},
		"empty":   []int64{},
		"tensor":  tensor.Scalar(9),
		"body":    subModel,
	}
	n := graph.NewNode("Custom", "custom", inputs, attrs, 2)
	n.Domain = "com.example"
	n.Outputs[0].Type = tensor.F16
	n.Outputs[0].Shape = graph.ShapeOf(2, -1)
	n.Outputs[1].Kind = tensor.KindOptionalSequence
	n.RT = graph.RTInfo{FusedNames: []string{"conv", "bn"}, Affinity: "GPU", Extra: map[string]string{"k": "v", "IMPL": "ref"}}
	r0 := graph.NewResult("out0", n.Out(0))
	r1 := graph.NewResult("out1", n.Out(1))
	m := graph.NewModel("rich", []*graph.Node{x, y}, []*graph.Node{r0, r1})
	m.Opsets = map[string]int64{"": 21, "com.example": 1}
	return m
}

func paramOnly() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	return graph.NewModel("identity", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", x.Out(0))})
}

func constOnly() *graph.Model {
	v, _ := tensor.FromF32(tensor.Shape{3}, []float32{1, 2, 3})
	c := graph.NewConstant("c", v)
	return graph.NewModel("const", nil, []*graph.Node{graph.NewResult("y", c.Out(0))})
}

func TestModelEncodingRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		m    func(t *testing.T) *graph.Model
	}{
		{"rich", func(t *testing.T) *graph.Model { return richModel(t) }},
		{"parameter to result", func(*testing.T) *graph.Model { return paramOnly() }},
		{"constant to result", func(*testing.T) *graph.Model { return constOnly() }},
		{"empty", func(*testing.T) *graph.Model { return &graph.Model{} }},
		{"large constant", func(t *testing.T) *graph.Model {
			// Over the size WriteModel streams on its own.
			v := make([]float32, 40000)
			for i := range v {
				v[i] = float32(i)
			}
			big, err := tensor.FromF32(tensor.Shape{200, 200}, v)
			require.NoError(t, err)
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(200, 200))
			add := graph.NewNode("Add", "add", []graph.Output{x.Out(0), graph.NewConstant("big", big).Out(0)}, nil, 1)
			return graph.NewModel("big", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", add.Out(0))})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			b, err := m.MarshalBinary()
			require.NoError(t, err)
			var got graph.Model
			require.NoError(t, got.UnmarshalBinary(b))
			assert.Equal(t, dump(m), dump(&got))
			again, err := got.MarshalBinary()
			require.NoError(t, err)
			assert.Equal(t, b, again, "encoding is not deterministic")

			var buf bytes.Buffer
			require.NoError(t, graph.WriteModel(&buf, m))
			assert.Equal(t, b, buf.Bytes(), "WriteModel streams what MarshalBinary returns")
			read, err := graph.ReadModel(&buf)
			require.NoError(t, err)
			assert.Equal(t, dump(m), dump(read))
		})
	}
}

func TestModelEncodingShareNothing(t *testing.T) {
	m := constOnly()
	b, err := m.MarshalBinary()
	require.NoError(t, err)
	var got graph.Model
	require.NoError(t, got.UnmarshalBinary(b))
	for i := range b {
		b[i] = 0
	}
	c := got.Results[0].Inputs[0].Node
	assert.Equal(t, []float32{1, 2, 3}, c.Value.F32(), "decoded constant aliases the input bytes")
}

func TestModelDecodeTruncated(t *testing.T) {
	b, err := richModel(t).MarshalBinary()
	require.NoError(t, err)
	for n := range len(b) {
		var m graph.Model
		err := m.UnmarshalBinary(b[:n])
		require.Error(t, err, "prefix of %d of %d bytes decoded", n, len(b))
		require.ErrorIs(t, err, graph.ErrBadEncoding)
	}
	var m graph.Model
	require.ErrorIs(t, m.UnmarshalBinary(append(b, 0)), graph.ErrBadEncoding, "trailing byte accepted")
}

func TestModelDecodeCorruptNeverPanics(t *testing.T) {
	b, err := richModel(t).MarshalBinary()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= byte(1 + rng.IntN(255))
		var m graph.Model
		require.NotPanics(t, func() { _ = m.UnmarshalBinary(c) }, "flip at byte %d", i)
	}
}

func TestModelDecodeErrors(t *testing.T) {
	good, err := paramOnly().MarshalBinary()
	require.NoError(t, err)
	header := func(version uint64) []byte {
		b := []byte("CLGRAPH\x00")
		return binary.AppendUvarint(b, version)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", append([]byte("NOTGRAPH"), good[8:]...), "bad magic"},
		{"other version", append(header(99), good[9:]...), fmt.Sprintf("encoding version 99, this build reads version %d", graph.EncodingVersion)},
		{"huge node count", binary.AppendUvarint(append(header(graph.EncodingVersion), 0, 0), 1<<50), "node count"},
		{"huge name", binary.AppendUvarint(header(graph.EncodingVersion), 1<<60), "model name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m graph.Model
			err := m.UnmarshalBinary(tc.data)
			require.ErrorIs(t, err, graph.ErrBadEncoding)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestModelDecodeBoundedAllocation: a stream that claims huge counts must
// not make the decoder allocate for them.
func TestModelDecodeBoundedAllocation(t *testing.T) {
	b := binary.AppendUvarint([]byte("CLGRAPH\x00"), graph.EncodingVersion)
	b = append(b, 0, 0)                           // name, no opsets
	b = binary.AppendUvarint(b, 1<<20)            // "a million nodes" ...
	b = append(b, bytes.Repeat([]byte{0}, 64)...) // ... in 64 bytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var m graph.Model
	err := m.UnmarshalBinary(b)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, graph.ErrBadEncoding)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "decoder allocated for a forged count")
}

func TestModelEncodeErrors(t *testing.T) {
	cyc := func() *graph.Model {
		a := graph.NewNode("Relu", "a", nil, nil, 1)
		b := graph.NewNode("Relu", "b", []graph.Output{a.Out(0)}, nil, 1)
		a.Inputs = []graph.Output{b.Out(0)}
		return graph.NewModel("cyc", nil, []*graph.Node{graph.NewResult("r", b.Out(0))})
	}
	badAttr := func() *graph.Model {
		m := paramOnly()
		m.Results[0].Attrs["weird"] = struct{}{}
		return m
	}
	badParam := func() *graph.Model {
		m := paramOnly()
		m.Parameters = append(m.Parameters, m.Results[0])
		return m
	}
	cases := []struct {
		name string
		m    *graph.Model
		want string
	}{
		{"cycle", cyc(), "cycle"},
		{"unsupported attribute", badAttr(), `attribute "weird"`},
		{"result listed as parameter", badParam(), "parameter 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.m.MarshalBinary()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// FuzzDecodeModel: any input decodes to a model or an error, never a
// panic; a decoded model re-encodes to a stable encoding.
func FuzzDecodeModel(f *testing.F) {
	for _, m := range []*graph.Model{richModel(f), paramOnly(), constOnly()} {
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m graph.Model
		if err := m.UnmarshalBinary(data); err != nil {
			require.ErrorIs(t, err, graph.ErrBadEncoding)
			return
		}
		b, err := m.MarshalBinary()
		require.NoError(t, err)
		var again graph.Model
		require.NoError(t, again.UnmarshalBinary(b))
		b2, err := again.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, b, b2)
	})
}
