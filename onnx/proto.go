package onnx

import (
	"github.com/clinfer/clinfer/tensor"

	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The decoded subset of the ONNX protobuf schema (onnx.proto3). Only the
// fields the frontend uses are kept; every other field is skipped. Field
// numbers are the schema's.

type modelProto struct {
	irVersion int64
	opsets    []opsetID
	graph     *graphProto
	producer  string
}

type opsetID struct {
	domain  string
	version int64
}

type graphProto struct {
	name         string
	nodes        []*nodeProto
	initializers []*tensorProto
	inputs       []*valueInfo
	outputs      []*valueInfo
	sparseInits  int
}

type nodeProto struct {
	inputs  []string
	outputs []string
	name    string
	opType  string
	domain  string
	attrs   []*attrProto
}

// Attribute types (AttributeProto.AttributeType).
const (
	attrFloat        = 1
	attrInt          = 2
	attrString       = 3
	attrTensor       = 4
	attrGraph        = 5
	attrFloats       = 6
	attrInts         = 7
	attrStrings      = 8
	attrTensors      = 9
	attrGraphs       = 10
	attrSparseTensor = 11
	attrSparseTensrs = 12
	attrTypeProto    = 13
	attrTypeProtos   = 14
)

type attrProto struct {
	name    string
	typ     int64
	f       float32
	i       int64
	s       []byte
	t       *tensorProto
	floats  []float32
	ints    []int64
	strings [][]byte
	g       *graphProto   // a GRAPH attribute: If's branches, Loop's and Scan's bodies
	graphs  []*graphProto // a GRAPHS attribute
	refName string
	// seen records which value fields were present, for inferring the type
	// of attributes written by old exporters without the type field.
	hasF, hasI, hasS, hasT, hasG, hasSparse, hasTP bool
	tp                                             *valueInfo // a TYPE_PROTO attribute's type
	nTensors, nGraphs                              int
}

type tensorProto struct {
	dims       []int64
	dataType   int64
	segment    bool
	floatData  []float32
	int32Data  []int32
	stringData []string
	int64Data  []int64
	name       string
	raw        []byte
	hasRaw     bool
	doubleData []float64
	uint64Data []uint64
	external   []kv
	location   int64
}

type kv struct{ key, value string }

type valueInfo struct {
	name string
	// tensorType is set when the TypeProto is a tensor type, or a sequence
	// or optional of tensors (kind says which).
	tensorType bool
	nonTensor  bool
	kind       tensor.Kind
	elemType   int64
	hasShape   bool
	dims       []dimProto
}

type dimProto struct {
	value    int64
	hasValue bool
	param    string
}

// field is one decoded protobuf field.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint, fixed32 or fixed64 value
	b   []byte // bytes value
}

// walk calls fn for every field of the message b. Groups are rejected: the
// ONNX schema has none.
func walk(b []byte, what string, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %s: bad field tag: %v", ErrInvalidModel, what, protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			return fmt.Errorf("%w: %s: field %d has unsupported wire type %d", ErrInvalidModel, what, num, typ)
		}
		if n < 0 {
			return fmt.Errorf("%w: %s: field %d: %v", ErrInvalidModel, what, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func wrongType(what string, f field) error {
	return fmt.Errorf("%w: %s: field %d has wire type %d", ErrInvalidModel, what, f.num, f.typ)
}

func (f field) str(what string) (string, error) {
	if f.typ != protowire.BytesType {
		return "", wrongType(what, f)
	}
	return string(f.b), nil
}

func (f field) msg(what string) ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, wrongType(what, f)
	}
	return f.b, nil
}

func (f field) varint(what string) (int64, error) {
	if f.typ != protowire.VarintType {
		return 0, wrongType(what, f)
	}
	return int64(f.v), nil
}

// varints appends a repeated varint field, packed or not.
func varints(dst []int64, f field, what string) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.v)), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: %s: packed field %d: %v", ErrInvalidModel, what, f.num, protowire.ParseError(n))
			}
			dst = append(dst, int64(v))
			b = b[n:]
		}
		return dst, nil
	}
	return nil, wrongType(what, f)
}

// fixed32s appends a repeated float field, packed or not.
func fixed32s(dst []float32, f field, what string) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.v))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("%w: %s: packed float field %d has %d bytes, not a multiple of 4", ErrInvalidModel, what, f.num, len(f.b))
		}
		for i := 0; i+4 <= len(f.b); i += 4 {
			v, _ := protowire.ConsumeFixed32(f.b[i:])
			dst = append(dst, math.Float32frombits(v))
		}
		return dst, nil
	}
	return nil, wrongType(what, f)
}

// fixed64s appends a repeated double field, packed or not, as raw bits.
func fixed64s(dst []uint64, f field, what string) ([]uint64, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return append(dst, f.v), nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return nil, fmt.Errorf("%w: %s: packed double field %d has %d bytes, not a multiple of 8", ErrInvalidModel, what, f.num, len(f.b))
		}
		for i := 0; i+8 <= len(f.b); i += 8 {
			v, _ := protowire.ConsumeFixed64(f.b[i:])
			dst = append(dst, v)
		}
		return dst, nil
	}
	return nil, wrongType(what, f)
}

func decodeModel(b []byte) (*modelProto, error) {
	m := &modelProto{}
	const what = "ModelProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			m.irVersion, err = f.varint(what + ".ir_version")
		case 2:
			m.producer, err = f.str(what + ".producer_name")
		case 7:
			var mb []byte
			if mb, err = f.msg(what + ".graph"); err == nil {
				m.graph, err = decodeGraph(mb, 0)
			}
		case 8:
			var mb []byte
			if mb, err = f.msg(what + ".opset_import"); err == nil {
				var o opsetID
				o, err = decodeOpset(mb)
				m.opsets = append(m.opsets, o)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func decodeOpset(b []byte) (opsetID, error) {
	var o opsetID
	const what = "OperatorSetIdProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			o.domain, err = f.str(what + ".domain")
		case 2:
			o.version, err = f.varint(what + ".version")
		}
		return err
	})
	return o, err
}

// maxGraphDepth bounds the nesting of subgraphs (If branches, Loop and
// Scan bodies) the decoder follows, so a crafted file cannot exhaust the
// stack.
const maxGraphDepth = 32

func decodeGraph(b []byte, depth int) (*graphProto, error) {
	g := &graphProto{}
	const what = "GraphProto"
	if depth > maxGraphDepth {
		return nil, fmt.Errorf("%w: %s: subgraphs nest deeper than %d levels", ErrInvalidModel, what, maxGraphDepth)
	}
	err := walk(b, what, func(f field) error {
		var err error
		var mb []byte
		switch f.num {
		case 1:
			if mb, err = f.msg(what + ".node"); err == nil {
				var n *nodeProto
				n, err = decodeNode(mb, depth)
				g.nodes = append(g.nodes, n)
			}
		case 2:
			g.name, err = f.str(what + ".name")
		case 5:
			if mb, err = f.msg(what + ".initializer"); err == nil {
				var t *tensorProto
				t, err = decodeTensor(mb)
				g.initializers = append(g.initializers, t)
			}
		case 11, 12:
			if mb, err = f.msg(what + ".input/output"); err == nil {
				var v *valueInfo
				v, err = decodeValueInfo(mb)
				if f.num == 11 {
					g.inputs = append(g.inputs, v)
				} else {
					g.outputs = append(g.outputs, v)
				}
			}
		case 15:
			g.sparseInits++
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func decodeNode(b []byte, depth int) (*nodeProto, error) {
	n := &nodeProto{}
	const what = "NodeProto"
	err := walk(b, what, func(f field) error {
		var err error
		var s string
		switch f.num {
		case 1:
			s, err = f.str(what + ".input")
			n.inputs = append(n.inputs, s)
		case 2:
			s, err = f.str(what + ".output")
			n.outputs = append(n.outputs, s)
		case 3:
			n.name, err = f.str(what + ".name")
		case 4:
			n.opType, err = f.str(what + ".op_type")
		case 7:
			n.domain, err = f.str(what + ".domain")
		case 5:
			var mb []byte
			if mb, err = f.msg(what + ".attribute"); err == nil {
				var a *attrProto
				a, err = decodeAttr(mb, depth)
				n.attrs = append(n.attrs, a)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

func decodeAttr(b []byte, depth int) (*attrProto, error) {
	a := &attrProto{}
	const what = "AttributeProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			a.name, err = f.str(what + ".name")
		case 20:
			a.typ, err = f.varint(what + ".type")
		case 21:
			a.refName, err = f.str(what + ".ref_attr_name")
		case 2:
			if f.typ != protowire.Fixed32Type {
				return wrongType(what+".f", f)
			}
			a.f, a.hasF = math.Float32frombits(uint32(f.v)), true
		case 3:
			a.i, err = f.varint(what + ".i")
			a.hasI = true
		case 4:
			a.s, err = f.msg(what + ".s")
			a.hasS = true
		case 5:
			var mb []byte
			if mb, err = f.msg(what + ".t"); err == nil {
				a.t, err = decodeTensor(mb)
				a.hasT = true
			}
		case 6:
			var mb []byte
			if mb, err = f.msg(what + ".g"); err == nil {
				a.g, err = decodeGraph(mb, depth+1)
				a.hasG = true
			}
		case 22:
			a.hasSparse = true
		case 14:
			a.hasTP = true
			var mb []byte
			if mb, err = f.msg(what + ".tp"); err == nil {
				a.tp = &valueInfo{name: a.name}
				err = decodeType(mb, a.tp)
			}
		case 7:
			a.floats, err = fixed32s(a.floats, f, what+".floats")
		case 8:
			a.ints, err = varints(a.ints, f, what+".ints")
		case 9:
			var s []byte
			s, err = f.msg(what + ".strings")
			a.strings = append(a.strings, s)
		case 10:
			a.nTensors++
		case 11:
			a.nGraphs++
			var mb []byte
			if mb, err = f.msg(what + ".graphs"); err == nil {
				var g *graphProto
				g, err = decodeGraph(mb, depth+1)
				a.graphs = append(a.graphs, g)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

func decodeTensor(b []byte) (*tensorProto, error) {
	t := &tensorProto{}
	const what = "TensorProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			t.dims, err = varints(t.dims, f, what+".dims")
		case 2:
			t.dataType, err = f.varint(what + ".data_type")
		case 3:
			t.segment = true
		case 4:
			t.floatData, err = fixed32s(t.floatData, f, what+".float_data")
		case 5:
			var v []int64
			v, err = varints(nil, f, what+".int32_data")
			for _, x := range v {
				t.int32Data = append(t.int32Data, int32(x))
			}
		case 6:
			var v string
			v, err = f.str(what + ".string_data")
			t.stringData = append(t.stringData, v)
		case 7:
			t.int64Data, err = varints(t.int64Data, f, what+".int64_data")
		case 8:
			t.name, err = f.str(what + ".name")
		case 9:
			t.raw, err = f.msg(what + ".raw_data")
			t.hasRaw = true
		case 10:
			var bits []uint64
			bits, err = fixed64s(nil, f, what+".double_data")
			for _, x := range bits {
				t.doubleData = append(t.doubleData, math.Float64frombits(x))
			}
		case 11:
			var v []int64
			v, err = varints(nil, f, what+".uint64_data")
			for _, x := range v {
				t.uint64Data = append(t.uint64Data, uint64(x))
			}
		case 13:
			var mb []byte
			if mb, err = f.msg(what + ".external_data"); err == nil {
				var e kv
				e, err = decodeKV(mb)
				t.external = append(t.external, e)
			}
		case 14:
			t.location, err = f.varint(what + ".data_location")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func decodeKV(b []byte) (kv, error) {
	var e kv
	const what = "StringStringEntryProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			e.key, err = f.str(what + ".key")
		case 2:
			e.value, err = f.str(what + ".value")
		}
		return err
	})
	return e, err
}

func decodeValueInfo(b []byte) (*valueInfo, error) {
	v := &valueInfo{}
	const what = "ValueInfoProto"
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			v.name, err = f.str(what + ".name")
		case 2:
			var mb []byte
			if mb, err = f.msg(what + ".type"); err == nil {
				err = decodeType(mb, v)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}
