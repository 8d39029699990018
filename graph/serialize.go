package graph

import (
	"bytes"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/clinfer/clinfer/internal/wire"
	"github.com/clinfer/clinfer/tensor"
)

// EncodingVersion is the version of the binary model encoding written by
// MarshalBinary. Decoders reject any other version: an exported compiled
// model must be re-exported by the build that reads it.
const EncodingVersion = 3

// encodingMagic opens every encoded model.
const encodingMagic = "CLGRAPH\x00"

// maxSubgraphDepth bounds the nesting of *Model attributes a decoder
// follows, so a crafted stream cannot exhaust the stack.
const maxSubgraphDepth = 16

// ErrBadEncoding is wrapped by every error about a truncated, corrupt or
// unsupported model encoding.
var ErrBadEncoding = errors.New("graph: bad model encoding")

// Attribute value tags of the encoding. The numbers are part of the format.
const (
	tagInt64    = 1
	tagFloat32  = 2
	tagString   = 3
	tagInts     = 4
	tagFloats   = 5
	tagStrings  = 6
	tagTensor   = 7
	tagModel    = 8
	tagFloat64  = 9
	tagInt      = 10
	tagMaxValid = tagInt
)

// MarshalBinary encodes the model — its name, opsets, every node in
// topological order with attributes of every type, output ports, constant
// values and runtime info, and the parameter and result lists — in a
// versioned binary form that UnmarshalBinary reads back. The encoding is
// deterministic: equal models give equal bytes, so it can be hashed.
func (m *Model) MarshalBinary() ([]byte, error) {
	var e encoder
	e.buf.Grow(tensorBytes(m) + 1<<16) // one allocation for the weights, not a doubling per size class
	e.buf.WriteString(encodingMagic)
	e.uvarint(EncodingVersion)
	if err := e.model(m, 0); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// UnmarshalBinary replaces m with the model encoded in data. It never
// panics on corrupt input, and it allocates at most a small multiple of
// len(data): every count and length in the stream is checked against the
// bytes that remain before anything is allocated for it. Errors wrap
// ErrBadEncoding and say where the stream went wrong.
func (m *Model) UnmarshalBinary(data []byte) error {
	d := decoder{wire.Decoder{Data: data, Sentinel: ErrBadEncoding}}
	magic := d.Bytes(len(encodingMagic), "magic")
	if d.Err != nil || string(magic) != encodingMagic {
		return fmt.Errorf("%w: not an encoded model (bad magic)", ErrBadEncoding)
	}
	if v := d.Uvarint("version"); d.Err == nil && v != EncodingVersion {
		return fmt.Errorf("%w: encoding version %d, this build reads version %d", ErrBadEncoding, v, EncodingVersion)
	}
	out := d.model(0)
	if d.Err != nil {
		return d.Err
	}
	if d.Pos != len(d.Data) {
		return fmt.Errorf("%w: %d trailing bytes after the model", ErrBadEncoding, len(d.Data)-d.Pos)
	}
	*m = *out
	return nil
}

// WriteModel writes the encoding of m (see MarshalBinary) to w. Large
// tensors' bytes go to w as they are, never gathered with the rest in
// memory (the model cache hashes a model's encoding: a 178 MB model no
// longer costs a 178 MB buffer grown by copies), so on an error w may
// have received part of the encoding.
func WriteModel(w io.Writer, m *Model) error {
	e := encoder{w: w}
	e.buf.WriteString(encodingMagic)
	e.uvarint(EncodingVersion)
	if err := e.model(m, 0); err != nil {
		return err
	}
	if err := e.flush(); err != nil {
		return fmt.Errorf("graph: write model %q: %w", m.Name, err)
	}
	return nil
}

// ReadModel reads an encoded model from r until EOF (see UnmarshalBinary).
// Memory use grows with the bytes actually read, never with lengths the
// stream claims.
func ReadModel(r io.Reader) (*Model, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("graph: read model: %w", err)
	}
	m := &Model{}
	if err := m.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return m, nil
}

// encoder appends the encoding to a buffer.
type encoder struct {
	buf bytes.Buffer
	tmp [bin.MaxVarintLen64]byte
	// w, when set, receives the encoding: buf holds what is not written
	// yet (WriteModel); err is the first error writing to it.
	w   io.Writer
	err error
}

// tensorBytes is the size of m's constants' data (its bodies' not
// counted), what most of its encoding is.
func tensorBytes(m *Model) int {
	nodes, err := m.Nodes()
	if err != nil {
		return 0
	}
	total := 0
	for _, n := range nodes {
		if n.Value != nil {
			if b, ok := n.Value.Shape().Bytes(n.Value.Type()); ok && n.Value.Type() != tensor.String {
				total += int(b)
			}
		}
	}
	return total
}

// streamMin is the size from which WriteModel writes a tensor's bytes to
// its writer directly.
const streamMin = 64 << 10

// flush writes what buf holds to w.
func (e *encoder) flush() error {
	if e.err == nil && e.buf.Len() > 0 {
		_, e.err = e.w.Write(e.buf.Bytes())
	}
	e.buf.Reset()
	return e.err
}

func (e *encoder) uvarint(v uint64) {
	n := bin.PutUvarint(e.tmp[:], v)
	e.buf.Write(e.tmp[:n])
}

func (e *encoder) varint(v int64) {
	n := bin.PutVarint(e.tmp[:], v)
	e.buf.Write(e.tmp[:n])
}

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf.WriteString(s)
}

func (e *encoder) u32(v uint32) {
	var b [4]byte
	bin.LittleEndian.PutUint32(b[:], v)
	e.buf.Write(b[:])
}

func (e *encoder) u64(v uint64) {
	var b [8]byte
	bin.LittleEndian.PutUint64(b[:], v)
	e.buf.Write(b[:])
}

func (e *encoder) model(m *Model, depth int) error {
	if m == nil {
		return fmt.Errorf("graph: encode: nil model")
	}
	if depth > maxSubgraphDepth {
		return fmt.Errorf("graph: encode model %q: subgraphs nested deeper than %d", m.Name, maxSubgraphDepth)
	}
	for i, p := range m.Parameters {
		if p == nil || p.OpType != OpParameter || len(p.Outputs) != 1 || len(p.Inputs) != 0 {
			return fmt.Errorf("graph: encode model %q: parameter %d is not a Parameter node with one output and no inputs", m.Name, i)
		}
	}
	for i, r := range m.Results {
		if r == nil || r.OpType != OpResult || len(r.Outputs) != 1 {
			return fmt.Errorf("graph: encode model %q: result %d is not a Result node with one output", m.Name, i)
		}
	}
	nodes, err := m.Nodes()
	if err != nil {
		return fmt.Errorf("graph: encode model %q: %w", m.Name, err)
	}
	index := make(map[*Node]int, len(nodes))
	for i, n := range nodes {
		index[n] = i
	}
	e.str(m.Name)
	e.uvarint(uint64(len(m.Opsets)))
	for _, k := range sortedKeys(m.Opsets) {
		e.str(k)
		e.varint(m.Opsets[k])
	}
	e.uvarint(uint64(len(nodes)))
	for _, n := range nodes {
		if err := e.node(n, index, depth); err != nil {
			return fmt.Errorf("graph: encode model %q: %w", m.Name, err)
		}
	}
	e.uvarint(uint64(len(m.Parameters)))
	for _, p := range m.Parameters {
		e.uvarint(uint64(index[p]))
	}
	e.uvarint(uint64(len(m.Results)))
	for _, r := range m.Results {
		e.uvarint(uint64(index[r]))
	}
	return nil
}

func (e *encoder) node(n *Node, index map[*Node]int, depth int) error {
	e.str(n.Name)
	e.str(n.OpType)
	e.str(n.Domain)
	e.uvarint(uint64(len(n.Attrs)))
	for _, k := range sortedKeys(n.Attrs) {
		e.str(k)
		if err := e.attr(n.Attrs[k], depth); err != nil {
			return n.Errorf("attribute %q: %w", k, err)
		}
	}
	e.uvarint(uint64(len(n.Inputs)))
	for _, in := range n.Inputs {
		if in.Node == nil {
			e.uvarint(0)
			e.uvarint(0)
			continue
		}
		e.uvarint(uint64(index[in.Node]) + 1)
		e.uvarint(uint64(in.Index))
	}
	e.uvarint(uint64(len(n.Outputs)))
	for _, p := range n.Outputs {
		e.str(p.Name)
		e.buf.WriteByte(byte(p.Type))
		e.buf.WriteByte(byte(p.Kind))
		e.shape(p.Shape)
	}
	if n.Value == nil {
		e.buf.WriteByte(0)
	} else {
		e.buf.WriteByte(1)
		e.tensor(n.Value)
	}
	e.uvarint(uint64(len(n.RT.FusedNames)))
	for _, s := range n.RT.FusedNames {
		e.str(s)
	}
	e.str(n.RT.Affinity)
	e.uvarint(uint64(len(n.RT.Extra)))
	for _, k := range sortedKeys(n.RT.Extra) {
		e.str(k)
		e.str(n.RT.Extra[k])
	}
	return nil
}

func (e *encoder) shape(p PartialShape) {
	if !p.RankKnown {
		e.buf.WriteByte(0)
		return
	}
	e.buf.WriteByte(1)
	e.uvarint(uint64(len(p.Dims)))
	for _, d := range p.Dims {
		e.varint(d.Size)
		e.str(d.Name)
		e.varint(d.Min)
		e.varint(d.Max)
	}
}

func (e *encoder) attr(v any, depth int) error {
	switch v := v.(type) {
	case int64:
		e.buf.WriteByte(tagInt64)
		e.varint(v)
	case int:
		e.buf.WriteByte(tagInt)
		e.varint(int64(v))
	case float32:
		e.buf.WriteByte(tagFloat32)
		e.u32(math.Float32bits(v))
	case float64:
		e.buf.WriteByte(tagFloat64)
		e.u64(math.Float64bits(v))
	case string:
		e.buf.WriteByte(tagString)
		e.str(v)
	case []int64:
		e.buf.WriteByte(tagInts)
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.varint(x)
		}
	case []float32:
		e.buf.WriteByte(tagFloats)
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	case []string:
		e.buf.WriteByte(tagStrings)
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.str(x)
		}
	case *tensor.Tensor:
		if v == nil {
			return fmt.Errorf("nil tensor")
		}
		e.buf.WriteByte(tagTensor)
		e.tensor(v)
	case *Model:
		e.buf.WriteByte(tagModel)
		return e.model(v, depth+1)
	default:
		return fmt.Errorf("value of type %T cannot be encoded", v)
	}
	return nil
}

// decoder reads the encoding (see wire.Decoder: the first error sticks, and
// every error wraps ErrBadEncoding).
type decoder struct {
	wire.Decoder
}

func (d *decoder) model(depth int) *Model {
	if depth > maxSubgraphDepth {
		d.Fail("subgraphs nested deeper than %d", maxSubgraphDepth)
		return nil
	}
	m := &Model{Name: d.Str("model name")}
	if n := d.Count("opset count", 2); n > 0 {
		m.Opsets = make(map[string]int64, n)
		for range n {
			k := d.Str("opset domain")
			m.Opsets[k] = d.Varint("opset version")
		}
	}
	// A node takes at least 13 bytes: three names, five counts and flags.
	nn := d.Count("node count", 13)
	nodes := make([]*Node, 0, nn)
	for i := 0; i < nn && d.Err == nil; i++ {
		n := d.node(nodes, depth)
		if d.Err != nil {
			return nil
		}
		nodes = append(nodes, n)
	}
	np := d.Count("parameter count", 1)
	for i := 0; i < np && d.Err == nil; i++ {
		k := d.Uvarint("parameter index")
		if d.Err != nil {
			break
		}
		if k >= uint64(len(nodes)) {
			d.Fail("parameter %d refers to node %d of %d", i, k, len(nodes))
			break
		}
		p := nodes[k]
		if p.OpType != OpParameter || len(p.Outputs) != 1 || len(p.Inputs) != 0 {
			d.Fail("parameter %d is node %q (%s), not a Parameter with one output and no inputs", i, p.Name, p.OpType)
			break
		}
		m.Parameters = append(m.Parameters, p)
	}
	nr := d.Count("result count", 1)
	for i := 0; i < nr && d.Err == nil; i++ {
		k := d.Uvarint("result index")
		if d.Err != nil {
			break
		}
		if k >= uint64(len(nodes)) {
			d.Fail("result %d refers to node %d of %d", i, k, len(nodes))
			break
		}
		r := nodes[k]
		if r.OpType != OpResult || len(r.Outputs) != 1 {
			d.Fail("result %d is node %q (%s), not a Result with one output", i, r.Name, r.OpType)
			break
		}
		m.Results = append(m.Results, r)
	}
	if d.Err != nil {
		return nil
	}
	return m
}

func (d *decoder) node(prev []*Node, depth int) *Node {
	n := &Node{Attrs: Attrs{}}
	n.Name = d.Str("node name")
	n.OpType = d.Str("op type")
	n.Domain = d.Str("domain")
	na := d.Count("attribute count", 2)
	for i := 0; i < na && d.Err == nil; i++ {
		k := d.Str("attribute name")
		v := d.attr(depth)
		if d.Err != nil {
			d.Err = fmt.Errorf("node %q attribute %q: %w", n.Name, k, d.Err)
			return nil
		}
		n.Attrs[k] = v
	}
	if ni := d.Count("input count", 2); ni > 0 {
		n.Inputs = make([]Output, ni)
		for i := range ni {
			ref := d.Uvarint("input node")
			idx := d.Uvarint("input index")
			if d.Err != nil {
				return nil
			}
			if ref == 0 {
				continue
			}
			// Inputs refer to earlier nodes only: the encoding is in
			// topological order, which also rules out cycles.
			if ref > uint64(len(prev)) {
				d.Fail("node %q input %d refers to node %d, which does not precede it", n.Name, i, ref-1)
				return nil
			}
			src := prev[ref-1]
			if idx >= uint64(len(src.Outputs)) {
				d.Fail("node %q input %d refers to output %d of %q, which has %d outputs", n.Name, i, idx, src.Name, len(src.Outputs))
				return nil
			}
			n.Inputs[i] = Output{Node: src, Index: int(idx)}
		}
	}
	no := d.Count("output count", 3)
	n.Outputs = make([]Port, no)
	for i := 0; i < no && d.Err == nil; i++ {
		n.Outputs[i].Name = d.Str("port name")
		n.Outputs[i].Type = d.elemType(true, "port type")
		n.Outputs[i].Kind = tensor.Kind(d.Byte("port kind"))
		if d.Err == nil && n.Outputs[i].Kind > tensor.KindOptionalSequence {
			d.Fail("port kind %d is unknown", n.Outputs[i].Kind)
		}
		n.Outputs[i].Shape = d.shape()
	}
	switch d.Byte("value flag") {
	case 0:
	case 1:
		n.Value = d.tensor()
	default:
		d.Fail("node %q: bad value flag", n.Name)
	}
	if nf := d.Count("fused name count", 1); nf > 0 {
		n.RT.FusedNames = make([]string, nf)
		for i := range nf {
			n.RT.FusedNames[i] = d.Str("fused name")
		}
	}
	n.RT.Affinity = d.Str("affinity")
	if ne := d.Count("rt info count", 2); ne > 0 {
		n.RT.Extra = make(map[string]string, ne)
		for range ne {
			k := d.Str("rt info key")
			n.RT.Extra[k] = d.Str("rt info value")
		}
	}
	if d.Err != nil {
		return nil
	}
	return n
}

// elemType reads an element type; ports may be Undefined (not inferred
// yet), tensors may not.
func (d *decoder) elemType(undefinedOK bool, what string) tensor.ElementType {
	t := tensor.ElementType(d.Byte(what))
	if d.Err == nil && !t.Valid() && !(undefinedOK && t == tensor.Undefined) {
		d.Fail("%s: unknown element type %d", what, uint8(t))
	}
	return t
}

func (d *decoder) shape() PartialShape {
	switch d.Byte("rank flag") {
	case 0:
		return PartialShape{}
	case 1:
	default:
		d.Fail("bad rank flag")
		return PartialShape{}
	}
	nd := d.Count("rank", 4)
	p := PartialShape{Dims: make([]Dim, nd), RankKnown: true}
	for i := 0; i < nd && d.Err == nil; i++ {
		p.Dims[i].Size = d.Varint("dimension")
		p.Dims[i].Name = d.Str("dimension name")
		p.Dims[i].Min = d.Varint("dimension lower bound")
		p.Dims[i].Max = d.Varint("dimension upper bound")
	}
	return p
}

func (d *decoder) attr(depth int) any {
	tag := d.Byte("attribute tag")
	if d.Err != nil {
		return nil
	}
	switch tag {
	case tagInt64:
		return d.Varint("int attribute")
	case tagInt:
		v := d.Varint("int attribute")
		if int64(int(v)) != v {
			d.Fail("int attribute %d overflows int", v)
		}
		return int(v)
	case tagFloat32:
		return math.Float32frombits(d.U32("float attribute"))
	case tagFloat64:
		return math.Float64frombits(d.U64("float attribute"))
	case tagString:
		return d.Str("string attribute")
	case tagInts:
		n := d.Count("ints length", 1)
		v := make([]int64, n)
		for i := 0; i < n && d.Err == nil; i++ {
			v[i] = d.Varint("ints element")
		}
		return v
	case tagFloats:
		n := d.Count("floats length", 4)
		v := make([]float32, n)
		for i := 0; i < n && d.Err == nil; i++ {
			v[i] = math.Float32frombits(d.U32("floats element"))
		}
		return v
	case tagStrings:
		n := d.Count("strings length", 1)
		v := make([]string, n)
		for i := 0; i < n && d.Err == nil; i++ {
			v[i] = d.Str("strings element")
		}
		return v
	case tagTensor:
		return d.tensor()
	case tagModel:
		return d.model(depth + 1)
	}
	d.Fail("unknown attribute tag %d (known: 1..%d)", tag, tagMaxValid)
	return nil
}
