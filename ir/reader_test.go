package ir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

// The IR files under testdata/openvino come from OpenVINO's repository
// (see testdata/openvino/README.md for each file's source and licence).

func TestOpenVINOAddABC(t *testing.T) {
	m, err := ReadFile("testdata/openvino/add_abc.xml")
	require.NoError(t, err)
	var names []string
	for _, p := range m.Inputs() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"A", "B", "C"}, names)
	require.Len(t, m.Results, 1)
	assert.Equal(t, "Y", m.Results[0].Name, "a Result is named by the tensor it reads, not its layer's /sink_port_0")
	out := run(t, m, []*tensor.Tensor{tf32(tensor.Shape{1}, 1), tf32(tensor.Shape{1}, 2), tf32(tensor.Shape{1}, 4)})
	near(t, tf32(tensor.Shape{1}, 7), out[0], 0)
}

func TestOpenVINOShapeOf(t *testing.T) {
	m, err := ReadFile("testdata/openvino/shape_of.xml")
	require.NoError(t, err)
	x := tf32(tensor.Shape{1, 2, 3}, -1, 2, -3, 4, -5, 6)
	out := run(t, m, []*tensor.Tensor{x})
	near(t, tf32(tensor.Shape{1, 2, 3}, 0, 2, 0, 4, 0, 6), out[0], 0)
	assert.Equal(t, "Shape", nodeNamed(t, m, "ShapeOf_69").OpType)
}

func TestOpenVINOConvolution(t *testing.T) {
	m, err := ReadFile("testdata/openvino/conv_with_rt_info.xml")
	require.NoError(t, err)
	n := nodeNamed(t, m, "Convolution_72")
	assert.Equal(t, "Conv", n.OpType)
	assert.Equal(t, graph.Attrs{"auto_pad": "SAME_LOWER"}, n.Attrs, "pads are ignored with an auto_pad other than explicit")
	assert.Equal(t, "[1,490,34,60]", n.Outputs[0].Shape.String())
}

// TestConvolutions compares IR's convolutions with the op set's
// convolution written by hand (the reference's Conv), and checks that a
// bias Add folds into the Conv.
func TestConvolutions(t *testing.T) {
	x := tf32(tensor.Shape{1, 4, 5, 5}, seeded.Float32s(1, 100, -1, 1)...)
	w := tf32(tensor.Shape{2, 3, 2, 3, 3}, seeded.Float32s(2, 108, -1, 1)...) // 2 groups of 3 outputs over 2 inputs
	bias := tf32(tensor.Shape{1, 6, 1, 1}, 1, 2, 3, 4, 5, 6)
	b := &irb{}
	in := b.input(x)
	conv := b.op1("GroupConvolution", "opset1", `strides="2,1" dilations="1,1" pads_begin="1,0" pads_end="0,1" auto_pad="explicit"`, in, b.constant(w))
	b.result(b.op1("Add", "opset1", `auto_broadcast="numpy"`, conv, b.constant(bias)))
	dw := tf32(tensor.Shape{4, 3, 2, 2}, seeded.Float32s(3, 48, -1, 1)...) // deconvolution: [C_in, C_out, k]
	b.result(b.op1("ConvolutionBackpropData", "opset1", `strides="2,2" pads_begin="0,0" pads_end="0,0" output_padding="1,0"`, in, b.constant(dw)))
	m := b.read(t)
	got := run(t, m, []*tensor.Tensor{x})

	var convs []*graph.Node
	nodes, err := m.Nodes()
	require.NoError(t, err)
	for _, n := range nodes {
		if n.OpType == "Conv" {
			convs = append(convs, n)
		}
	}
	require.Len(t, convs, 1, "the Add of a per-channel constant folds into the Conv:\n%s", text(m))
	assert.Len(t, convs[0].Inputs, 3)
	assert.Equal(t, int64(2), convs[0].Attrs.Int("group", 1))

	// The same with the op set's ops.
	p := graph.NewParameter("x", tensor.F32, graph.StaticShape(x.Shape()))
	wc := graph.NewConstant("w", mustReshape(w, tensor.Shape{6, 2, 3, 3}))
	bc := graph.NewConstant("b", mustReshape(bias, tensor.Shape{6}))
	c := graph.NewNode("Conv", "conv", []graph.Output{p.Out(0), wc.Out(0), bc.Out(0)},
		graph.Attrs{"group": int64(2), "strides": []int64{2, 1}, "pads": []int64{1, 0, 0, 1}}, 1)
	dc := graph.NewConstant("dw", dw)
	d := graph.NewNode("ConvTranspose", "deconv", []graph.Output{p.Out(0), dc.Out(0)},
		graph.Attrs{"strides": []int64{2, 2}, "output_padding": []int64{1, 0}}, 1)
	want := graph.NewModel("want", []*graph.Node{p}, []*graph.Node{graph.NewResult("y", c.Out(0)), graph.NewResult("z", d.Out(0))})
	require.NoError(t, want.InferShapes())
	exp := run(t, want, []*tensor.Tensor{x})
	near(t, exp[0], got[0], 1e-5)
	near(t, exp[1], got[1], 1e-5)
}

func mustReshape(x *tensor.Tensor, s tensor.Shape) *tensor.Tensor {
	r, err := x.Reshape(s)
	if err != nil {
		panic(err)
	}
	return r
}

func TestPoolings(t *testing.T) {
	x := iota32(1, 1, 4, 4)
	b := &irb{}
	in := b.input(x)
	mp := b.op("MaxPool", "opset8", `strides="2,2" pads_begin="0,0" pads_end="0,0" kernel="2,2" rounding_type="floor" index_element_type="i32" axis="0"`, 2, in)
	b.result(mp[0])
	b.result(mp[1])
	b.result(b.op1("AvgPool", "opset1", `strides="2,2" pads_begin="1,1" pads_end="0,0" kernel="2,2" exclude-pad="true"`, in))
	b.result(b.op1("AdaptiveAvgPool", "opset8", "", in, b.i64(1, 1)))
	m := b.read(t)
	got := run(t, m, []*tensor.Tensor{x})
	near(t, tf32(tensor.Shape{1, 1, 2, 2}, 5, 7, 13, 15), got[0], 0)
	near(t, ti32(tensor.Shape{1, 1, 2, 2}, 5, 7, 13, 15), got[1], 0)
	near(t, tf32(tensor.Shape{1, 1, 2, 2}, 0, 1.5, 6, 7.5), got[2], 1e-6)
	near(t, tf32(tensor.Shape{1, 1, 1, 1}, 7.5), got[3], 1e-6)
}

// TestCompressedWeights reads the decompression subgraphs OpenVINO's
// converter makes of compressed weights: f16 constants converted to f32,
// and u8, i8 and u4 constants converted, shifted by a zero point and
// scaled, per output channel.
func TestCompressedWeights(t *testing.T) {
	x := tf32(tensor.Shape{1, 3}, 1, 2, 3)
	w16, err := tf32(tensor.Shape{2, 3}, 0.5, -1, 2, 0.25, 3, -2).Convert(tensor.F16)
	require.NoError(t, err)
	q8, err := tensor.FromU8(tensor.Shape{2, 3}, []uint8{130, 126, 128, 0, 255, 128})
	require.NoError(t, err)
	i8, err := tensor.FromFloat64s(tensor.I8, tensor.Shape{2, 3}, []float64{2, -2, 0, -128, 127, 0})
	require.NoError(t, err)
	u4, err := tensor.FromFloat64s(tensor.U4, tensor.Shape{2, 3}, []float64{9, 7, 8, 0, 15, 8})
	require.NoError(t, err)

	b := &irb{}
	in := b.input(x)
	decompress := func(w *tensor.Tensor, zp float64, scale []float32) port {
		c := b.op1("Convert", "opset1", `destination_type="f32"`, b.constant(w))
		if zp != 0 {
			c = b.op1("Subtract", "opset1", "", c, b.constant(tf32(tensor.Shape{1, 1}, float32(zp))))
		}
		if scale != nil {
			c = b.op1("Multiply", "opset1", "", c, b.constant(tf32(tensor.Shape{2, 1}, scale...)))
		}
		return b.op1("MatMul", "opset1", `transpose_a="false" transpose_b="true"`, in, c)
	}
	b.result(decompress(w16, 0, nil))
	b.result(decompress(q8, 128, []float32{0.5, 0.25}))
	b.result(decompress(i8, 0, []float32{0.5, 0.25}))
	b.result(decompress(u4, 8, []float32{1, 0.5}))
	m := b.read(t)
	got := run(t, m, []*tensor.Tensor{x})
	// x . w for the dequantized weights.
	near(t, tf32(tensor.Shape{1, 2}, 0.5-2+6, 0.25+6-6), got[0], 1e-3)
	near(t, tf32(tensor.Shape{1, 2}, 0.5*(2-4+0), 0.25*(-128+254+0)), got[1], 1e-6)
	near(t, tf32(tensor.Shape{1, 2}, 0.5*(2-4), 0.25*(-128+254)), got[2], 1e-6)
	near(t, tf32(tensor.Shape{1, 2}, 1*(1-2+0), 0.5*(-8+14+0)), got[3], 1e-6)
}

func TestDynamicAndBoundedDims(t *testing.T) {
	b := &irb{}
	x := b.param("x", "f32", "1,3,100..200,..320", nil)
	y := b.param("y", "f16", "?,4", nil)
	z := b.param("z", "i64", "...", nil)
	b.result(b.op1("Relu", "opset1", "", x))
	b.result(b.op1("Relu", "opset1", "", y))
	b.result(b.op1("Abs", "opset1", "", z))
	m := b.read(t)
	in := m.Inputs()
	assert.Equal(t, "[1,3,100..200,..320]", in[0].Shape.String())
	assert.Equal(t, graph.Dim{Size: -1, Min: 100, Max: 200}, in[0].Shape.Dims[2])
	assert.Equal(t, "[?,4]", in[1].Shape.String())
	assert.Equal(t, tensor.F16, in[1].Type)
	assert.False(t, in[2].Shape.RankKnown)
	assert.True(t, in[0].Shape.Compatible(tensor.Shape{1, 3, 150, 1}))
	assert.False(t, in[0].Shape.Compatible(tensor.Shape{1, 3, 99, 1}), "a size below the bound does not fit")
	back, doc := roundTrip(t, m)
	assert.Equal(t, comparable(t, m), comparable(t, back))
	assert.Contains(t, string(doc), `shape="1,3,100..200,..320"`)

	_, err := parseShape("1,...,2")
	assert.Error(t, err)
	_, err = parseShape("1..g,2")
	assert.Error(t, err)
	_, err = parseShape("1s,2")
	assert.Error(t, err)
	d, err := parseDim("5..5")
	require.NoError(t, err)
	assert.Equal(t, graph.StaticDim(5), d, "equal bounds are a static size")
}

// TestRuntimeInfo reads a layer's fused names, affinity and other
// attributes and a Parameter's layout, and writes them back.
func TestRuntimeInfo(t *testing.T) {
	doc := `<?xml version="1.0"?><net name="rt" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data element_type="f32" shape="1,3,4,4"/><output><port id="0" names="x"><rt_info><attribute name="layout" version="0" layout="[N,C,H,W]"/></rt_info></port></output></layer>
<layer id="1" name="r" type="Relu" version="opset1"><rt_info><attribute name="fused_names" version="0" value="a,b"/><attribute name="affinity" version="0" value="CPU"/><attribute name="decompression" version="0"/></rt_info><input><port id="0"/></input><output><port id="1" names="r"/></output></layer>
<layer id="2" name="r/sink_port_0" type="Result" version="opset1"><input><port id="0"/></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges>
<rt_info><framework><name value="onnx"/></framework></rt_info></net>`
	m, err := Read([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, "[N,C,H,W]", m.Parameters[0].RT.Extra[ExtraLayout])
	r := nodeNamed(t, m, "r_1")
	assert.Equal(t, []string{"a", "b"}, r.RT.FusedNames)
	assert.Equal(t, "CPU", r.RT.Affinity)
	assert.Equal(t, map[string]string{"ir:decompression": ""}, r.RT.Extra)
	back, out := roundTrip(t, m)
	assert.Equal(t, comparable(t, m), comparable(t, back))
	assert.Contains(t, string(out), `<attribute name="decompression" version="0" value=""></attribute>`)
}

// TestReadErrors: malformed documents and layers the reader cannot map are
// errors that wrap a sentinel and name the layer (id, type, opset).
func TestReadErrors(t *testing.T) {
	param := `<layer id="0" name="x" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0"/></output></layer>`
	result := `<layer id="9" name="out" type="Result" version="opset1"><input><port id="0"/></input></layer>`
	net := func(layers, edges string) string {
		return `<?xml version="1.0"?><net name="bad" version="11"><layers>` + layers + `</layers><edges>` + edges + `</edges></net>`
	}
	unary := func(typ, version, data string) string {
		return net(param+`<layer id="1" name="op" type="`+typ+`" version="`+version+`"><data `+data+`/><input><port id="0"/></input><output><port id="1"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="9" to-port="0"/>`)
	}
	cases := []struct {
		name, doc string
		weights   []byte
		sentinel  error
		contains  []string
	}{
		{"not xml", "{]", nil, ErrInvalidModel, []string{"not an IR document"}},
		{"not a net", `<model/>`, nil, ErrInvalidModel, []string{"not an IR document"}},
		{"old version", `<net name="x" version="7"><layers/></net>`, nil, ErrUnsupportedOp, []string{"IR version 7"}},
		{"no results", net(param, ""), nil, ErrInvalidModel, []string{"no Result"}},
		{"unknown op", unary("Proposal", "opset4", ""), nil, ErrUnsupportedOp, []string{"layer id=1", "Proposal", "opset4"}},
		{"op not yet in the opset", unary("Mish", "opset2", ""), nil, ErrUnsupportedOp, []string{"layer id=1", "Mish", "not in opset2"}},
		{"custom opset", unary("MyOp", "extension", ""), nil, ErrUnsupportedOp, []string{"layer id=1", "MyOp", "extension"}},
		{"opset too new", unary("Relu", "opset99", ""), nil, ErrUnsupportedOp, []string{"opset99"}},
		{"bad attribute value", unary("Elu", "opset1", `alpha="fast"`), nil, ErrInvalidModel, []string{"layer id=1", "alpha"}},
		{"unsupported attribute value", unary("SpaceToDepth", "opset1", `block_size="2" mode="depth_first"`), nil, ErrUnsupportedAttribute, []string{"layer id=1", "depth_first"}},
		{"bad enum", unary("Round", "opset5", `mode="up"`), nil, ErrInvalidModel, []string{"mode", "half_to_even"}},
		{"duplicate id", net(param+param+result, ""), nil, ErrInvalidModel, []string{"layer id=0", "two layers"}},
		{"edge to nowhere", net(param+result, `<edge from-layer="0" from-port="0" to-layer="7" to-port="0"/>`), nil, ErrInvalidModel, []string{"no layer has id \"7\""}},
		{"edge to a missing port", net(param+result, `<edge from-layer="0" from-port="3" to-layer="9" to-port="0"/>`), nil, ErrInvalidModel, []string{"no output port \"3\""}},
		{"unconnected input", net(param+result, ""), nil, ErrInvalidModel, []string{"layer id=9", "not connected"}},
		{"two producers", net(param+`<layer id="1" name="y" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/><edge from-layer="1" from-port="0" to-layer="9" to-port="0"/>`), nil, ErrInvalidModel, []string{"two producers"}},
		{"cycle", net(`<layer id="1" name="a" type="Relu" version="opset1"><input><port id="0"/></input><output><port id="1"/></output></layer>`+
			`<layer id="2" name="b" type="Relu" version="opset1"><input><port id="0"/></input><output><port id="1"/></output></layer>`+result,
			`<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/><edge from-layer="2" from-port="1" to-layer="1" to-port="0"/><edge from-layer="2" from-port="1" to-layer="9" to-port="0"/>`),
			nil, ErrInvalidModel, []string{"cycle"}},
		{"bad dim", net(`<layer id="0" name="x" type="Parameter" version="opset1"><data element_type="f32" shape="1s,2"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), nil, ErrInvalidModel, []string{"layer id=0", "1s"}},
		{"unknown element type", net(`<layer id="0" name="x" type="Parameter" version="opset1"><data element_type="u1" shape="2"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), nil, ErrUnsupportedType, []string{"layer id=0", "u1"}},
		{"no weights", net(`<layer id="0" name="c" type="Const" version="opset1"><data element_type="f32" shape="2" offset="0" size="8"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), nil, ErrWeights, []string{"layer id=0", "not given"}},
		{"weights too short", net(`<layer id="0" name="c" type="Const" version="opset1"><data element_type="f32" shape="2" offset="4" size="8"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), make([]byte, 8), ErrWeights, []string{"layer id=0", "outside the weights"}},
		{"size mismatch", net(`<layer id="0" name="c" type="Const" version="opset1"><data element_type="f32" shape="3" offset="0" size="8"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), make([]byte, 8), ErrWeights, []string{"layer id=0", "12 bytes"}},
		{"huge shape", net(`<layer id="0" name="c" type="Const" version="opset1"><data element_type="f32" shape="4611686018427387904,8" offset="0" size="8"/><output><port id="0"/></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>`), make([]byte, 8), ErrWeights, []string{"too many elements"}},
		{"declared shape contradicts in a clinfer document", strings.Replace(net(param+`<layer id="1" name="op" type="Relu" version="opset1"><input><port id="0"/></input><output><port id="1"><dim>3</dim></port></output></layer>`+result,
			`<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="9" to-port="0"/>`), "</net>", `<rt_info><clinfer writer="clinfer"></clinfer></rt_info></net>`, 1), nil, ErrInvalidModel, []string{"layer id=1", "declares dim 0 = 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.weights != nil {
				opts = append(opts, WithWeights(c.weights))
			}
			_, err := Read([]byte(c.doc), opts...)
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.sentinel), "%v does not wrap %v", err, c.sentinel)
			for _, s := range c.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestReadFileWeights(t *testing.T) {
	dir := t.TempDir()
	b := &irb{}
	b.result(b.op1("Add", "opset1", "", b.input(tf32(tensor.Shape{2}, 1, 2)), b.constant(tf32(tensor.Shape{2}, 10, 20))))
	path := filepath.Join(dir, "model.xml")
	require.NoError(t, os.WriteFile(path, b.doc(), 0o644))
	_, err := ReadFile(path)
	require.ErrorIs(t, err, ErrWeights, "the .bin beside the model is missing")
	assert.Contains(t, err.Error(), "model.bin")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.bin"), b.bin.Bytes(), 0o644))
	m, err := ReadFile(path, WithWeightsFile(filepath.Join(dir, "other.bin")))
	require.NoError(t, err)
	near(t, tf32(tensor.Shape{2}, 11, 22), run(t, m, b.inputs)[0], 0)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.bin"), b.bin.Bytes(), 0o644))
	m, err = ReadFile(path)
	require.NoError(t, err)
	near(t, tf32(tensor.Shape{2}, 11, 22), run(t, m, b.inputs)[0], 0)
	assert.True(t, IsIR(b.doc()))
	assert.False(t, IsIR([]byte("\x08\x07ONNX")))
}

// FuzzReadIR: any document and weights read into a valid model or an
// error wrapping one of the sentinels; a model read writes and reads back.
func FuzzReadIR(f *testing.F) {
	files, _ := filepath.Glob("testdata/openvino/*.xml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data, []byte(nil))
		}
	}
	b := &irb{}
	in := b.input(iota32(1, 2, 3, 3))
	c := b.op1("Convolution", "opset1", `strides="1,1" pads_begin="1,1" pads_end="1,1" dilations="1,1"`, in, b.constant(iota32(4, 2, 3, 3)))
	b.result(b.op1("StridedSlice", "opset1", `begin_mask="1,0" end_mask="1,0" shrink_axis_mask="0,1"`, c, b.i64(0, 1), b.i64(0, 2)))
	f.Add(b.doc(), b.bin.Bytes())
	var doc, bin bytes.Buffer
	if err := Write(b.read(f), &doc, &bin); err == nil {
		f.Add(doc.Bytes(), bin.Bytes())
	}
	sentinels := []error{ErrInvalidModel, ErrUnsupportedOp, ErrUnsupportedAttribute, ErrUnsupportedType, ErrWeights}
	f.Fuzz(func(t *testing.T, data, weights []byte) {
		m, err := Read(data, WithWeights(weights))
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		require.NoError(t, m.Validate())
		var doc, bin bytes.Buffer
		if err := Write(m, &doc, &bin); err != nil {
			if strings.Contains(err.Error(), "cannot be written") {
				return // an attribute name of the clinfer opset XML cannot hold
			}
			t.Fatalf("writing a model read: %v", err)
		}
		if _, err := Read(doc.Bytes(), WithWeights(bin.Bytes())); err != nil {
			t.Fatalf("reading back a model written: %v\n%s", err, doc.String())
		}
	})
}

// TestOpenVINONMS reads OpenVINO's nms5.xml with weights made here (its
// .bin is binary and not copied): at most 10 boxes per class (i64 at 0),
// IoU threshold 0.5 (f32 at 8), score threshold 0 (f32 at 12). One batch
// of one class, so sort_result_descending is the op set's order.
func TestOpenVINONMS(t *testing.T) {
	var w []byte
	w = binary.LittleEndian.AppendUint64(w, 10)
	w = binary.LittleEndian.AppendUint32(w, math.Float32bits(0.5))
	w = binary.LittleEndian.AppendUint32(w, math.Float32bits(0))
	m, err := ReadFile("testdata/openvino/nms5.xml", WithWeights(w))
	require.NoError(t, err)
	n := nodeNamed(t, m, "NonMaxSuppression_73")
	assert.Equal(t, "NonMaxSuppression", n.OpType)
	assert.Equal(t, "Parameter_68", n.Inputs[0].Node.Name, "boxes")
	assert.Equal(t, "Parameter_69", n.Inputs[1].Node.Name, "scores")
	// Box i is [i, 0, i+1, 1]: no two overlap, so the ten best scores win.
	boxes := make([]float32, 4000)
	for i := 0; i < 1000; i++ {
		copy(boxes[4*i:], []float32{float32(i), 0, float32(i + 1), 1})
	}
	scores := seeded.Float32s(5, 1000, 0, 1)
	out := run(t, m, []*tensor.Tensor{tf32(tensor.Shape{1, 1, 1000}, scores...), tf32(tensor.Shape{1, 1000, 4}, boxes...)})
	sel := out[0].I64()
	require.Equal(t, tensor.Shape{10, 3}, out[0].Shape())
	for i := 0; i < 10; i++ {
		assert.Equal(t, []int64{0, 0}, sel[3*i:3*i+2])
		if i > 0 {
			assert.GreaterOrEqual(t, scores[sel[3*i-1]], scores[sel[3*i+2]], "descending scores")
		}
	}
}

// TestOpenVINOStringConstant reads OpenVINO's const_string.xml (IR v11: a
// string Const of shape "2, 3", spelled with a space). Its .bin (not
// copied) is made here in OpenVINO's packing: the count (i32), count+1
// end offsets (i32, the first 0), then the bytes, 60 in all as the layer
// says.
func TestOpenVINOStringConstant(t *testing.T) {
	want := []string{"Hello", "", "OpenVINO", "IR", "ñandú", "tensor"}
	bin := binary.LittleEndian.AppendUint32(nil, uint32(len(want)))
	end := uint32(0)
	bin = binary.LittleEndian.AppendUint32(bin, end)
	for _, s := range want {
		end += uint32(len(s))
		bin = binary.LittleEndian.AppendUint32(bin, end)
	}
	for _, s := range want {
		bin = append(bin, s...)
	}
	require.Len(t, bin, 60)
	m, err := ReadFile("testdata/openvino/const_string.xml", WithWeights(bin))
	require.NoError(t, err)
	out := run(t, m, nil)
	require.Len(t, out, 1)
	assert.Equal(t, tensor.Shape{2, 3}, out[0].Shape())
	assert.Equal(t, want, out[0].Strings())
	back, _ := roundTrip(t, m)
	assert.True(t, bytes.Equal(comparable(t, m), comparable(t, back)), "%s", diff(t, m, back))
}

// TestOpenVINOUnknownOp: OpenVINO's
// experimental_detectron_detection_output_opset6.xml (IR v10) holds an op
// clinfer's op set has no equivalent of; the error names the layer's id,
// name, type and opset and wraps ErrUnsupportedOp.
func TestOpenVINOUnknownOp(t *testing.T) {
	_, err := ReadFile("testdata/openvino/experimental_detectron_detection_output_opset6.xml")
	require.Error(t, err)
	var le *LayerError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrUnsupportedOp)
	assert.ErrorContains(t, err, `layer id=4 "DO" (ExperimentalDetectronDetectionOutput, opset6)`)
}
