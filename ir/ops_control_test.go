package ir

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// loopWeights makes the weights of OpenVINO's loop_2d_add.xml, whose .bin
// (binary) is not in clinfer's repository: its layers read a trip count
// (i64 at 0), an execution condition (boolean at 8), an f32 scalar added
// to both outputs (at 9), the body's f32[1,2] addend (at 13) and the
// Unsqueeze axis (i64 at 21). The values are chosen here: 3 iterations,
// true, 10, [1, 2] and axis 0.
func loopWeights() []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, 3)
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(10))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(1))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(2))
	b = binary.LittleEndian.AppendUint64(b, 0)
	return b
}

func TestOpenVINOLoop(t *testing.T) {
	m, err := ReadFile("testdata/openvino/loop_2d_add.xml", WithWeights(loopWeights()))
	require.NoError(t, err)
	x := tf32(tensor.Shape{1, 2}, 100, 200)
	out := run(t, m, []*tensor.Tensor{x})
	require.Len(t, out, 2)
	// a_final = x + 3*[1,2] + 10; a_values = [x+b, x+2b, x+3b] + 10 along axis 0.
	near(t, tf32(tensor.Shape{1, 2}, 113, 216), out[0], 0)
	near(t, tf32(tensor.Shape{3, 1, 2}, 111, 212, 112, 214, 113, 216), out[1], 0)
	assert.Equal(t, []string{"a_final", "a_values"}, []string{m.Results[0].Name, m.Results[1].Name})
	back, _ := roundTrip(t, m)
	assert.True(t, bytes.Equal(comparable(t, m), comparable(t, back)), "%s", diff(t, m, back))
}

// ifDoc is an If-8 whose then branch adds its two data inputs and whose
// else branch negates the second (the first unused there), with output
// port_map ids given as the output's index (as TensorFlow's converter
// writes them).
const ifDoc = `<?xml version="1.0"?><net name="if" version="11"><layers>
<layer id="0" name="c" type="Parameter" version="opset1"><data element_type="boolean" shape=""/><output><port id="0" names="c"/></output></layer>
<layer id="1" name="a" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0" names="a"/></output></layer>
<layer id="2" name="b" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0" names="b"/></output></layer>
<layer id="3" name="if" type="If" version="opset8">
 <input><port id="0"/><port id="1"/><port id="2"/></input><output><port id="3" names="y"/></output>
 <then_port_map><input external_port_id="1" internal_layer_id="0"/><input external_port_id="2" internal_layer_id="1"/><output external_port_id="0" internal_layer_id="3"/></then_port_map>
 <else_port_map><input external_port_id="2" internal_layer_id="0"/><output external_port_id="0" internal_layer_id="2"/></else_port_map>
 <then_body><layers>
  <layer id="0" name="ta" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0"/></output></layer>
  <layer id="1" name="tb" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0"/></output></layer>
  <layer id="2" name="sum" type="Add" version="opset1"><input><port id="0"/><port id="1"/></input><output><port id="2"/></output></layer>
  <layer id="3" name="tr" type="Result" version="opset1"><input><port id="0"/></input></layer>
 </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/><edge from-layer="1" from-port="0" to-layer="2" to-port="1"/><edge from-layer="2" from-port="2" to-layer="3" to-port="0"/></edges></then_body>
 <else_body><layers>
  <layer id="0" name="eb" type="Parameter" version="opset1"><data element_type="f32" shape="2"/><output><port id="0"/></output></layer>
  <layer id="1" name="neg" type="Negative" version="opset1"><input><port id="0"/></input><output><port id="1"/></output></layer>
  <layer id="2" name="er" type="Result" version="opset1"><input><port id="0"/></input></layer>
 </layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges></else_body>
</layer>
<layer id="4" name="y/sink_port_0" type="Result" version="opset1"><input><port id="0"/></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="3" to-port="0"/><edge from-layer="1" from-port="0" to-layer="3" to-port="1"/>
<edge from-layer="2" from-port="0" to-layer="3" to-port="2"/><edge from-layer="3" from-port="3" to-layer="4" to-port="0"/></edges></net>`

func TestIf(t *testing.T) {
	m, err := Read([]byte(ifDoc))
	require.NoError(t, err)
	n := nodeNamed(t, m, "if")
	assert.Equal(t, graph.OpIf, n.OpType)
	a, b := tf32(tensor.Shape{2}, 1, 2), tf32(tensor.Shape{2}, 10, 20)
	for _, c := range []bool{true, false} {
		cond, _ := tensor.FromBool(tensor.Shape{}, []bool{c})
		out := run(t, m, []*tensor.Tensor{cond, a, b})
		want := tf32(tensor.Shape{2}, -10, -20)
		if c {
			want = tf32(tensor.Shape{2}, 11, 22)
		}
		near(t, want, out[0], 0)
	}
	back, _ := roundTrip(t, m)
	assert.True(t, bytes.Equal(comparable(t, m), comparable(t, back)), "%s", diff(t, m, back))
}

// TestOpenVINOIfWithoutParameters reads OpenVINO's
// if_body_without_parameters.xml (IR v11 from TensorFlow's converter: an
// If-8 whose branches read no input and return a constant, "ReLU" spelled
// as that converter did, meta_data). Its .bin (binary, not copied) is made
// here: the Squeeze axis 0 (i64 at 0) and the branches' f32 constants (at
// 8 and 12). The If's condition is Squeeze(Less(x, y)) of inputs [1,0]:
// zero elements. OpenVINO's reader checks only the condition's rank and
// takes the file (its serialization test reads it); clinfer's If follows
// ONNX's, whose condition has one element, so the reader refuses the
// layer, naming it, and says why.
func TestOpenVINOIfWithoutParameters(t *testing.T) {
	var bin []byte
	bin = binary.LittleEndian.AppendUint64(bin, 0)
	bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(1.5))
	bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(-2.5))
	_, err := ReadFile("testdata/openvino/if_body_without_parameters.xml", WithWeights(bin))
	require.Error(t, err)
	var le *LayerError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrInvalidModel)
	assert.ErrorContains(t, err, `layer id=5 "PartitionedCall/model/if/cond" (If, opset8)`)
	assert.ErrorContains(t, err, "condition has shape [0], want one element")
}
