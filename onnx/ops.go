package onnx

import (
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importFunc converts one ONNX node into graph nodes in the op set's
// newest-opset form. It returns one Output per ONNX output (a zero Output
// for an output it cannot provide; using such an output is an error).
type importFunc func(c *nodeCtx) ([]graph.Output, error)

// OpEntry is one row of the versioned op table.
type opEntry struct {
	// OpType and Domain name the ONNX op ("" is the default domain).
	OpType, Domain string
	// Since and Until bound the imported opset versions the entry handles:
	// Since <= version < Until, with Until 0 meaning no upper bound.
	Since, Until int64
	// Import converts a node.
	Import importFunc
}

// opTable is the versioned op table: every ONNX op the frontend imports.
// Nodes whose op type, domain and opset version match no row fail with
// ErrUnsupportedOp. Keep it aligned with graph's op set: an importer that
// emits an op graph.Lookup does not know fails with ErrUnsupportedOp too.
var opTable = []opEntry{
	// Element-wise binary ops; before opset 7 they had legacy broadcast
	// attributes.
	{"Add", "", 1, 7, legacyBroadcast},
	{"Add", "", 7, 0, same()},
	{"Sub", "", 1, 7, legacyBroadcast},
	{"Sub", "", 7, 0, same()},
	{"Mul", "", 1, 7, legacyBroadcast},
	{"Mul", "", 7, 0, same()},
	{"Div", "", 1, 7, legacyBroadcast},
	{"Div", "", 7, 0, same()},
	{"Pow", "", 1, 7, legacyBroadcast},
	{"Pow", "", 7, 0, same()},
	{"Equal", "", 1, 7, legacyBroadcast},
	{"Equal", "", 7, 0, same()},
	{"Greater", "", 1, 7, legacyBroadcast},
	{"Greater", "", 7, 0, same()},
	{"Less", "", 1, 7, legacyBroadcast},
	{"Less", "", 7, 0, same()},
	{"And", "", 1, 7, legacyBroadcast},
	{"And", "", 7, 0, same()},
	{"Or", "", 1, 7, legacyBroadcast},
	{"Or", "", 7, 0, same()},
	{"Xor", "", 1, 7, legacyBroadcast},
	{"Xor", "", 7, 0, same()},
	{"GreaterOrEqual", "", 12, 0, same()},
	{"LessOrEqual", "", 12, 0, same()},
	{"PRelu", "", 1, 7, legacyPRelu},
	{"PRelu", "", 7, 0, same()},
	{"MatMul", "", 1, 0, same()},
	{"Gemm", "", 1, 7, same(drop("broadcast"))},
	{"Gemm", "", 7, 0, same()},
	{"Max", "", 1, 0, same()},
	{"Min", "", 1, 0, same()},
	{"Sum", "", 1, 0, same()},
	{"Mean", "", 1, 0, same()},

	// Element-wise unary ops and activations.
	{"Sqrt", "", 1, 0, same()},
	{"Exp", "", 1, 0, same()},
	{"Log", "", 1, 0, same()},
	{"Neg", "", 1, 0, same()},
	{"Abs", "", 1, 0, same()},
	{"Reciprocal", "", 1, 0, same()},
	{"Floor", "", 1, 0, same()},
	{"Ceil", "", 1, 0, same()},
	{"Round", "", 11, 0, same()},
	{"Sign", "", 9, 0, same()},
	{"Sin", "", 7, 0, same()},
	{"Cos", "", 7, 0, same()},
	{"Not", "", 1, 0, same()},
	{"Erf", "", 9, 0, same()},
	{"Relu", "", 1, 0, same()},
	{"LeakyRelu", "", 1, 0, same()},
	{"Sigmoid", "", 1, 0, same()},
	{"Tanh", "", 1, 0, same()},
	{"HardSigmoid", "", 1, 0, same()},
	{"HardSwish", "", 14, 0, same()},
	{"Elu", "", 1, 0, same()},
	{"Selu", "", 1, 0, same()},
	{"Softplus", "", 1, 0, same()},
	{"Softsign", "", 1, 0, same()},
	{"Mish", "", 18, 0, same()},
	{"Gelu", "", 20, 0, same(enum("approximate", "none", "tanh"))},
	{"Clip", "", 1, 11, clipAttrs},
	{"Clip", "", 11, 0, same()},
	{"Identity", "", 1, 0, same()},
	{"Dropout", "", 1, 0, dropout},
	{"Celu", "", 12, 0, same()},
	{"ThresholdedRelu", "", 10, 0, same()},
	{"Cast", "", 1, 0, cast},
	{"Constant", "", 1, 0, constant},

	// Softmax family: before opset 13 the input is coerced to 2-D.
	{"Softmax", "", 1, 13, coercedSoftmax},
	{"Softmax", "", 13, 0, same()},
	{"LogSoftmax", "", 1, 13, coercedSoftmax},
	{"LogSoftmax", "", 13, 0, same()},
	{"Hardmax", "", 1, 13, coercedSoftmax},
	{"Hardmax", "", 13, 0, same()},

	// Convolution, pooling, normalisation.
	{"Conv", "", 1, 0, same(enum("auto_pad", autoPads...))},
	{"ConvTranspose", "", 1, 0, same(enum("auto_pad", autoPads...))},
	{"MaxPool", "", 1, 0, same(enum("auto_pad", autoPads...), storageOrder)},
	{"AveragePool", "", 1, 0, same(enum("auto_pad", autoPads...))},
	{"GlobalAveragePool", "", 1, 0, same()},
	{"GlobalMaxPool", "", 1, 0, same()},
	{"BatchNormalization", "", 1, 0, batchNorm},
	{"InstanceNormalization", "", 1, 0, same()},
	{"LayerNormalization", "", 17, 0, same(stashType)},

	// Resizing.
	{"Upsample", "", 7, 10, upsample},
	{"Resize", "", 10, 11, upsample},
	{"Resize", "", 11, 0, resize},

	// Shape manipulation.
	{"Concat", "", 1, 4, same(defaultInt("axis", 1))},
	{"Concat", "", 4, 0, same()},
	{"Split", "", 1, 0, split},
	{"Slice", "", 1, 10, sliceAttrs},
	{"Slice", "", 10, 0, same()},
	{"Reshape", "", 1, 5, attrsToInputs(attrInput{name: "shape", required: true})},
	{"Reshape", "", 5, 0, same()},
	{"Flatten", "", 1, 0, same()},
	{"Transpose", "", 1, 0, same()},
	{"Squeeze", "", 1, 13, attrsToInputs(attrInput{name: "axes"})},
	{"Squeeze", "", 13, 0, same()},
	{"Unsqueeze", "", 1, 13, attrsToInputs(attrInput{name: "axes", required: true})},
	{"Unsqueeze", "", 13, 0, same()},
	{"Gather", "", 1, 0, same()},
	{"Shape", "", 1, 0, same()},
	{"ConstantOfShape", "", 9, 0, same()},
	{"Expand", "", 8, 0, same()},
	{"Where", "", 9, 0, same()},
	{"Tile", "", 6, 0, same()},
	{"Range", "", 11, 0, same()},
	{"Pad", "", 1, 2, padAttrs("paddings")},
	{"Pad", "", 2, 11, padAttrs("pads")},
	{"Pad", "", 11, 19, same(enum("mode", "constant", "reflect", "edge"))},
	{"Pad", "", 19, 0, same(enum("mode", "constant", "reflect", "edge", "wrap"))},

	// Reductions: axes became an input in opset 18 (ReduceSum: 13).
	{"ReduceMean", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceMean", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceMax", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceMax", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceMin", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceMin", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceSum", "", 1, 13, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceSum", "", 13, 0, same(inputSince("axes", 13))},
	{"ReduceProd", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceProd", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceL1", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceL1", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceL2", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceL2", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceSumSquare", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceSumSquare", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceLogSumExp", "", 1, 18, attrsToInputs(attrInput{name: "axes"})},
	{"ReduceLogSumExp", "", 18, 0, same(inputSince("axes", 18))},
	{"ReduceLogSum", "", 1, 0, reduceLogSum},
	{"ArgMax", "", 1, 0, same()},
	{"ArgMin", "", 1, 0, same()},

	// Indexing, scatter/gather and other data movement.
	{"Size", "", 1, 0, same()},
	{"GatherElements", "", 11, 0, same()},
	{"GatherND", "", 11, 0, same()},
	{"Scatter", "", 9, 11, renamed("ScatterElements")},
	{"ScatterElements", "", 11, 0, same(enum("reduction", "none", "add", "mul", "max", "min"))},
	{"ScatterND", "", 11, 0, same(enum("reduction", "none", "add", "mul", "max", "min"))},
	{"Trilu", "", 14, 0, same()},
	{"CumSum", "", 11, 0, same()},
	{"OneHot", "", 9, 0, same()},
	{"DepthToSpace", "", 1, 0, same(enum("mode", "DCR", "CRD"))},
	{"SpaceToDepth", "", 1, 0, same()},
	{"TopK", "", 1, 0, topK},
	{"EyeLike", "", 9, 0, same(dataTypeAttr("dtype"))},

	// More element-wise math.
	{"Mod", "", 10, 0, same()},
	{"CastLike", "", 15, 0, same()},
	{"Tan", "", 7, 0, same()},
	{"Acos", "", 7, 0, same()},
	{"Asin", "", 7, 0, same()},
	{"Atan", "", 7, 0, same()},
	{"Sinh", "", 9, 0, same()},
	{"Cosh", "", 9, 0, same()},
	{"Asinh", "", 9, 0, same()},
	{"Acosh", "", 9, 0, same()},
	{"Atanh", "", 9, 0, same()},
	{"IsNaN", "", 9, 0, same()},
	{"IsInf", "", 10, 0, same()},
	{"Shrink", "", 9, 0, same()},
}

// topK imports TopK, always with both outputs (Values, Indices); TopK-1's
// integer attribute k becomes the K input.
func topK(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0), c.input(1)}
	if c.version < 10 {
		v, ok := c.attrs["k"]
		if !ok {
			return nil, c.invalidf("required attribute \"k\" is missing")
		}
		k, ok := v.(int64)
		if !ok {
			return nil, c.attrErrorf("k", "is a %T, want an integer", v)
		}
		delete(c.attrs, "k")
		inputs[1] = c.constI64("k", []int64{k})
	}
	return outputsOf(c.node("TopK", "", inputs, c.attrs, 2)), nil
}

// renamed emits the op under a newer name with the same inputs and
// attributes (Scatter -> ScatterElements).
func renamed(opType string) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		return outputsOf(c.node(opType, "", c.in, c.attrs, numOutputs(c))), nil
	}
}

// dataTypeAttr converts an attribute holding an ONNX data type (EyeLike's
// dtype) to int64(tensor.ElementType), like Cast's "to".
func dataTypeAttr(attr string) check {
	return func(c *nodeCtx) error {
		v, ok := c.attrs[attr]
		if !ok {
			return nil
		}
		dt, ok := v.(int64)
		if !ok {
			return c.attrErrorf(attr, "is a %T, want an integer", v)
		}
		et, err := ElementType(dt)
		if err != nil {
			return c.typeErrorf(attr, err)
		}
		c.attrs[attr] = int64(et)
		return nil
	}
}

// reduceLogSum imports ReduceLogSum (every version) as Log(ReduceSum(x)),
// moving the axes attribute of opsets before 18 to an input.
func reduceLogSum(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0)}
	if c.version < 18 {
		if v, ok := c.attrs["axes"]; ok {
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf("axes", "is a %T, want a list of integers", v)
			}
			delete(c.attrs, "axes")
			inputs = append(inputs, c.constI64("axes", ints))
		}
	} else if c.input(1).Node != nil {
		inputs = append(inputs, c.input(1))
	}
	sum := c.node("ReduceSum", "sum", inputs, c.attrs, 1)
	return outputsOf(c.node("Log", "", []graph.Output{sum.Out(0)}, nil, 1)), nil
}

// lookupOp finds the table row for an op at an imported opset version.
func lookupOp(opType, domain string, version int64) (opEntry, bool) {
	if domain == "" && (version < 1 || version > maxOpset) {
		return opEntry{}, false
	}
	for _, e := range opTable {
		if e.OpType == opType && e.Domain == domain && version >= e.Since && (e.Until == 0 || version < e.Until) {
			return e, true
		}
	}
	return opEntry{}, false
}

var autoPads = []string{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}

// check inspects or rewrites a node's attributes before it is emitted.
type check func(c *nodeCtx) error

// inputSince rejects attribute name on an op that takes it as an input
// since opset v: such a node is malformed (ONNX's checker and ONNX Runtime
// refuse it), and guessing which of the two wins made the CPU and GPU
// devices disagree.
func inputSince(name string, v int) check {
	return func(c *nodeCtx) error {
		if _, ok := c.attrs[name]; ok {
			return c.attrErrorf(name, "is input 1 of %s since opset %d, not an attribute; pass it as an input (or re-export the model)", c.n.opType, v)
		}
		return nil
	}
}

// enum accepts attribute values from a fixed list.
func enum(attr string, allowed ...string) check {
	return func(c *nodeCtx) error {
		v, ok := c.attrs[attr]
		if !ok {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return c.attrErrorf(attr, "is a %T, want a string", v)
		}
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return c.attrErrorf(attr, "value %q is not one of %s", s, strings.Join(allowed, ", "))
	}
}

// drop removes attributes that do not change inference results.
func drop(attrs ...string) check {
	return func(c *nodeCtx) error {
		for _, a := range attrs {
			delete(c.attrs, a)
		}
		return nil
	}
}

// defaultInt sets an attribute whose default changed between opsets.
func defaultInt(attr string, v int64) check {
	return func(c *nodeCtx) error {
		if !c.attrs.Has(attr) {
			c.attrs[attr] = v
		}
		return nil
	}
}

// legacyBroadcast imports element-wise binary ops before opset 7. With
// broadcast=1, B's shape must match a contiguous run of A's dims: the
// trailing ones without axis (which numpy broadcasting, the op set's rule,
// also does), or those starting at axis. An axis that does not make B a
// suffix of A is turned into numpy broadcasting by appending size-1 axes to
// B (an Unsqueeze, or a reshaped constant), which needs the ranks of A and B.
func legacyBroadcast(c *nodeCtx) ([]graph.Output, error) {
	bcast := c.attrs.Int("broadcast", 0) != 0
	axis, hasAxis := c.attrs["axis"]
	delete(c.attrs, "broadcast")
	delete(c.attrs, "axis")
	a, b := c.input(0), c.input(1)
	if !bcast || !hasAxis {
		return outputsOf(c.node(c.n.opType, "", c.in, c.attrs, 1)), nil
	}
	ax, ok := axis.(int64)
	if !ok {
		return nil, c.attrErrorf("axis", "is a %T, want an integer", axis)
	}
	ra, rb := rankOf(a), rankOf(b)
	if ra < 0 || rb < 0 {
		return nil, c.attrErrorf("axis", "legacy broadcasting along an axis needs the ranks of both inputs, which are not known at import")
	}
	if ax < 0 {
		ax += int64(ra)
	}
	if ax < 0 || ax+int64(rb) > int64(ra) {
		return nil, c.invalidf("broadcast axis %d does not fit B (rank %d) into A (rank %d)", axis, rb, ra)
	}
	extra := int64(ra) - ax - int64(rb)
	if extra > 0 {
		if t, ok := constInput(c, 1); ok {
			shape := append(t.Shape().Clone(), make(tensor.Shape, extra)...)
			for i := rb; i < len(shape); i++ {
				shape[i] = 1
			}
			rt, err := t.Contiguous().Reshape(shape)
			if err != nil {
				return nil, c.invalidf("reshaping B for broadcast: %v", err)
			}
			b = c.constant("broadcast_b", rt.Clone())
		} else {
			axes := make([]int64, extra)
			for i := range axes {
				axes[i] = int64(rb) + int64(i)
			}
			b = c.node("Unsqueeze", "broadcast_b", []graph.Output{b, c.constI64("broadcast_axes", axes)}, nil, 1).Out(0)
		}
	}
	return outputsOf(c.node(c.n.opType, "", []graph.Output{a, b}, c.attrs, 1)), nil
}

// rankOf returns the rank of a Parameter's or Constant's output, or -1
// when it is not known while importing (other nodes are inferred only
// after the whole graph is built).
func rankOf(o graph.Output) int {
	if !o.Valid() {
		return -1
	}
	switch o.Node.OpType {
	case graph.OpConstant:
		if o.Node.Value != nil {
			return o.Node.Value.Rank()
		}
	case graph.OpParameter:
		return o.Shape().Rank()
	}
	return -1
}

// numOutputs is the number of ONNX outputs without trailing omitted ones
// (at least 1).
func numOutputs(c *nodeCtx) int {
	n := len(c.n.outputs)
	for n > 0 && c.n.outputs[n-1] == "" {
		n--
	}
	return max(n, 1)
}

func outputsOf(n *graph.Node) []graph.Output {
	outs := make([]graph.Output, len(n.Outputs))
	for i := range outs {
		outs[i] = n.Out(i)
	}
	return outs
}

func runChecks(c *nodeCtx, checks []check) error {
	for _, ch := range checks {
		if err := ch(c); err != nil {
			return err
		}
	}
	return nil
}

// same emits the op unchanged, after the checks.
func same(checks ...check) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		if err := runChecks(c, checks); err != nil {
			return nil, err
		}
		return outputsOf(c.node(c.n.opType, "", c.in, c.attrs, numOutputs(c))), nil
	}
}

// storageOrder checks MaxPool's storage_order, which sets the layout of the
// Indices output (0 row-major, 1 column-major within a plane); it is kept
// only when that output is used.
func storageOrder(c *nodeCtx) error {
	switch c.attrs.Int("storage_order", 0) {
	case 0:
		delete(c.attrs, "storage_order")
	case 1:
		if numOutputs(c) < 2 {
			delete(c.attrs, "storage_order")
		}
	default:
		return c.attrErrorf("storage_order", "want 0 (row-major) or 1 (column-major)")
	}
	return nil
}

// stashType converts LayerNormalization's stash_type from an ONNX data type
// to int64(tensor.ElementType), like Cast's "to".
func stashType(c *nodeCtx) error {
	v, ok := c.attrs["stash_type"]
	if !ok {
		return nil
	}
	dt, ok := v.(int64)
	if !ok {
		return c.attrErrorf("stash_type", "is a %T, want an integer", v)
	}
	et, err := ElementType(dt)
	if err != nil {
		return c.typeErrorf("stash_type", err)
	}
	c.attrs["stash_type"] = int64(et)
	return nil
}

// attrInput describes an attribute of an old opset that is an input in the
// newest one.
type attrInput struct {
	name     string
	required bool
}

// attrsToInputs moves integer-list attributes to constant i64 inputs
// appended after the node's inputs, in order; an absent optional attribute
// becomes an omitted input.
func attrsToInputs(ins ...attrInput) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		inputs := append([]graph.Output{}, c.input(0))
		for _, a := range ins {
			v, ok := c.attrs[a.name]
			if !ok {
				if a.required {
					return nil, c.invalidf("required attribute %q is missing", a.name)
				}
				inputs = append(inputs, graph.Output{})
				continue
			}
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf(a.name, "is a %T, want a list of integers", v)
			}
			delete(c.attrs, a.name)
			inputs = append(inputs, c.constI64(a.name, ints))
		}
		for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
			inputs = inputs[:len(inputs)-1]
		}
		return outputsOf(c.node(c.n.opType, "", inputs, c.attrs, numOutputs(c))), nil
	}
}

// sliceAttrs converts Slice-1 (starts, ends, axes attributes).
func sliceAttrs(c *nodeCtx) ([]graph.Output, error) {
	return attrsToInputs(
		attrInput{name: "starts", required: true},
		attrInput{name: "ends", required: true},
		attrInput{name: "axes"},
	)(c)
}

// split converts every Split version to the opset-18 form: sizes as input 1,
// or num_outputs when no sizes are given.
func split(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0)}
	if c.version < 13 {
		if v, ok := c.attrs["split"]; ok {
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf("split", "is a %T, want a list of integers", v)
			}
			delete(c.attrs, "split")
			inputs = append(inputs, c.constI64("split", ints))
		} else if c.input(1).Node != nil {
			inputs = append(inputs, c.input(1)) // Split-1 took sizes as input 1
		}
	} else if c.input(1).Node != nil {
		inputs = append(inputs, c.input(1))
	}
	nOut := len(c.n.outputs)
	if nOut == 0 {
		return nil, c.invalidf("has no outputs")
	}
	if len(inputs) == 1 && !c.attrs.Has("num_outputs") {
		c.attrs["num_outputs"] = int64(nOut)
	}
	return outputsOf(c.node("Split", "", inputs, c.attrs, nOut)), nil
}

// clipAttrs converts Clip before opset 11 (min and max attributes).
func clipAttrs(c *nodeCtx) ([]graph.Output, error) {
	inputs := []graph.Output{c.input(0), {}, {}}
	for i, a := range []string{"min", "max"} {
		if c.attrs.Has(a) {
			inputs[i+1] = c.constF32(a, []float32{c.attrs.Float(a, 0)}, true)
			delete(c.attrs, a)
		}
	}
	for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
		inputs = inputs[:len(inputs)-1]
	}
	return outputsOf(c.node("Clip", "", inputs, c.attrs, 1)), nil
}

// padAttrs converts Pad before opset 11 (pads and value attributes).
func padAttrs(padsAttr string) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		if err := enum("mode", "constant", "reflect", "edge")(c); err != nil {
			return nil, err
		}
		pads, ok := c.attrs[padsAttr].([]int64)
		if !ok {
			return nil, c.invalidf("required attribute %q is missing or not a list of integers", padsAttr)
		}
		inputs := []graph.Output{c.input(0), c.constI64("pads", pads)}
		if v := c.attrs.Float("value", 0); v != 0 {
			inputs = append(inputs, c.constF32("value", []float32{v}, true))
		}
		attrs := graph.Attrs{}
		if c.attrs.Has("mode") {
			attrs["mode"] = c.attrs["mode"]
		}
		return outputsOf(c.node("Pad", "", inputs, attrs, 1)), nil
	}
}

// coercedSoftmax converts Softmax and LogSoftmax before opset 13, which
// flatten the input to 2-D at axis, normalise each row and restore the
// shape: Flatten(axis) -> op(axis=-1) -> Reshape(Shape(x)). When the axis is
// the last one the coercion is a no-op and the op is emitted directly.
func coercedSoftmax(c *nodeCtx) ([]graph.Output, error) {
	x := c.input(0)
	axis := c.attrs.Int("axis", 1)
	last := axis == -1
	if x.Valid() {
		if ps := x.Shape(); ps.RankKnown && (axis == int64(ps.Rank()-1) || axis == -1) {
			last = true
		}
	}
	if last {
		return outputsOf(c.node(c.n.opType, "", []graph.Output{x}, graph.Attrs{"axis": int64(-1)}, 1)), nil
	}
	flat := c.node("Flatten", "flatten", []graph.Output{x}, graph.Attrs{"axis": axis}, 1)
	sm := c.node(c.n.opType, "", []graph.Output{flat.Out(0)}, graph.Attrs{"axis": int64(-1)}, 1)
	shape := c.node("Shape", "shape", []graph.Output{x}, nil, 1)
	back := c.node("Reshape", "reshape", []graph.Output{sm.Out(0), shape.Out(0)}, nil, 1)
	return []graph.Output{back.Out(0)}, nil
}

// batchNorm imports every BatchNormalization version for inference: the
// running statistics are used, momentum and is_test are irrelevant, and the
// training outputs are not provided.
func batchNorm(c *nodeCtx) ([]graph.Output, error) {
	if c.attrs.Has("spatial") && c.attrs.Int("spatial", 1) == 0 {
		return nil, c.attrErrorf("spatial", "per-activation (spatial=0) normalisation is not supported")
	}
	if c.attrs.Int("training_mode", 0) != 0 {
		return nil, c.attrErrorf("training_mode", "training mode is not supported")
	}
	if len(c.in) != 5 {
		return nil, c.invalidf("has %d inputs, want 5", len(c.in))
	}
	attrs := graph.Attrs{"epsilon": c.attrs.Float("epsilon", 1e-5)}
	return outputsOf(c.node("BatchNormalization", "", c.in, attrs, 1)), nil
}

// dropout emits the inference form: Dropout(data) with the output and the
// optional mask; ratio, is_test and seed do not matter in inference.
func dropout(c *nodeCtx) ([]graph.Output, error) {
	if t, ok := constInput(c, 2); ok && t.NumElements() == 1 && len(float64s(t)) == 1 && float64s(t)[0] != 0 {
		return nil, c.attrErrorf("", "training_mode input is true; only inference is supported")
	}
	return outputsOf(c.node("Dropout", "", []graph.Output{c.input(0)}, nil, min(numOutputs(c), 2))), nil
}

// constInput returns input i's value when it is a Constant node.
func constInput(c *nodeCtx, i int) (*tensor.Tensor, bool) {
	in := c.input(i)
	if in.Node == nil || in.Node.OpType != graph.OpConstant || in.Node.Value == nil {
		return nil, false
	}
	return in.Node.Value, true
}

// onnxTypeByName maps Cast-1's string "to" values to data type numbers.
var onnxTypeByName = map[string]int64{
	"FLOAT": dtFloat, "UINT8": dtUint8, "INT8": dtInt8, "UINT16": dtUint16, "INT16": dtInt16,
	"INT32": dtInt32, "INT64": dtInt64, "STRING": dtString, "BOOL": dtBool, "FLOAT16": dtFloat16,
	"DOUBLE": dtDouble, "UINT32": dtUint32, "UINT64": dtUint64, "BFLOAT16": dtBFloat16,
}

// cast stores "to" as int64(tensor.ElementType) instead of the ONNX data
// type number.
func cast(c *nodeCtx) ([]graph.Output, error) {
	var dt int64
	switch v := c.attrs["to"].(type) {
	case int64:
		dt = v
	case string:
		d, ok := onnxTypeByName[strings.ToUpper(v)]
		if !ok {
			return nil, c.attrErrorf("to", "unknown data type %q", v)
		}
		dt = d
	case nil:
		return nil, c.invalidf("required attribute \"to\" is missing")
	default:
		return nil, c.attrErrorf("to", "is a %T, want an integer", v)
	}
	et, err := ElementType(dt)
	if err != nil {
		return nil, c.typeErrorf("to", err)
	}
	attrs := graph.Attrs{"to": int64(et)}
	return outputsOf(c.node("Cast", "", []graph.Output{c.input(0)}, attrs, 1)), nil
}

// constant turns an ONNX Constant node into a graph Constant.
func constant(c *nodeCtx) ([]graph.Output, error) {
	if len(c.attrs) != 1 {
		return nil, c.invalidf("needs exactly one value attribute, has %d", len(c.attrs))
	}
	var t *tensor.Tensor
	for name, v := range c.attrs {
		var err error
		switch name {
		case "value":
			var ok bool
			if t, ok = v.(*tensor.Tensor); !ok {
				return nil, c.attrErrorf(name, "is a %T, want a tensor", v)
			}
		case "value_float":
			f, ok := v.(float32)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want a float", v)
			}
			t, err = tensor.FromF32(tensor.Shape{}, []float32{f})
		case "value_floats":
			f, ok := v.([]float32)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want floats", v)
			}
			t, err = tensor.FromF32(tensor.Shape{int64(len(f))}, f)
		case "value_int":
			i, ok := v.(int64)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want an integer", v)
			}
			t, err = tensor.FromI64(tensor.Shape{}, []int64{i})
		case "value_ints":
			i, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf(name, "is a %T, want integers", v)
			}
			t, err = tensor.FromI64(tensor.Shape{int64(len(i))}, i)
		default:
			return nil, c.attrErrorf(name, "constants of this kind are not supported")
		}
		if err != nil {
			return nil, c.invalidf("%v", err)
		}
	}
	n := graph.NewConstant(c.name, t)
	return []graph.Output{n.Out(0)}, nil
}

var resizeModes = []check{
	enum("mode", "nearest", "linear", "cubic"),
	enum("coordinate_transformation_mode", "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
		"align_corners", "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"),
	enum("nearest_mode", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"),
	enum("keep_aspect_ratio_policy", "stretch", "not_larger", "not_smaller"),
}

// upsample converts Upsample (7-9) and Resize-10 to the newest Resize: the
// scales (an attribute before Upsample-9) are input 2, coordinates are
// asymmetric and nearest rounds down when upsampling and up when
// downsampling, as those versions did.
func upsample(c *nodeCtx) ([]graph.Output, error) {
	if err := enum("mode", "nearest", "linear")(c); err != nil {
		return nil, err
	}
	mode := c.attrs.String("mode", "nearest")
	var scales graph.Output
	var scaleVals []float64
	if c.n.opType == "Upsample" && c.version < 9 {
		s, ok := c.attrs["scales"].([]float32)
		if !ok {
			return nil, c.invalidf("required attribute \"scales\" is missing or not a list of floats")
		}
		scales = c.constF32("scales", s, false)
		for _, v := range s {
			scaleVals = append(scaleVals, float64(v))
		}
	} else {
		scales = c.input(1)
		if t, ok := constInput(c, 1); ok {
			scaleVals = float64s(t)
		}
	}
	if scales.Node == nil {
		return nil, c.invalidf("has no scales input")
	}
	attrs := graph.Attrs{"mode": mode, "coordinate_transformation_mode": "asymmetric"}
	if mode == "nearest" {
		down, up := false, false
		for _, s := range scaleVals {
			down = down || s < 1
			up = up || s > 1
		}
		if down && up {
			return nil, c.attrErrorf("scales", "mixed up- and downsampling with nearest mode is not supported")
		}
		attrs["nearest_mode"] = "floor"
		if down {
			attrs["nearest_mode"] = "ceil"
		}
	}
	return outputsOf(c.node("Resize", "", []graph.Output{c.input(0), {}, scales}, attrs, 1)), nil
}

// resize imports Resize 11+; empty roi and scales constants (how exporters
// spell "omitted" before opset 13) become omitted inputs, and roi is dropped
// unless the coordinate mode reads it.
func resize(c *nodeCtx) ([]graph.Output, error) {
	if err := runChecks(c, resizeModes); err != nil {
		return nil, err
	}
	inputs := append([]graph.Output{}, c.in...)
	for len(inputs) < 4 {
		inputs = append(inputs, graph.Output{})
	}
	if c.attrs.String("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize" {
		inputs[1] = graph.Output{}
	}
	for i := 1; i < 4; i++ {
		if t, ok := constInput(c, i); ok && t.NumElements() == 0 {
			inputs[i] = graph.Output{}
		}
	}
	for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
		inputs = inputs[:len(inputs)-1]
	}
	return outputsOf(c.node("Resize", "", inputs, c.attrs, 1)), nil
}

// float64s returns a constant's elements as float64 (nil for types
// without a plain numeric reading).
func float64s(t *tensor.Tensor) []float64 {
	t = t.Contiguous()
	out := make([]float64, 0, t.NumElements())
	switch t.Type() {
	case tensor.F32:
		for _, v := range t.F32() {
			out = append(out, float64(v))
		}
	case tensor.F64:
		out = append(out, t.F64()...)
	case tensor.I64:
		for _, v := range t.I64() {
			out = append(out, float64(v))
		}
	case tensor.I32:
		for _, v := range t.I32() {
			out = append(out, float64(v))
		}
	case tensor.Bool:
		for _, v := range t.Bool() {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case tensor.U8:
		for _, v := range t.U8() {
			out = append(out, float64(v))
		}
	default:
		return nil
	}
	return out
}

// legacyPRelu converts PRelu before opset 7, where a 1-D slope of size C
// applies along the channel axis (1), to numpy broadcasting by reshaping a
// constant slope to [C,1,...,1] when the input rank is known.
func legacyPRelu(c *nodeCtx) ([]graph.Output, error) {
	x, slope := c.input(0), c.input(1)
	if t, ok := constInput(c, 1); ok && t.Rank() == 1 && t.NumElements() > 1 && x.Valid() {
		if r := x.Shape().Rank(); r > 2 {
			shape := make(tensor.Shape, r-1)
			for i := range shape {
				shape[i] = 1
			}
			shape[0] = t.NumElements()
			if rt, err := t.Reshape(shape); err == nil {
				slope = c.constant("slope", rt.Clone())
			}
		}
	}
	return outputsOf(c.node("PRelu", "", []graph.Output{x, slope}, c.attrs, 1)), nil
}
