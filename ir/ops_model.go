package ir

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// modelImports are the housekeeping layers: inputs, weights and outputs.
var modelImports = []importRow{
	{"Parameter", 1, importParameter},
	{"Const", 1, importConst},
	{"Result", 1, importResult},
}

// Runtime-info keys the reader and writer give meaning to. Other
// attributes of a layer's rt_info are kept in RT.Extra under "ir:" + their
// name and written back.
const (
	rtFusedNames = "fused_names"
	rtAffinity   = "affinity"
	// rtLayout is a Parameter's or Result's layout ("[N,C,H,W]"), on its
	// port; the node keeps it as RT.Extra[ExtraLayout].
	rtLayout = "layout"
	// rtDimNames carries the names of a port's dynamic dimensions, which
	// IR has no place for (",batch,,"): only clinfer's writer sets it.
	rtDimNames = "clinfer_dim_names"
	// rtConvBias marks the Add clinfer's writer makes of a Conv's bias.
	rtConvBias = "clinfer_conv_bias"
	// rtDefaultSteps marks a Slice whose steps the writer made of none.
	rtDefaultSteps = "clinfer_default_steps"
	// rtExtraPrefix prefixes the RT.Extra entries clinfer's writer stores.
	rtExtraPrefix = "clinfer:"
	// extraIRPrefix prefixes RT.Extra entries holding rt_info attributes
	// of other writers.
	extraIRPrefix = "ir:"
)

// ExtraLayout is the RT.Extra key of a Parameter's or Result's layout as
// the IR declares it ("[N,C,H,W]", "NHWC"); preprocessing reads it.
const ExtraLayout = "layout"

func importParameter(c *layerCtx) ([]graph.Output, error) {
	l := c.l
	if len(l.Outputs) != 1 || len(c.in) != 0 {
		return nil, c.errorf(ErrInvalidModel, "a Parameter has no inputs and one output port")
	}
	port := l.Outputs[0]
	var t tensor.ElementType
	if v, ok := c.attr("element_type"); ok && (v == "dynamic" || v == "undefined") {
		// A type left to inference: a body's Parameter that its owner
		// binds, as clinfer's ONNX bodies have for captured values.
		t = tensor.Undefined
	} else if ok {
		var err error
		if t, err = c.elemType("element_type", 0); err != nil {
			return nil, err
		}
	} else if p, ok := parsePrecision(port.Precision); ok {
		t = p
	} else {
		return nil, c.errorf(ErrInvalidModel, "the Parameter has no element_type")
	}
	var shape graph.PartialShape
	if s, ok := c.attr("shape"); ok {
		var err error
		if shape, err = parseShape(s); err != nil {
			return nil, c.badAttr("shape", err)
		}
	} else {
		shape = graph.PartialShape{RankKnown: true, Dims: make([]graph.Dim, len(port.Dims))}
		for i, s := range port.Dims {
			d, err := parseDim(s)
			if err != nil {
				return nil, c.errorf(ErrInvalidModel, "port %s: %v", port.ID, err)
			}
			shape.Dims[i] = d
		}
	}
	if err := dimNames(&shape, port.RTInfo); err != nil {
		return nil, c.errorf(ErrInvalidModel, "port %s: %v", port.ID, err)
	}
	p := graph.NewParameter(c.name, t, shape)
	if port.Kind != "" {
		k, err := parseKind(port.Kind)
		if err != nil {
			return nil, c.errorf(ErrInvalidModel, "port %s: %v", port.ID, err)
		}
		p.Outputs[0].Kind = k
	}
	portLayout(p, port.RTInfo)
	c.created = append(c.created, p)
	c.gc.params[l.ID] = p
	return []graph.Output{p.Out(0)}, nil
}

func importResult(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	r := graph.NewResult(c.name, c.in[0])
	r.Outputs[0].Name = c.name
	portLayout(r, c.l.Inputs[0].RTInfo)
	c.created = append(c.created, r)
	c.gc.results[c.l.ID] = r
	return nil, nil
}

// portLayout copies a port's layout runtime info to the node.
func portLayout(n *graph.Node, rt *xmlRT) {
	if rt == nil {
		return
	}
	for _, a := range rt.Attributes {
		if a.Name == rtLayout {
			if n.RT.Extra == nil {
				n.RT.Extra = map[string]string{}
			}
			n.RT.Extra[ExtraLayout] = a.value()
		}
	}
}

// dimNames names the dynamic dims of shape from a port's clinfer_dim_names.
func dimNames(shape *graph.PartialShape, rt *xmlRT) error {
	if rt == nil {
		return nil
	}
	for _, a := range rt.Attributes {
		if a.Name != rtDimNames {
			continue
		}
		names := strings.Split(a.value(), ",")
		if len(names) != len(shape.Dims) {
			return fmt.Errorf("%s has %d names for %d dims", rtDimNames, len(names), len(shape.Dims))
		}
		for i, n := range names {
			if n != "" && !shape.Dims[i].IsStatic() {
				shape.Dims[i].Name = n
			}
		}
	}
	return nil
}

func importConst(c *layerCtx) ([]graph.Output, error) {
	if len(c.in) != 0 || len(c.l.Outputs) != 1 {
		return nil, c.errorf(ErrInvalidModel, "a Const has no inputs and one output port")
	}
	t, err := c.elemType("element_type", 0)
	if err != nil {
		return nil, err
	}
	if t == tensor.Undefined {
		return nil, c.errorf(ErrInvalidModel, "the Const has no element_type")
	}
	s, ok := c.attr("shape")
	if !ok {
		return nil, c.errorf(ErrInvalidModel, "the Const has no shape")
	}
	ps, err := parseShape(s)
	if err != nil {
		return nil, c.badAttr("shape", err)
	}
	shape, ok := ps.ToShape()
	if !ok {
		return nil, c.badAttr("shape", fmt.Errorf("%q is not static", s))
	}
	off, err := c.int("offset", 0)
	if err != nil {
		return nil, err
	}
	size, err := c.int("size", 0)
	if err != nil {
		return nil, err
	}
	raw, err := c.weights(off, size)
	if err != nil {
		return nil, err
	}
	v, err := decodeConst(t, shape, raw)
	if err != nil {
		return nil, c.errorf(ErrWeights, "%v", err)
	}
	n := graph.NewConstant(c.name, v)
	c.created = append(c.created, n)
	return []graph.Output{n.Out(0)}, nil
}

// weights returns size bytes of the weights at offset.
func (c *layerCtx) weights(off, size int64) ([]byte, error) {
	cfg := c.gc.b.cfg
	if !cfg.weightsSet {
		if size == 0 {
			return nil, nil
		}
		where := "give them with ir.WithWeights or the weights path of Core.ReadModel"
		if cfg.weightsPath != "" {
			where = "looked for " + cfg.weightsPath
		}
		return nil, c.errorf(ErrWeights, "the constant is in the weights, which were not given (%s)", where)
	}
	if off < 0 || size < 0 || off > int64(len(cfg.weights)) || size > int64(len(cfg.weights))-off {
		return nil, c.errorf(ErrWeights, "bytes %d..%d are outside the weights (%d bytes)", off, off+size, len(cfg.weights))
	}
	return cfg.weights[off : off+size], nil
}

// decodeConst makes a tensor of type t and shape from its bytes in the
// weights: little-endian elements, i4 and u4 two to a byte (the first in
// the low nibble), strings packed as OpenVINO packs them (an i32 count,
// count+1 i32 offsets, then the bytes).
func decodeConst(t tensor.ElementType, shape tensor.Shape, raw []byte) (*tensor.Tensor, error) {
	n, ok := numElements(shape)
	if !ok {
		return nil, fmt.Errorf("shape %v has too many elements", shape)
	}
	if t == tensor.String {
		return decodeStrings(shape, n, raw)
	}
	want := tensor.PackedBytes(t, n)
	if int64(len(raw)) != want {
		return nil, fmt.Errorf("%v%v takes %d bytes, the layer's size is %d", t, shape, want, len(raw))
	}
	if t.Bits() == 4 {
		return tensor.Unpack4(t, shape, raw)
	}
	v, err := tensor.FromBytes(t, shape, raw)
	if err != nil {
		return nil, err
	}
	if t == tensor.Bool {
		for i, b := range v.Bytes() {
			if b > 1 {
				v.Bytes()[i] = 1
			}
		}
	}
	return v, nil
}

// numElements multiplies out shape, failing on overflow.
func numElements(shape tensor.Shape) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt64/8/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func decodeStrings(shape tensor.Shape, n int64, raw []byte) (*tensor.Tensor, error) {
	if n == 0 && len(raw) == 0 {
		return tensor.FromStrings(shape, nil)
	}
	if len(raw) < 4 {
		return nil, fmt.Errorf("a string constant needs at least 4 bytes, has %d", len(raw))
	}
	count := int64(binary.LittleEndian.Uint32(raw))
	if count != n {
		return nil, fmt.Errorf("the packed strings hold %d elements, the shape %v has %d", count, shape, n)
	}
	if (int64(len(raw))-4)/4 < count+1 {
		return nil, fmt.Errorf("the packed strings' offsets need %d bytes, have %d", 4*(count+1), len(raw)-4)
	}
	data := raw[4+4*(count+1):]
	v := make([]string, count)
	prev := int64(binary.LittleEndian.Uint32(raw[4:]))
	for i := int64(0); i < count; i++ {
		end := int64(binary.LittleEndian.Uint32(raw[4+4*(i+1):]))
		if prev > end || end > int64(len(data)) {
			return nil, fmt.Errorf("string %d spans bytes %d..%d of %d", i, prev, end, len(data))
		}
		v[i] = string(data[prev:end])
		prev = end
	}
	return tensor.FromStrings(shape, v)
}

// encodeStrings is decodeStrings' inverse.
func encodeStrings(x *tensor.Tensor) []byte {
	s := x.Contiguous().Strings()
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(s)))
	off := uint32(0)
	out = binary.LittleEndian.AppendUint32(out, off)
	for _, v := range s {
		off += uint32(len(v))
		out = binary.LittleEndian.AppendUint32(out, off)
	}
	for _, v := range s {
		out = append(out, v...)
	}
	return out
}

// parseKind reads a port's clinfer_kind.
func parseKind(s string) (tensor.Kind, error) {
	for _, k := range []tensor.Kind{tensor.KindTensor, tensor.KindSequence, tensor.KindOptional, tensor.KindOptionalSequence} {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("clinfer_kind %q is not a kind of value", s)
}

// applyRT sets n's runtime info from a layer's rt_info.
func applyRT(n *graph.Node, rt *xmlRT) error {
	if rt == nil {
		return nil
	}
	for _, a := range rt.Attributes {
		v := a.value()
		switch {
		case a.Name == rtFusedNames:
			n.RT.FusedNames = splitNames(v)
		case a.Name == rtAffinity:
			n.RT.Affinity = v
		case a.Name == rtConvBias, a.Name == rtDefaultSteps:
		case strings.HasPrefix(a.Name, rtExtraPrefix):
			setExtra(n, strings.TrimPrefix(a.Name, rtExtraPrefix), v)
		case a.Name != "":
			setExtra(n, extraIRPrefix+a.Name, v)
		}
	}
	return nil
}

func setExtra(n *graph.Node, k, v string) {
	if n.RT.Extra == nil {
		n.RT.Extra = map[string]string{}
	}
	n.RT.Extra[k] = v
}

// netInfo reads the net's rt_info: whether clinfer wrote the document
// (<clinfer writer="...">) and the ONNX opsets it recorded.
func netInfo(rt *xmlNode) (clinfer bool, opsets map[string]int64) {
	if rt == nil {
		return false, nil
	}
	for _, ch := range rt.Children {
		if ch.XMLName.Local != "clinfer" {
			continue
		}
		clinfer = true
		for _, o := range ch.Children {
			if o.XMLName.Local != "opset" {
				continue
			}
			var domain, version string
			for _, a := range o.Attrs {
				switch a.Name.Local {
				case "domain":
					domain = a.Value
				case "version":
					version = a.Value
				}
			}
			v, err := parseInts(version)
			if err != nil || len(v) != 1 {
				continue
			}
			if opsets == nil {
				opsets = map[string]int64{}
			}
			opsets[domain] = v[0]
		}
	}
	return clinfer, opsets
}
