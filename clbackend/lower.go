package clbackend

import (
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels/gen"
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
	// count, for a data-sized op (graph.OpSpec.DataSized) whose output
	// size is not known at plan time, emits the launches that compute that
	// size on the device and returns the value (one i32) that holds it;
	// lower then runs in the plan's continuation, where the size is known
	// (plan_sizes.go), and reads what count left for it with auxOf.
	count func(b *builder, n *graph.Node) (int, error)
	// host, when set, says why the op has no kernel: the planner computes
	// it on the host, as its outputs fold before inference
	// (graph.OpSpec.Fold); a node whose inputs are not known then is
	// unsupported.
	host string
	// noF64 is set when the op's kernels compute in f32 only (float math
	// with no f64 form yet): the GPU refuses f64 tensors on it, QueryModel
	// says so, and HETERO places such nodes on the CPU.
	noF64 bool
	// hostPart, when set, says why the op runs in a host part of the model
	// at inference time (see hostPartReason): ops on strings, sequences
	// and optionals, which have no device form.
	hostPart string
}

// lowerings is the GPU's op table, one entry per op of graph's op set
// (TestOpTableImplemented in tests/ checks that none is missing), merged
// from the families' tables in lower_F.go (eltwiseLowerings in
// lower_eltwise.go...), each next to its lowerings. The unary element-wise
// ops whose kernel is an operation macro of eltwise_unary.cl need no line:
// unaryOps adds them, so a new activation is its graph row, its CPU kernel
// and its macro.
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
	for _, family := range []map[string]lowering{
		eltwiseLowerings(), bitLowerings(), activationLowerings(), compareLowerings(), movementLowerings(), cropLowerings(), indexLowerings(),
		reduceLowerings(), convLowerings(), col2ImLowerings(), poolLowerings(), normLowerings(), normStatsLowerings(), gemmLowerings(), detLowerings(), resizeLowerings(), affineLowerings(),
		castLowerings(), shapeLowerings(), compactLowerings(), colorLowerings(), detectionLowerings(), signalLowerings(), windowLowerings(), quantLowerings(),
		kernelFusionLowerings(),
		controlLowerings(),
		recurrentLowerings(), lossLowerings(), sequenceLowerings(), randomLowerings(), stringLowerings(),
	} {
		for op, l := range family {
			t[op] = l // an explicit entry wins over unaryOps (Clip, Identity)
		}
	}
	return t
}

// unaryOps maps each single-input op whose kernel is an operation macro
// of eltwise_ops.clh to its catalogue entry of eltwise_unary.cl
// ("LeakyRelu": "leaky_relu"): gen.UnaryKernels, which generated chains
// print the same macros by.
var unaryOps = gen.UnaryKernels

// copies is the entry of a lowering whose kernels move bits: any element
// type, f16 activations included.
func copies(f lowerFunc) lowering { return lowering{lower: f, half: true} }

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
	case tensor.Bool, tensor.U8, tensor.U4:
		return "uchar"
	case tensor.I8, tensor.I4:
		return "char"
	case tensor.I16:
		return "short"
	case tensor.U16:
		return "ushort"
	case tensor.U32:
		return "uint"
	case tensor.U64:
		return "ulong"
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
	// Axes of size 1 move no element: drop them, so that the kernels
	// see fewer axes (a channel gate [N,C,1,1] over [1,C,H,W] is rank 2).
	for d := len(dims) - 1; d >= 0 && len(dims) > 1; d-- {
		if dims[d] == 1 {
			dims = append(dims[:d], dims[d+1:]...)
			for i := range st {
				st[i] = append(st[i][:d], st[i][d+1:]...)
			}
		}
	}
	r = len(dims)
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
	return b.floatDefinesAs(n, t, "-DT=double")
}

// floatDefinesAs returns the type defines of a kernel written for f32 that
// also builds for f16 storage with -DHALF and for f64 with f64 (the
// kernel's own define: -DT=double, or -DDOUBLE for half.clh's f64 block)
// where the device has doubles: "" for f32.
func (b *builder) floatDefinesAs(n *graph.Node, t tensor.ElementType, f64 string) (string, error) {
	switch t {
	case tensor.F32:
		return "", nil
	case tensor.F16:
		return "-DHALF", nil
	case tensor.F64:
		if _, err := b.numType(n, t); err != nil {
			return "", err
		}
		return f64, nil
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
	// HostPart, for an op without a lowering, says why the planner places
	// it in a host part of the model at inference time.
	HostPart string
}

// Ops returns how the GPU device runs each op type it knows; CompileModel
// refuses a node of any other op type with driver.ErrUnsupported.
func Ops() map[string]OpSupport {
	out := map[string]OpSupport{}
	for op, l := range lowerings() {
		out[op] = OpSupport{Kernels: l.lower != nil, Half: l.half && l.lower != nil, Host: l.host, HostPart: l.hostPart}
	}
	return out
}
