package fusion

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// KernelFusion declares one fusion onto a catalogue kernel: where Pattern
// matches, the matched subgraph becomes one graph.OpKernelFusion node that
// keeps the subgraph as its body and names the kernel. The declaration is
// all a kernel developer writes besides the .cl file: the pass manager
// runs it as the pass Name (DISABLED_TRANSFORMATIONS can name it), the
// kernels catalogue lists Kernel, the GPU device launches it through one
// generic lowering under the Launch convention, and the CPU device runs the
// body with its reference ops. See kernels/README.md for a walk-through.
//
// The fused node's inputs are the values captured under Inputs, in order:
// they are the kernel's first arguments. Every other value the matched ops
// read must be a Constant (it is copied into the body); a match that reads
// anything else is declined, as is one whose inputs or output are not f32.
// With INFERENCE_PRECISION_HINT=f16 the GPU runs the node on f16 tensors
// and builds the kernel with -DHALF, so the kernel declares its tensors
// with kernels/half.clh's FT and LD/ST macros.
type KernelFusion struct {
	// Name is the pass name ("FuseSEResidual").
	Name string
	// Doc says in one line what the pass fuses.
	Doc string
	// Kernel is the catalogue name of the kernel, which is also the
	// __kernel function File defines ("se_residual").
	Kernel string
	// File is the OpenCL C file in kernels/ ("kernelfusion_se_residual.cl").
	File string
	// Launch is the launch convention: graph.LaunchElementwise,
	// graph.LaunchRows or graph.LaunchGEMMRows.
	Launch string
	// Pattern is the subgraph to fuse; the output of its root becomes the
	// fused node's output.
	Pattern *Pattern
	// Inputs are the captures that become the fused node's inputs, in
	// kernel argument order. Each is an Any or Const capture.
	Inputs []Input
	// Params, when set, returns the float parameters the kernel reads
	// (attributes of the matched ops: an epsilon, a slope).
	Params func(m *Match) []float32
	// Example, when set, builds the model the generic tests run the
	// fusion on instead of the one Instance generates from Pattern and
	// Inputs (for patterns with Where conditions the generated instance
	// does not meet).
	Example func(r *rand.Rand) *graph.Model
}

// Input is one input of a kernel fusion: a capture name of the pattern and
// the shape the generic tests give it, as comma-separated dims: a name
// ("N", "C") is a size drawn per test instance (the same wherever the name
// recurs), a number a fixed size; "" is a scalar.
type Input struct {
	Name  string
	Shape string
}

// KernelFusionPasses returns one pass per declaration of KernelFusions, in
// order. An invalid declaration (which TestKernelFusionDeclarations
// reports first) becomes a pass that fails with its validation error, so
// compiling a model names the declaration instead of running without it.
func KernelFusionPasses() []Pass {
	var out []Pass
	for i, k := range KernelFusions() {
		if err := k.Validate(); err != nil {
			name := k.Name
			if name == "" {
				name = fmt.Sprintf("KernelFusion[%d]", i)
			}
			out = append(out, Pass{Name: name, Doc: "invalid kernel fusion declaration", Run: func(context.Context, *graph.Model, *Options) (int, error) {
				return 0, fmt.Errorf("fusion: kernel fusion declaration %s (fusion/kernelfusions.go): %w", name, err)
			}})
			continue
		}
		out = append(out, k.Pass())
	}
	return out
}

// LookupKernelFusion returns the declaration of KernelFusions whose kernel
// is kernel.
func LookupKernelFusion(kernel string) (KernelFusion, bool) {
	for _, k := range KernelFusions() {
		if k.Kernel == kernel {
			return k, true
		}
	}
	return KernelFusion{}, false
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the declaration: names, a known launch convention, a
// pattern, and inputs that are Any or Const captures of the pattern with
// parseable shapes; every Any of the pattern must be an input.
func (k KernelFusion) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("fusion: kernel fusion %q (kernel %q): %s", k.Name, k.Kernel, fmt.Sprintf(format, args...))
	}
	if k.Name == "" || k.Doc == "" {
		return bad("needs a pass Name and a one-line Doc")
	}
	if !identRe.MatchString(k.Kernel) {
		return bad("Kernel must name the __kernel function of File (a C identifier)")
	}
	if !strings.HasSuffix(k.File, ".cl") || strings.Contains(k.File, "/") {
		return bad("File %q must be a .cl file in kernels/", k.File)
	}
	if k.Launch != graph.LaunchElementwise && k.Launch != graph.LaunchRows && k.Launch != graph.LaunchGEMMRows {
		return bad("Launch %q is not one of %s", k.Launch, strings.Join(graph.LaunchKinds(), ", "))
	}
	if k.Pattern == nil || k.Pattern.kind != patOp {
		return bad("Pattern must be an Op pattern (its root becomes the fused node)")
	}
	if len(k.Inputs) == 0 {
		return bad("has no Inputs")
	}
	caps := map[string]*Pattern{}
	var anys []string
	k.Pattern.walk(func(p *Pattern) {
		if p.capture != "" && p.kind != patSame {
			caps[p.capture] = p
		}
		if p.kind == patAny {
			anys = append(anys, p.capture)
		}
	})
	in := map[string]bool{}
	for i, x := range k.Inputs {
		p, ok := caps[x.Name]
		if !ok {
			return bad("input %d %q is not a capture of the pattern", i, x.Name)
		}
		if p.kind != patAny && p.kind != patConst {
			return bad("input %d %q captures an Op; inputs are Any or Const captures (values from outside the fused subgraph)", i, x.Name)
		}
		if in[x.Name] {
			return bad("input %q is listed twice", x.Name)
		}
		in[x.Name] = true
		if _, err := parseDims(x.Shape); err != nil {
			return bad("input %q: %v", x.Name, err)
		}
	}
	for _, a := range anys {
		if !in[a] {
			return bad("the pattern has Any() %q that is not an input: every value from outside the subgraph must be an input", a)
		}
	}
	return nil
}

// walk calls f on p and every pattern below it.
func (p *Pattern) walk(f func(*Pattern)) {
	if p == nil {
		return
	}
	f(p)
	for _, c := range p.inputs {
		c.walk(f)
	}
	for _, c := range p.alts {
		c.walk(f)
	}
}

// Pass returns the declaration as a pattern pass named k.Name.
func (k KernelFusion) Pass() Pass {
	r := Rule{Name: k.Name, Pattern: k.Pattern, Rewrite: k.rewrite}
	return PatternPass(k.Name, k.Doc, r)
}

// rewrite replaces a match with a KernelFusion node whose body is a copy of
// the matched subgraph.
func (k KernelFusion) rewrite(m *Match) (graph.Output, error) {
	root := m.Root
	if root.Outputs[0].Type != tensor.F32 {
		return graph.Output{}, nil
	}
	inputs := make([]graph.Output, len(k.Inputs))
	params := make([]*graph.Node, len(k.Inputs))
	index := map[graph.Output]int{}
	for i, x := range k.Inputs {
		v := m.Value(x.Name)
		if !v.Valid() || v.Type() != tensor.F32 {
			return graph.Output{}, nil
		}
		inputs[i] = v
		params[i] = graph.NewParameter(x.Name, v.Type(), v.Shape())
		if _, dup := index[v]; !dup {
			index[v] = i
		}
	}
	inMatch := map[*graph.Node]bool{}
	for _, n := range m.Nodes() {
		inMatch[n] = true
	}
	copies := map[*graph.Node]*graph.Node{}
	var copyNode func(n *graph.Node) (*graph.Node, bool)
	copyNode = func(n *graph.Node) (*graph.Node, bool) {
		if c, ok := copies[n]; ok {
			return c, true
		}
		c := &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: n.Attrs.Clone(),
			Outputs: make([]graph.Port, len(n.Outputs))}
		for i, p := range n.Outputs {
			c.Outputs[i] = p.Clone()
		}
		if n.OpType == graph.OpConstant {
			c.Value = n.Value.Clone()
			copies[n] = c
			return c, true
		}
		c.Inputs = make([]graph.Output, len(n.Inputs))
		for i, x := range n.Inputs {
			switch j, isInput := index[x]; {
			case !x.Valid():
			case isInput:
				c.Inputs[i] = params[j].Out(0)
			case inMatch[x.Node] || x.Node.OpType == graph.OpConstant:
				p, ok := copyNode(x.Node)
				if !ok {
					return nil, false
				}
				c.Inputs[i] = graph.Output{Node: p, Index: x.Index}
			default:
				return nil, false // a value from outside that is not a declared input
			}
		}
		copies[n] = c
		return c, true
	}
	body, ok := copyNode(root)
	if !ok {
		return graph.Output{}, nil
	}
	attrs := graph.Attrs{
		graph.AttrKernel: k.Kernel,
		graph.AttrLaunch: k.Launch,
		graph.AttrBody:   graph.NewModel(k.Kernel, params, []*graph.Node{graph.NewResult("y", body.Out(0))}),
	}
	if k.Params != nil {
		if p := k.Params(m); len(p) > 0 {
			attrs[graph.AttrParams] = p
		}
	}
	return m.NewNode(graph.OpKernelFusion, inputs, attrs, 1).Out(0), nil
}

// parseDims parses an Input shape: comma-separated names or sizes.
func parseDims(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dims := strings.Split(s, ",")
	for i, d := range dims {
		d = strings.TrimSpace(d)
		dims[i] = d
		if n, err := strconv.ParseInt(d, 10, 64); err == nil {
			if n < 1 {
				return nil, fmt.Errorf("shape %q: size %d must be at least 1", s, n)
			}
			continue
		}
		if !identRe.MatchString(d) {
			return nil, fmt.Errorf("shape %q: %q is neither a size nor a name", s, d)
		}
	}
	return dims, nil
}

// Instance returns a model with one occurrence of the fusion's pattern on
// f32 inputs, for the generic tests: Inputs become Parameters (Any) or
// Constants (Const) of their declared shapes, named dims drawn from r in
// [2, 5]; the pattern's ops take their first op type and the attributes
// Attr asks for; ConstScalar gives its value, other constants a random
// scalar. Example replaces all this when set. The error says why the
// instance cannot be built or does not match the pattern.
func (k KernelFusion) Instance(r *rand.Rand) (*graph.Model, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	var m *graph.Model
	if k.Example != nil {
		m = k.Example(r)
	} else {
		var err error
		if m, err = k.generate(r); err != nil {
			return nil, fmt.Errorf("fusion: kernel fusion %s: generic instance: %w (set Example to give one)", k.Name, err)
		}
	}
	if err := m.InferShapes(); err != nil {
		return nil, fmt.Errorf("fusion: kernel fusion %s: instance does not infer: %w", k.Name, err)
	}
	cons, err := m.Consumers()
	if err != nil {
		return nil, err
	}
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.OpType != graph.OpParameter && n.OpType != graph.OpConstant && n.OpType != graph.OpResult && MatchAt(k.Pattern, n, cons) != nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("fusion: kernel fusion %s: its pattern does not match the instance (a Where or ConstWhere condition the generated graph does not meet?): set Example", k.Name)
}

// generate builds the instance from the pattern.
func (k KernelFusion) generate(r *rand.Rand) (*graph.Model, error) {
	sizes := map[string]int64{}
	shapeOf := map[string]tensor.Shape{}
	for _, x := range k.Inputs {
		dims, _ := parseDims(x.Shape)
		s := make(tensor.Shape, len(dims))
		for i, d := range dims {
			if n, err := strconv.ParseInt(d, 10, 64); err == nil {
				s[i] = n
				continue
			}
			if _, ok := sizes[d]; !ok {
				sizes[d] = 2 + r.Int64N(4)
			}
			s[i] = sizes[d]
		}
		shapeOf[x.Name] = s
	}
	g := &instance{r: r, shapes: shapeOf, values: map[string]graph.Output{}}
	for _, x := range k.Inputs {
		// Parameters in declaration order, so input names and order match.
		if p := k.find(x.Name); p.kind == patAny {
			prm := graph.NewParameter(x.Name, tensor.F32, graph.StaticShape(shapeOf[x.Name]))
			g.params = append(g.params, prm)
			g.values[x.Name] = prm.Out(0)
		}
	}
	y, err := g.build(k.Pattern)
	if err != nil {
		return nil, err
	}
	return graph.NewModel(k.Name, g.params, []*graph.Node{graph.NewResult("y", y)}), nil
}

// find returns the pattern that captures name (nil if none).
func (k KernelFusion) find(name string) *Pattern {
	var out *Pattern
	k.Pattern.walk(func(p *Pattern) {
		if out == nil && p.capture == name && p.kind != patSame {
			out = p
		}
	})
	return out
}

// instance is the state of KernelFusion.generate.
type instance struct {
	r      *rand.Rand
	shapes map[string]tensor.Shape
	values map[string]graph.Output
	params []*graph.Node
	count  int
}

func (g *instance) name(op string) string {
	g.count++
	return fmt.Sprintf("%s_%d", strings.ToLower(op), g.count)
}

// constant returns a Constant of shape s with normal random values, or v
// everywhere when v is set.
func (g *instance) constant(s tensor.Shape, v *float64) graph.Output {
	vals := make([]float32, s.NumElements())
	for i := range vals {
		if v != nil {
			vals[i] = float32(*v)
		} else {
			vals[i] = float32(g.r.NormFloat64())
		}
	}
	t, _ := tensor.FromF32(s, vals)
	return graph.NewConstant(g.name("const"), t).Out(0)
}

func (g *instance) build(p *Pattern) (graph.Output, error) {
	if p == nil {
		return graph.Output{}, fmt.Errorf("an Op input without a pattern (nil) has no value to generate")
	}
	if p.kind == patSame {
		v, ok := g.values[p.capture]
		if !ok {
			return graph.Output{}, fmt.Errorf("Same(%q) comes before the capture it refers to", p.capture)
		}
		return v, nil
	}
	if v, ok := g.values[p.capture]; ok && p.capture != "" {
		return v, nil
	}
	var out graph.Output
	switch p.kind {
	case patAny:
		return graph.Output{}, fmt.Errorf("Any() %q is not an input", p.capture)
	case patOneOf:
		if len(p.alts) == 0 {
			return graph.Output{}, fmt.Errorf("OneOf() has no alternatives")
		}
		v, err := g.build(p.alts[0])
		if err != nil {
			return graph.Output{}, err
		}
		out = v
	case patConst:
		s, isInput := g.shapes[p.capture]
		if !isInput {
			s = tensor.Shape{}
		}
		out = g.constant(s, p.sample)
		if p.constPred != nil && !p.constPred(out.Node.Value) {
			return graph.Output{}, fmt.Errorf("the generated constant %v for %q does not meet its ConstWhere condition", out.Node.Value, p.capture)
		}
	case patOp:
		ins := make([]graph.Output, len(p.inputs))
		for i, ip := range p.inputs {
			v, err := g.build(ip)
			if err != nil {
				return graph.Output{}, fmt.Errorf("%s input %d: %w", p.ops[0], i, err)
			}
			ins[i] = v
		}
		attrs := graph.Attrs{}
		for name, v := range p.want {
			if i, ok := v.(int); ok {
				v = int64(i)
			}
			attrs[name] = v
		}
		out = graph.NewNode(p.ops[0], g.name(p.ops[0]), ins, attrs, 1).Out(0)
	}
	if p.capture != "" {
		g.values[p.capture] = out
	}
	return out, nil
}

// ApplyKernelFusion runs the pass of one declaration on m (tests and tools
// use it to fuse an instance without the rest of the pipeline).
func ApplyKernelFusion(ctx context.Context, m *graph.Model, k KernelFusion) (int, error) {
	if err := k.Validate(); err != nil {
		return 0, err
	}
	n, err := k.Pass().Run(ctx, m, &Options{})
	if err != nil {
		return n, err
	}
	return n, m.InferShapes()
}
