package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/names"
	"github.com/clinfer/clinfer/tensor"
)

// Option configures Read and ReadFile.
type Option func(*config)

type config struct {
	baseDir    string
	baseDirSet bool
}

// WithBaseDir sets the directory external tensor data is resolved against.
// Read has none by default (models with external data then fail); ReadFile
// uses the model file's directory.
func WithBaseDir(dir string) Option {
	return func(c *config) { c.baseDir, c.baseDirSet = dir, true }
}

// fileError prefixes an error with the file it came from while keeping the
// "onnx:" prefix first.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string {
	return "onnx: " + e.file + ": " + strings.TrimPrefix(e.err.Error(), "onnx: ")
}

func (e *fileError) Unwrap() error { return e.err }

// ReadFile reads an .onnx model file. External tensor data is resolved
// relative to the file's directory unless WithBaseDir says otherwise. Errors
// name the file.
func ReadFile(path string, opts ...Option) (*graph.Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	cfg := config{baseDir: filepath.Dir(path)}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := read(data, cfg)
	if err != nil {
		return nil, &fileError{file: path, err: err}
	}
	return m, nil
}

// Read decodes a serialized ONNX ModelProto into a model. External tensor
// data needs WithBaseDir.
func Read(data []byte, opts ...Option) (*graph.Model, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return read(data, cfg)
}

// maxOpset is the newest default-domain opset the op table was written
// against; newer models are refused rather than silently misread.
const maxOpset = 23

type builder struct {
	src      tensorSource
	opsets   map[string]int64
	values   map[string]graph.Output
	names    *names.Set
	consumed map[string]bool
	// parent is the enclosing scope of a subgraph's builder (nil at the
	// top); captures are the outer values the subgraph reads, each bound
	// to one of its trailing Parameters (see scope.go).
	parent   *builder
	captures []capture
}

func read(data []byte, cfg config) (*graph.Model, error) {
	mp, err := decodeModel(data)
	if err != nil {
		return nil, err
	}
	if mp.graph == nil {
		return nil, fmt.Errorf("%w: model has no graph", ErrInvalidModel)
	}
	b := &builder{
		src:      tensorSource{baseDir: cfg.baseDir},
		opsets:   map[string]int64{},
		values:   map[string]graph.Output{},
		names:    &names.Set{},
		consumed: map[string]bool{},
	}
	for _, o := range mp.opsets {
		d := normDomain(o.domain)
		if o.version > b.opsets[d] {
			b.opsets[d] = o.version
		}
	}
	if _, ok := b.opsets[""]; !ok && len(mp.opsets) == 0 {
		// IR versions before 3 had no opset_import: they mean opset 1.
		b.opsets[""] = 1
	}
	return b.build(mp.graph)
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

// unique returns name, or name_1, name_2, ... when taken, and takes it.
func (b *builder) unique(name string) string { return b.names.Unique(name) }

func (b *builder) build(g *graphProto) (*graph.Model, error) {
	m, err := b.graph(g)
	if err != nil {
		return nil, err
	}
	m.Opsets = b.opsets
	if err := m.InferShapes(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	return m, nil
}

// graph converts one GraphProto in b's scope: the top-level graph or a
// subgraph (whose builder has a parent; see scope.go).
func (b *builder) graph(g *graphProto) (*graph.Model, error) {
	if g.sparseInits > 0 {
		return nil, fmt.Errorf("%w: graph %q has sparse initializers", ErrUnsupportedType, g.name)
	}
	// Ops are checked before value types, so a model that needs an op
	// outside the op set reports ErrUnsupportedOp even when its inputs also
	// have types clinfer lacks.
	for i, n := range g.nodes {
		domain := normDomain(n.domain)
		if _, ok := lookupOp(n.opType, domain, b.opsets[domain]); !ok {
			name := n.name
			if name == "" {
				name = n.opType + "_" + strconv.Itoa(i)
			}
			c := &nodeCtx{b: b, n: n, domain: domain, version: b.opsets[domain], name: name}
			return nil, c.unsupportedOp()
		}
	}
	inits := map[string]bool{}
	for _, t := range g.initializers {
		if t.name == "" {
			return nil, fmt.Errorf("%w: graph %q has an initializer without a name", ErrInvalidModel, g.name)
		}
		if inits[t.name] {
			return nil, fmt.Errorf("%w: initializer %q is defined twice", ErrInvalidModel, t.name)
		}
		inits[t.name] = true
	}
	// Parameters and Results keep their names; other nodes are made unique
	// around them.
	var params []*graph.Node
	for _, in := range g.inputs {
		if inits[in.name] {
			continue // IR < 4 lists initializers as inputs too
		}
		if in.name == "" {
			return nil, fmt.Errorf("%w: graph %q has an input without a name", ErrInvalidModel, g.name)
		}
		if _, dup := b.values[in.name]; dup {
			return nil, fmt.Errorf("%w: graph input %q is listed twice", ErrInvalidModel, in.name)
		}
		t, shape, err := inputType(in)
		if err != nil && (b.parent == nil || in.tensorType || in.nonTensor) {
			return nil, err
		}
		p := graph.NewParameter(in.name, t, shape)
		p.Outputs[0].Kind = in.kind
		b.names.Take(in.name)
		b.values[in.name] = p.Out(0)
		params = append(params, p)
	}
	// A Result keeps its output's name unless a Parameter has it (a graph
	// output that is directly a graph input); node names must be unique.
	resultNames := make([]string, len(g.outputs))
	for i, out := range g.outputs {
		resultNames[i] = b.unique(out.name)
	}
	for _, tp := range g.initializers {
		t, err := b.src.decodeTensorValue(tp)
		if err != nil {
			return nil, fmt.Errorf("initializer: %w", err)
		}
		c := graph.NewConstant(b.unique(tp.name), t)
		c.Outputs[0].Name = tp.name
		b.values[tp.name] = c.Out(0)
	}
	order, err := b.sortNodes(g)
	if err != nil {
		return nil, err
	}
	for _, out := range g.outputs {
		b.consumed[out.name] = true
	}
	for _, n := range g.nodes {
		for _, in := range n.inputs {
			b.consumed[in] = true
		}
		for _, in := range implicitInputs(n) {
			b.consumed[in] = true
		}
	}
	// Names given in the model win over generated "<OpType>_<index>" ones.
	names := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		if n.name != "" {
			names[i] = b.unique(n.name)
		}
	}
	for i, n := range g.nodes {
		if n.name == "" {
			names[i] = b.unique(n.opType + "_" + strconv.Itoa(i))
		}
	}
	for _, i := range order {
		if err := b.importNode(g.nodes[i], names[i]); err != nil {
			return nil, err
		}
	}
	var results []*graph.Node
	seen := map[string]bool{}
	for i, out := range g.outputs {
		if out.name == "" {
			return nil, fmt.Errorf("%w: graph %q has an output without a name", ErrInvalidModel, g.name)
		}
		if seen[out.name] {
			return nil, fmt.Errorf("%w: graph output %q is listed twice", ErrInvalidModel, out.name)
		}
		seen[out.name] = true
		from, ok := b.lookup(out.name)
		if !ok {
			return nil, fmt.Errorf("%w: graph output %q is not produced by any node, input or initializer", ErrInvalidModel, out.name)
		}
		r := graph.NewResult(resultNames[i], from)
		r.Outputs[0].Name = out.name
		results = append(results, r)
	}
	return graph.NewModel(g.name, params, results), nil
}

// inputType converts a graph input's ValueInfo into an element type and
// partial shape: dim_value is static, dim_param a named dynamic dimension,
// and a missing dimension or shape is dynamic.
func inputType(v *valueInfo) (tensor.ElementType, graph.PartialShape, error) {
	if v.nonTensor || !v.tensorType {
		return 0, graph.PartialShape{}, fmt.Errorf("%w: graph input %q is not a tensor, a sequence or optional of tensors or an optional sequence of tensors (a map, sparse tensor or deeper nesting)", ErrUnsupportedType, v.name)
	}
	t, err := ElementType(v.elemType)
	if err != nil {
		return 0, graph.PartialShape{}, fmt.Errorf("graph input %q: %w", v.name, err)
	}
	if !v.hasShape {
		return t, graph.DynamicRank, nil
	}
	ps := graph.PartialShape{RankKnown: true, Dims: make([]graph.Dim, len(v.dims))}
	for i, d := range v.dims {
		switch {
		case d.hasValue && d.value >= 0:
			ps.Dims[i] = graph.StaticDim(d.value)
		default:
			ps.Dims[i] = graph.DynamicDim(d.param)
		}
	}
	return t, ps, nil
}

// sortNodes returns the node indices in a topological order (ONNX requires
// the file order to be one, but some exporters get it wrong). It checks that
// every input is defined and every value produced once.
func (b *builder) sortNodes(g *graphProto) ([]int, error) {
	producer := map[string]int{}
	for i, n := range g.nodes {
		for _, out := range n.outputs {
			if out == "" {
				continue
			}
			if _, ok := b.values[out]; ok {
				return nil, fmt.Errorf("%w: node %q (%s) output %q redefines a graph input or initializer", ErrInvalidModel, n.name, n.opType, out)
			}
			if j, ok := producer[out]; ok {
				return nil, fmt.Errorf("%w: value %q is produced by node %d (%q) and node %d (%q)", ErrInvalidModel, out, j, g.nodes[j].name, i, n.name)
			}
			producer[out] = i
		}
	}
	deps := make([]int, len(g.nodes))
	consumers := make([][]int, len(g.nodes))
	for i, n := range g.nodes {
		seen := map[int]bool{}
		// What the node's subgraphs read from this scope orders it too.
		for _, in := range append(append([]string(nil), n.inputs...), implicitInputs(n)...) {
			if in == "" {
				continue
			}
			if j, ok := producer[in]; ok {
				if !seen[j] {
					seen[j] = true
					deps[i]++
					consumers[j] = append(consumers[j], i)
				}
				continue
			}
			if !b.defined(in) {
				return nil, fmt.Errorf("%w: node %q (%s) reads %q, which no node, input or initializer defines", ErrInvalidModel, n.name, n.opType, in)
			}
		}
	}
	order := make([]int, 0, len(g.nodes))
	for i := range g.nodes {
		if deps[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, c := range consumers[order[k]] {
			deps[c]--
			if deps[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) != len(g.nodes) {
		for i, d := range deps {
			if d > 0 {
				return nil, fmt.Errorf("%w: node %q (%s) is on a cycle", ErrInvalidModel, g.nodes[i].name, g.nodes[i].opType)
			}
		}
	}
	return order, nil
}

// importNode converts one ONNX node through the op table and records the
// values it defines.
func (b *builder) importNode(n *nodeProto, name string) error {
	domain := normDomain(n.domain)
	version := b.opsets[domain]
	c := &nodeCtx{b: b, n: n, domain: domain, version: version, name: name}
	e, ok := lookupOp(n.opType, domain, version)
	if !ok {
		return c.unsupportedOp()
	}
	c.in = make([]graph.Output, len(n.inputs))
	for i, in := range n.inputs {
		if in != "" {
			c.in[i], _ = b.lookup(in)
		}
	}
	attrs, err := c.convertAttrs()
	if err != nil {
		return err
	}
	c.attrs = attrs
	outs, err := e.Import(c)
	if err != nil {
		return err
	}
	for _, a := range n.attrs {
		if a.g != nil && !c.bodies[a.name] {
			return c.attrErrorf(a.name, "attributes of type GRAPH are not supported by %s", n.opType)
		}
	}
	if c.missing != "" {
		return fmt.Errorf("%w: node %q: %s (domain %q, opset %d) needs op %s, which the op set lacks", ErrUnsupportedOp, c.name, n.opType, domain, version, c.missing)
	}
	for i, vn := range n.outputs {
		if vn == "" {
			continue
		}
		if i >= len(outs) || !outs[i].Valid() {
			if b.consumed[vn] {
				return fmt.Errorf("%w: node %q (%s, opset %d): output %d (%q) is used, but only the inference outputs are supported", ErrUnsupportedOp, c.name, n.opType, version, i, vn)
			}
			continue
		}
		outs[i].Port().Name = vn
		b.values[vn] = outs[i]
	}
	return nil
}

// nodeCtx is what an importer sees of the node it converts.
type nodeCtx struct {
	b       *builder
	n       *nodeProto
	name    string
	domain  string
	version int64
	in      []graph.Output
	attrs   graph.Attrs
	missing string
	// bodies are the GRAPH attributes the importer converted (c.body).
	bodies map[string]bool
}

func (c *nodeCtx) unsupportedOp() error {
	d := c.domain
	if d == "" {
		d = "ai.onnx"
	}
	return fmt.Errorf("%w: node %q: op type %s (domain %s, opset %d) is not supported", ErrUnsupportedOp, c.name, c.n.opType, d, c.version)
}

// attrErrorf returns an error wrapping ErrUnsupportedAttribute that names
// the node, its op and the attribute.
func (c *nodeCtx) attrErrorf(attr, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if attr == "" {
		return fmt.Errorf("%w: node %q (%s, opset %d): %s", ErrUnsupportedAttribute, c.name, c.n.opType, c.version, msg)
	}
	return fmt.Errorf("%w: node %q (%s, opset %d): attribute %q: %s", ErrUnsupportedAttribute, c.name, c.n.opType, c.version, attr, msg)
}

// typeErrorf returns an error wrapping both ErrUnsupportedAttribute and
// err (an ErrUnsupportedType error from ElementType) for an attribute that
// names a data type clinfer lacks.
func (c *nodeCtx) typeErrorf(attr string, err error) error {
	return fmt.Errorf("%w: node %q (%s, opset %d): attribute %q: %w", ErrUnsupportedAttribute, c.name, c.n.opType, c.version, attr, err)
}

// invalidf returns an error wrapping ErrInvalidModel naming the node.
func (c *nodeCtx) invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: node %q (%s, opset %d): %s", ErrInvalidModel, c.name, c.n.opType, c.version, fmt.Sprintf(format, args...))
}

// input returns input i, or the zero Output when it is omitted.
func (c *nodeCtx) input(i int) graph.Output {
	if i < 0 || i >= len(c.in) {
		return graph.Output{}
	}
	return c.in[i]
}

// node creates a graph node. An empty suffix gives it the ONNX node's
// friendly name; helper nodes get "<name>/<suffix>".
func (c *nodeCtx) node(opType, suffix string, inputs []graph.Output, attrs graph.Attrs, numOutputs int) *graph.Node {
	if _, ok := graph.Lookup(opType); !ok && c.missing == "" {
		c.missing = opType
	}
	name := c.name
	if suffix != "" {
		name = c.b.unique(c.name + "/" + suffix)
	}
	n := graph.NewNode(opType, name, inputs, attrs, numOutputs)
	return n
}

// constant creates a Constant helper node.
func (c *nodeCtx) constant(suffix string, t *tensor.Tensor) graph.Output {
	n := graph.NewConstant(c.b.unique(c.name+"/"+suffix), t)
	return n.Out(0)
}

func (c *nodeCtx) constI64(suffix string, v []int64) graph.Output {
	t, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	return c.constant(suffix, t)
}

// constF32 creates an f32 constant: a scalar when scalar is set and v has
// one element, otherwise a 1-D tensor.
func (c *nodeCtx) constF32(suffix string, v []float32, scalar bool) graph.Output {
	shape := tensor.Shape{int64(len(v))}
	if scalar && len(v) == 1 {
		shape = tensor.Shape{}
	}
	t, _ := tensor.FromF32(shape, v)
	return c.constant(suffix, t)
}

// convertAttrs turns the ONNX attributes into graph attributes. Legacy
// "consumed_inputs" (a memory hint of opsets < 6) is dropped.
func (c *nodeCtx) convertAttrs() (graph.Attrs, error) {
	attrs := graph.Attrs{}
	for _, a := range c.n.attrs {
		if a.name == "consumed_inputs" {
			continue
		}
		if a.refName != "" {
			return nil, c.attrErrorf(a.name, "refers to function attribute %q; functions are not supported", a.refName)
		}
		if a.g != nil && (a.typ == attrGraph || a.typ == 0) {
			continue // a subgraph: the op's importer converts it (c.body)
		}
		if a.tp != nil && (a.typ == attrTypeProto || a.typ == 0) {
			continue // a type (Optional's): the op's importer converts it
		}
		v, err := c.convertAttr(a)
		if err != nil {
			return nil, err
		}
		attrs[a.name] = v
	}
	return attrs, nil
}

func (c *nodeCtx) convertAttr(a *attrProto) (any, error) {
	typ := a.typ
	if typ == 0 {
		// Old exporters omit the type; take it from the field present.
		switch {
		case a.hasF:
			typ = attrFloat
		case a.hasI:
			typ = attrInt
		case a.hasS:
			typ = attrString
		case a.hasT:
			typ = attrTensor
		case a.hasG:
			typ = attrGraph
		case len(a.floats) > 0:
			typ = attrFloats
		case len(a.ints) > 0:
			typ = attrInts
		case len(a.strings) > 0:
			typ = attrStrings
		default:
			return nil, c.attrErrorf(a.name, "has no type and no value")
		}
	}
	switch typ {
	case attrFloat:
		return a.f, nil
	case attrInt:
		return a.i, nil
	case attrString:
		return string(a.s), nil
	case attrFloats:
		return append([]float32{}, a.floats...), nil
	case attrInts:
		return append([]int64{}, a.ints...), nil
	case attrStrings:
		s := make([]string, len(a.strings))
		for i, v := range a.strings {
			s[i] = string(v)
		}
		return s, nil
	case attrTensor:
		if a.t == nil {
			return nil, c.attrErrorf(a.name, "tensor attribute has no tensor")
		}
		t, err := c.b.src.decodeTensorValue(a.t)
		if err != nil {
			return nil, fmt.Errorf("node %q (%s): attribute %q: %w", c.name, c.n.opType, a.name, err)
		}
		return t, nil
	}
	kinds := map[int64]string{attrGraph: "GRAPH", attrGraphs: "GRAPHS", attrTensors: "TENSORS", attrSparseTensor: "SPARSE_TENSOR",
		attrSparseTensrs: "SPARSE_TENSORS", attrTypeProto: "TYPE_PROTO", attrTypeProtos: "TYPE_PROTOS"}
	kind, ok := kinds[typ]
	if !ok {
		kind = "type " + strconv.FormatInt(typ, 10)
	}
	return nil, c.attrErrorf(a.name, "attributes of type %s are not supported", kind)
}
