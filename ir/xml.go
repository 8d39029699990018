package ir

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The XML of an IR file, as encoding/xml reads and writes it. A <net> and
// every body of a Loop, TensorIterator or If holds the same <layers> and
// <edges>; a layer's <data> element carries the op's attributes, whatever
// they are, so it is kept as a list.

// xmlNet is the document element.
type xmlNet struct {
	XMLName xml.Name `xml:"net"`
	Name    string   `xml:"name,attr"`
	Version string   `xml:"version,attr"`
	xmlGraph
	RTInfo *xmlNode `xml:"rt_info"`
}

// xmlGraph is a graph: the net's or a body's.
type xmlGraph struct {
	Layers []xmlLayer `xml:"layers>layer"`
	Edges  []xmlEdge  `xml:"edges>edge"`
}

// xmlLayer is one op.
type xmlLayer struct {
	ID      string    `xml:"id,attr"`
	Name    string    `xml:"name,attr"`
	Type    string    `xml:"type,attr"`
	Version string    `xml:"version,attr"`
	Data    *xmlAttrs `xml:"data"`
	RTInfo  *xmlRT    `xml:"rt_info"`
	Inputs  []xmlPort `xml:"input>port"`
	Outputs []xmlPort `xml:"output>port"`
	// Loop and TensorIterator.
	PortMap   *xmlPortMap `xml:"port_map"`
	BackEdges []xmlEdge   `xml:"back_edges>edge"`
	Body      *xmlGraph   `xml:"body"`
	// If.
	ThenPortMap *xmlPortMap `xml:"then_port_map"`
	ElsePortMap *xmlPortMap `xml:"else_port_map"`
	ThenBody    *xmlGraph   `xml:"then_body"`
	ElseBody    *xmlGraph   `xml:"else_body"`
	// Bodies of clinfer's own opset (one per *graph.Model attribute).
	Bodies []xmlNamedBody `xml:"clinfer_body"`
}

// xmlNamedBody is a body of a clinfer-opset layer: the graph of one
// *graph.Model attribute.
type xmlNamedBody struct {
	Attr string `xml:"attr,attr"`
	Name string `xml:"name,attr"`
	xmlGraph
}

// xmlAttrs is an element whose attributes are the payload (<data>).
type xmlAttrs struct {
	Attrs []xml.Attr `xml:",any,attr"`
}

// xmlPort is one input or output port with its dims.
type xmlPort struct {
	ID        string   `xml:"id,attr"`
	Precision string   `xml:"precision,attr,omitempty"`
	Names     string   `xml:"names,attr,omitempty"`
	Kind      string   `xml:"clinfer_kind,attr,omitempty"`
	Dims      []string `xml:"dim"`
	RTInfo    *xmlRT   `xml:"rt_info"`
}

// xmlEdge connects an output port to an input port.
type xmlEdge struct {
	FromLayer string `xml:"from-layer,attr"`
	FromPort  string `xml:"from-port,attr"`
	ToLayer   string `xml:"to-layer,attr"`
	ToPort    string `xml:"to-port,attr"`
}

// xmlPortMap binds a Loop's, TensorIterator's or If's ports to its body.
type xmlPortMap struct {
	Inputs  []xmlPortMapEntry `xml:"input"`
	Outputs []xmlPortMapEntry `xml:"output"`
}

// xmlPortMapEntry is one binding; axis, start, end, stride and part_size
// describe a sliced or concatenated port.
type xmlPortMapEntry struct {
	ExternalPortID string `xml:"external_port_id,attr"`
	InternalLayer  string `xml:"internal_layer_id,attr"`
	Axis           string `xml:"axis,attr,omitempty"`
	Start          string `xml:"start,attr,omitempty"`
	End            string `xml:"end,attr,omitempty"`
	Stride         string `xml:"stride,attr,omitempty"`
	PartSize       string `xml:"part_size,attr,omitempty"`
	Purpose        string `xml:"purpose,attr,omitempty"`
}

// xmlRT is a layer's or port's <rt_info>: named, versioned attributes.
type xmlRT struct {
	Attributes []xmlRTAttr `xml:"attribute"`
}

// xmlRTAttr is one runtime-info attribute; its payload is usually "value",
// but some (layout) use their own attribute names.
type xmlRTAttr struct {
	Name    string     `xml:"name,attr"`
	Version string     `xml:"version,attr,omitempty"`
	Attrs   []xml.Attr `xml:",any,attr"`
}

// value returns the attribute's payload: "value", or the one other
// attribute it has (layout="[N,C,H,W]").
func (a xmlRTAttr) value() string {
	for _, x := range a.Attrs {
		if x.Name.Local == "value" {
			return x.Value
		}
	}
	for _, x := range a.Attrs {
		if x.Name.Local != "name" && x.Name.Local != "version" {
			return x.Value
		}
	}
	return ""
}

// xmlNode is a free-form element tree: the net's <rt_info> and
// <meta_data>, whose leaves carry a value attribute.
type xmlNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xmlNode  `xml:",any"`
}

// attr returns the value of the attribute named name and whether it is set.
func (a *xmlAttrs) attr(name string) (string, bool) {
	if a == nil {
		return "", false
	}
	for _, x := range a.Attrs {
		if x.Name.Local == name {
			return x.Value, true
		}
	}
	return "", false
}

// parseDim reads one dimension as IR writes it: a size, -1 or "?" for a
// dynamic one, "lo..hi", "..hi" or "lo.." for a bounded one.
func parseDim(s string) (graph.Dim, error) {
	s = strings.TrimSpace(s)
	if s == "?" || s == "-1" {
		return graph.DynamicDim(""), nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		var d graph.Dim
		d.Size = -1
		if lo != "" {
			v, err := strconv.ParseInt(lo, 10, 64)
			if err != nil || v < 0 {
				return graph.Dim{}, fmt.Errorf("dimension %q: bad lower bound %q", s, lo)
			}
			d.Min = v
		}
		if hi != "" {
			v, err := strconv.ParseInt(hi, 10, 64)
			if err != nil || v < 0 {
				return graph.Dim{}, fmt.Errorf("dimension %q: bad upper bound %q", s, hi)
			}
			if v < d.Min {
				return graph.Dim{}, fmt.Errorf("dimension %q: upper bound below lower bound", s)
			}
			d.Max = v
			if v == d.Min {
				return graph.StaticDim(v), nil
			}
		}
		return d, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < -1 {
		return graph.Dim{}, fmt.Errorf("dimension %q is not a size, -1, ?, or a range lo..hi", s)
	}
	return graph.StaticDim(v), nil
}

// parseShape reads a shape attribute ("1,3,?,100..200"; "" is a scalar,
// "..." the dynamic rank).
func parseShape(s string) (graph.PartialShape, error) {
	s = strings.TrimSpace(s)
	if s == "..." {
		return graph.DynamicRank, nil
	}
	if s == "" {
		return graph.PartialShape{RankKnown: true, Dims: []graph.Dim{}}, nil
	}
	parts := strings.Split(s, ",")
	p := graph.PartialShape{RankKnown: true, Dims: make([]graph.Dim, len(parts))}
	for i, part := range parts {
		if strings.TrimSpace(part) == "..." {
			return graph.PartialShape{}, fmt.Errorf("shape %q: \"...\" (dynamic rank) must be the whole shape", s)
		}
		d, err := parseDim(part)
		if err != nil {
			return graph.PartialShape{}, fmt.Errorf("shape %q: %w", s, err)
		}
		p.Dims[i] = d
	}
	return p, nil
}

// formatDim writes one dimension as IR v11 does ("-1", "1..10", "..10",
// "2..").
func formatDim(d graph.Dim) string {
	if d.IsStatic() {
		return strconv.FormatInt(d.Size, 10)
	}
	if d.Min == 0 && d.Max == 0 {
		return "-1"
	}
	hi := ""
	if d.Max > 0 {
		hi = strconv.FormatInt(d.Max, 10)
	}
	lo := ""
	if d.Min > 0 {
		lo = strconv.FormatInt(d.Min, 10)
	}
	return lo + ".." + hi
}

// formatShape writes a shape attribute ("..." for the dynamic rank).
func formatShape(p graph.PartialShape) string {
	if !p.RankKnown {
		return "..."
	}
	parts := make([]string, len(p.Dims))
	for i, d := range p.Dims {
		parts[i] = formatDim(d)
		if parts[i] == "-1" {
			parts[i] = "?"
		}
	}
	return strings.Join(parts, ",")
}

// parseInts reads a comma-separated integer list ("" is empty).
func parseInts(s string) ([]int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []int64{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", s)
		}
		out[i] = v
	}
	return out, nil
}

// parseFloats reads a comma-separated float list ("" is empty).
func parseFloats(s string) ([]float32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []float32{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]float32, len(parts))
	for i, p := range parts {
		v, err := parseFloat(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of numbers", s)
		}
		out[i] = v
	}
	return out, nil
}

// parseFloat reads one float, including inf and nan as C++ streams write
// them.
func parseFloat(s string) (float32, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "inf", "+inf", "infinity":
		return float32(math.Inf(1)), nil
	case "-inf", "-infinity":
		return float32(math.Inf(-1)), nil
	case "nan", "-nan":
		return float32(math.NaN()), nil
	}
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return float32(v), nil
}

// formatFloat writes a float that parseFloat reads back exactly.
func formatFloat(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }

// formatInts writes a comma-separated integer list.
func formatInts(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ",")
}

// formatFloats writes a comma-separated float list.
func formatFloats(v []float32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = formatFloat(x)
	}
	return strings.Join(parts, ",")
}

// parseBool reads IR's booleans ("true"/"false", "1"/"0").
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}

// splitNames splits a port's names attribute: comma-separated, a comma
// inside a name escaped as "\,".
func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			if n := strings.TrimSpace(cur.String()); n != "" {
				out = append(out, n)
			}
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	if n := strings.TrimSpace(cur.String()); n != "" {
		out = append(out, n)
	}
	return out
}

// joinNames is splitNames' inverse.
func joinNames(names []string) string {
	esc := make([]string, len(names))
	for i, n := range names {
		esc[i] = strings.ReplaceAll(n, ",", `\,`)
	}
	return strings.Join(esc, ",")
}

// elementTypes maps IR's element_type spellings to clinfer's; tensor's
// names are IR's own for every type clinfer has ("f32", "boolean", "u4"),
// plus these older or alternative spellings.
var elementTypeAliases = map[string]tensor.ElementType{
	"bool": tensor.Bool, "f8e4m3fn": tensor.F8E4M3FN,
}

// parseElementType reads an element_type or destination_type value.
func parseElementType(s string) (tensor.ElementType, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if t, ok := elementTypeAliases[s]; ok {
		return t, nil
	}
	for _, t := range tensor.ElementTypes() {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("element type %q is not one clinfer has (%s)", s, typeList())
}

func typeList() string {
	var names []string
	for _, t := range tensor.ElementTypes() {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

// precisions are the port precision names of IR (the legacy API's).
var precisions = map[tensor.ElementType]string{
	tensor.F32: "FP32", tensor.F16: "FP16", tensor.BF16: "BF16", tensor.F64: "FP64",
	tensor.I8: "I8", tensor.U8: "U8", tensor.I16: "I16", tensor.U16: "U16", tensor.I32: "I32",
	tensor.U32: "U32", tensor.I64: "I64", tensor.U64: "U64", tensor.Bool: "BOOL", tensor.I4: "I4",
	tensor.U4: "U4", tensor.String: "STRING", tensor.F8E4M3FN: "F8E4M3", tensor.F8E5M2: "F8E5M2",
}

// precisionName returns the port precision of t ("FP32").
func precisionName(t tensor.ElementType) string {
	if p, ok := precisions[t]; ok {
		return p
	}
	return strings.ToUpper(t.String())
}

// parsePrecision reads a port precision; ok is false for one clinfer
// lacks or an empty one.
func parsePrecision(s string) (tensor.ElementType, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	for t, p := range precisions {
		if p == s {
			return t, true
		}
	}
	switch s {
	case "FP8", "F8E4M3FN":
		return tensor.F8E4M3FN, true
	}
	return 0, false
}
