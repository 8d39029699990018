package ir

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// layerCtx is what an importer sees of the layer it converts.
type layerCtx struct {
	gc   *graphCtx
	l    *xmlLayer
	name string // the node name the layer takes
	// opset is the layer's opset version (0 for clinfer's own opset).
	opset int
	in    []graph.Output
	// created are the nodes the import made, in order; standard ops'
	// attributes are put in canonical form after the import (canon.go).
	created []*graph.Node
	// own is set for a clinfer-opset layer, whose attributes are kept as
	// written.
	own bool
}

// errorf returns a *LayerError naming c's layer that wraps sentinel.
func (c *layerCtx) errorf(sentinel error, format string, args ...any) error {
	return layerErr(c.l, sentinel, format, args...)
}

// attrErrorf is an ErrUnsupportedAttribute error about attribute attr.
func (c *layerCtx) attrErrorf(attr, format string, args ...any) error {
	return c.errorf(ErrUnsupportedAttribute, "attribute %s: %s", attr, fmt.Sprintf(format, args...))
}

// badAttr is an ErrInvalidModel error about attribute attr.
func (c *layerCtx) badAttr(attr string, err error) error {
	return c.errorf(ErrInvalidModel, "attribute %s: %v", attr, err)
}

// convert dispatches the layer to its importer.
func (c *layerCtx) convert() ([]graph.Output, error) {
	l := c.l
	v := l.Version
	switch {
	case v == ownOpset:
		c.own = true
		return c.importOwn()
	case strings.HasPrefix(v, "opset"):
		n, err := strconv.Atoi(strings.TrimPrefix(v, "opset"))
		if err != nil || n < 1 {
			return nil, c.errorf(ErrInvalidModel, "version %q is not opsetN", v)
		}
		if n > maxOpset {
			return nil, c.errorf(ErrUnsupportedOp, "%s is newer than the opsets this reader knows (opset1 to opset%d)", v, maxOpset)
		}
		c.opset = n
	case v == "":
		// IR 10 files of old converters leave the housekeeping layers
		// without a version.
		if t := canonicalType(l.Type); t != "Parameter" && t != "Const" && t != "Result" {
			return nil, c.errorf(ErrInvalidModel, "the layer has no version (opset)")
		}
		c.opset = 1
	default:
		return nil, c.errorf(ErrUnsupportedOp, "op %s of opset %q is not one of OpenVINO's opsets (opset1 to opset%d) or clinfer's own (%q); custom and internal ops are not read", l.Type, v, maxOpset, ownOpset)
	}
	row, ok := lookupImport(canonicalType(l.Type), c.opset)
	if !ok {
		if _, known := importTable[canonicalType(l.Type)]; known {
			return nil, c.errorf(ErrUnsupportedOp, "op %s is not in %s", l.Type, v)
		}
		return nil, c.errorf(ErrUnsupportedOp, "op %s (%s) is not supported: clinfer's op set has no equivalent (ir.OpTypes lists the op types and versions the reader reads)", l.Type, v)
	}
	outs, err := row.Import(c)
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// finish names the layer's outputs, checks them against the ports the
// file declares and applies the layer's runtime info.
func (c *layerCtx) finish(outs []graph.Output) error {
	l := c.l
	if !c.own {
		for _, n := range c.created {
			canonAttrs(n)
		}
	}
	for i, p := range l.Outputs {
		if i >= len(outs) || !outs[i].Valid() {
			if c.gc.consumers[portKey{l.ID, p.ID}] > 0 {
				return c.errorf(ErrUnsupportedOp, "output port %s (output %d) is used, but the reader provides only the op's other outputs", p.ID, i)
			}
			continue
		}
		o := outs[i]
		if names := splitNames(p.Names); len(names) > 0 {
			o.Port().Name = names[0]
		} else if o.Node.Name != c.name && len(c.created) > 0 && !isType(l, "Parameter") {
			o.Port().Name = c.defaultPortName(i)
		}
		if err := c.checkPort(i, p, o); err != nil {
			return err
		}
	}
	main := c.mainNode(outs)
	if main != nil && hasRT(l.RTInfo, rtConvBias) {
		c.gc.biasMarked[main] = true
	}
	if main != nil {
		if err := applyRT(main, l.RTInfo); err != nil {
			return c.errorf(ErrInvalidModel, "rt_info: %v", err)
		}
	}
	return nil
}

// defaultPortName is the name graph.NewNode gives output i of a node of
// the layer's name.
func (c *layerCtx) defaultPortName(i int) string {
	if len(c.l.Outputs) == 1 {
		return c.name
	}
	return fmt.Sprintf("%s:%d", c.name, i)
}

// mainNode is the node standing for the layer: the one that took its
// name, else the producer of its first output.
func (c *layerCtx) mainNode(outs []graph.Output) *graph.Node {
	for _, n := range c.created {
		if n.Name == c.name {
			return n
		}
	}
	if len(outs) > 0 && outs[0].Valid() {
		return outs[0].Node
	}
	return nil
}

// checkPort compares an output's inferred element type and static dims
// with those the file declares for port p, in documents clinfer wrote: a
// conflict there means the writer and the reader disagree. Other writers'
// port dims are informative only, as OpenVINO's reader treats them (the
// legacy converter leaves stale ones in bodies), and are not checked.
func (c *layerCtx) checkPort(i int, p xmlPort, o graph.Output) error {
	if !c.gc.b.clinfer {
		return nil
	}
	if t, ok := parsePrecision(p.Precision); ok && o.Type() != tensor.Undefined && t != o.Type() {
		return c.errorf(ErrInvalidModel, "output %d is %v by the op's semantics, but port %s declares %s", i, o.Type(), p.ID, p.Precision)
	}
	ps := o.Shape()
	if !ps.RankKnown || p.Dims == nil {
		return nil
	}
	if len(p.Dims) != len(ps.Dims) {
		return c.errorf(ErrInvalidModel, "output %d has rank %d by the op's semantics (%v), but port %s declares %d dims", i, len(ps.Dims), ps, p.ID, len(p.Dims))
	}
	for j, s := range p.Dims {
		d, err := parseDim(s)
		if err != nil {
			return c.errorf(ErrInvalidModel, "port %s: %v", p.ID, err)
		}
		if d.IsStatic() && ps.Dims[j].IsStatic() && d.Size != ps.Dims[j].Size {
			return c.errorf(ErrInvalidModel, "output %d is %v by the op's semantics, but port %s declares dim %d = %d", i, ps, p.ID, j, d.Size)
		}
	}
	return nil
}

// input returns input i, or the zero Output beyond the inputs given.
func (c *layerCtx) input(i int) graph.Output {
	if i < 0 || i >= len(c.in) {
		return graph.Output{}
	}
	return c.in[i]
}

// inputs checks that the layer has lo to hi inputs (hi < 0: no limit).
func (c *layerCtx) inputs(lo, hi int) error {
	n := len(c.in)
	if n < lo || (hi >= 0 && n > hi) {
		if lo == hi {
			return c.errorf(ErrInvalidModel, "has %d inputs, want %d", n, lo)
		}
		if hi < 0 {
			return c.errorf(ErrInvalidModel, "has %d inputs, want at least %d", n, lo)
		}
		return c.errorf(ErrInvalidModel, "has %d inputs, want %d to %d", n, lo, hi)
	}
	return nil
}

// node creates a graph node and infers its outputs. An empty suffix gives
// it the layer's node name; helper nodes get "<name>/<suffix>".
func (c *layerCtx) node(opType, suffix string, inputs []graph.Output, attrs graph.Attrs, numOutputs int) (*graph.Node, error) {
	if _, ok := graph.Lookup(opType); !ok {
		return nil, c.errorf(ErrUnsupportedOp, "needs op %s, which clinfer's op set lacks", opType)
	}
	name := c.name
	if suffix != "" {
		name = c.gc.unique(c.name + "/" + suffix)
	}
	for len(inputs) > 0 && inputs[len(inputs)-1].Node == nil {
		inputs = inputs[:len(inputs)-1] // omitted optional inputs at the end
	}
	n := graph.NewNode(opType, name, inputs, attrs, numOutputs)
	if err := graph.InferNode(n); err != nil && !untyped(inputs) {
		return nil, c.errorf(ErrInvalidModel, "%v", err)
	}
	c.created = append(c.created, n)
	return n, nil
}

// untyped reports whether an input's type is left to inference (a body's
// Parameter its owner binds, or a value made of one): the node is then
// inferred when the owner binds its body.
func untyped(inputs []graph.Output) bool {
	for _, in := range inputs {
		if in.Valid() && in.Type() == tensor.Undefined {
			return true
		}
	}
	return false
}

// op creates a one-output node and returns its output.
func (c *layerCtx) op(opType, suffix string, attrs graph.Attrs, inputs ...graph.Output) (graph.Output, error) {
	n, err := c.node(opType, suffix, inputs, attrs, 1)
	if err != nil {
		return graph.Output{}, err
	}
	return n.Out(0), nil
}

// constant creates a Constant helper node.
func (c *layerCtx) constant(suffix string, t *tensor.Tensor) graph.Output {
	n := graph.NewConstant(c.gc.unique(c.name+"/"+suffix), t)
	return n.Out(0)
}

// constI64 creates a 1-D i64 constant (a scalar when scalar is set).
func (c *layerCtx) constI64(suffix string, scalar bool, v ...int64) graph.Output {
	shape := tensor.Shape{int64(len(v))}
	if scalar && len(v) == 1 {
		shape = tensor.Shape{}
	}
	t, _ := tensor.FromI64(shape, v)
	return c.constant(suffix, t)
}

// constOf creates a constant of element type et holding v (a scalar
// when scalar is set and v has one element).
func (c *layerCtx) constOf(suffix string, et tensor.ElementType, scalar bool, v ...float64) (graph.Output, error) {
	shape := tensor.Shape{int64(len(v))}
	if scalar && len(v) == 1 {
		shape = tensor.Shape{}
	}
	t, err := tensor.FromFloat64s(et, shape, v)
	if err != nil {
		return graph.Output{}, c.errorf(ErrInvalidModel, "constant %s: %v", suffix, err)
	}
	return c.constant(suffix, t), nil
}

// value returns input i's value when it is known before inference (a
// constant or static shape arithmetic).
func (c *layerCtx) value(i int) (*tensor.Tensor, bool) {
	return graph.StaticValue(c.input(i))
}

// ints returns input i's integer values, which must be known before
// inference; what names the input in the error.
func (c *layerCtx) ints(i int, what string) ([]int64, error) {
	t, ok := c.value(i)
	if !ok {
		return nil, c.errorf(ErrUnsupportedAttribute, "input %d (%s) must be a constant", i, what)
	}
	v, ok := graph.IntValues(t)
	if !ok {
		return nil, c.errorf(ErrInvalidModel, "input %d (%s) is %v, want integers", i, what, t.Type())
	}
	return v, nil
}

// floats returns input i's values as floats, which must be known before
// inference.
func (c *layerCtx) floats(i int, what string) ([]float64, error) {
	t, ok := c.value(i)
	if !ok {
		return nil, c.errorf(ErrUnsupportedAttribute, "input %d (%s) must be a constant", i, what)
	}
	if !t.Type().IsNumeric() && t.Type() != tensor.Bool {
		return nil, c.errorf(ErrInvalidModel, "input %d (%s) is %v, want numbers", i, what, t.Type())
	}
	return t.Float64s(), nil
}

// rank returns input i's rank, which must be known.
func (c *layerCtx) rank(i int) (int, error) {
	in := c.input(i)
	if !in.Valid() || !in.Shape().RankKnown {
		return 0, c.errorf(ErrUnsupportedAttribute, "input %d must have a known rank", i)
	}
	return in.Shape().Rank(), nil
}

// attr returns the data attribute name and whether the layer sets it.
func (c *layerCtx) attr(name string) (string, bool) { return c.l.Data.attr(name) }

// str returns a string attribute, or def.
func (c *layerCtx) str(name, def string) string {
	if v, ok := c.attr(name); ok {
		return v
	}
	return def
}

// enum returns a string attribute (lower-cased), or def, checked against
// the allowed values.
func (c *layerCtx) enum(name, def string, allowed ...string) (string, error) {
	v, ok := c.attr(name)
	if !ok {
		return def, nil
	}
	v = strings.ToLower(strings.TrimSpace(v))
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", c.badAttr(name, fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", ")))
}

// int returns an integer attribute, or def.
func (c *layerCtx) int(name string, def int64) (int64, error) {
	v, ok := c.attr(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, c.badAttr(name, fmt.Errorf("%q is not an integer", v))
	}
	return i, nil
}

// intList returns an integer-list attribute; ok is false when unset.
func (c *layerCtx) intList(name string) ([]int64, bool, error) {
	v, ok := c.attr(name)
	if !ok {
		return nil, false, nil
	}
	l, err := parseInts(v)
	if err != nil {
		return nil, true, c.badAttr(name, err)
	}
	return l, true, nil
}

// float returns a float attribute, or def.
func (c *layerCtx) float(name string, def float32) (float32, error) {
	v, ok := c.attr(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	f, err := parseFloat(v)
	if err != nil {
		return 0, c.badAttr(name, err)
	}
	return f, nil
}

// boolean returns a boolean attribute, or def.
func (c *layerCtx) boolean(name string, def bool) (bool, error) {
	v, ok := c.attr(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	b, err := parseBool(v)
	if err != nil {
		return false, c.badAttr(name, err)
	}
	return b, nil
}

// elemType returns an element-type attribute, or def.
func (c *layerCtx) elemType(name string, def tensor.ElementType) (tensor.ElementType, error) {
	v, ok := c.attr(name)
	if !ok {
		return def, nil
	}
	t, err := parseElementType(v)
	if err != nil {
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " ,;") {
			return 0, c.badAttr(name, err)
		}
		return 0, c.errorf(ErrUnsupportedType, "attribute %s: %v", name, err)
	}
	return t, nil
}

// errf is fmt.Errorf, short for the many attribute errors.
func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// hasRT reports whether rt has an attribute named name.
func hasRT(rt *xmlRT, name string) bool {
	if rt == nil {
		return false
	}
	for _, a := range rt.Attributes {
		if a.Name == name {
			return true
		}
	}
	return false
}

// outs returns the outputs of n.
func outs(n *graph.Node) []graph.Output {
	o := make([]graph.Output, len(n.Outputs))
	for i := range o {
		o[i] = n.Out(i)
	}
	return o
}

// one wraps a single output.
func one(o graph.Output, err error) ([]graph.Output, error) {
	if err != nil {
		return nil, err
	}
	return []graph.Output{o}, nil
}
