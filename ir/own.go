package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// clinfer's own opset. A layer of version "clinfer" is a node of clinfer's
// op set as it is: its type is the op type, each graph attribute is a
// <data> attribute whose value starts with a tag saying its Go type, and
// each *graph.Model attribute is a <clinfer_body attr="name"> holding a
// graph. Omitted optional inputs, which IR ports cannot express, are
// listed in clinfer_omitted; the op's domain, when it has one, is in
// clinfer_domain.

// Reserved <data> attributes of clinfer-opset layers.
const (
	ownOmitted = "clinfer_omitted"
	ownDomain  = "clinfer_domain"
)

// Tags of attribute values.
const (
	tagInt     = "i" // int64
	tagGoInt   = "n" // int
	tagFloat   = "f" // float32
	tagDouble  = "d" // float64
	tagString  = "s"
	tagInts    = "I"
	tagFloats  = "F"
	tagStrings = "S"
	tagTensor  = "t" // "t:<type>;<shape>;<offset>;<size>", the bytes in the weights
)

func (c *layerCtx) importOwn() ([]graph.Output, error) {
	l := c.l
	spec, ok := graph.Lookup(l.Type)
	if !ok {
		return nil, c.errorf(ErrUnsupportedOp, "op %s is not in clinfer's op set", l.Type)
	}
	if spec.Family == graph.FamilyModel {
		return nil, c.errorf(ErrInvalidModel, "%s is written in opset1, not the clinfer opset", l.Type)
	}
	var omitted []int64
	attrs := graph.Attrs{}
	domain := ""
	if l.Data != nil {
		for _, a := range l.Data.Attrs {
			k := a.Name.Local
			switch k {
			case ownOmitted:
				v, err := parseInts(a.Value)
				if err != nil {
					return nil, c.badAttr(k, err)
				}
				omitted = v
				continue
			case ownDomain:
				domain = a.Value
				continue
			}
			v, err := c.decodeOwnAttr(a.Value)
			if err != nil {
				return nil, c.badAttr(k, err)
			}
			attrs[k] = v
		}
	}
	for _, b := range l.Bodies {
		if b.Attr == "" {
			return nil, c.errorf(ErrInvalidModel, "a clinfer_body has no attr")
		}
		if attrs.Has(b.Attr) {
			return nil, c.errorf(ErrInvalidModel, "attribute %s is given twice", b.Attr)
		}
		body, err := c.gc.b.graph(&b.xmlGraph, b.Name, c.gc.depth+1)
		if err != nil {
			return nil, c.errorf(ErrInvalidModel, "body %s: %v", b.Attr, err)
		}
		attrs[b.Attr] = body
	}
	total := len(c.in) + len(omitted)
	inputs := make([]graph.Output, total)
	for _, i := range omitted {
		if i < 0 || i >= int64(total) || inputs[i].Index < 0 {
			return nil, c.errorf(ErrInvalidModel, "%s %v does not fit %d inputs", ownOmitted, omitted, len(c.in))
		}
		inputs[i].Index = -1 // marks the omitted ones until the loop below
	}
	next := 0
	for i := range inputs {
		if inputs[i].Index < 0 {
			inputs[i] = graph.Output{}
			continue
		}
		inputs[i] = c.in[next]
		next++
	}
	n := graph.NewNode(l.Type, c.name, inputs, attrs, len(l.Outputs))
	n.Domain = domain
	for i, p := range l.Outputs {
		if p.Kind != "" {
			k, err := parseKind(p.Kind)
			if err != nil {
				return nil, c.errorf(ErrInvalidModel, "port %s: %v", p.ID, err)
			}
			n.Outputs[i].Kind = k
		}
	}
	if err := graph.InferNode(n); err != nil && !untyped(inputs) {
		return nil, c.errorf(ErrInvalidModel, "%v", err)
	}
	c.created = append(c.created, n)
	return outs(n), nil
}

func containsInt(v []int64, x int64) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// decodeOwnAttr reads a tagged attribute value.
func (c *layerCtx) decodeOwnAttr(s string) (any, error) {
	tag, payload, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("%q has no type tag", s)
	}
	switch tag {
	case tagInt:
		return strconv.ParseInt(payload, 10, 64)
	case tagGoInt:
		v, err := strconv.ParseInt(payload, 10, 64)
		return int(v), err
	case tagFloat:
		return parseFloat(payload)
	case tagDouble:
		return parseDouble(payload)
	case tagString:
		return payload, nil
	case tagInts:
		return parseInts(payload)
	case tagFloats:
		return parseFloats(payload)
	case tagStrings:
		v, ok := splitNamesKeepEmpty(payload)
		if !ok {
			return nil, fmt.Errorf("%q is not a counted string list", payload)
		}
		return v, nil
	case tagTensor:
		parts := strings.Split(payload, ";")
		if len(parts) != 4 {
			return nil, fmt.Errorf("tensor %q is not type;shape;offset;size", payload)
		}
		t, err := parseElementType(parts[0])
		if err != nil {
			return nil, err
		}
		shape, err := parseInts(parts[1])
		if err != nil {
			return nil, err
		}
		off, err1 := strconv.ParseInt(parts[2], 10, 64)
		size, err2 := strconv.ParseInt(parts[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("tensor %q has a bad offset or size", payload)
		}
		raw, err := c.weights(off, size)
		if err != nil {
			return nil, err
		}
		return decodeConst(t, tensor.Shape(shape), raw)
	}
	return nil, fmt.Errorf("unknown type tag %q", tag)
}

func parseDouble(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// splitNamesKeepEmpty splits a joinNames list keeping empty entries; a
// list is written with a leading count so [] and [""] differ
// ("0:", "1:").
func splitNamesKeepEmpty(s string) ([]string, bool) {
	cnt, rest, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(cnt)
	if !ok || err != nil || n < 0 || n > len(s)+1 {
		return nil, false
	}
	out := make([]string, 0, n)
	var cur strings.Builder
	for i := 0; i < len(rest); i++ {
		switch {
		case rest[i] == '\\' && i+1 < len(rest):
			cur.WriteByte(rest[i+1])
			i++
		case rest[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(rest[i])
		}
	}
	if n > 0 {
		out = append(out, cur.String())
	}
	if len(out) != n {
		return nil, false
	}
	return out, true
}

// joinStringsKeepEmpty is splitNamesKeepEmpty's inverse.
func joinStringsKeepEmpty(v []string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(v)))
	b.WriteByte(':')
	for i, s := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		for j := 0; j < len(s); j++ {
			if s[j] == ',' || s[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[j])
		}
	}
	return b.String()
}
