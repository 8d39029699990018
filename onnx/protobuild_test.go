package onnx

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clinfer/clinfer/tensor"
)

// This file builds ONNX protobuf messages for tests, with protowire, so
// tests and the fuzz seeds need no external tooling.

type pb []byte

func (p pb) str(num protowire.Number, s string) pb {
	p = protowire.AppendTag(p, num, protowire.BytesType)
	return protowire.AppendString(p, s)
}

func (p pb) bytes(num protowire.Number, b []byte) pb {
	p = protowire.AppendTag(p, num, protowire.BytesType)
	return protowire.AppendBytes(p, b)
}

func (p pb) varint(num protowire.Number, v int64) pb {
	p = protowire.AppendTag(p, num, protowire.VarintType)
	return protowire.AppendVarint(p, uint64(v))
}

func (p pb) f32(num protowire.Number, f float32) pb {
	p = protowire.AppendTag(p, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(p, math.Float32bits(f))
}

func (p pb) packedVarints(num protowire.Number, v []int64) pb {
	var b []byte
	for _, x := range v {
		b = protowire.AppendVarint(b, uint64(x))
	}
	return p.bytes(num, b)
}

func (p pb) packedF32(num protowire.Number, v []float32) pb {
	var b []byte
	for _, x := range v {
		b = protowire.AppendFixed32(b, math.Float32bits(x))
	}
	return p.bytes(num, b)
}

// tAttr is an attribute under construction.
type tAttr pb

func aInt(name string, v int64) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrInt).varint(3, v))
}

func aFloat(name string, v float32) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrFloat).f32(2, v))
}

func aStr(name, v string) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrString).str(4, v))
}

func aStrs(name string, v ...string) tAttr {
	p := pb(nil).str(1, name).varint(20, attrStrings)
	for _, s := range v {
		p = p.str(9, s)
	}
	return tAttr(p)
}

func aInts(name string, v ...int64) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrInts).packedVarints(8, v))
}

func aFloats(name string, v ...float32) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrFloats).packedF32(7, v))
}

func aTensor(name string, t []byte) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrTensor).bytes(5, t))
}

func aGraph(name string) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrGraph).bytes(6, nil))
}

// tNode is a NodeProto under construction.
type tNode struct {
	op, name, domain string
	in, out          []string
	attrs            []tAttr
}

func (n tNode) bytes() []byte {
	var p pb
	for _, s := range n.in {
		p = p.str(1, s)
	}
	for _, s := range n.out {
		p = p.str(2, s)
	}
	if n.name != "" {
		p = p.str(3, n.name)
	}
	p = p.str(4, n.op)
	for _, a := range n.attrs {
		p = p.bytes(5, a)
	}
	if n.domain != "" {
		p = p.str(7, n.domain)
	}
	return p
}

// tValue is a ValueInfoProto: dims are int (static), string (dim_param) or
// nil (unknown); noShape leaves the shape out.
type tValue struct {
	name    string
	elem    int64
	dims    []any
	noShape bool
}

func (v tValue) bytes() []byte {
	var shape pb
	for _, d := range v.dims {
		var dim pb
		switch d := d.(type) {
		case int:
			dim = dim.varint(1, int64(d))
		case string:
			dim = dim.str(2, d)
		}
		shape = shape.bytes(1, dim)
	}
	tt := pb(nil).varint(1, v.elem)
	if !v.noShape {
		tt = tt.bytes(2, shape)
	}
	typ := pb(nil).bytes(1, tt)
	return pb(nil).str(1, v.name).bytes(2, typ)
}

// tModel is a ModelProto with one graph.
type tModel struct {
	ir      int64
	opset   int64
	opsets  map[string]int64
	name    string
	nodes   []tNode
	inits   [][]byte
	inputs  []tValue
	outputs []tValue
}

// aSubgraph is a GRAPH attribute holding g's graph.
func aSubgraph(name string, g tModel) tAttr {
	return tAttr(pb(nil).str(1, name).varint(20, attrGraph).bytes(6, g.graphBytes()))
}

func (m tModel) bytes() []byte {
	g := pb(m.graphBytes())
	ir := m.ir
	if ir == 0 {
		ir = 8
	}
	p := pb(nil).varint(1, ir).str(2, "clinfer-test")
	p = p.bytes(7, g)
	if m.opset != 0 {
		p = p.bytes(8, pb(nil).str(1, "").varint(2, m.opset))
	}
	for d, v := range m.opsets {
		p = p.bytes(8, pb(nil).str(1, d).varint(2, v))
	}
	return p
}

// graphBytes encodes m's GraphProto.
func (m tModel) graphBytes() []byte {
	var g pb
	for _, n := range m.nodes {
		g = g.bytes(1, n.bytes())
	}
	g = g.str(2, m.name)
	for _, t := range m.inits {
		g = g.bytes(5, t)
	}
	for _, v := range m.inputs {
		g = g.bytes(11, v.bytes())
	}
	for _, v := range m.outputs {
		g = g.bytes(12, v.bytes())
	}
	return g
}

// rawTensor encodes t as a TensorProto with raw_data.
func rawTensor(name string, t *tensor.Tensor) []byte {
	p := pb(nil)
	for _, d := range t.Shape() {
		p = p.varint(1, d)
	}
	p = p.varint(2, DataType(t.Type()))
	p = p.str(8, name)
	raw := t.Contiguous().Bytes()
	if t.Type().Bits() == 4 {
		raw, _ = tensor.Pack4(t)
	}
	return p.bytes(9, raw)
}

func f32Tensor(shape tensor.Shape, v ...float32) *tensor.Tensor {
	t, err := tensor.FromF32(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

func i64Tensor(v ...int64) *tensor.Tensor {
	t, err := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	if err != nil {
		panic(err)
	}
	return t
}

// fv is a float input/output value info with the given dims.
func fv(name string, dims ...any) tValue { return tValue{name: name, elem: dtFloat, dims: dims} }
