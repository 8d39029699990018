package clbackend

import (
	"slices"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// lowerFunc turns one node into launches of catalogue kernels (or a
// zero-copy alias) on the builder: it picks the catalogue entry, the type
// and shape defines and the arguments. Its outputs' values already exist;
// an op form it cannot run is an errUnsupported.
type lowerFunc func(b *builder, n *graph.Node) error

// lowering is the GPU's entry for one op: what only the GPU knows about it.
// What is true of the op on every device (host inputs, folding...) is in
// graph's op table.
type lowering struct {
	// lower emits the node's launches (lower_F.go for the op's family).
	lower lowerFunc
	// kernel is the catalogue entry of lowerings that launch one named
	// kernel per op (element-wise ops, reductions, softmax).
	kernel string
	// half is set when the lowering runs on f16 activations (stored as
	// half, computed in float, f32 accumulation in reductions and GEMM)
	// with INFERENCE_PRECISION_HINT=f16: fusion.ConvertPrecision wraps
	// every other op in Casts. f32 lists the inputs it still reads in f32.
	half bool
	f32  []int
	// check, when set, rejects from attributes alone the op forms no plan
	// can run ("" accepts), so that CompileModel reports them even when
	// planning waits for input values.
	check func(n *graph.Node) string
	// host, when set, says why the op has no kernel: the planner computes
	// it on the host, as its outputs fold before inference
	// (graph.OpSpec.Fold); a node whose inputs are not known then is
	// unsupported.
	host string
}

// lowerings is the GPU's op table, one entry per op of graph's op set
// (TestOpTableImplemented in tests/ checks that none is missing). The
// unary element-wise ops whose kernel is an operation macro of
// eltwise_unary.cl need no line: unaryOps adds them, so a new activation
// is its graph row, its CPU kernel and its macro.
func lowerings() map[string]lowering {
	loweringsOnce.Do(func() { loweringTable = buildLowerings() })
	return loweringTable
}

var (
	loweringsOnce sync.Once
	loweringTable map[string]lowering
)

func buildLowerings() map[string]lowering {
	t := map[string]lowering{}
	for op, k := range unaryOps() {
		s, _ := graph.Lookup(op)
		t[op] = lowering{lower: lowerUnary, kernel: k, half: s.Family != graph.FamilyCompare} // compare: bool outputs
	}
	alias := lowering{lower: lowerAlias, half: true}
	copies := func(f lowerFunc) lowering { return lowering{lower: f, half: true} } // kernels that move bits
	onHost := "a shape computation the planner folds on the host once shapes (and host inputs) are known"
	for op, l := range map[string]lowering{
		// eltwise (lower_eltwise.go)
		"Add": {lower: lowerBinary, kernel: "add", half: true}, "Sub": {lower: lowerBinary, kernel: "sub", half: true},
		"Mul": {lower: lowerBinary, kernel: "mul", half: true}, "Div": {lower: lowerBinary, kernel: "div", half: true},
		"Mod": {lower: lowerBinary, kernel: "mod"}, "Pow": {lower: lowerPow, half: true, f32: []int{1}},
		"Max": {lower: lowerVariadic, kernel: "max"}, "Min": {lower: lowerVariadic, kernel: "min"},
		"Sum": {lower: lowerVariadic, kernel: "add"}, "Mean": {lower: lowerVariadic, kernel: "add"},
		// activation (lower_activation.go)
		"Clip":    {lower: lowerClip, kernel: "clip", half: true, check: clipCheck},
		"PRelu":   {lower: lowerBinary, kernel: "prelu"},
		"Softmax": {lower: lowerSoftmax, kernel: "softmax", half: true}, "LogSoftmax": {lower: lowerSoftmax, kernel: "log_softmax", half: true},
		"Hardmax": {lower: lowerHardmax},
		// compare (lower_compare.go)
		"Equal": {lower: lowerBinary, kernel: "equal"}, "Less": {lower: lowerBinary, kernel: "less"},
		"Greater": {lower: lowerBinary, kernel: "greater"}, "LessOrEqual": {lower: lowerBinary, kernel: "less_equal"},
		"GreaterOrEqual": {lower: lowerBinary, kernel: "greater_equal"}, "And": {lower: lowerBinary, kernel: "and"},
		"Or": {lower: lowerBinary, kernel: "or"}, "Xor": {lower: lowerBinary, kernel: "xor"},
		"Where": copies(lowerWhere),
		// movement (lower_movement.go)
		"Reshape": alias, "Flatten": alias, "Squeeze": alias, "Unsqueeze": alias, "Identity": alias,
		"Transpose": copies(lowerTranspose), "Slice": copies(lowerSlice), "Concat": copies(lowerConcat),
		"Split": copies(lowerSplit), "Expand": copies(lowerExpand), "Tile": copies(lowerTile),
		"DepthToSpace": copies(lowerSpaceDepth), "SpaceToDepth": copies(lowerSpaceDepth),
		"Pad": {lower: lowerPad}, "Trilu": {lower: lowerTrilu}, "Dropout": {lower: lowerDropout},
		// index (lower_index.go)
		"Gather": copies(lowerGather), "GatherElements": copies(lowerGatherElements), "GatherND": {lower: lowerGatherND},
		"ScatterElements": {lower: lowerScatterElements}, "ScatterND": {lower: lowerScatterND}, "OneHot": {lower: lowerOneHot},
		// reduce (lower_reduce.go)
		"ReduceMean": {lower: lowerReduce, kernel: "reduce_mean", half: true}, "ReduceSum": {lower: lowerReduce, kernel: "reduce_sum", half: true},
		"ReduceMax": {lower: lowerReduce, kernel: "reduce_max", half: true}, "ReduceMin": {lower: lowerReduce, kernel: "reduce_min", half: true},
		"ReduceProd": {lower: lowerReduce, kernel: "reduce_prod", half: true}, "ReduceL1": {lower: lowerReduce, kernel: "reduce_l1", half: true},
		"ReduceL2": {lower: lowerReduce, kernel: "reduce_l2", half: true}, "ReduceSumSquare": {lower: lowerReduce, kernel: "reduce_sum_square", half: true},
		"ReduceLogSumExp": {lower: lowerReduce, kernel: "reduce_log_sum_exp", half: true},
		"ArgMax":          {lower: lowerArgReduce, kernel: "arg_max"}, "ArgMin": {lower: lowerArgReduce, kernel: "arg_min"},
		"TopK": {lower: lowerTopK}, "CumSum": {lower: lowerCumSum},
		// conv (lower_conv.go, lower_conv_blocked.go)
		"Conv": {lower: lowerConvAnyRank, half: true}, "ConvTranspose": {lower: lowerConvAnyRank, half: true},
		graph.OpFusedConv: {lower: lowerFusedConv, half: true},
		// pool (lower_pool.go): the global pools are reductions.
		"MaxPool": {lower: lowerPool, half: true}, "AveragePool": {lower: lowerPool, half: true},
		"GlobalAveragePool": {lower: lowerGlobalPool, kernel: "reduce_mean", half: true},
		"GlobalMaxPool":     {lower: lowerGlobalPool, kernel: "reduce_max", half: true},
		// norm (lower_norm.go): LayerNormalization's statistics stay f32.
		"BatchNormalization": {lower: lowerBatchNorm, half: true}, "InstanceNormalization": {lower: lowerInstanceNorm, half: true},
		"LayerNormalization": {lower: lowerLayerNorm, half: true},
		// gemm (lower_gemm.go)
		"MatMul": {lower: lowerMatMul, half: true}, "Gemm": {lower: lowerGemm, half: true},
		graph.OpFullyConnected: {lower: lowerFullyConnected, half: true},
		// resize (lower_resize.go): f16 data, f32 tap weights; roi and scales stay f32.
		"Resize": {lower: lowerResize, half: true, f32: []int{1, 2}, check: resizeStaticCheck},
		// cast (lower_cast.go)
		"Cast": {lower: lowerCast}, "CastLike": {lower: lowerCast},
		// shape (lower_shape.go)
		"Shape": {host: onHost, half: true}, "Size": {host: onHost, half: true},
		"ConstantOfShape": {host: onHost}, "Range": {host: onHost}, "EyeLike": {lower: lowerEyeLike},
		// kernelfusion (lower_kernelfusion.go): every declared kernel fusion;
		// its kernel is written with half.clh.
		graph.OpKernelFusion: {lower: lowerKernelFusion, half: true},
	} {
		t[op] = l
	}
	return t
}

// unaryOps maps each single-input op of the eltwise, activation and
// compare families whose name, in snake case, is an operation macro of
// eltwise_unary.cl ("LeakyRelu": "leaky_relu") to that catalogue entry.
var unaryOps = sync.OnceValue(func() map[string]string {
	t := map[string]string{}
	for _, op := range graph.OpTypes() {
		s, _ := graph.Lookup(op)
		switch s.Family {
		case graph.FamilyEltwise, graph.FamilyActivation, graph.FamilyCompare:
		default:
			continue
		}
		if k := snakeCase(op); s.MaxInputs == 1 && slices.Contains(kernels.UnaryOps(), k) {
			t[op] = k
		}
	}
	return t
})

// snakeCase is an op type in snake case: a word starts at each capital
// that follows a lower-case letter or starts a capitalised word after a
// run of capitals ("ThresholdedRelu": "thresholded_relu", "GatherND":
// "gather_nd"), and a last single capital joins its word ("IsNaN":
// "is_nan").
func snakeCase(op string) string {
	var words []string
	start := 0
	for i := 1; i < len(op); i++ {
		c, prev := op[i], op[i-1]
		upper := c >= 'A' && c <= 'Z'
		prevUpper := prev >= 'A' && prev <= 'Z'
		nextLower := i+1 < len(op) && op[i+1] >= 'a' && op[i+1] <= 'z'
		if upper && (!prevUpper || nextLower) && i+1 < len(op) {
			words = append(words, op[start:i])
			start = i
		}
	}
	words = append(words, op[start:])
	return strings.ToLower(strings.Join(words, "_"))
}

// clipCheck rejects a Clip of an element type neither kernel path takes.
func clipCheck(n *graph.Node) string {
	if len(n.Inputs) > 0 && n.Inputs[0].Valid() && !clipTypeOK(n.Inputs[0].Type()) {
		return "element type " + n.Inputs[0].Type().String()
	}
	return ""
}

// halfPolicy is the GPU's fusion.PrecisionPolicy for f16: the ops whose
// lowering runs on f16 values, and the inputs each keeps in f32.
func halfPolicy(n *graph.Node) (bool, []int) {
	l, ok := lowerings()[n.OpType]
	return ok && l.half, l.f32
}

// clType is the OpenCL C type kernels compute t in ("" if none).
func clType(t tensor.ElementType) string {
	switch t {
	case tensor.F32:
		return "float"
	case tensor.I32:
		return "int"
	case tensor.I64:
		return "long"
	case tensor.Bool, tensor.U8:
		return "uchar"
	case tensor.I8:
		return "char"
	case tensor.I16:
		return "short"
	}
	return ""
}

// bitsType is an unsigned OpenCL type of t's size, for kernels that move
// bits.
func bitsType(t tensor.ElementType) string {
	switch t.Size() {
	case 1:
		return "uchar"
	case 2:
		return "ushort"
	case 4:
		return "uint"
	}
	return "ulong"
}

// strides returns the contiguous element strides of s.
func strides(s tensor.Shape) []int64 { return tensor.ContiguousStrides(s) }

// broadcastMeta describes out = op(ins...) with numpy broadcasting as the
// table the broadcast kernels read: rank, dims, then the element strides
// of every input (0 on broadcast axes), with adjacent axes merged where
// every input allows.
func broadcastMeta(out tensor.Shape, ins ...tensor.Shape) []int64 {
	r := len(out)
	dims := append([]int64(nil), out...)
	st := make([][]int64, len(ins))
	for i, s := range ins {
		cs := strides(s)
		st[i] = make([]int64, r)
		for d := 0; d < r; d++ {
			j := d - (r - len(s))
			if j >= 0 && s[j] != 1 {
				st[i][d] = cs[j]
			}
		}
	}
	// Merge axis d into d-1 where each input's strides chain.
	for d := r - 1; d > 0; d-- {
		ok := true
		for i := range st {
			if st[i][d-1] != st[i][d]*dims[d] {
				ok = false
				break
			}
		}
		if ok {
			dims[d-1] *= dims[d]
			dims = append(dims[:d], dims[d+1:]...)
			for i := range st {
				st[i] = append(st[i][:d-1], st[i][d:]...)
			}
		}
	}
	if len(dims) == 0 {
		dims = []int64{1}
		for i := range st {
			st[i] = []int64{0}
		}
	}
	m := []int64{int64(len(dims))}
	m = append(m, dims...)
	for i := range st {
		m = append(m, st[i]...)
	}
	return m
}

// uniformFloat fails unless every present input of n is f32, or every one
// f16 (f16 activations: fusion.ConvertPrecision lowers weights too); it
// returns the kernel's half define (" -DHALF" for f16, see halfDefine).
func (b *builder) uniformFloat(n *graph.Node) (string, error) {
	want := tensor.F32
	if b.isHalf(b.in(n, 0)) {
		want = tensor.F16
	}
	for i := range n.Inputs {
		if v := b.in(n, i); v >= 0 && b.val(v).typ != want {
			return "", errUnsupported(n, "input %d of type %s (the GPU kernel takes f32, or f16 throughout)", i, b.val(v).typ)
		}
	}
	return b.halfDefine(b.in(n, 0)), nil
}

// allF32 fails unless every present input of n is f32.
func (b *builder) allF32(n *graph.Node) error {
	for i := range n.Inputs {
		if v := b.in(n, i); v >= 0 && b.val(v).typ != tensor.F32 {
			return errUnsupported(n, "input %d of type %s (the GPU kernel takes f32)", i, b.val(v).typ)
		}
	}
	return nil
}

// normAxis returns axis counted from the front of a rank-r shape.
func normAxis(axis int64, r int) int64 {
	if axis < 0 {
		axis += int64(r)
	}
	return axis
}

// prod is the product of dims (1 for none).
func prod(dims []int64) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= d
	}
	return p
}

// fp64Extension is the OpenCL extension f64 kernels need.
const fp64Extension = "cl_khr_fp64"

// numType returns the OpenCL C type kernels compute element type t in: the
// types of clType, and double for f64 on a device with cl_khr_fp64. Any
// other type is an errUnsupported; for f64 on a device without the
// extension it names the extension and the device.
func (b *builder) numType(n *graph.Node, t tensor.ElementType) (string, error) {
	if t == tensor.F64 {
		if !b.c.dev.fp64 {
			return "", errUnsupported(n, "element type f64 needs the OpenCL extension %s, which %s (%s) does not report; run the model on the CPU device or with HETERO:GPU,CPU",
				fp64Extension, b.c.dev.name(), b.c.dev.fullName)
		}
		return "double", nil
	}
	if s := clType(t); s != "" {
		return s, nil
	}
	return "", errUnsupported(n, "element type %s", t)
}

// floatDefines returns the type defines of a kernel written for f32 that
// also builds for f64 with -DT=double and for f16 storage with -DHALF
// (half.clh): "" for f32.
func (b *builder) floatDefines(n *graph.Node, t tensor.ElementType) (string, error) {
	switch t {
	case tensor.F32:
		return "", nil
	case tensor.F16:
		return "-DHALF", nil
	case tensor.F64:
		if _, err := b.numType(n, t); err != nil {
			return "", err
		}
		return "-DT=double", nil
	}
	return "", errUnsupported(n, "element type %s (the GPU kernel takes f32, f16, and f64 where the device has %s)", t, fp64Extension)
}

// OpSupport is how the GPU device runs one op type of graph's op set.
type OpSupport struct {
	// Kernels is set when the op has a lowering onto catalogue kernels.
	Kernels bool
	// Half is set when that lowering runs on f16 activations with
	// INFERENCE_PRECISION_HINT=f16.
	Half bool
	// Host, for an op without a lowering, says why: the planner computes
	// it on the host.
	Host string
}

// Ops returns how the GPU device runs each op type it knows; CompileModel
// refuses a node of any other op type with plugin.ErrUnsupported.
func Ops() map[string]OpSupport {
	out := map[string]OpSupport{}
	for op, l := range lowerings() {
		out[op] = OpSupport{Kernels: l.lower != nil, Half: l.half && l.lower != nil, Host: l.host}
	}
	return out
}
