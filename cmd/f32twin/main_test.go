package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/tensor"
)

// msg builds protobuf messages for the test.
type msg []byte

func (m msg) str(num protowire.Number, s string) msg {
	return protowire.AppendString(protowire.AppendTag(m, num, protowire.BytesType), s)
}

func (m msg) sub(num protowire.Number, b msg) msg {
	return protowire.AppendBytes(protowire.AppendTag(m, num, protowire.BytesType), b)
}

func (m msg) varint(num protowire.Number, v uint64) msg {
	return protowire.AppendVarint(protowire.AppendTag(m, num, protowire.VarintType), v)
}

// valueInfo is a ValueInfoProto of a tensor of ONNX type elem and shape dims.
func valueInfo(name string, elem uint64, dims ...uint64) msg {
	var shape msg
	for _, d := range dims {
		shape = shape.sub(1, msg(nil).varint(1, d))
	}
	return msg(nil).str(1, name).sub(2, msg(nil).sub(1, msg(nil).varint(1, elem).sub(2, shape)))
}

// TestTwin converts the model y = Cast<f16>(Add(x, w)) with an f16
// parameter x, an f16 initializer w in raw_data and an f16 Constant c in
// int32_data feeding z = Mul(x, c), and reads both models back: the twin
// has f32 ports, weights equal to the f16 values, a Cast to f32, and the
// same graph otherwise.
func TestTwin(t *testing.T) {
	halves := []float32{0.5, -1.25, 3, 0.0009765625} // exact in f16
	raw := make([]byte, 2*len(halves))
	var ints []byte
	for i, f := range halves {
		h := tensor.Float32ToF16(f)
		binary.LittleEndian.PutUint16(raw[2*i:], h)
		ints = protowire.AppendVarint(ints, uint64(h))
	}
	w := msg(nil).varint(1, 4).varint(2, onnxFloat16).str(8, "w").sub(9, raw)
	c := msg(nil).varint(1, 4).varint(2, onnxFloat16).sub(5, ints)
	attr := func(name string, typ uint64, field protowire.Number, v msg, i uint64) msg {
		a := msg(nil).str(1, name).varint(20, typ)
		if v != nil {
			return a.sub(field, v)
		}
		return a.varint(field, i)
	}
	graph := msg(nil).
		sub(1, msg(nil).str(2, "c").str(3, "const").str(4, "Constant").sub(5, attr("value", 4, 5, c, 0))).
		sub(1, msg(nil).str(1, "x").str(1, "w").str(2, "s").str(3, "add").str(4, "Add")).
		sub(1, msg(nil).str(1, "s").str(2, "y").str(3, "cast").str(4, "Cast").sub(5, attr("to", 2, 3, nil, onnxFloat16))).
		sub(1, msg(nil).str(1, "x").str(1, "c").str(2, "z").str(3, "mul").str(4, "Mul")).
		str(2, "g").sub(5, w).
		sub(11, valueInfo("x", onnxFloat16, 4)).
		sub(12, valueInfo("y", onnxFloat16, 4)).sub(12, valueInfo("z", onnxFloat16, 4))
	model := msg(nil).varint(1, 8).sub(8, msg(nil).varint(2, 17)).sub(7, graph)

	dir := t.TempDir()
	in, out := filepath.Join(dir, "f16.onnx"), filepath.Join(dir, "f32.onnx")
	require.NoError(t, os.WriteFile(in, model, 0o644))
	var stdout bytes.Buffer
	require.NoError(t, run([]string{"-i", in, "-o", out}, &stdout))
	assert.Contains(t, stdout.String(), "2 f16 tensors (8 values), 3 value types and 1 Casts made f32")

	orig, err := onnx.ReadFile(in)
	require.NoError(t, err)
	twin, err := onnx.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, orig.InferShapes())
	require.NoError(t, twin.InferShapes())
	assert.Equal(t, tensor.F16, orig.Inputs()[0].Type)
	assert.Equal(t, tensor.F32, twin.Inputs()[0].Type)
	for _, o := range twin.Outputs() {
		assert.Equal(t, tensor.F32, o.Type, "output %s", o.Name)
	}
	nodes, err := twin.Nodes()
	require.NoError(t, err)
	consts := 0
	for _, n := range nodes {
		switch n.OpType {
		case "Cast":
			assert.Equal(t, int64(tensor.F32), n.Attrs.Int("to", 0))
		case "Constant":
			require.Equal(t, tensor.F32, n.Value.Type(), n.Name)
			assert.Equal(t, halves, n.Value.F32(), "%s holds the f16 values exactly", n.Name)
			consts++
		}
	}
	assert.Equal(t, 2, consts, "the initializer and the Constant")

	require.NoError(t, os.WriteFile(in, append(model, 0xff), 0o644))
	assert.Error(t, run([]string{"-i", in, "-o", out}, &stdout), "a truncated message is an error")
	assert.ErrorContains(t, run(nil, &stdout), "want -i")
}
