package ir

import (
	"encoding/xml"

	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// convImports are the convolutions. IR has no bias input: a bias is an Add
// of a per-channel constant after the convolution, which the reader folds
// back into the Conv (foldConvBiases).
var convImports = []importRow{
	{"Convolution", 1, importConv("Conv", false)},
	{"GroupConvolution", 1, importConv("Conv", true)},
	{"ConvolutionBackpropData", 1, importConv("ConvTranspose", false)},
	{"GroupConvolutionBackpropData", 1, importConv("ConvTranspose", true)},
}

// autoPads maps IR's auto_pad values to the op set's.
var autoPads = map[string]string{"explicit": "NOTSET", "notset": "NOTSET", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}

// windowAttrs reads the strides, dilations, pads and auto_pad of a
// convolution or pooling layer with the given number of spatial axes
// (-1: from the lists themselves).
func (c *layerCtx) windowAttrs(attrs graph.Attrs, dilations bool) error {
	for _, k := range []string{"strides", "dilations"} {
		if k == "dilations" && !dilations {
			continue
		}
		v, ok, err := c.intList(k)
		if err != nil {
			return err
		}
		if ok && len(v) > 0 {
			attrs[k] = v
		}
	}
	ap, err := c.enum("auto_pad", "explicit", "explicit", "notset", "same_upper", "same_lower", "valid")
	if err != nil {
		return err
	}
	attrs["auto_pad"] = autoPads[ap]
	if ap != "explicit" && ap != "notset" {
		return nil
	}
	b, okb, err := c.intList("pads_begin")
	if err != nil {
		return err
	}
	e, oke, err := c.intList("pads_end")
	if err != nil {
		return err
	}
	if okb != oke || len(b) != len(e) {
		return c.badAttr("pads_end", errf("pads_begin %v and pads_end %v differ in length", b, e))
	}
	if len(b) > 0 {
		attrs["pads"] = append(append([]int64(nil), b...), e...)
	}
	return nil
}

// importConv converts the four convolutions; grouped weights
// [G, O/G, I/G, k...] (deconvolution: [G, I/G, O/G, k...]) become the op
// set's [G*O/G, I/G, k...] ([I, O/G, k...]).
func importConv(opType string, grouped bool) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		hi := 2
		if opType == "ConvTranspose" {
			hi = 3
		}
		if err := c.inputs(2, hi); err != nil {
			return nil, err
		}
		attrs := graph.Attrs{}
		if err := c.windowAttrs(attrs, true); err != nil {
			return nil, err
		}
		if opType == "ConvTranspose" {
			op, ok, err := c.intList("output_padding")
			if err != nil {
				return nil, err
			}
			if ok && len(op) > 0 {
				attrs["output_padding"] = op
			}
			if len(c.in) == 3 {
				os, err := c.ints(2, "output_shape")
				if err != nil {
					return nil, err
				}
				attrs["output_shape"] = os
			}
		}
		w := c.in[1]
		if grouped {
			var err error
			if w, err = c.ungroupWeights(attrs); err != nil {
				return nil, err
			}
		}
		n, err := c.node(opType, "", []graph.Output{c.in[0], w}, attrs, 1)
		if err != nil {
			return nil, err
		}
		c.gc.convs[n] = true
		return outs(n), nil
	}
}

// ungroupWeights merges the group axis of grouped weights into the next
// one and sets attrs' group.
func (c *layerCtx) ungroupWeights(attrs graph.Attrs) (graph.Output, error) {
	w := c.in[1]
	s, ok := w.Shape().ToShape()
	if !ok || len(s) < 3 {
		return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "grouped weights need a static shape of rank 3 or more, have %v", w.Shape())
	}
	attrs["group"] = s[0]
	merged := append(tensor.Shape{s[0] * s[1]}, s[2:]...)
	if v, ok := c.value(1); ok {
		r, err := v.Contiguous().Reshape(merged)
		if err != nil {
			return graph.Output{}, c.errorf(ErrInvalidModel, "weights: %v", err)
		}
		if o, ok := c.gc.ungrouped[w]; ok {
			return o, nil
		}
		n := graph.NewConstant(c.gc.unique(w.Node.Name+"/ungrouped"), r)
		c.gc.ungrouped[w] = n.Out(0)
		return n.Out(0), nil
	}
	return c.op("Reshape", "weights", nil, w, c.constI64("weights_shape", false, merged...))
}

// foldConvBiases folds each Conv or ConvTranspose the reader made, whose
// only consumer is an Add of a per-channel constant ([C] or [1, C, 1...]),
// into a Conv with that bias. The Conv takes the Add's name, ports and
// runtime info: in IR the Add is the layer that carries the convolution's
// output. In a document clinfer wrote, only Adds it marked as a bias are
// folded, so a graph whose own Add follows a bias-free Conv reads back as
// it was.
func (gc *graphCtx) foldConvBiases(m *graph.Model) error {
	if len(gc.convs) == 0 {
		return nil
	}
	consumers, err := m.Consumers()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	nodes, err := m.Nodes()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	isResult := map[*graph.Node]bool{}
	for _, r := range m.Results {
		isResult[r.Inputs[0].Node] = true
	}
	for _, add := range nodes {
		if add.OpType != "Add" || len(add.Inputs) != 2 || (gc.b.clinfer && !gc.biasMarked[add]) {
			continue
		}
		for side := 0; side < 2; side++ {
			cv, b := add.Inputs[side], add.Inputs[1-side]
			if !cv.Valid() || !gc.convs[cv.Node] || len(cv.Node.Inputs) != 2 || isResult[cv.Node] || len(consumers[cv]) != 1 {
				continue
			}
			bias, ok := gc.biasConst(cv, b)
			if !ok {
				continue
			}
			conv := cv.Node
			add.OpType = conv.OpType
			add.Attrs = conv.Attrs
			add.Inputs = []graph.Output{conv.Inputs[0], conv.Inputs[1], bias}
			delete(gc.convs, conv)
			if err := graph.InferNode(add); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidModel, err)
			}
			break
		}
	}
	return nil
}

// biasConst returns the [C] constant of a per-channel bias b of conv
// output cv.
func (gc *graphCtx) biasConst(cv, b graph.Output) (graph.Output, bool) {
	if !b.Valid() || b.Node.OpType != graph.OpConstant || b.Node.Value == nil || b.Type() != cv.Type() {
		return graph.Output{}, false
	}
	if o, ok := gc.biasConsts[b.Node]; ok {
		return o, true
	}
	os := cv.Shape()
	v := b.Node.Value
	s := v.Shape()
	if !os.RankKnown || len(os.Dims) < 3 || !os.Dims[1].IsStatic() {
		return graph.Output{}, false
	}
	ch := os.Dims[1].Size
	switch {
	case len(s) == 1 && s[0] == ch:
		gc.biasConsts[b.Node] = b
		return b, true
	case len(s) == len(os.Dims) && s[1] == ch && s.NumElements() == ch:
	case len(s) == len(os.Dims)-1 && s[0] == ch && s.NumElements() == ch:
	default:
		return graph.Output{}, false
	}
	r, err := v.Contiguous().Reshape(tensor.Shape{ch})
	if err != nil {
		return graph.Output{}, false
	}
	n := graph.NewConstant(b.Node.Name, r)
	n.Outputs[0].Name = b.Port().Name
	n.RT = b.Node.RT.Clone()
	gc.biasConsts[b.Node] = n.Out(0)
	return n.Out(0), true
}

// convExports write Conv and ConvTranspose: grouped ones as the Group
// forms with their weights reshaped, a bias as an Add of a [1, C, 1...]
// constant after the convolution (marked, so the reader folds it back).
var convExports = map[string]exportFunc{
	"Conv":          exportConv,
	"ConvTranspose": exportConv,
}

// windowData writes strides, dilations, pads and auto_pad of a
// convolution or pooling with k spatial axes.
func (e *exportCtx) windowData(k int, dilations bool) ([]xml.Attr, bool) {
	ones := make([]int64, k)
	for i := range ones {
		ones[i] = 1
	}
	list := func(name string, def []int64) ([]int64, bool) {
		v := e.n.Attrs.Ints(name, def)
		return v, len(v) == len(def)
	}
	strides, ok1 := list("strides", ones)
	dil, ok2 := list("dilations", ones)
	pads, ok3 := list("pads", make([]int64, 2*k))
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	ap := ""
	for k, v := range autoPads {
		if v == e.n.Attrs.String("auto_pad", "NOTSET") && k != "notset" {
			ap = k
		}
	}
	if ap == "" {
		return nil, false
	}
	data := []xml.Attr{dataAttr("strides", formatInts(strides))}
	if dilations {
		data = append(data, dataAttr("dilations", formatInts(dil)))
	} else if !allAre(1)(e.n, dil) {
		return nil, false
	}
	return append(data, dataAttr("pads_begin", formatInts(pads[:k])), dataAttr("pads_end", formatInts(pads[k:])),
		dataAttr("auto_pad", ap)), true
}

func exportConv(e *exportCtx) (bool, error) {
	x, w, b := e.in(0), e.in(1), e.in(2)
	deconv := e.n.OpType == "ConvTranspose"
	allowed := []string{"strides", "dilations", "pads", "auto_pad", "group", "kernel_shape"}
	if deconv {
		allowed = append(allowed, "output_padding", "output_shape")
	}
	if !x.Valid() || !w.Valid() || !e.onlyAttrs(allowed...) || (len(e.n.Inputs) == 3 && !b.Valid()) {
		return false, nil
	}
	ws := w.Shape()
	if !ws.RankKnown || len(ws.Dims) < 3 || (e.n.Attrs.Has("kernel_shape") && !isWeightWindow(e.n, e.n.Attrs["kernel_shape"])) {
		return false, nil
	}
	k := len(ws.Dims) - 2
	data, ok := e.windowData(k, true)
	if !ok {
		return false, nil
	}
	group := e.attrInt("group", 1)
	typ := "Convolution"
	if deconv {
		typ = "ConvolutionBackpropData"
		if op := e.n.Attrs.Ints("output_padding", nil); op != nil {
			if len(op) != k {
				return false, nil
			}
			data = append(data, dataAttr("output_padding", formatInts(op)))
		}
	}
	weights := from(w)
	if group != 1 {
		v, ok := e.value(1)
		if !ok || !e.owned(1) || group < 1 || v.Shape()[0]%group != 0 {
			return false, nil
		}
		s := v.Shape()
		grouped, err := v.Contiguous().Reshape(append(tensor.Shape{group, s[0] / group}, s[1:]...))
		if err != nil {
			return false, nil
		}
		// The group's weights are the reader's reshape of the model's.
		weights = src{value: grouped, name: w.Node.Name}
		typ = "Group" + typ
	}
	in := []src{from(x), weights}
	if os := e.n.Attrs.Ints("output_shape", nil); os != nil {
		in = append(in, e.i64Src("output_shape", false, os...))
	}
	if !b.Valid() {
		return e.single(typ, 1, data, in...)
	}
	bv, ok := e.value(2)
	rank := e.n.Outputs[0].Shape.Rank()
	if !ok || !e.owned(2) || rank < 3 || len(bv.Shape()) != 1 || bv.Type() != x.Type() {
		return false, nil
	}
	bs := make(tensor.Shape, rank)
	for i := range bs {
		bs[i] = 1
	}
	bs[1] = bv.Shape()[0]
	bias, err := bv.Contiguous().Reshape(bs)
	if err != nil {
		return false, nil
	}
	refs, err := e.emit(layerSpec{typ: typ, opset: 1, name: e.n.Name + "/WithoutBiases", data: data, in: in, outs: 1})
	if err != nil || e.dry {
		return err == nil, err
	}
	conv := graph.Output{Node: e.n, Index: -1} // a placeholder key for the bias-free output
	e.gw.ports[conv] = refs[0]
	_, err = e.emit(layerSpec{typ: "Add", opset: 1, data: []xml.Attr{dataAttr("auto_broadcast", "numpy")},
		in: []src{from(conv), {value: bias, name: b.Node.Name}}, outs: 1, node: true,
		rt: []xmlRTAttr{rtAttr(rtConvBias, "")}})
	delete(e.gw.ports, conv)
	return err == nil, err
}
