package quantize

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/names"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/tensor"
)

// Method is how calibration turns the values it sees into a range.
type Method int

const (
	// MinMax takes the smallest and largest value seen.
	MinMax Method = iota
	// Percentile clips the range to Options.Percentile of the values seen
	// (its lower end to 100 - Percentile), which ignores rare outliers.
	Percentile
)

// String names the method as the command line does.
func (m Method) String() string {
	if m == Percentile {
		return "percentile"
	}
	return "minmax"
}

// ParseMethod reads "minmax" or "percentile".
func ParseMethod(s string) (Method, error) {
	switch s {
	case "minmax":
		return MinMax, nil
	case "percentile":
		return Percentile, nil
	}
	return 0, sentinel.Errorf(sentinel.ErrInvalidArgument, "quantize: unknown calibration method %q (minmax, percentile)", s)
}

// Options configure Model. The zero value quantizes Conv, MatMul and Gemm
// with uint8 activations from min/max calibration on the CPU.
type Options struct {
	// Activations is the type of the quantized data: tensor.U8 (the
	// default) or tensor.I8.
	Activations tensor.ElementType
	// Method is the calibration method (MinMax by default).
	Method Method
	// Percentile is Percentile's cut, in percent (99.999 when 0).
	Percentile float64
	// OpTypes are the op types quantized (Conv, MatMul and Gemm when
	// empty).
	OpTypes []string
	// Exclude names nodes (their names in the model given) that stay
	// float.
	Exclude []string
	// PerTensorWeights quantizes weights with one scale per tensor
	// instead of one per output channel.
	PerTensorWeights bool
	// Device runs calibration ("CPU" when empty; any device registered
	// with the driver, such as "GPU" once clbackend is linked).
	Device string
	// Config holds properties for compiling the calibration model.
	Config map[string]string
}

// DefaultOpTypes are the op types quantized when Options.OpTypes is empty.
var DefaultOpTypes = []string{"Conv", "MatMul", "Gemm"}

// DefaultPercentile is Percentile's cut when Options.Percentile is 0.
const DefaultPercentile = 99.999

// Range is the calibrated range of one value and its quantization.
type Range struct {
	Min, Max  float64
	Scale     float32
	ZeroPoint int64
}

// Report says what Model did.
type Report struct {
	// Quantized lists the quantized nodes by name (the source model's
	// names, "conv+bn" for a Conv with a BatchNormalization folded into
	// it), in model order.
	Quantized []string
	// Float maps the nodes of the quantized op types that stay float to
	// why (excluded, weights not constant, ...).
	Float map[string]string
	// Ranges are the calibrated values' ranges by tensor name.
	Ranges map[string]Range
	// Samples is the number of calibration samples run.
	Samples int
	// Preprocessed counts the rewrites of the preprocessing passes.
	Preprocessed int
}

// ErrNoSamples is returned by Model without calibration samples.
var ErrNoSamples = sentinel.Errorf(sentinel.ErrInvalidArgument, "quantize: no calibration samples")

// preprocessPasses keep the model an ONNX model and make it what the
// devices will run: folded constants, batch norms and affine ops.
func preprocessPasses() []fusion.Pass {
	return []fusion.Pass{
		fusion.ConvertF16ToF32(), fusion.ConvertF16Weights(), fusion.RemoveIdentity(), fusion.ConstantFolding(),
		fusion.RecognizeHardActivations(), fusion.FoldBatchNorm(), fusion.FoldConvScaleShift(), fusion.DeadCodeRemoval(),
	}
}

// Model returns a QDQ model of m (m is left as it is), calibrated by
// running samples (each a full set of m's inputs by name) through it.
func Model(ctx context.Context, m *graph.Model, samples []map[string]*tensor.Tensor, opts Options) (*graph.Model, *Report, error) {
	if len(samples) == 0 {
		return nil, nil, ErrNoSamples
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	for _, name := range opts.Exclude {
		if m.Node(name) == nil {
			return nil, nil, sentinel.Errorf(sentinel.ErrNotFound, "quantize: excluded node %q is not in the model (-exclude takes the model's node names)", name)
		}
	}
	q := m.Clone()
	if err := q.InferShapes(); err != nil {
		return nil, nil, fmt.Errorf("quantize: %w", err)
	}
	rep, err := fusion.NewManager(preprocessPasses()...).Run(ctx, q, fusion.Options{Eval: ref.Evaluate})
	if err != nil {
		return nil, nil, fmt.Errorf("quantize: preprocessing: %w", err)
	}
	report := &Report{Float: map[string]string{}, Ranges: map[string]Range{}, Samples: len(samples)}
	for _, p := range rep.Passes {
		report.Preprocessed += p.Rewrites
	}
	targets, err := selectTargets(q, opts, report)
	if err != nil {
		return nil, nil, err
	}
	var observed []graph.Output
	for _, t := range targets {
		if !slices.Contains(observed, t.x) {
			observed = append(observed, t.x)
		}
	}
	ranges, err := calibrate(ctx, q, observed, samples, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := insertQDQ(q, targets, ranges, opts, report); err != nil {
		return nil, nil, err
	}
	if err := q.InferShapes(); err != nil {
		return nil, nil, fmt.Errorf("quantize: the quantized model: %w", err)
	}
	if err := q.Validate(); err != nil {
		return nil, nil, fmt.Errorf("quantize: the quantized model: %w", err)
	}
	return q, report, nil
}

// withDefaults fills the zero fields and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.Activations == tensor.Undefined {
		o.Activations = tensor.U8
	}
	if o.Activations != tensor.U8 && o.Activations != tensor.I8 {
		return o, sentinel.Errorf(sentinel.ErrInvalidArgument, "quantize: activations in %v: want u8 or i8", o.Activations)
	}
	if o.Percentile == 0 {
		o.Percentile = DefaultPercentile
	}
	if o.Percentile <= 50 || o.Percentile > 100 {
		return o, sentinel.Errorf(sentinel.ErrInvalidArgument, "quantize: percentile %g: want (50, 100]", o.Percentile)
	}
	if len(o.OpTypes) == 0 {
		o.OpTypes = DefaultOpTypes
	}
	for _, t := range o.OpTypes {
		if !slices.Contains(DefaultOpTypes, t) {
			return o, sentinel.Errorf(sentinel.ErrUnsupported, "quantize: op type %q: the quantizer handles %v", t, DefaultOpTypes)
		}
	}
	if o.Device == "" {
		o.Device = "CPU"
	}
	return o, nil
}

// target is one node to quantize: its data input x, its constant weights
// (input 1) quantized along axis, and its bias input (-1 without one to
// quantize).
type target struct {
	n    *graph.Node
	x    graph.Output
	axis int
	bias int
}

// selectTargets picks the nodes to quantize and records why the others of
// the quantized op types stay float.
func selectTargets(m *graph.Model, opts Options, report *Report) ([]target, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	var out []target
	for _, n := range nodes {
		if n.Domain != "" || !slices.Contains(opts.OpTypes, n.OpType) {
			continue
		}
		t, why := targetOf(n)
		if why == "" && slices.ContainsFunc(n.OriginalNames(), func(s string) bool { return slices.Contains(opts.Exclude, s) }) {
			why = "excluded"
		}
		name := strings.Join(n.OriginalNames(), "+")
		if why != "" {
			report.Float[name] = why
			continue
		}
		out = append(out, t)
		report.Quantized = append(report.Quantized, name)
	}
	return out, nil
}

// targetOf describes how n is quantized, or says why it is not.
func targetOf(n *graph.Node) (target, string) {
	x, w := n.Input(0), n.Input(1)
	switch {
	case !x.Valid() || !w.Valid():
		return target{}, "inputs missing"
	case x.Type() != tensor.F32:
		return target{}, fmt.Sprintf("data in %v, not f32", x.Type())
	case x.Node.OpType == graph.OpConstant:
		return target{}, "constant data"
	case w.Node.OpType != graph.OpConstant || w.Node.Value.Type() != tensor.F32:
		return target{}, "weights not an f32 constant"
	}
	wr := w.Node.Value.Rank()
	t := target{n: n, x: x, bias: -1}
	switch n.OpType {
	case "Conv":
		if wr < 3 {
			return target{}, "weights of rank below 3"
		}
		t.axis = 0
		if isF32Const(n.Input(2)) {
			t.bias = 2
		}
	case "MatMul":
		if wr != 2 {
			return target{}, "weights not 2-D"
		}
		t.axis = 1
	case "Gemm":
		if n.Attrs.Int("transA", 0) != 0 || n.Attrs.Float("alpha", 1) != 1 {
			return target{}, "Gemm with transA or alpha"
		}
		t.axis = 1
		if n.Attrs.Int("transB", 0) != 0 {
			t.axis = 0
		}
		oc := w.Node.Value.Shape()[t.axis]
		if c := n.Input(2); isF32Const(c) && n.Attrs.Float("beta", 1) == 1 && c.Node.Value.NumElements() == oc && c.Node.Value.Rank() == 1 {
			t.bias = 2
		}
	}
	return t, ""
}

// isF32Const reports whether o is an f32 Constant.
func isF32Const(o graph.Output) bool {
	return o.Valid() && o.Node.OpType == graph.OpConstant && o.Node.Value.Type() == tensor.F32
}

// newNames collects m's node names.
func newNames(m *graph.Model) (*names.Set, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	u := &names.Set{}
	for _, n := range nodes {
		u.Take(n.Name)
	}
	return u, nil
}
