package onnxbuild

import (
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clinfer/clinfer/tensor"
)

// ONNX TensorProto.DataType values for the element types clinfer has.
var onnxTypes = map[tensor.ElementType]int64{
	tensor.F32: 1, tensor.U8: 2, tensor.I8: 3, tensor.U16: 4, tensor.I16: 5, tensor.I32: 6,
	tensor.I64: 7, tensor.String: 8, tensor.Bool: 9, tensor.F16: 10, tensor.F64: 11, tensor.U32: 12,
	tensor.U64: 13, tensor.BF16: 16, tensor.F8E4M3FN: 17, tensor.F8E4M3FNUZ: 18, tensor.F8E5M2: 19,
	tensor.F8E5M2FNUZ: 20, tensor.U4: 21, tensor.I4: 22,
}

// DataType returns ONNX's TensorProto.DataType number for t, or 0.
func DataType(t tensor.ElementType) int64 { return onnxTypes[t] }

// Model accumulates the parts of an ONNX model.
type Model struct {
	name         string
	opset        int64
	nodes        [][]byte
	inits        [][]byte
	inputs       [][]byte
	outputs      [][]byte
	extraOpsets  map[string]int64
	irVersion    int64
	producerName string
}

// New returns an empty model with the default-domain opset version given.
func New(name string, opset int64) *Model {
	return &Model{name: name, opset: opset, irVersion: 8, producerName: "clinfer-onnxbuild", extraOpsets: map[string]int64{}}
}

// IRVersion sets the model's IR version (8 by default; opset 21 with
// 4-bit types needs 10).
func (m *Model) IRVersion(v int64) *Model {
	m.irVersion = v
	return m
}

// Producer sets the producer name.
func (m *Model) Producer(name string) *Model {
	m.producerName = name
	return m
}

// Opset imports another domain at a version.
func (m *Model) Opset(domain string, version int64) *Model {
	m.extraOpsets[domain] = version
	return m
}

// Dim is one dimension of a graph input or output: a size (>= 0) or a
// symbolic name.
type Dim struct {
	Size  int64
	Param string
}

// Dims makes static dims from sizes; a negative size becomes an unnamed
// dynamic dim.
func Dims(sizes ...int64) []Dim {
	d := make([]Dim, len(sizes))
	for i, s := range sizes {
		d[i] = Dim{Size: s}
	}
	return d
}

// Input declares a graph input.
func (m *Model) Input(name string, t tensor.ElementType, dims []Dim) *Model {
	m.inputs = append(m.inputs, valueInfo(name, t, dims))
	return m
}

// Output declares a graph output. A nil dims leaves the shape unstated.
func (m *Model) Output(name string, t tensor.ElementType, dims []Dim) *Model {
	m.outputs = append(m.outputs, valueInfo(name, t, dims))
	return m
}

// Initializer adds a named constant.
func (m *Model) Initializer(name string, value *tensor.Tensor) *Model {
	m.inits = append(m.inits, TensorProto(name, value))
	return m
}

// Node adds a node. attrs values may be int, int64, float32, float64,
// string, []int64, []float32, []string or *tensor.Tensor.
func (m *Model) Node(opType, name string, inputs, outputs []string, attrs map[string]any) *Model {
	var b []byte
	for _, in := range inputs {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, in)
	}
	for _, out := range outputs {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, out)
	}
	b = appendString(b, 3, name)
	b = appendString(b, 4, opType)
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, attribute(k, attrs[k]))
	}
	m.nodes = append(m.nodes, b)
	return m
}

// Bytes encodes the ModelProto.
func (m *Model) Bytes() []byte {
	var g []byte
	for _, n := range m.nodes {
		g = appendMsg(g, 1, n)
	}
	g = appendString(g, 2, m.name)
	for _, t := range m.inits {
		g = appendMsg(g, 5, t)
	}
	for _, v := range m.inputs {
		g = appendMsg(g, 11, v)
	}
	for _, v := range m.outputs {
		g = appendMsg(g, 12, v)
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(m.irVersion))
	b = appendString(b, 2, m.producerName)
	b = appendMsg(b, 7, g)
	b = appendMsg(b, 8, opsetID("", m.opset))
	domains := make([]string, 0, len(m.extraOpsets))
	for d := range m.extraOpsets {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	for _, d := range domains {
		b = appendMsg(b, 8, opsetID(d, m.extraOpsets[d]))
	}
	return b
}

func opsetID(domain string, version int64) []byte {
	var o []byte
	if domain != "" {
		o = appendString(o, 1, domain)
	}
	o = protowire.AppendTag(o, 2, protowire.VarintType)
	return protowire.AppendVarint(o, uint64(version))
}

// TensorProto encodes a tensor as an ONNX TensorProto with raw_data
// (string_data for strings).
func TensorProto(name string, t *tensor.Tensor) []byte {
	var b []byte
	for _, d := range t.Shape() {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(onnxTypes[t.Type()]))
	b = appendString(b, 8, name)
	if t.Type() == tensor.String {
		for _, s := range t.Contiguous().Strings() {
			b = protowire.AppendTag(b, 6, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
		return b
	}
	raw := t.Contiguous().Bytes()
	if t.Type().Bits() == 4 {
		raw, _ = tensor.Pack4(t) // two elements to a byte, as ONNX stores INT4/UINT4
	}
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	b = protowire.AppendBytes(b, raw)
	return b
}

func valueInfo(name string, t tensor.ElementType, dims []Dim) []byte {
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(onnxTypes[t]))
	if dims != nil {
		var shape []byte
		for _, d := range dims {
			var dim []byte
			if d.Param != "" {
				dim = appendString(dim, 2, d.Param)
			} else if d.Size >= 0 {
				dim = protowire.AppendTag(dim, 1, protowire.VarintType)
				dim = protowire.AppendVarint(dim, uint64(d.Size))
			}
			shape = appendMsg(shape, 1, dim)
		}
		tt = appendMsg(tt, 2, shape)
	}
	typ := appendMsg(nil, 1, tt)
	var v []byte
	v = appendString(v, 1, name)
	v = appendMsg(v, 2, typ)
	return v
}

// ONNX AttributeProto.AttributeType values.
const (
	attrFloat   = 1
	attrInt     = 2
	attrString  = 3
	attrTensor  = 4
	attrFloats  = 6
	attrInts    = 7
	attrStrings = 8
)

func attribute(name string, v any) []byte {
	var b []byte
	b = appendString(b, 1, name)
	typ := 0
	switch v := v.(type) {
	case float32:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(v))
		typ = attrFloat
	case float64:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(float32(v)))
		typ = attrFloat
	case int:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(v)))
		typ = attrInt
	case int64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v))
		typ = attrInt
	case string:
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendString(b, v)
		typ = attrString
	case *tensor.Tensor:
		b = appendMsg(b, 5, TensorProto("", v))
		typ = attrTensor
	case []float32:
		for _, f := range v {
			b = protowire.AppendTag(b, 7, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(f))
		}
		typ = attrFloats
	case []int64:
		for _, i := range v {
			b = protowire.AppendTag(b, 8, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(i))
		}
		typ = attrInts
	case []string:
		for _, s := range v {
			b = protowire.AppendTag(b, 9, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
		typ = attrStrings
	default:
		panic(fmt.Sprintf("onnxbuild: attribute %q has unsupported Go type %T", name, v))
	}
	b = protowire.AppendTag(b, 20, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(typ))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMsg(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
