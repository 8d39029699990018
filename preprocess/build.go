package preprocess

import (
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/names"
	"github.com/clinfer/clinfer/tensor"
)

// ExtraLayout is the runtime-info key (graph.RTInfo.Extra) of a
// Parameter's or Result's layout: the IR reader sets it from the model's
// layout runtime info, and Build reads it when the configuration does not
// set the model's layout.
const ExtraLayout = "layout"

// Build returns a copy of the model with the steps in its graph: each
// configured input becomes a Parameter of the tensor's type and shape
// (two for NV12 in two planes) followed by the steps' nodes, and each
// configured output is followed by its steps before its Result.
//
// Where the steps happen physically is Build's choice wherever it does not
// change the result: the layout conversion comes first, on the narrowest
// values (after an NV12 conversion, which reads planes), and every later
// step addresses the channel and spatial axes by name. A step that
// computes (Resize, Mean, Scale) on integer values converts them to the
// model's float type first, as converting later would round. After the
// steps, the values are converted to the model's element type when they
// differ.
func (p *PrePostProcessor) Build() (*graph.Model, error) {
	m := p.m.Clone()
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("preprocess: %w", err)
	}
	b := &builder{m: m}
	for _, n := range nodes {
		b.names.Take(n.Name)
	}
	consumers, err := m.Consumers()
	if err != nil {
		return nil, fmt.Errorf("preprocess: %w", err)
	}
	b.consumers = consumers
	var errs []error
	for _, in := range p.inputs {
		errs = append(errs, in.errs...)
	}
	for _, o := range p.outputs {
		errs = append(errs, o.errs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, in := range p.inputs {
		if err := b.input(in); err != nil {
			return nil, err
		}
	}
	for _, o := range p.outputs {
		if err := b.output(o); err != nil {
			return nil, err
		}
	}
	if err := m.InferShapes(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return m, nil
}

// builder adds the steps to the model.
type builder struct {
	m         *graph.Model
	names     names.Set
	consumers map[graph.Output][]graph.Input
}

// cursor is the value the steps have made so far.
type cursor struct {
	b      *builder
	prefix string
	out    graph.Output
	layout Layout
}

// op adds a node of one output after the value so far.
func (c *cursor) op(opType, what string, attrs graph.Attrs, in ...graph.Output) error {
	n := graph.NewNode(opType, c.b.names.Unique(c.prefix+what), in, attrs, 1)
	if err := graph.InferNode(n); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, c.prefix+what, err)
	}
	c.out = n.Out(0)
	return nil
}

// constant makes a constant node.
func (c *cursor) constant(what string, t *tensor.Tensor) graph.Output {
	return graph.NewConstant(c.b.names.Unique(c.prefix+what), t).Out(0)
}

func (c *cursor) i64(what string, v ...int64) graph.Output {
	t, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	return c.constant(what, t)
}

// cast converts the value to t.
func (c *cursor) cast(t tensor.ElementType, what string) error {
	if c.out.Type() == t {
		return nil
	}
	return c.op("Cast", what, graph.Attrs{"to": int64(t)}, c.out)
}

// axis returns the current layout's axis name, or an error saying the
// step needs it.
func (c *cursor) axis(name, step string) (int, error) {
	i := c.layout.Index(name)
	if i < 0 {
		return 0, fmt.Errorf("%w: %s needs axis %s, which layout %q lacks (set the layouts with Tensor().SetLayout and Model().SetLayout)", ErrInvalid, step, name, c.layout)
	}
	return i, nil
}

// modelLayout is the input's or output's model layout: the configured
// one, else the node's layout runtime info.
func modelLayout(set Layout, n *graph.Node) Layout {
	if set.Known() {
		return set
	}
	if s, ok := n.RT.Extra[ExtraLayout]; ok {
		if l, err := ParseLayout(s); err == nil {
			return l
		}
	}
	return Layout{}
}

// input replaces the configured input's Parameter with the tensor's and
// the steps.
func (b *builder) input(in *InputInfo) error {
	idx := -1
	for i, p := range b.m.Parameters {
		if p.Name == in.name && in.name != "" {
			idx = i
		}
	}
	if idx < 0 {
		var list []string
		for _, p := range b.m.Parameters {
			list = append(list, p.Name)
		}
		if in.name == "" {
			return fmt.Errorf("%w: the model has no input %d (inputs: %q)", ErrInvalid, in.index, list)
		}
		return fmt.Errorf("%w: the model has no input %q (inputs: %q)", ErrInvalid, in.name, list)
	}
	param := b.m.Parameters[idx]
	mt, ms := param.Outputs[0].Type, param.Outputs[0].Shape
	ml := modelLayout(in.modelLayout, param)
	if !ml.Known() {
		for _, st := range in.list {
			if st.kind == stepConvertLayout && st.layout.Known() {
				ml = st.layout
			}
		}
	}
	tl := in.layout
	if !tl.Known() {
		tl = ml
	}
	if !ml.Known() {
		ml = tl
	}
	if tl.Known() && ms.RankKnown && tl.Rank() != len(ms.Dims) {
		return fmt.Errorf("%w: input %q: layout %v has %d axes, the model's input %v has %d", ErrInvalid, in.name, tl, tl.Rank(), ms, len(ms.Dims))
	}
	elem := in.elem
	if elem == tensor.Undefined {
		elem = mt
	}
	shape, err := tensorShape(in, ms, ml, tl)
	if err != nil {
		return err
	}
	c := &cursor{b: b, prefix: in.name + "/preprocess/", layout: tl}
	var params []*graph.Node
	steps := in.list
	switch in.color {
	case NV12TwoPlanes, NV12SinglePlane:
		var conv *step
		for i := range steps {
			if steps[i].kind == stepConvertColor {
				conv = &steps[i]
				break
			}
		}
		if conv == nil || (conv.color != RGB && conv.color != BGR) {
			return fmt.Errorf("%w: input %q: an %v tensor needs a ConvertColor step to RGB or BGR", ErrInvalid, in.name, in.color)
		}
		if tl.Index("N") != 0 || tl.Index("H") != 1 || tl.Index("W") != 2 || tl.Index("C") != 3 {
			return fmt.Errorf("%w: input %q: an %v tensor has layout NHWC, not %v", ErrInvalid, in.name, in.color, tl)
		}
		params, err = c.nv12(in, elem, shape, conv.color)
		if err != nil {
			return err
		}
		steps = removeStep(steps, conv)
	default:
		p := graph.NewParameter(b.names.Unique(in.name), elem, shape)
		p.Name = in.name // the Parameter keeps the input's name
		params = []*graph.Node{p}
		c.out = p.Out(0)
	}
	color := in.color
	if color == NV12TwoPlanes || color == NV12SinglePlane {
		color = RGB
		if conv := findStep(in.list, stepConvertColor); conv != nil {
			color = conv.color
		}
	}
	// The layout conversion first, on the narrowest values.
	if tl.Known() && ml.Known() && !tl.Equal(ml) {
		perm, err := permutation(tl, ml)
		if err != nil {
			return fmt.Errorf("input %q: %w", in.name, err)
		}
		if err := c.op("Transpose", "layout", graph.Attrs{"perm": perm}, c.out); err != nil {
			return err
		}
		c.layout = ml
	}
	float := mt
	if !float.IsFloat() {
		float = tensor.F32
	}
	for _, st := range steps {
		if err := c.step(in, st, &color, float, ms, ml); err != nil {
			return fmt.Errorf("input %q: %w", in.name, err)
		}
	}
	if err := c.cast(mt, "convert_element_type"); err != nil {
		return err
	}
	// The steps' value takes the Parameter's place.
	for _, u := range b.consumers[param.Out(0)] {
		u.Node.Inputs[u.Index] = c.out
	}
	ps := append([]*graph.Node(nil), b.m.Parameters[:idx]...)
	ps = append(ps, params...)
	b.m.Parameters = append(ps, b.m.Parameters[idx+1:]...)
	return nil
}

func findStep(list []step, k stepKind) *step {
	for i := range list {
		if list[i].kind == k {
			return &list[i]
		}
	}
	return nil
}

func removeStep(list []step, s *step) []step {
	var out []step
	for i := range list {
		if &list[i] != s {
			out = append(out, list[i])
		}
	}
	return out
}

// tensorShape is the shape of the user's tensor: the model's in the
// tensor's layout, with the colour format's channels and the spatial
// size configured.
func tensorShape(in *InputInfo, ms graph.PartialShape, ml, tl Layout) (graph.PartialShape, error) {
	if !ms.RankKnown {
		if in.layout.Known() || in.color != ColorUndefined || in.spatialHW != [2]int64{} {
			return graph.PartialShape{}, fmt.Errorf("%w: input %q: the model's input has no known rank", ErrInvalid, in.name)
		}
		return ms, nil
	}
	s := ms.Clone()
	if tl.Known() && ml.Known() && !tl.Equal(ml) {
		perm, err := permutation(ml, tl)
		if err != nil {
			return graph.PartialShape{}, fmt.Errorf("input %q: %w", in.name, err)
		}
		for i, p := range perm {
			s.Dims[i] = ms.Dims[p]
		}
	}
	set := func(axis string, d graph.Dim, why string) error {
		i := tl.Index(axis)
		if i < 0 {
			return fmt.Errorf("%w: input %q: %s needs axis %s, which layout %q lacks (set it with Tensor().SetLayout)", ErrInvalid, in.name, why, axis, tl)
		}
		s.Dims[i] = d
		return nil
	}
	switch in.color {
	case RGB, BGR:
		if err := set("C", graph.StaticDim(3), "colour format "+in.color.String()); err != nil {
			return s, err
		}
	case GRAY:
		if err := set("C", graph.StaticDim(1), "colour format GRAY"); err != nil {
			return s, err
		}
	case NV12TwoPlanes, NV12SinglePlane:
		if err := set("C", graph.StaticDim(3), "colour format "+in.color.String()); err != nil {
			return s, err
		}
	}
	if hw := in.spatialHW; hw != [2]int64{} {
		for i, axis := range []string{"H", "W"} {
			d := graph.DynamicDim("")
			if hw[i] > 0 {
				d = graph.StaticDim(hw[i])
			}
			if err := set(axis, d, "a spatial shape"); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// nv12 makes the NV12 planes' Parameters and their conversion to colour
// to ([N,H,W,3] of elem).
func (c *cursor) nv12(in *InputInfo, elem tensor.ElementType, shape graph.PartialShape, to ColorFormat) ([]*graph.Node, error) {
	n, h, w := shape.Dims[0], shape.Dims[1], shape.Dims[2]
	half := func(d graph.Dim) graph.Dim {
		if d.IsStatic() {
			return graph.StaticDim(d.Size / 2)
		}
		return graph.DynamicDim("")
	}
	for _, d := range []graph.Dim{h, w} {
		if d.IsStatic() && d.Size%2 != 0 {
			return nil, fmt.Errorf("%w: input %q: NV12 needs an even height and width, have %v", ErrInvalid, in.name, shape)
		}
	}
	op := "NV12toRGB"
	if to == BGR {
		op = "NV12toBGR"
	}
	if in.color == NV12SinglePlane {
		hh := graph.DynamicDim("")
		if h.IsStatic() {
			hh = graph.StaticDim(h.Size * 3 / 2)
		}
		p := graph.NewParameter(in.name, elem, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{n, hh, w, graph.StaticDim(1)}})
		if err := c.op(op, "convert_color", nil, p.Out(0)); err != nil {
			return nil, err
		}
		return []*graph.Node{p}, nil
	}
	y := graph.NewParameter(c.b.names.Unique(in.name+"/y"), elem, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{n, h, w, graph.StaticDim(1)}})
	uv := graph.NewParameter(c.b.names.Unique(in.name+"/uv"), elem, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{n, half(h), half(w), graph.StaticDim(2)}})
	if err := c.op(op, "convert_color", nil, y.Out(0), uv.Out(0)); err != nil {
		return nil, err
	}
	return []*graph.Node{y, uv}, nil
}

// step adds one step's nodes.
func (c *cursor) step(in *InputInfo, st step, color *ColorFormat, float tensor.ElementType, ms graph.PartialShape, ml Layout) error {
	switch st.kind {
	case stepConvertElementType:
		return c.cast(st.elem, "convert_element_type")
	case stepConvertLayout:
		if st.layout.Known() && !st.layout.Equal(c.layout) {
			return fmt.Errorf("%w: ConvertLayout to %v, but the model's layout is %v (the steps end in the model's layout)", ErrInvalid, st.layout, c.layout)
		}
		return nil
	case stepConvertColor:
		switch {
		case st.color == *color:
			return nil
		case (st.color == RGB && *color == BGR) || (st.color == BGR && *color == RGB):
			*color = st.color
			return c.reverseChannels("convert_color")
		}
		return fmt.Errorf("%w: ConvertColor from %v to %v is not supported (NV12 to RGB or BGR, RGB to BGR and back are)", ErrInvalid, *color, st.color)
	case stepReverseChannels:
		return c.reverseChannels("reverse_channels")
	case stepResize:
		return c.resize(st, float, ms, ml)
	case stepMean, stepScale:
		if err := c.toFloat(float); err != nil {
			return err
		}
		k, err := c.perChannel(st.values)
		if err != nil {
			return err
		}
		if st.kind == stepMean {
			return c.op("Sub", "mean", nil, c.out, k)
		}
		for _, v := range st.values {
			if v == 0 {
				return fmt.Errorf("%w: Scale by 0", ErrInvalid)
			}
		}
		return c.op("Div", "scale", nil, c.out, k)
	case stepCustom:
		out, err := st.custom(c.out)
		if err != nil {
			return fmt.Errorf("custom step: %w", err)
		}
		if !out.Valid() {
			return fmt.Errorf("%w: a custom step returned no value", ErrInvalid)
		}
		c.out = out
		return nil
	}
	return nil
}

// toFloat converts integer values to the model's float type before a step
// that computes.
func (c *cursor) toFloat(float tensor.ElementType) error {
	if c.out.Type().IsFloat() {
		return nil
	}
	return c.cast(float, "convert_element_type")
}

// perChannel is a constant of the values' type: a scalar for one value,
// else one value per channel along the channel axis.
func (c *cursor) perChannel(values []float32) (graph.Output, error) {
	t := c.out.Type()
	f := make([]float64, len(values))
	for i, v := range values {
		f[i] = float64(v)
	}
	if len(values) == 1 {
		x, err := tensor.FromFloat64s(t, tensor.Shape{}, f)
		if err != nil {
			return graph.Output{}, err
		}
		return c.constant("values", x), nil
	}
	ch, err := c.axis("C", "a per-channel Mean or Scale")
	if err != nil {
		return graph.Output{}, err
	}
	if d := c.out.Shape().Dims[ch]; d.IsStatic() && d.Size != int64(len(values)) {
		return graph.Output{}, fmt.Errorf("%w: %d values for %d channels", ErrInvalid, len(values), d.Size)
	}
	shape := make(tensor.Shape, c.layout.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[ch] = int64(len(values))
	x, err := tensor.FromFloat64s(t, shape, f)
	if err != nil {
		return graph.Output{}, err
	}
	return c.constant("values", x), nil
}

// reverseChannels gathers the channels in reverse order.
func (c *cursor) reverseChannels(what string) error {
	ch, err := c.axis("C", "reversing the channels")
	if err != nil {
		return err
	}
	d := c.out.Shape().Dims[ch]
	if !d.IsStatic() {
		return fmt.Errorf("%w: reversing the channels needs a static channel count, have %v", ErrInvalid, c.out.Shape())
	}
	idx := make([]int64, d.Size)
	for i := range idx {
		idx[i] = d.Size - 1 - int64(i)
	}
	return c.op("Gather", what, graph.Attrs{"axis": int64(ch)}, c.out, c.i64(what+"/order", idx...))
}
