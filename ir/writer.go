package ir

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Write writes m as an IR v11 document to doc and its weights to bin, as
// OpenVINO's ov::serialize does: every node whose op has an exact
// equivalent in OpenVINO's opsets (ops_<family>.go's export rows) as
// that op, the rest in clinfer's own opset ("clinfer"), which the reader
// takes back as it was. Read of the two gives back m, up to attributes
// spelled at their default values and the names of constants the
// standard ops take as attributes (see Canonical).
func Write(m *graph.Model, doc, bin io.Writer) error {
	w := &writer{}
	net := xmlNet{Name: m.Name, Version: "11"}
	g, err := w.graph(m, 0)
	if err != nil {
		return err
	}
	net.xmlGraph = *g
	net.RTInfo = netRTInfo(m)
	out, err := xml.MarshalIndent(&net, "", "\t")
	if err != nil {
		return fmt.Errorf("ir: write: %w", err)
	}
	if _, err := io.WriteString(doc, xml.Header); err != nil {
		return fmt.Errorf("ir: write: %w", err)
	}
	if _, err := doc.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("ir: write: %w", err)
	}
	if _, err := bin.Write(w.bin.Bytes()); err != nil {
		return fmt.Errorf("ir: write weights: %w", err)
	}
	return nil
}

func init() { graph.RegisterIRWriter(Write) }

// WriteFile writes m to the document path and its weights to the .bin
// file beside it (the same name with the extension .bin).
func WriteFile(m *graph.Model, path string) error {
	var doc, bin bytes.Buffer
	if err := Write(m, &doc, &bin); err != nil {
		return err
	}
	if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
		return fmt.Errorf("ir: %w", err)
	}
	binPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".bin"
	if err := os.WriteFile(binPath, bin.Bytes(), 0o644); err != nil {
		return fmt.Errorf("ir: %w", err)
	}
	return nil
}

// netRTInfo marks the document as clinfer's and records the ONNX opsets.
func netRTInfo(m *graph.Model) *xmlNode {
	cl := xmlNode{XMLName: xml.Name{Local: "clinfer"}, Attrs: []xml.Attr{{Name: xml.Name{Local: "writer"}, Value: "clinfer"}}}
	keys := make([]string, 0, len(m.Opsets))
	for k := range m.Opsets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cl.Children = append(cl.Children, xmlNode{XMLName: xml.Name{Local: "opset"}, Attrs: []xml.Attr{
			{Name: xml.Name{Local: "domain"}, Value: k}, {Name: xml.Name{Local: "version"}, Value: strconv.FormatInt(m.Opsets[k], 10)}}})
	}
	return &xmlNode{XMLName: xml.Name{Local: "rt_info"}, Children: []xmlNode{cl}}
}

// writer holds the weights of one document.
type writer struct {
	bin bytes.Buffer
}

// weights appends raw to the weights and returns its offset.
func (w *writer) weights(raw []byte) int64 {
	off := int64(w.bin.Len())
	w.bin.Write(raw)
	return off
}

// constBytes is a constant's bytes as the weights hold them.
func constBytes(t *tensor.Tensor) ([]byte, error) {
	switch {
	case t.Type() == tensor.String:
		return encodeStrings(t), nil
	case t.Type().Bits() == 4:
		return tensor.Pack4(t)
	}
	return append([]byte(nil), t.Contiguous().Bytes()...), nil
}

// portRef names one output port of a written layer.
type portRef struct{ layer, port string }

// graphWriter writes one graph (the model's or a body's).
type graphWriter struct {
	w     *writer
	depth int
	g     *xmlGraph
	next  int
	// ports maps each node output to the layer port that carries it.
	ports map[graph.Output]portRef
	// extraNames are names of Results that read a port, added to its names.
	extraNames map[graph.Output][]string
	// uses counts the reads of each node output (Results included).
	uses map[graph.Output]int
}

func (w *writer) graph(m *graph.Model, depth int) (*xmlGraph, error) {
	if depth > maxBodyDepth {
		return nil, fmt.Errorf("ir: write: bodies nest deeper than %d levels", maxBodyDepth)
	}
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("ir: write: %w", err)
	}
	gw := &graphWriter{w: w, depth: depth, g: &xmlGraph{}, ports: map[graph.Output]portRef{},
		extraNames: map[graph.Output][]string{}, uses: usesOf(nodes)}
	for _, r := range m.Results {
		if len(r.Inputs) == 1 && r.Inputs[0].Valid() {
			in := r.Inputs[0]
			if in.Port().Name != r.Name {
				gw.extraNames[in] = append(gw.extraNames[in], r.Name)
			}
		}
	}
	// Parameters first and Results last, each in the model's order: the
	// reader takes them in document order.
	isParam := map[*graph.Node]bool{}
	for _, p := range m.Parameters {
		isParam[p] = true
		if err := gw.node(p); err != nil {
			return nil, err
		}
	}
	isResult := map[*graph.Node]bool{}
	for _, r := range m.Results {
		isResult[r] = true
	}
	for _, n := range nodes {
		if isParam[n] || isResult[n] || n.OpType == graph.OpConstant {
			continue // constants are written where first read (ref)
		}
		if err := gw.node(n); err != nil {
			return nil, err
		}
	}
	for _, r := range m.Results {
		if err := gw.node(r); err != nil {
			return nil, err
		}
	}
	// The layers' slice grew while pointers into it were kept: index
	// again for callers.
	return gw.g, nil
}

// newLayer appends a layer and returns its id.
func (gw *graphWriter) newLayer(l xmlLayer) string {
	l.ID = strconv.Itoa(gw.next)
	gw.next++
	gw.g.Layers = append(gw.g.Layers, l)
	return l.ID
}

// node writes n: its export row's standard ops when it has one that
// takes n, else the clinfer opset.
func (gw *graphWriter) node(n *graph.Node) error {
	switch n.OpType {
	case graph.OpParameter:
		return gw.parameter(n)
	case graph.OpConstant:
		_, err := gw.constant(n.Name, n.Value, n)
		return err
	case graph.OpResult:
		return gw.result(n)
	}
	if n.Domain == "" && !n.HasBodies() {
		if f, ok := exportTable[n.OpType]; ok {
			e := &exportCtx{gw: gw, n: n}
			done, err := f(e)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
	}
	return gw.own(n)
}

// usesOf counts the reads of each output of nodes.
func usesOf(nodes []*graph.Node) map[graph.Output]int {
	uses := map[graph.Output]int{}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			if in.Node != nil {
				uses[in]++
			}
		}
	}
	return uses
}

// exported reports whether the writer writes n in OpenVINO's opsets
// (rather than clinfer's own), uses counting the reads of every output of
// n's graph: the nodes whose attributes the reader gives back in
// canonical form.
func exported(n *graph.Node, uses map[graph.Output]int) bool {
	if n.Domain != "" || n.HasBodies() {
		return false
	}
	f, ok := exportTable[n.OpType]
	if !ok {
		return false
	}
	gw := &graphWriter{w: &writer{}, g: &xmlGraph{}, ports: map[graph.Output]portRef{}, extraNames: map[graph.Output][]string{}, uses: uses}
	for _, in := range n.Inputs {
		if in.Valid() {
			gw.ports[in] = portRef{"0", "0"}
		}
	}
	done, err := f(&exportCtx{gw: gw, n: n, dry: true})
	return err == nil && done
}

// outPort makes the xmlPort of node output o with port id id.
func (gw *graphWriter) outPort(o graph.Output, id int) xmlPort {
	p := o.Port()
	names := []string{}
	if p.Name != "" {
		names = append(names, p.Name)
	}
	names = append(names, gw.extraNames[o]...)
	xp := xmlPort{ID: strconv.Itoa(id), Precision: precisionName(p.Type), Names: joinNames(names)}
	if p.Kind != tensor.KindTensor {
		xp.Kind = p.Kind.String()
	}
	xp.Dims, xp.RTInfo = dims(p.Shape)
	return xp
}

// dims writes a port's dims, with the names of named dynamic dims in
// its rt_info.
func dims(s graph.PartialShape) ([]string, *xmlRT) {
	if !s.RankKnown {
		return nil, nil
	}
	out := make([]string, len(s.Dims))
	names := make([]string, len(s.Dims))
	named := false
	for i, d := range s.Dims {
		out[i] = formatDim(d)
		if !d.IsStatic() && d.Name != "" {
			names[i] = d.Name
			named = true
		}
	}
	if !named {
		return out, nil
	}
	return out, &xmlRT{Attributes: []xmlRTAttr{rtAttr(rtDimNames, strings.Join(names, ","))}}
}

// inPort makes the xmlPort of input i, fed by o.
func inPort(o graph.Output, id int) xmlPort {
	xp := xmlPort{ID: strconv.Itoa(id)}
	if o.Valid() {
		xp.Dims, _ = dims(o.Shape())
	}
	return xp
}

func rtAttr(name, value string) xmlRTAttr {
	return xmlRTAttr{Name: name, Version: "0", Attrs: []xml.Attr{{Name: xml.Name{Local: "value"}, Value: value}}}
}

// nodeRT writes n's runtime info as a layer's rt_info (skip names Extra
// keys written elsewhere).
func nodeRT(n *graph.Node, skip ...string) *xmlRT {
	var rt xmlRT
	if len(n.RT.FusedNames) > 0 {
		rt.Attributes = append(rt.Attributes, rtAttr(rtFusedNames, joinNames(n.RT.FusedNames)))
	}
	if n.RT.Affinity != "" {
		rt.Attributes = append(rt.Attributes, rtAttr(rtAffinity, n.RT.Affinity))
	}
	keys := make([]string, 0, len(n.RT.Extra))
	for k := range n.RT.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if containsStr(skip, k) {
			continue
		}
		if strings.HasPrefix(k, extraIRPrefix) {
			rt.Attributes = append(rt.Attributes, rtAttr(strings.TrimPrefix(k, extraIRPrefix), n.RT.Extra[k]))
		} else {
			rt.Attributes = append(rt.Attributes, rtAttr(rtExtraPrefix+k, n.RT.Extra[k]))
		}
	}
	if len(rt.Attributes) == 0 {
		return nil
	}
	return &rt
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func dataAttr(name, value string) xml.Attr {
	return xml.Attr{Name: xml.Name{Local: name}, Value: value}
}

func (gw *graphWriter) parameter(n *graph.Node) error {
	p := n.Outputs[0]
	port := gw.outPort(n.Out(0), 0)
	if v, ok := n.RT.Extra[ExtraLayout]; ok {
		port.RTInfo = addRT(port.RTInfo, xmlRTAttr{Name: rtLayout, Version: "0", Attrs: []xml.Attr{dataAttr("layout", v)}})
	}
	id := gw.newLayer(xmlLayer{Name: n.Name, Type: "Parameter", Version: "opset1",
		Data:   &xmlAttrs{Attrs: []xml.Attr{dataAttr("shape", formatShape(p.Shape)), dataAttr("element_type", elementTypeName(p.Type))}},
		RTInfo: nodeRT(n, ExtraLayout), Outputs: []xmlPort{port}})
	gw.ports[n.Out(0)] = portRef{id, "0"}
	return nil
}

// elementTypeName is t as an element_type ("dynamic" for one left to
// inference).
func elementTypeName(t tensor.ElementType) string {
	if t == tensor.Undefined {
		return "dynamic"
	}
	return t.String()
}

func addRT(rt *xmlRT, a xmlRTAttr) *xmlRT {
	if rt == nil {
		rt = &xmlRT{}
	}
	rt.Attributes = append(rt.Attributes, a)
	return rt
}

// constant writes a Const layer of value v named name; n, when not nil,
// is the Constant node it stands for.
func (gw *graphWriter) constant(name string, v *tensor.Tensor, n *graph.Node) (portRef, error) {
	if v == nil {
		return portRef{}, fmt.Errorf("ir: write: constant %q has no value", name)
	}
	raw, err := constBytes(v)
	if err != nil {
		return portRef{}, fmt.Errorf("ir: write: constant %q: %w", name, err)
	}
	off := gw.w.weights(raw)
	var port xmlPort
	var rt *xmlRT
	if n != nil {
		port = gw.outPort(n.Out(0), 0)
		rt = nodeRT(n)
	} else {
		port = xmlPort{ID: "0", Precision: precisionName(v.Type())}
		port.Dims, _ = dims(graph.StaticShape(v.Shape()))
	}
	id := gw.newLayer(xmlLayer{Name: name, Type: "Const", Version: "opset1", RTInfo: rt,
		Data: &xmlAttrs{Attrs: []xml.Attr{dataAttr("element_type", v.Type().String()),
			dataAttr("shape", formatInts(v.Shape())), dataAttr("offset", strconv.FormatInt(off, 10)),
			dataAttr("size", strconv.Itoa(len(raw)))}},
		Outputs: []xmlPort{port}})
	ref := portRef{id, "0"}
	if n != nil {
		gw.ports[n.Out(0)] = ref
	}
	return ref, nil
}

// ref returns the port carrying o, writing o's Constant on first use.
func (gw *graphWriter) ref(o graph.Output) (portRef, error) {
	if r, ok := gw.ports[o]; ok {
		return r, nil
	}
	if o.Valid() && o.Node.OpType == graph.OpConstant {
		return gw.constant(o.Node.Name, o.Node.Value, o.Node)
	}
	return portRef{}, fmt.Errorf("ir: write: %v is read before it is written", o)
}

func (gw *graphWriter) result(n *graph.Node) error {
	in := n.Inputs[0]
	src, err := gw.ref(in)
	if err != nil {
		return fmt.Errorf("ir: write: result %q: %w", n.Name, err)
	}
	port := inPort(in, 0)
	if v, ok := n.RT.Extra[ExtraLayout]; ok {
		port.RTInfo = addRT(port.RTInfo, xmlRTAttr{Name: rtLayout, Version: "0", Attrs: []xml.Attr{dataAttr("layout", v)}})
	}
	id := gw.newLayer(xmlLayer{Name: n.Name + "/sink_port_0", Type: "Result", Version: "opset1",
		RTInfo: nodeRT(n, ExtraLayout), Inputs: []xmlPort{port}})
	gw.g.Edges = append(gw.g.Edges, xmlEdge{FromLayer: src.layer, FromPort: src.port, ToLayer: id, ToPort: "0"})
	return nil
}

// attrName is what an attribute name must look like to be an XML
// attribute of <data>.
var attrName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// own writes n in clinfer's opset.
func (gw *graphWriter) own(n *graph.Node) error {
	var data []xml.Attr
	var bodies []xmlNamedBody
	keys := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !attrName.MatchString(k) || k == ownOmitted || k == ownDomain {
			return fmt.Errorf("ir: write: node %q (%s): attribute name %q cannot be written", n.Name, n.OpType, k)
		}
		if m, ok := n.Attrs[k].(*graph.Model); ok {
			g, err := gw.w.graph(m, gw.depth+1)
			if err != nil {
				return fmt.Errorf("ir: write: node %q (%s): body %s: %w", n.Name, n.OpType, k, err)
			}
			bodies = append(bodies, xmlNamedBody{Attr: k, Name: m.Name, xmlGraph: *g})
			continue
		}
		v, err := gw.encodeOwnAttr(n.Attrs[k])
		if err != nil {
			return fmt.Errorf("ir: write: node %q (%s): attribute %s: %w", n.Name, n.OpType, k, err)
		}
		data = append(data, dataAttr(k, v))
	}
	var omitted []int64
	var inputs []graph.Output
	for i, in := range n.Inputs {
		if in.Node == nil {
			omitted = append(omitted, int64(i))
			continue
		}
		inputs = append(inputs, in)
	}
	if len(omitted) > 0 {
		data = append(data, dataAttr(ownOmitted, formatInts(omitted)))
	}
	if n.Domain != "" {
		data = append(data, dataAttr(ownDomain, n.Domain))
	}
	l := xmlLayer{Name: n.Name, Type: n.OpType, Version: ownOpset, Data: &xmlAttrs{Attrs: data}, RTInfo: nodeRT(n), Bodies: bodies}
	id, err := gw.emit(l, inputs, n)
	if err != nil {
		return err
	}
	_ = id
	return nil
}

// emit appends layer l reading inputs; its output ports carry n's
// outputs (all of them) when n is not nil.
func (gw *graphWriter) emit(l xmlLayer, inputs []graph.Output, n *graph.Node) (string, error) {
	refs := make([]portRef, len(inputs))
	for i, in := range inputs {
		r, err := gw.ref(in)
		if err != nil {
			return "", fmt.Errorf("ir: write: layer %q: %w", l.Name, err)
		}
		refs[i] = r
		l.Inputs = append(l.Inputs, inPort(in, i))
	}
	if n != nil {
		for i := range n.Outputs {
			l.Outputs = append(l.Outputs, gw.outPort(n.Out(i), len(inputs)+i))
		}
	}
	id := gw.newLayer(l)
	for i, r := range refs {
		gw.g.Edges = append(gw.g.Edges, xmlEdge{FromLayer: r.layer, FromPort: r.port, ToLayer: id, ToPort: strconv.Itoa(i)})
	}
	if n != nil {
		for i := range n.Outputs {
			gw.ports[n.Out(i)] = portRef{id, strconv.Itoa(len(inputs) + i)}
		}
	}
	return id, nil
}

// encodeOwnAttr writes a tagged attribute value (own.go).
func (gw *graphWriter) encodeOwnAttr(v any) (string, error) {
	switch x := v.(type) {
	case int64:
		return tagInt + ":" + strconv.FormatInt(x, 10), nil
	case int:
		return tagGoInt + ":" + strconv.Itoa(x), nil
	case float32:
		return tagFloat + ":" + formatFloat(x), nil
	case float64:
		return tagDouble + ":" + strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		return tagString + ":" + x, nil
	case []int64:
		return tagInts + ":" + formatInts(x), nil
	case []float32:
		return tagFloats + ":" + formatFloats(x), nil
	case []string:
		return tagStrings + ":" + joinStringsKeepEmpty(x), nil
	case *tensor.Tensor:
		raw, err := constBytes(x)
		if err != nil {
			return "", err
		}
		off := gw.w.weights(raw)
		return fmt.Sprintf("%s:%s;%s;%d;%d", tagTensor, x.Type(), formatInts(x.Shape()), off, len(raw)), nil
	}
	return "", fmt.Errorf("a %T cannot be written", v)
}
