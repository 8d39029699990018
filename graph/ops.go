package graph

import (
	"slices"
	"sort"

	"github.com/clinfer/clinfer/tensor"
)

// Family names a group of ops that keep their code together: the ops of
// family F are in graph/ops_F.go, cpu_fallback/ref/ops_F.go,
// clbackend/lower_F.go and onnx/ops_F.go (wherever that package has code
// for them) and their kernels in kernels/F*.cl. A file may add a detail to
// the family ("ops_movement_slice.go"); no other ops_*.go or lower_*.go
// names exist.
type Family string

// The op families. Every op of the op set belongs to exactly one.
const (
	// FamilyModel holds Parameter, Constant and Result: the model's inputs,
	// weights and outputs, which devices plan around rather than run.
	FamilyModel Family = "model"
	// FamilyEltwise is element-wise arithmetic and math: the broadcasting
	// binary ops, the variadic Max/Min/Sum/Mean and unary math (Sqrt,
	// Exp, Sin, Floor...).
	FamilyEltwise Family = "eltwise"
	// FamilyActivation is the activation functions (Relu, Sigmoid,
	// HardSwish, Clip, PRelu...) and the softmax family along an axis.
	FamilyActivation Family = "activation"
	// FamilyCompare is comparisons, logic, Where and the IsNaN/IsInf
	// classifiers: ops with boolean inputs or outputs.
	FamilyCompare Family = "compare"
	// FamilyMovement moves data without arithmetic: reshapes, transposes,
	// slicing, concatenation, tiling, padding, DepthToSpace, Trilu.
	FamilyMovement Family = "movement"
	// FamilyIndex gathers and scatters by index tensors, and OneHot.
	FamilyIndex Family = "index"
	// FamilyReduce reduces along axes: ReduceXxx, ArgMax/ArgMin, TopK and
	// the CumSum scan.
	FamilyReduce Family = "reduce"
	// FamilyConv is Conv, ConvTranspose and the fused FusedConv.
	FamilyConv Family = "conv"
	// FamilyPool is the windowed and global poolings.
	FamilyPool Family = "pool"
	// FamilyNorm is batch, instance and layer normalisation.
	FamilyNorm Family = "norm"
	// FamilyGemm is MatMul, Gemm and the fused FullyConnected.
	FamilyGemm Family = "gemm"
	// FamilyResize is Resize.
	FamilyResize Family = "resize"
	// FamilyCast converts element types: Cast and CastLike.
	FamilyCast Family = "cast"
	// FamilyShape makes values from shapes: Shape, Size, ConstantOfShape,
	// Range and EyeLike.
	FamilyShape Family = "shape"
	// FamilyCompact selects elements by their values, so that the output's
	// size depends on the data: NonZero, Compress and Unique (stream
	// compaction: flags, a prefix sum, a scatter).
	FamilyCompact Family = "compact"
	// FamilyColor converts images between colour formats: NV12 to RGB and
	// BGR (the preprocessing of camera frames).
	FamilyColor Family = "color"
	// FamilyDetection is the post-processing of detection heads:
	// NonMaxSuppression and RoiAlign.
	FamilyDetection Family = "detection"
	// FamilySignal is the spectral transforms of audio front ends: DFT and
	// STFT.
	FamilySignal Family = "signal"
	// FamilyQuant is quantization: QuantizeLinear, DequantizeLinear,
	// DynamicQuantizeLinear, the integer convolutions and matrix products
	// (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul) and the
	// fused integer ops the QDQ fusion makes.
	FamilyQuant Family = "quant"
	// FamilyKernelFusion is the generic KernelFusion op.
	FamilyKernelFusion Family = "kernelfusion"
	// FamilyControl is control flow: If, Loop and Scan, the ops that own
	// bodies (see bodies.go).
	FamilyControl Family = "control"
	// FamilyRecurrent is the recurrent networks: LSTM, GRU and RNN.
	FamilyRecurrent Family = "recurrent"
	// FamilyLoss is the losses of exported evaluation graphs:
	// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
	FamilyLoss Family = "loss"
	// FamilySequence is sequences and optionals (tensor.Kind): the
	// Sequence* ops, SplitToSequence, ConcatFromSequence and the Optional
	// ops. Their values live on the host.
	FamilySequence Family = "sequence"
	// FamilyRandom is the random generators (RandomUniform, RandomNormal,
	// their *Like forms, Bernoulli, Multinomial): one counter-based
	// generator (Philox4x32-10) on every device, so a seed gives the same
	// tensors everywhere.
	FamilyRandom Family = "random"
	// FamilyString is text: StringNormalizer, TfIdfVectorizer,
	// RegexFullMatch, StringConcat and StringSplit.
	FamilyString Family = "string"
)

// Families returns every family, in the order the op table lists them.
func Families() []Family {
	return []Family{FamilyModel, FamilyEltwise, FamilyActivation, FamilyCompare, FamilyMovement, FamilyIndex,
		FamilyReduce, FamilyConv, FamilyPool, FamilyNorm, FamilyGemm, FamilyResize, FamilyCast, FamilyShape,
		FamilyCompact, FamilyColor, FamilyDetection, FamilySignal, FamilyQuant, FamilyKernelFusion,
		FamilyControl, FamilyRecurrent, FamilyLoss, FamilySequence, FamilyRandom, FamilyString}
}

// Fold says when a node's outputs are known before inference, so that
// constant folding and the GPU planner compute them on the host.
type Fold uint8

const (
	// FoldInputs folds a node once the values of all its inputs are known
	// (constants, folded subgraphs, input values a plan is specialised
	// on). It is the default.
	FoldInputs Fold = iota
	// FoldShapes folds a node once its inputs' shapes are known: it reads
	// no values (Shape, Size).
	FoldShapes
	// FoldNever never folds: the outputs are not a function of known
	// values (Parameter, Result).
	FoldNever
)

// Param is a float attribute of an op with its ONNX default.
type Param struct {
	Name    string
	Default float32
}

// OpSpec describes one op of the op set: everything true of the op on
// every device. Devices and passes ask it instead of keeping per-op lists:
// which inputs a plan needs on the host, when the op folds, which outputs
// are optional, its attribute defaults.
type OpSpec struct {
	// Name is the op type ("Conv").
	Name string
	// Family is the op's family: where its code is (see Family).
	Family Family
	// Since, when > 0, is the first ONNX opset (default domain) from which
	// the ONNX op of this name is this op unchanged: the ONNX frontend
	// imports it as is from there on and converts older forms with its own
	// rows. 0 for ops of clinfer's own and for ops whose every form the
	// frontend converts or checks itself.
	Since int64
	// MinInputs and MaxInputs bound the number of inputs (MaxInputs < 0:
	// variadic).
	MinInputs, MaxInputs int
	// HostInputs are the inputs that parameterise the op rather than carry
	// its data: shapes, axes, pads, sizes, bounds, counts. They are small
	// tensors a device reads on the host when it plans the node (the GPU
	// specialises its plans on their values) and no kernel reads.
	HostInputs []int
	// Fold says when the op's outputs are known before inference.
	Fold Fold
	// ShapeMath marks ops that models use for arithmetic on shapes
	// (Shape, Gather, Concat, Add...): on small static integer data they
	// are cheap to recompute, and HETERO recomputes them in every subgraph
	// that needs their value instead of passing it between devices.
	ShapeMath bool
	// KeepOutputs, when > 0, is how many leading outputs the op must
	// compute: the later ones are optional (MaxPool's Indices, Dropout's
	// mask) and dead-code removal drops them when nothing reads them.
	KeepOutputs int
	// Params are the op's float attributes with their defaults, in the
	// order the shared element-wise kernels take them (p0, p1): every
	// device reads its defaults here (see ParamValue).
	Params []Param
	// Values marks the ops that take or make sequences or optionals
	// (tensor.Kind): their Infer sets every output's Kind. Every other op
	// takes tensors only (InferNode rejects a sequence or optional input)
	// and makes tensors.
	Values bool
	// DataSized marks the ops whose output size depends on input values
	// (NonZero, Compress, Unique, NonMaxSuppression): each has one such
	// dimension, which shape inference leaves dynamic unless it can count
	// it from constant inputs, or the node carries AttrDataSize (a device
	// that read the count back for one inference plans the rest of the
	// model with it).
	DataSized bool
	// Examples are small instances of the op (see Example) that the
	// device tests run against the CPU reference: an op with examples
	// needs no test case of its own in the device packages.
	Examples []Example
	// Infer sets n.Outputs[*].Type and .Shape from n's inputs and
	// attributes. It may read constant inputs with n.ConstInput. It returns
	// an error (via n.Errorf) for inputs or attributes that make no sense.
	Infer func(n *Node) error
}

// IsHostInput reports whether input i is one of the op's HostInputs.
func (s OpSpec) IsHostInput(i int) bool { return slices.Contains(s.HostInputs, i) }

// opTable is the op set: every op clinfer's devices implement, with its
// semantics. It is one explicit table on purpose (no init side effects in
// the family files); optable.go assembles it from the families' rows.
var opTable = map[string]OpSpec{}

func init() {
	// The table refers to functions in other files; filling it in init of
	// this one file keeps it a single explicit list.
	for _, s := range opList() {
		if _, dup := opTable[s.Name]; dup {
			panic("graph: op " + s.Name + " listed twice")
		}
		opTable[s.Name] = s
	}
}

// Lookup returns the spec of an op type.
func Lookup(opType string) (OpSpec, bool) {
	s, ok := opTable[opType]
	return s, ok
}

// OpTypes returns the names of every op in the op set, sorted.
func OpTypes() []string {
	names := make([]string, 0, len(opTable))
	for k := range opTable {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// IsHostInput reports whether input i of n is a host input of its op (see
// OpSpec.HostInputs); false for ops outside the op set and other domains.
func IsHostInput(n *Node, i int) bool {
	s, ok := opTable[n.OpType]
	return ok && n.Domain == "" && s.IsHostInput(i)
}

// FoldOf returns when n's outputs are known before inference (see Fold):
// FoldNever for ops outside the op set and other domains, and for nodes
// that make sequences or optionals.
func FoldOf(n *Node) Fold {
	s, ok := opTable[n.OpType]
	if !ok || n.Domain != "" {
		return FoldNever
	}
	for _, p := range n.Outputs {
		if p.Kind != tensor.KindTensor {
			return FoldNever // a Constant holds a tensor, not a sequence or optional
		}
	}
	return s.Fold
}

// ParamValue returns n's float attribute name, or its default from the op
// table when n does not set it (0 when the op has no such Param).
func ParamValue(n *Node, name string) float32 {
	def := float32(0)
	for _, p := range opTable[n.OpType].Params {
		if p.Name == name {
			def = p.Default
		}
	}
	return n.Attrs.Float(name, def)
}

// ParamValues returns the values of n's Params in table order (attribute
// or default).
func ParamValues(n *Node) []float32 {
	ps := opTable[n.OpType].Params
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = n.Attrs.Float(p.Name, p.Default)
	}
	return out
}

// InferNode runs shape and type inference for one node whose inputs are
// already inferred.
func InferNode(n *Node) error {
	spec, ok := opTable[n.OpType]
	if !ok {
		return n.Errorf("op type %q is not in the op set", n.OpType)
	}
	if len(n.Inputs) < spec.MinInputs || (spec.MaxInputs >= 0 && len(n.Inputs) > spec.MaxInputs) {
		if spec.MaxInputs < 0 {
			return n.Errorf("has %d inputs, want at least %d", len(n.Inputs), spec.MinInputs)
		}
		return n.Errorf("has %d inputs, want %d to %d", len(n.Inputs), spec.MinInputs, spec.MaxInputs)
	}
	for i, in := range n.Inputs {
		if in.Node != nil && !in.Valid() {
			return n.Errorf("input %d refers to output %d of %s, which has %d outputs", i, in.Index, in.Node, len(in.Node.Outputs))
		}
		if in.Valid() && !spec.Values && in.Kind() != tensor.KindTensor {
			return n.Errorf("input %d is a %v (%v); %s takes tensors", i, in.Kind(), in.Port(), n.OpType)
		}
	}
	if spec.Infer == nil {
		return nil
	}
	if err := spec.Infer(n); err != nil {
		return err
	}
	if !spec.Values {
		for i := range n.Outputs {
			n.Outputs[i].Kind = tensor.KindTensor
		}
	}
	return nil
}

// InferShapes runs shape and type inference over the whole model in
// topological order.
func (m *Model) InferShapes() error {
	nodes, err := m.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := InferNode(n); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// AttrDataSize is the attribute of a node of a DataSized op that fixes the
// size of its data-dependent output dimension for one inference: a device
// that ran the op and read the count back sets it on its own copy of the
// model and infers the shapes of the rest from it. Models never carry it.
const AttrDataSize = "_data_size"

// IsDataSized reports whether n's op has an output size that depends on
// input values (OpSpec.DataSized).
func IsDataSized(n *Node) bool {
	s, ok := opTable[n.OpType]
	return ok && n.Domain == "" && s.DataSized
}

// dataSize returns the data-dependent size n carries (AttrDataSize) as a
// dimension, dynamic when it carries none.
func dataSize(n *Node) Dim {
	if n.Attrs.Has(AttrDataSize) {
		return StaticDim(n.Attrs.Int(AttrDataSize, 0))
	}
	return DynamicDim("")
}
