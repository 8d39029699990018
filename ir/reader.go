package ir

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/names"
)

// maxBodyDepth bounds how deeply bodies (Loop, If, TensorIterator, the
// clinfer opset's bodies) may nest, so a crafted file cannot exhaust the
// stack.
const maxBodyDepth = 16

// Option configures Read and ReadFile.
type Option func(*config)

type config struct {
	weights     []byte
	weightsSet  bool
	weightsPath string
}

// WithWeights gives the weights (the .bin file's bytes) instead of the file
// beside the model.
func WithWeights(bin []byte) Option {
	return func(c *config) { c.weights, c.weightsSet = bin, true }
}

// WithWeightsFile reads the weights from path instead of the .bin file
// beside the model.
func WithWeightsFile(path string) Option {
	return func(c *config) { c.weightsPath = path }
}

// ReadFile reads an IR model: the .xml file at path and its weights, by
// default the file of the same name with the extension .bin beside it (a
// model without constants needs none). See Read for what it returns.
func ReadFile(path string, opts ...Option) (*graph.Model, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ir: %w", err)
	}
	if !cfg.weightsSet {
		bin := cfg.weightsPath
		explicit := bin != ""
		if !explicit {
			bin = strings.TrimSuffix(path, filepath.Ext(path)) + ".bin"
		}
		w, err := os.ReadFile(bin)
		switch {
		case err == nil:
			cfg.weights, cfg.weightsSet = w, true
		case explicit || !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("ir: weights: %w", err)
		default:
			cfg.weightsPath = bin // missing: an error only if a constant needs it
		}
	}
	m, err := read(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (model %s)", err, path)
	}
	return m, nil
}

// Read reads an IR model from the .xml document data; the weights come
// from WithWeights (or WithWeightsFile). The model's Parameters and
// Results are the IR's, in the order of their layers; nodes are in the op
// set's form (graph/optable.go), with their output ports named by the
// ports' first tensor name. Errors name the layer (id, name, type, opset)
// and wrap ErrInvalidModel, ErrUnsupportedOp, ErrUnsupportedAttribute,
// ErrUnsupportedType or ErrWeights. It never panics on malformed input.
func Read(data []byte, opts ...Option) (*graph.Model, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.weightsSet && cfg.weightsPath != "" {
		w, err := os.ReadFile(cfg.weightsPath)
		if err != nil {
			return nil, fmt.Errorf("ir: weights: %w", err)
		}
		cfg.weights, cfg.weightsSet = w, true
	}
	return read(data, cfg)
}

// IsIR reports whether data looks like an IR document (an XML document
// whose root element is <net>), for callers that sniff a model's format.
func IsIR(data []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(data))
	for i := 0; i < 16; i++ {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "net"
		}
	}
	return false
}

func read(data []byte, cfg config) (*graph.Model, error) {
	var net xmlNet
	d := xml.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&net); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty document")
		}
		return nil, fmt.Errorf("%w: not an IR document: %v", ErrInvalidModel, err)
	}
	switch net.Version {
	case "10", "11":
	case "":
		return nil, fmt.Errorf("%w: <net> has no version (IR 10 and 11 are read)", ErrInvalidModel)
	default:
		return nil, fmt.Errorf("%w: IR version %s is not read (IR 10 and 11 are; convert the model with OpenVINO 2022.1 or newer)", ErrUnsupportedOp, net.Version)
	}
	b := &builder{cfg: cfg, version: net.Version}
	b.clinfer, b.opsets = netInfo(net.RTInfo)
	m, err := b.graph(&net.xmlGraph, net.Name, 0)
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

// builder reads one IR document.
type builder struct {
	cfg     config
	version string
	// clinfer is set for documents clinfer's writer made (see netInfo):
	// they mark the Adds that are a convolution's bias.
	clinfer bool
	opsets  map[string]int64
}

// portKey names one port of one layer.
type portKey struct{ layer, port string }

// graphCtx reads one graph: the net's or a body's. Node names are unique
// within it.
type graphCtx struct {
	b     *builder
	depth int
	// layers in document order, by id.
	layers []*xmlLayer
	byID   map[string]*xmlLayer
	// inIdx and outIdx map a layer's port ids to input and output indices.
	inIdx, outIdx map[string]map[string]int
	// from maps each connected input port to the output port feeding it.
	from map[portKey]portKey
	// consumers counts the edges leaving each output port.
	consumers map[portKey]int
	// outs are each imported layer's outputs, by output index.
	outs      map[string][]graph.Output
	nodeNames map[string]string // layer id -> the node name it takes
	names     names.Set
	// params and results by layer id.
	params  map[string]*graph.Node
	results map[string]*graph.Node
	// convs are the Conv and ConvTranspose nodes made of IR's
	// convolutions (without bias), biasMarked the Adds clinfer's writer
	// marked as a convolution's bias; biasConsts are the bias constants
	// made of the Adds' constants, so a shared bias stays one node.
	convs      map[*graph.Node]bool
	biasMarked map[*graph.Node]bool
	biasConsts map[*graph.Node]graph.Output
	// ungrouped are the weights of grouped convolutions, reshaped once.
	ungrouped map[graph.Output]graph.Output
}

// graph reads one graph into a model whose Parameters and Results are
// its Parameter and Result layers in document order.
func (b *builder) graph(g *xmlGraph, name string, depth int) (*graph.Model, error) {
	m, _, err := b.body(g, name, depth)
	return m, err
}

// body is graph, also returning the graph's context, whose params and
// results map layer ids to the Parameters and Results (for port maps).
func (b *builder) body(g *xmlGraph, name string, depth int) (*graph.Model, *graphCtx, error) {
	m, gc, err := b.read(g, name, depth)
	return m, gc, err
}

func (b *builder) read(g *xmlGraph, name string, depth int) (*graph.Model, *graphCtx, error) {
	if depth > maxBodyDepth {
		return nil, nil, fmt.Errorf("%w: bodies nest deeper than %d levels", ErrInvalidModel, maxBodyDepth)
	}
	gc := &graphCtx{
		b: b, depth: depth, byID: map[string]*xmlLayer{},
		inIdx: map[string]map[string]int{}, outIdx: map[string]map[string]int{},
		from: map[portKey]portKey{}, consumers: map[portKey]int{},
		outs: map[string][]graph.Output{}, nodeNames: map[string]string{},
		params: map[string]*graph.Node{}, results: map[string]*graph.Node{},
		convs: map[*graph.Node]bool{}, biasMarked: map[*graph.Node]bool{},
		biasConsts: map[*graph.Node]graph.Output{}, ungrouped: map[graph.Output]graph.Output{},
	}
	if err := gc.index(g); err != nil {
		return nil, nil, err
	}
	order, err := gc.order()
	if err != nil {
		return nil, nil, err
	}
	gc.nameLayers()
	for _, l := range order {
		if err := gc.importLayer(l); err != nil {
			return nil, nil, err
		}
	}
	var params, results []*graph.Node
	for _, l := range gc.layers {
		if p, ok := gc.params[l.ID]; ok {
			params = append(params, p)
		}
		if r, ok := gc.results[l.ID]; ok {
			results = append(results, r)
		}
	}
	if depth == 0 && len(results) == 0 {
		return nil, nil, fmt.Errorf("%w: the model has no Result layer", ErrInvalidModel)
	}
	m := graph.NewModel(name, params, results)
	if err := gc.foldConvBiases(m); err != nil {
		return nil, nil, err
	}
	return m, gc, nil
}

// index checks the layers' ids and ports and the edges between them.
func (gc *graphCtx) index(g *xmlGraph) error {
	for i := range g.Layers {
		l := &g.Layers[i]
		if l.ID == "" {
			return fmt.Errorf("%w: layer %d (%q, %s) has no id", ErrInvalidModel, i, l.Name, l.Type)
		}
		if _, dup := gc.byID[l.ID]; dup {
			return layerErr(l, ErrInvalidModel, "the id is used by two layers")
		}
		if l.Type == "" {
			return layerErr(l, ErrInvalidModel, "the layer has no type")
		}
		gc.byID[l.ID] = l
		gc.layers = append(gc.layers, l)
		in, out := map[string]int{}, map[string]int{}
		for j, p := range l.Inputs {
			if _, dup := in[p.ID]; dup {
				return layerErr(l, ErrInvalidModel, "input port id %q is used twice", p.ID)
			}
			in[p.ID] = j
		}
		for j, p := range l.Outputs {
			if _, dup := out[p.ID]; dup {
				return layerErr(l, ErrInvalidModel, "output port id %q is used twice", p.ID)
			}
			if _, dup := in[p.ID]; dup {
				return layerErr(l, ErrInvalidModel, "port id %q is both an input and an output", p.ID)
			}
			out[p.ID] = j
		}
		gc.inIdx[l.ID], gc.outIdx[l.ID] = in, out
	}
	for _, e := range g.Edges {
		fl, ok := gc.byID[e.FromLayer]
		if !ok {
			return fmt.Errorf("%w: edge %s:%s -> %s:%s: no layer has id %q", ErrInvalidModel, e.FromLayer, e.FromPort, e.ToLayer, e.ToPort, e.FromLayer)
		}
		tl, ok := gc.byID[e.ToLayer]
		if !ok {
			return fmt.Errorf("%w: edge %s:%s -> %s:%s: no layer has id %q", ErrInvalidModel, e.FromLayer, e.FromPort, e.ToLayer, e.ToPort, e.ToLayer)
		}
		if _, ok := gc.outIdx[fl.ID][e.FromPort]; !ok {
			return layerErr(fl, ErrInvalidModel, "edge to layer %s: the layer has no output port %q", e.ToLayer, e.FromPort)
		}
		if _, ok := gc.inIdx[tl.ID][e.ToPort]; !ok {
			return layerErr(tl, ErrInvalidModel, "edge from layer %s: the layer has no input port %q", e.FromLayer, e.ToPort)
		}
		to := portKey{e.ToLayer, e.ToPort}
		if _, dup := gc.from[to]; dup {
			return layerErr(tl, ErrInvalidModel, "input port %q has two producers", e.ToPort)
		}
		gc.from[to] = portKey{e.FromLayer, e.FromPort}
		gc.consumers[portKey{e.FromLayer, e.FromPort}]++
	}
	return nil
}

// order returns the layers in a topological order, stable with respect to
// the document order; a cycle is an error naming a layer on it.
func (gc *graphCtx) order() ([]*xmlLayer, error) {
	deps := map[string][]string{}
	indeg := map[string]int{}
	for to, from := range gc.from {
		deps[from.layer] = append(deps[from.layer], to.layer)
		indeg[to.layer]++
	}
	var ready, out []*xmlLayer
	for _, l := range gc.layers {
		if indeg[l.ID] == 0 {
			ready = append(ready, l)
		}
	}
	pos := map[string]int{}
	for i, l := range gc.layers {
		pos[l.ID] = i
	}
	for len(ready) > 0 {
		// Take the earliest ready layer in document order.
		best := 0
		for i, l := range ready {
			if pos[l.ID] < pos[ready[best].ID] {
				best = i
			}
		}
		l := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		out = append(out, l)
		for _, to := range deps[l.ID] {
			indeg[to]--
			if indeg[to] == 0 {
				ready = append(ready, gc.byID[to])
			}
		}
	}
	if len(out) != len(gc.layers) {
		for _, l := range gc.layers {
			if indeg[l.ID] > 0 {
				return nil, layerErr(l, ErrInvalidModel, "the layer is on a cycle of edges")
			}
		}
	}
	return out, nil
}

// nameLayers gives every layer its node name: Parameters and Results first
// (they are the model's ports, named by their tensors), then the others in
// document order, made unique around them.
func (gc *graphCtx) nameLayers() {
	for _, l := range gc.layers {
		switch {
		case isType(l, "Parameter"):
			name := l.Name
			if len(l.Outputs) > 0 {
				if names := splitNames(l.Outputs[0].Names); len(names) > 0 {
					name = names[0]
				}
			}
			gc.nodeNames[l.ID] = gc.unique(name)
		case isType(l, "Result"):
			gc.nodeNames[l.ID] = gc.unique(gc.resultName(l))
		}
	}
	for _, l := range gc.layers {
		if _, ok := gc.nodeNames[l.ID]; !ok {
			name := l.Name
			if name == "" {
				name = l.Type + "_" + l.ID
			}
			gc.nodeNames[l.ID] = gc.unique(name)
		}
	}
}

// resultName is the name of a Result: its layer's name without
// OpenVINO's "/sink_port_N" when that is a name of the tensor it reads,
// else that tensor's first name, else the layer's name.
func (gc *graphCtx) resultName(l *xmlLayer) string {
	base := l.Name
	if i := strings.LastIndex(base, "/sink_port_"); i >= 0 {
		if _, err := strconv.Atoi(base[i+len("/sink_port_"):]); err == nil {
			base = base[:i]
		}
	}
	var names []string
	if len(l.Inputs) > 0 {
		if src, ok := gc.from[portKey{l.ID, l.Inputs[0].ID}]; ok {
			if fl := gc.byID[src.layer]; fl != nil {
				names = splitNames(fl.Outputs[gc.outIdx[fl.ID][src.port]].Names)
			}
		}
	}
	for _, n := range names {
		if n == base {
			return base
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	if base == "" {
		return "Result_" + l.ID
	}
	return base
}

// unique returns name, or name_1, name_2, ... when taken, and takes it.
func (gc *graphCtx) unique(name string) string { return gc.names.Unique(name) }

// isType reports whether l is of op type t (IR spells a few types two
// ways: ReLU/Relu, SoftMax/Softmax, Const/Constant).
func isType(l *xmlLayer, t string) bool { return canonicalType(l.Type) == t }

// canonicalType maps a layer type to the spelling the op table uses.
func canonicalType(t string) string {
	switch t {
	case "ReLU":
		return "Relu"
	case "SoftMax":
		return "Softmax"
	case "Constant":
		return "Const"
	}
	return t
}

// layerErr returns a *LayerError wrapping sentinel.
func layerErr(l *xmlLayer, sentinel error, format string, args ...any) error {
	return &LayerError{ID: l.ID, Name: l.Name, Type: l.Type, Version: l.Version,
		Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
}

// importLayer converts one layer, its inputs already converted.
func (gc *graphCtx) importLayer(l *xmlLayer) error {
	c := &layerCtx{gc: gc, l: l, name: gc.nodeNames[l.ID]}
	c.in = make([]graph.Output, len(l.Inputs))
	for i, p := range l.Inputs {
		src, ok := gc.from[portKey{l.ID, p.ID}]
		if !ok {
			return c.errorf(ErrInvalidModel, "input port %q (input %d) is not connected", p.ID, i)
		}
		outs := gc.outs[src.layer]
		j := gc.outIdx[src.layer][src.port]
		if j >= len(outs) || !outs[j].Valid() {
			fl := gc.byID[src.layer]
			return layerErr(fl, ErrUnsupportedOp, "output port %s (output %d) is read by layer %s, but the reader provides only the op's other outputs", src.port, j, l.ID)
		}
		c.in[i] = outs[j]
	}
	outs, err := c.convert()
	if err != nil {
		return err
	}
	if len(outs) > len(l.Outputs) && !isType(l, "Result") {
		outs = outs[:len(l.Outputs)]
	}
	gc.outs[l.ID] = outs
	if err := c.finish(outs); err != nil {
		return err
	}
	return nil
}
