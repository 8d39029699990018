package ir

import (
	"encoding/xml"
	"fmt"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// exportFunc writes node e.n in OpenVINO's opsets. It returns false,
// having written nothing, when the node's form has no exact equivalent
// there (the writer then uses clinfer's opset); an exporter must check
// everything before it emits a layer, since a dry run (Exported) asks it
// without writing.
type exportFunc func(e *exportCtx) (bool, error)

// exportTable maps the op set's ops to their exporters; the families'
// files hold the rows.
var exportTable = buildExportTable()

func buildExportTable() map[string]exportFunc {
	t := map[string]exportFunc{}
	for _, rows := range []map[string]exportFunc{eltwiseExports, activationExports, compareExports, castExports,
		shapeExports, movementExports, indexExports, reduceExports, convExports, poolExports, normExports,
		gemmExports, resizeExports, compactExports, colorExports, detectionExports, signalExports} {
		for k, v := range rows {
			if _, dup := t[k]; dup {
				panic("ir: export row for " + k + " listed twice")
			}
			t[k] = v
		}
	}
	return t
}

// exportCtx is what an exporter sees of the node it writes.
type exportCtx struct {
	gw  *graphWriter
	n   *graph.Node
	dry bool
}

// has reports whether n has only attributes of the given names.
func (e *exportCtx) onlyAttrs(names ...string) bool {
	for k := range e.n.Attrs {
		if !containsStr(names, k) {
			return false
		}
	}
	return true
}

// owned reports whether input i is a constant that only this node reads:
// one the writer may turn into an attribute or reshape, since the reader
// makes a constant of its own in its place.
func (e *exportCtx) owned(i int) bool {
	in := e.in(i)
	if !in.Valid() || in.Node.OpType != graph.OpConstant || e.gw.uses[in] != 1 {
		return false
	}
	for j, o := range e.n.Inputs {
		if j != i && o == in {
			return false
		}
	}
	return true
}

// in returns input i (a zero Output when omitted).
func (e *exportCtx) in(i int) graph.Output { return e.n.Input(i) }

// value returns input i's value when it is a constant.
func (e *exportCtx) value(i int) (*tensor.Tensor, bool) { return e.n.ConstInput(i) }

// ints returns input i's integer values when it is an integer constant.
func (e *exportCtx) ints(i int) ([]int64, bool) {
	v, ok := e.value(i)
	if !ok {
		return nil, false
	}
	return graph.IntValues(v)
}

// src is a layer input: a node output already written, or a constant to
// write as a helper Const layer.
type src struct {
	out   graph.Output
	value *tensor.Tensor
	name  string
}

// from is the source of node output o.
func from(o graph.Output) src { return src{out: o} }

// constSrc is a helper Const layer of v, named "<node>/<suffix>".
func (e *exportCtx) constSrc(suffix string, v *tensor.Tensor) src {
	return src{value: v, name: e.n.Name + "/" + suffix}
}

// i64Src is a helper i64 constant (a scalar when scalar is set).
func (e *exportCtx) i64Src(suffix string, scalar bool, v ...int64) src {
	shape := tensor.Shape{int64(len(v))}
	if scalar && len(v) == 1 {
		shape = tensor.Shape{}
	}
	t, _ := tensor.FromI64(shape, v)
	return e.constSrc(suffix, t)
}

// layerSpec is one layer an exporter emits.
type layerSpec struct {
	typ   string
	opset int
	name  string // "" is the node's name
	data  []xml.Attr
	in    []src
	// outs is how many output ports the layer has; the node's outputs
	// take them when node is set.
	outs int
	node bool
	// rt is extra runtime info of the layer.
	rt []xmlRTAttr
}

// emit writes a layer; it returns references to its output ports.
func (e *exportCtx) emit(s layerSpec) ([]portRef, error) {
	if e.dry {
		refs := make([]portRef, s.outs)
		return refs, nil
	}
	gw := e.gw
	name := s.name
	if name == "" {
		name = e.n.Name
	}
	l := xmlLayer{Name: name, Type: s.typ, Version: "opset" + strconv.Itoa(s.opset)}
	if len(s.data) > 0 {
		l.Data = &xmlAttrs{Attrs: s.data}
	}
	var refs []portRef
	for i, in := range s.in {
		var ref portRef
		var port xmlPort
		if in.value != nil {
			r, err := gw.constant(in.name, in.value, nil)
			if err != nil {
				return nil, err
			}
			ref = r
			port = xmlPort{ID: strconv.Itoa(i)}
			port.Dims, _ = dims(graph.StaticShape(in.value.Shape()))
		} else {
			r, err := gw.ref(in.out)
			if err != nil {
				return nil, fmt.Errorf("ir: write: node %q: %w", e.n.Name, err)
			}
			ref = r
			port = inPort(in.out, i)
		}
		refs = append(refs, ref)
		l.Inputs = append(l.Inputs, port)
	}
	for i := 0; i < s.outs; i++ {
		id := len(s.in) + i
		if s.node && i < len(e.n.Outputs) {
			l.Outputs = append(l.Outputs, gw.outPort(e.n.Out(i), id))
		} else {
			l.Outputs = append(l.Outputs, xmlPort{ID: strconv.Itoa(id)})
		}
	}
	if s.node {
		l.RTInfo = nodeRT(e.n)
	}
	for _, a := range s.rt {
		l.RTInfo = addRT(l.RTInfo, a)
	}
	lid := gw.newLayer(l)
	for i, r := range refs {
		gw.g.Edges = append(gw.g.Edges, xmlEdge{FromLayer: r.layer, FromPort: r.port, ToLayer: lid, ToPort: strconv.Itoa(i)})
	}
	out := make([]portRef, s.outs)
	for i := range out {
		out[i] = portRef{lid, strconv.Itoa(len(s.in) + i)}
		if s.node && i < len(e.n.Outputs) {
			gw.ports[e.n.Out(i)] = out[i]
		}
	}
	return out, nil
}

// single writes the node as one layer of type typ (opset n) over its
// inputs, all its outputs the layer's.
func (e *exportCtx) single(typ string, opset int, data []xml.Attr, in ...src) (bool, error) {
	_, err := e.emit(layerSpec{typ: typ, opset: opset, data: data, in: in, outs: len(e.n.Outputs), node: true})
	return err == nil, err
}

// inputs are the node's inputs as sources (all must be present).
func (e *exportCtx) inputs() ([]src, bool) {
	out := make([]src, len(e.n.Inputs))
	for i, in := range e.n.Inputs {
		if !in.Valid() {
			return nil, false
		}
		out[i] = from(in)
	}
	return out, true
}

// sameAs exports an op without attributes as the IR op typ.
func sameAs(typ string, opset int) exportFunc {
	return func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single(typ, opset, nil, in...)
	}
}

// binaryAs exports a broadcasting binary op as typ with numpy
// broadcasting.
func binaryAs(typ string) exportFunc { return binaryAsV(typ, 1) }

// binaryAsV is binaryAs for a version of typ first in opset.
func binaryAsV(typ string, opset int) exportFunc {
	return func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || len(in) != 2 || !e.onlyAttrs() {
			return false, nil
		}
		return e.single(typ, opset, []xml.Attr{dataAttr("auto_broadcast", "numpy")}, in...)
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// attrInt is n's integer attribute (def when unset).
func (e *exportCtx) attrInt(name string, def int64) int64 { return e.n.Attrs.Int(name, def) }
