package fusion

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Property keys the pass manager reads, besides driver.KeyDisableTransformations.
const (
	// KeyDisabledTransformations is a comma-separated list of pass names to
	// skip ("FuseConv,DivToMul"); unknown names are an error listing the
	// passes there are.
	KeyDisabledTransformations = "DISABLED_TRANSFORMATIONS"
	// KeyDumpGraphsDir is a directory the manager writes the graph to, as
	// text and Graphviz dot, before the first pass and after every pass;
	// "" turns dumping off.
	KeyDumpGraphsDir = "DUMP_GRAPHS_DIR"
)

// ErrUnknownPass is wrapped by errors about a pass name the manager does not
// have.
var ErrUnknownPass = errors.New("fusion: unknown pass")

// PropertySpecs are the manager's property specs (DISABLED_TRANSFORMATIONS,
// DUMP_GRAPHS_DIR), for a device to add to its own so users can set them;
// DISABLE_TRANSFORMATIONS is already among driver.CommonSpecs.
// DISABLED_TRANSFORMATIONS accepts the pass names of the standard pipeline
// and normalises the list to "A,B".
func PropertySpecs() []driver.PropertySpec {
	names := Default().Names()
	return []driver.PropertySpec{{
		Key: KeyDisabledTransformations, Mutable: true,
		Accepted: "a comma-separated list of passes: " + strings.Join(names, ", "),
		Parse: func(s string) (string, error) {
			list := splitList(s)
			for _, name := range list {
				if !slices.Contains(names, name) {
					return "", fmt.Errorf("%w %q", ErrUnknownPass, name)
				}
			}
			return strings.Join(list, ","), nil
		},
	}, driver.StringSpec(KeyDumpGraphsDir, "")}
}

// Evaluator computes one node's outputs from its input values on the host;
// in[i] is nil for an omitted optional input. Constant folding uses it
// (the reference one is ref.Evaluate, package cpu_fallback/ref).
type Evaluator func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Options configure a pass manager run.
type Options struct {
	// DisableAll skips every pass (DISABLE_TRANSFORMATIONS=YES).
	DisableAll bool
	// Disabled names passes to skip (DISABLED_TRANSFORMATIONS).
	Disabled []string
	// DumpDir, when set, receives NN_<pass>.txt and NN_<pass>.dot after
	// every pass and 00_input.* before the first (DUMP_GRAPHS_DIR).
	DumpDir string
	// KeepF16 is set when the execution precision is f16
	// (INFERENCE_PRECISION_HINT=f16): ConvertF16ToF32 then leaves the f16
	// nodes of a half-precision model as they are.
	KeepF16 bool
	// Eval folds constant subgraphs; nil folds only what the built-in
	// evaluator knows (Cast, Identity, reshapes and integer shape
	// arithmetic through graph.StaticValue).
	Eval Evaluator
	// Chains is set by a device that generates kernels for chains of
	// element-wise ops (the GPU, through package kernels/gen):
	// FuseElementwiseChains runs only then. A device that runs each op on
	// its own kernel (the CPU) leaves it nil: a chain's body would only
	// add work there.
	Chains *ChainOptions
	// DenseChain is set by a device that runs small chains of dense
	// layers in one work group (the GPU, from its local memory and
	// compute units): FuseDenseChain runs only then.
	DenseChain *DenseChainOptions
	// BodyFusions is set by a device that runs the fusions which keep
	// their subgraph to fall back on (the GPU, which decides per node when
	// it plans the shapes: a squeeze-excitation block whose image fits its
	// local memory, a ConvTranspose its blocked kernel takes):
	// FuseSEBlock and FuseDeconvActivation run only then.
	BodyFusions bool
}

// excluded returns the op types no fusion into a device kernel may take
// (ChainOptions.Exclude; nil without chain options).
func (o *Options) excluded() map[string]bool {
	if o.Chains == nil {
		return nil
	}
	return o.Chains.Exclude
}

// ChainOptions says how a device takes chains of element-wise ops
// (FuseElementwiseChains).
type ChainOptions struct {
	// Exclude holds op types no chain takes: those the device disables
	// (GPU_DISABLED_OPS), which stay nodes of their own so that QueryModel
	// answers for them alone and HETERO can place them elsewhere.
	Exclude map[string]bool
}

// ParseOptions reads DISABLE_TRANSFORMATIONS, DISABLED_TRANSFORMATIONS,
// DUMP_GRAPHS_DIR and INFERENCE_PRECISION_HINT (f16 sets KeepF16) from a
// property map; absent keys keep their zero value.
// A bad boolean is an error naming the key.
func ParseOptions(props map[string]string) (Options, error) {
	var o Options
	for k, v := range props {
		switch driver.CanonicalKey(k) {
		case driver.KeyDisableTransformations:
			b, err := driver.ParseBool(v)
			if err != nil {
				return Options{}, fmt.Errorf("fusion: property %s: %w", k, err)
			}
			o.DisableAll = b
		case KeyDisabledTransformations:
			o.Disabled = splitList(v)
		case KeyDumpGraphsDir:
			o.DumpDir = v
		case driver.KeyInferencePrecisionHint:
			t, err := tensor.ParseElementType(v)
			if err != nil {
				return Options{}, fmt.Errorf("fusion: property %s: %w", k, err)
			}
			o.KeepF16 = t == tensor.F16
		}
	}
	return o, nil
}

// OptionsFromProperties reads the same keys from a device configuration;
// keys it lacks keep their zero value.
func OptionsFromProperties(p *driver.Properties) (Options, error) {
	props := map[string]string{}
	for _, k := range []string{driver.KeyDisableTransformations, KeyDisabledTransformations, KeyDumpGraphsDir, driver.KeyInferencePrecisionHint} {
		if p.Has(k) {
			v, err := p.Get(k)
			if err != nil {
				return Options{}, err
			}
			props[k] = v
		}
	}
	return ParseOptions(props)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Pass is one transformation. Run rewrites m in place and returns how many
// rewrites it made; the manager re-runs shape inference afterwards.
type Pass struct {
	// Name identifies the pass in configuration, dumps and reports.
	Name string
	// Doc says in one line what the pass does.
	Doc string
	// Run applies the pass.
	Run func(ctx context.Context, m *graph.Model, opts *Options) (int, error)
	// Ops are the op types the pass's patterns match, sorted (PatternPass
	// fills it; nil for passes that are not pattern rewrites), for the op
	// support matrix (OPS.md).
	Ops []string
}

// Manager runs registered passes in order.
type Manager struct {
	passes []Pass
}

// NewManager returns a manager with the given passes registered in order.
// It panics on a duplicate or empty name (a programmer error at
// registration time).
func NewManager(passes ...Pass) *Manager {
	m := &Manager{}
	for _, p := range passes {
		if err := m.Register(p); err != nil {
			panic(err)
		}
	}
	return m
}

// Register appends p to the pipeline. A pass without a name or Run, or one
// whose name is taken, is an error.
func (m *Manager) Register(p Pass) error { return m.insert(len(m.passes), p) }

// RegisterBefore inserts p just before the pass named before.
func (m *Manager) RegisterBefore(before string, p Pass) error {
	i := m.index(before)
	if i < 0 {
		return m.unknown(before)
	}
	return m.insert(i, p)
}

// RegisterAfter inserts p just after the pass named after.
func (m *Manager) RegisterAfter(after string, p Pass) error {
	i := m.index(after)
	if i < 0 {
		return m.unknown(after)
	}
	return m.insert(i+1, p)
}

func (m *Manager) insert(i int, p Pass) error {
	if p.Name == "" || p.Run == nil {
		return fmt.Errorf("fusion: pass %q needs a name and a Run function", p.Name)
	}
	if m.index(p.Name) >= 0 {
		return fmt.Errorf("fusion: pass %q is registered twice", p.Name)
	}
	m.passes = append(m.passes, Pass{})
	copy(m.passes[i+1:], m.passes[i:])
	m.passes[i] = p
	return nil
}

func (m *Manager) index(name string) int {
	for i, p := range m.passes {
		if p.Name == name {
			return i
		}
	}
	return -1
}

func (m *Manager) unknown(name string) error {
	return fmt.Errorf("%w %q (passes: %s)", ErrUnknownPass, name, strings.Join(m.Names(), ", "))
}

// Names returns the registered pass names in pipeline order.
func (m *Manager) Names() []string {
	out := make([]string, len(m.passes))
	for i, p := range m.passes {
		out[i] = p.Name
	}
	return out
}

// Passes returns the registered passes in pipeline order.
func (m *Manager) Passes() []Pass { return append([]Pass(nil), m.passes...) }

// PassReport is what one pass did.
type PassReport struct {
	Name     string
	Skipped  bool
	Rewrites int
	// Nodes and Ops count the graph after the pass: all nodes, and nodes
	// other than Parameter, Constant and Result.
	Nodes, Ops int
	Duration   time.Duration
}

// Report is what a manager run did.
type Report struct {
	// NodesBefore/OpsBefore and NodesAfter/OpsAfter count the graph before
	// the first and after the last pass.
	NodesBefore, OpsBefore, NodesAfter, OpsAfter int
	Passes                                       []PassReport
}

// String summarises the report on one line per pass.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fusion: %d nodes (%d ops) -> %d nodes (%d ops)\n", r.NodesBefore, r.OpsBefore, r.NodesAfter, r.OpsAfter)
	for _, p := range r.Passes {
		if p.Skipped {
			fmt.Fprintf(&b, "  %-26s skipped\n", p.Name)
			continue
		}
		fmt.Fprintf(&b, "  %-26s %4d rewrites -> %d nodes (%d ops) in %v\n", p.Name, p.Rewrites, p.Nodes, p.Ops, p.Duration.Round(time.Microsecond))
	}
	return b.String()
}

// CountNodes returns the number of nodes of m and of op nodes (not
// Parameter, Constant or Result).
func CountNodes(m *graph.Model) (nodes, ops int, err error) {
	all, err := m.Nodes()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range all {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
		default:
			ops++
		}
	}
	return len(all), ops, nil
}

// Run applies the enabled passes to model in place, and inside every body
// its nodes own, re-running shape inference after each; with
// opts.DisableAll it does nothing. A name in
// opts.Disabled the manager does not have is an error wrapping
// ErrUnknownPass. Errors name the pass (and, through graph.NodeError, the
// node).
func (m *Manager) Run(ctx context.Context, model *graph.Model, opts Options) (*Report, error) {
	disabled := map[string]bool{}
	for _, name := range opts.Disabled {
		if m.index(name) < 0 {
			return nil, m.unknown(name)
		}
		disabled[name] = true
	}
	rep := &Report{}
	var err error
	if rep.NodesBefore, rep.OpsBefore, err = CountNodes(model); err != nil {
		return nil, fmt.Errorf("fusion: model %q: %w", model.Name, err)
	}
	rep.NodesAfter, rep.OpsAfter = rep.NodesBefore, rep.OpsBefore
	if opts.DisableAll {
		for _, p := range m.passes {
			rep.Passes = append(rep.Passes, PassReport{Name: p.Name, Skipped: true})
		}
		return rep, nil
	}
	if err := dump(opts.DumpDir, 0, "input", model); err != nil {
		return nil, err
	}
	for i, p := range m.passes {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fusion: before pass %s: %w", p.Name, err)
		}
		if disabled[p.Name] {
			rep.Passes = append(rep.Passes, PassReport{Name: p.Name, Skipped: true})
			continue
		}
		start := time.Now()
		n, err := runEverywhere(ctx, p, model, &opts)
		if err != nil {
			return nil, err
		}
		pr := PassReport{Name: p.Name, Rewrites: n, Duration: time.Since(start)}
		if pr.Nodes, pr.Ops, err = CountNodes(model); err != nil {
			return nil, fmt.Errorf("fusion: after pass %s: %w", p.Name, err)
		}
		rep.Passes = append(rep.Passes, pr)
		rep.NodesAfter, rep.OpsAfter = pr.Nodes, pr.Ops
		if err := dump(opts.DumpDir, i+1, p.Name, model); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// runEverywhere runs p on model and then inside every body its nodes own
// (If branches, Loop and Scan bodies; not the bodies of KernelFusion
// nodes, which are what a fusion matched), outer graphs before the bodies
// nested in them, re-running shape inference after each, and returns the
// rewrites made in all of them.
func runEverywhere(ctx context.Context, p Pass, model *graph.Model, opts *Options) (int, error) {
	total := 0
	err := model.Walk(func(m *graph.Model, owner *graph.Node) error {
		where := fmt.Sprintf("model %q", model.Name)
		if owner != nil && owner.OpType == graph.OpKernelFusion {
			return graph.SkipBody // already kernel-shaped: what a fusion matched
		}
		if owner != nil && owner.OpType == graph.OpIf && m.InferShapes() != nil {
			return graph.SkipBody // a branch invalid for these shapes (see graph's If): it can only fail if it runs
		}
		if owner != nil && owner.OpType == graph.OpIf {
			// The branch an If with a known condition does not take is
			// never bound (graph's inference skips it) and never runs.
			if c, ok := graph.ConstCond(owner.Input(0)); ok && owner.Attrs[map[bool]string{true: graph.AttrElseBranch, false: graph.AttrThenBranch}[c]] == m {
				return graph.SkipBody
			}
		}
		if owner != nil {
			where = fmt.Sprintf("body %q of node %q", m.Name, owner.Name)
		}
		n, err := p.Run(ctx, m, opts)
		total += n
		if err != nil {
			return fmt.Errorf("fusion: pass %s on %s: %w", p.Name, where, err)
		}
		if err := m.InferShapes(); err != nil {
			if owner != nil && owner.OpType == graph.OpIf {
				// Folding can show a branch invalid for these shapes (a
				// nested If now known to take a branch that cannot run
				// them): it can only fail if it runs, as before.
				return graph.SkipBody
			}
			return fmt.Errorf("fusion: after pass %s on %s: %w", p.Name, where, err)
		}
		return nil
	})
	return total, err
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// dump writes the model as text and dot into dir as NN_name.{txt,dot}.
func dump(dir string, i int, name string, m *graph.Model) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fusion: dump directory: %w", err)
	}
	base := filepath.Join(dir, fmt.Sprintf("%02d_%s", i, unsafeFileChars.ReplaceAllString(name, "_")))
	for _, f := range []struct {
		ext   string
		write func(*os.File) error
	}{
		{".txt", func(w *os.File) error { return m.WriteText(w) }},
		{".dot", func(w *os.File) error { return m.WriteDot(w) }},
	} {
		w, err := os.Create(base + f.ext)
		if err != nil {
			return fmt.Errorf("fusion: dump after %s: %w", name, err)
		}
		werr := f.write(w)
		cerr := w.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return fmt.Errorf("fusion: dump %s: %w", base+f.ext, err)
		}
	}
	return nil
}

// Default returns a manager with the standard pipeline (DefaultPasses).
func Default() *Manager { return NewManager(DefaultPasses()...) }

// Transform runs the standard pipeline on model in place under the options
// in props (DISABLE_TRANSFORMATIONS, DISABLED_TRANSFORMATIONS,
// DUMP_GRAPHS_DIR), folding constants with eval (may be nil).
func Transform(ctx context.Context, model *graph.Model, props map[string]string, eval Evaluator) (*Report, error) {
	opts, err := ParseOptions(props)
	if err != nil {
		return nil, err
	}
	opts.Eval = eval
	return Default().Run(ctx, model, opts)
}
