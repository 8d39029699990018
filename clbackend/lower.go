package clbackend

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerFunc turns one node into launches of catalogue kernels (or a
// zero-copy alias) on the builder: it picks the catalogue entry, the type
// and shape defines and the arguments. Its outputs' values already exist;
// an op form it cannot run is an errUnsupported.
type lowerFunc func(b *builder, n *graph.Node) error

// lowerings is the op -> lowering table: adding a GPU op is one .cl file
// (or entry) in package kernels and one entry here.
var lowerings = sync.OnceValue(func() map[string]lowerFunc {
	t := map[string]lowerFunc{}
	for op := range unaryOps {
		t[op] = lowerUnary
	}
	for op := range binaryOps {
		t[op] = lowerBinary
	}
	for _, op := range []string{"Max", "Min", "Sum", "Mean"} {
		t[op] = lowerVariadic
	}
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"} {
		t[op] = lowerAlias
	}
	for op, f := range map[string]lowerFunc{
		"Where": lowerWhere, "Cast": lowerCast, "Transpose": lowerTranspose, "Slice": lowerSlice,
		"Concat": lowerConcat, "Split": lowerSplit, "Expand": lowerExpand, "Tile": lowerTile,
		"Gather": lowerGather, "Pad": lowerPad,
		"ReduceMean": lowerReduce, "ReduceSum": lowerReduce, "ReduceMax": lowerReduce, "ReduceMin": lowerReduce,
		"ReduceProd": lowerReduce, "ReduceSumSquare": lowerReduce, "ReduceL1": lowerReduce, "ReduceL2": lowerReduce,
		"ReduceLogSumExp": lowerReduce, "ArgMax": lowerArgReduce, "ArgMin": lowerArgReduce,
		"GatherElements": lowerGatherElements, "Trilu": lowerTrilu, "CumSum": lowerCumSum,
		"DepthToSpace": lowerSpaceDepth, "SpaceToDepth": lowerSpaceDepth,
		"GlobalAveragePool": lowerGlobalPool, "GlobalMaxPool": lowerGlobalPool,
		"Softmax": lowerSoftmax, "LogSoftmax": lowerSoftmax, "MatMul": lowerMatMul, "Gemm": lowerGemm,
		"Conv": lowerConvAnyRank, "ConvTranspose": lowerConvAnyRank, "MaxPool": lowerPool, "AveragePool": lowerPool,
		"BatchNormalization": lowerBatchNorm, "InstanceNormalization": lowerInstanceNorm,
		"LayerNormalization": lowerLayerNorm, "Resize": lowerResize,
		// lower_types.go, lower_more.go, lower_resize.go, lower_pool.go:
		"CastLike": lowerCast, "Pow": lowerPow, "Clip": lowerClip, "Dropout": lowerDropout, "EyeLike": lowerEyeLike,
		"Hardmax": lowerHardmax, "TopK": lowerTopK, "OneHot": lowerOneHot, "GatherND": lowerGatherND,
		"ScatterElements": lowerScatterElements, "ScatterND": lowerScatterND,
		graph.OpFusedConv: lowerFusedConv, graph.OpFullyConnected: lowerFullyConnected,
		graph.OpKernelFusion: lowerKernelFusion, // lower_kernelfusion.go: every declared kernel fusion
	} {
		t[op] = f
	}
	return t
})

// staticChecks reject, from attributes alone, op forms no plan can run, so
// that CompileModel reports them even when planning waits for input values.
var staticChecks = map[string]func(n *graph.Node) string{
	"Resize": resizeStaticCheck, // lower_resize.go
	"Clip": func(n *graph.Node) string {
		return cond(len(n.Inputs) > 0 && n.Inputs[0].Valid() && !clipTypeOK(n.Inputs[0].Type()), "element type "+n.Inputs[0].Type().String())
	},
}

func cond(b bool, why string) string {
	if b {
		return why
	}
	return ""
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

// unaryOps maps an ONNX unary op to its catalogue entry.
var unaryOps = map[string]string{
	"Relu": "relu", "LeakyRelu": "leaky_relu", "Sigmoid": "sigmoid", "Tanh": "tanh",
	"HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish", "Clip": "clip", "Elu": "elu",
	"Selu": "selu", "Celu": "celu", "Gelu": "gelu", "Mish": "mish", "Softplus": "softplus",
	"Softsign": "softsign", "ThresholdedRelu": "thresholded_relu", "Sqrt": "sqrt", "Exp": "exp",
	"Log": "log", "Erf": "erf", "Reciprocal": "reciprocal", "Neg": "neg", "Abs": "abs",
	"Sign": "sign", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sin": "sin", "Cos": "cos",
	"Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
	"Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Shrink": "shrink", "IsNaN": "is_nan", "IsInf": "is_inf",
	"Not": "not",
}

func lowerUnary(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	name := unaryOps[n.OpType]
	var p0, p1 float32
	a := n.Attrs
	switch n.OpType {
	case "LeakyRelu":
		p0 = a.Float("alpha", 0.01)
	case "HardSigmoid":
		p0, p1 = a.Float("alpha", 0.2), a.Float("beta", 0.5)
	case "Elu", "Celu", "ThresholdedRelu":
		p0 = a.Float("alpha", 1)
	case "Selu":
		p0, p1 = a.Float("alpha", 1.67326319217681884765625), a.Float("gamma", 1.05070102214813232421875)
	case "Shrink":
		p0, p1 = a.Float("lambd", 0.5), a.Float("bias", 0)
	case "IsInf":
		p0, p1 = float32(a.Int("detect_positive", 1)), float32(a.Int("detect_negative", 1))
	case "Gelu":
		if a.String("approximate", "none") == "tanh" {
			name = "gelu_tanh"
		}
	case "Clip":
		p0, p1 = float32(math.Inf(-1)), float32(math.Inf(1))
		for i, p := range []*float32{&p0, &p1} {
			v := b.in(n, i+1)
			if v < 0 {
				continue
			}
			f, ok := b.hostFloat(v)
			if !ok {
				return errUnsupported(n, "Clip bound %d is not known at plan time", i+1)
			}
			*p = float32(f)
		}
	}
	defines := "-DT=float"
	switch {
	case t == tensor.F32 && (n.OpType == "IsNaN" || n.OpType == "IsInf"):
		defines += " -DTO=uchar"
	case t == tensor.F32:
	case t == tensor.F16 && b.val(y).typ == tensor.F16:
		defines += " -DHALF" // f16 storage, float math
	case n.OpType == "Not" && t == tensor.Bool:
		defines = "-DT=uchar"
	case (n.OpType == "Neg" || n.OpType == "Abs" || n.OpType == "Sign") && clType(t) != "" && t != tensor.Bool:
		defines = "-DT=" + clType(t) + " -DIS_INT"
	default:
		return errUnsupported(n, "element type %s (the GPU kernel takes f32)", t)
	}
	cnt := int64(b.val(y).shape.NumElements())
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(y), uint64(cnt), p0, p1)
}

// binaryOps maps an ONNX binary op to its catalogue entry.
var binaryOps = map[string]string{
	"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Mod": "mod",
	"PRelu": "prelu", "Equal": "equal", "Less": "less", "Greater": "greater",
	"LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal", "And": "and", "Or": "or", "Xor": "xor",
}

// binary emits out = name(a, b) with broadcasting.
func (b *builder) binary(n *graph.Node, name string, x, y, out int) error {
	defines, err := b.binaryDefines(n, name, b.val(x).typ, b.val(y).typ, b.val(out).typ) // lower_types.go
	if err != nil {
		return err
	}
	os := b.val(out).shape
	m := b.meta(broadcastMeta(os, b.val(x).shape, b.val(y).shape))
	cnt := os.NumElements()
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
}

func lowerBinary(b *builder, n *graph.Node) error {
	return b.binary(n, binaryOps[n.OpType], b.in(n, 0), b.in(n, 1), b.out(n, 0))
}

// lowerVariadic chains Max, Min, Sum and Mean pairwise through
// temporaries; Mean scales the sum at the end.
func lowerVariadic(b *builder, n *graph.Node) error {
	name := map[string]string{"Max": "max", "Min": "min", "Sum": "add", "Mean": "add"}[n.OpType]
	out := b.out(n, 0)
	ot := b.val(out)
	if len(n.Inputs) == 1 && n.OpType != "Mean" {
		return b.copyBroadcast(n, b.in(n, 0), out)
	}
	acc := b.in(n, 0)
	k := len(n.Inputs)
	for i := 1; i < k; i++ {
		dst := out
		if i < k-1 || n.OpType == "Mean" {
			dst = b.temp(ot.typ, ot.shape)
		}
		if err := b.binary(n, name, acc, b.in(n, i), dst); err != nil {
			return err
		}
		acc = dst
	}
	if n.OpType == "Mean" {
		if ot.typ != tensor.F32 {
			return errUnsupported(n, "Mean of %s", ot.typ)
		}
		s, _ := tensor.FromF32(tensor.Shape{}, []float32{1 / float32(k)})
		sv := b.newValue(tensor.F32, tensor.Shape{}, s)
		if k == 1 {
			return b.binary(n, "mul", b.in(n, 0), sv, out)
		}
		return b.binary(n, "mul", acc, sv, out)
	}
	return nil
}

func lowerAlias(b *builder, n *graph.Node) error {
	b.alias(b.out(n, 0), b.in(n, 0))
	return nil
}

func lowerWhere(b *builder, n *graph.Node) error {
	c, x, y, out := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	os := b.val(out).shape
	m := b.meta(broadcastMeta(os, b.val(c).shape, b.val(x).shape, b.val(y).shape))
	cnt := os.NumElements()
	return b.emit(n, "where", "-DT="+bitsType(b.val(out).typ), cnt, slotArg(c), slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
}

// collapseView drops the unit dims of a strided copy and merges each dim
// into the one before it where both views step over it as one run (outer
// stride = inner stride * inner dim), so that a copy of dense blocks
// (Concat, Split, Slice of leading axes) has rank 1 and the kernel does no
// index division.
func collapseView(dims, sst, dstr []int64) (d, s, t []int64) {
	for i, n := range dims {
		if n == 1 {
			continue
		}
		if k := len(d) - 1; k >= 0 && s[k] == sst[i]*n && t[k] == dstr[i]*n {
			d[k] *= n
			s[k], t[k] = sst[i], dstr[i]
			continue
		}
		d, s, t = append(d, n), append(s, sst[i]), append(t, dstr[i])
	}
	return d, s, t
}

// copyView emits a strided copy: iteration dims, source strides and
// offset, destination strides and offset, in elements.
func (b *builder) copyView(n *graph.Node, src, dst int, dims, sst []int64, soff int64, dstr []int64, doff int64) error {
	cnt := int64(1)
	for _, d := range dims {
		cnt *= d
	}
	dims, sst, dstr = collapseView(dims, sst, dstr)
	m := []int64{int64(len(dims))}
	m = append(m, dims...)
	m = append(m, sst...)
	m = append(m, dstr...)
	m = append(m, soff, doff)
	if len(dims) == 0 {
		m = []int64{1, 1, 0, 0, soff, doff}
	}
	return b.emit(n, "strided_copy", "-DT="+bitsType(b.val(dst).typ), cnt, slotArg(src), slotArg(dst), uint64(cnt), b.meta(m))
}

// copyBroadcast copies src into dst, broadcasting (Expand).
func (b *builder) copyBroadcast(n *graph.Node, src, dst int) error {
	os := b.val(dst).shape
	m := broadcastMeta(os, b.val(src).shape)
	r := int(m[0])
	dims, sst := m[1:1+r], m[1+r:1+2*r]
	return b.copyView(n, src, dst, dims, sst, 0, strides(tensor.Shape(dims)), 0)
}

func lowerExpand(b *builder, n *graph.Node) error {
	return b.copyBroadcast(n, b.in(n, 0), b.out(n, 0))
}

func lowerTranspose(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	perm := n.Attrs.Ints("perm", nil)
	if perm == nil {
		for i := len(is) - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	ist := strides(is)
	os := b.val(y).shape
	sst := make([]int64, len(perm))
	for d, p := range perm {
		sst[d] = ist[p]
	}
	return b.copyView(n, x, y, os, sst, 0, strides(os), 0)
}

func lowerSlice(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	r := int64(len(is))
	starts, ok1 := b.hostInts(b.in(n, 1))
	ends, ok2 := b.hostInts(b.in(n, 2))
	if !ok1 || !ok2 {
		return errUnsupported(n, "Slice starts/ends not known at plan time")
	}
	axes := make([]int64, len(starts))
	for i := range axes {
		axes[i] = int64(i)
	}
	if v := b.in(n, 3); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "Slice axes not known at plan time")
		}
		axes = a
	}
	steps := make([]int64, len(starts))
	for i := range steps {
		steps[i] = 1
	}
	if v := b.in(n, 4); v >= 0 {
		s, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "Slice steps not known at plan time")
		}
		steps = s
	}
	ist := strides(is)
	sst := append([]int64(nil), ist...)
	var off int64
	for i, ax := range axes {
		if ax < 0 {
			ax += r
		}
		dim, st, step := is[ax], starts[i], steps[i]
		if st < 0 {
			st += dim
		}
		if step > 0 {
			st = min(max(st, 0), dim)
		} else {
			st = min(max(st, 0), dim-1)
		}
		off += st * ist[ax]
		sst[ax] = ist[ax] * step
	}
	_ = ends
	os := b.val(y).shape
	if os.NumElements() == 0 {
		return nil
	}
	return b.copyView(n, x, y, os, sst, off, strides(os), 0)
}

func lowerConcat(b *builder, n *graph.Node) error {
	y := b.out(n, 0)
	os := b.val(y).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(os))
	}
	ost := strides(os)
	var at int64
	for i := range n.Inputs {
		x := b.in(n, i)
		is := b.val(x).shape
		if is.NumElements() > 0 {
			if err := b.copyView(n, x, y, is, strides(is), 0, ost, at*ost[ax]); err != nil {
				return err
			}
		}
		at += is[ax]
	}
	return nil
}

func lowerSplit(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	is := b.val(x).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	ist := strides(is)
	var at int64
	for i := range n.Outputs {
		y := b.out(n, i)
		os := b.val(y).shape
		if os.NumElements() > 0 {
			if err := b.copyView(n, x, y, os, ist, at*ist[ax], strides(os), 0); err != nil {
				return err
			}
		}
		at += os[ax]
	}
	return nil
}

func lowerTile(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is, os := b.val(x).shape, b.val(y).shape
	ist, ost := strides(is), strides(os)
	var dims, sst, dst []int64
	for d := range is {
		rep := os[d] / max(is[d], 1)
		dims = append(dims, rep, is[d])
		sst = append(sst, 0, ist[d])
		dst = append(dst, is[d]*ost[d], ost[d])
	}
	if os.NumElements() == 0 {
		return nil
	}
	return b.copyView(n, x, y, dims, sst, 0, dst, 0)
}

func lowerGather(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	is := b.val(x).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	it := b.val(idx).typ
	if it != tensor.I64 && it != tensor.I32 {
		return errUnsupported(n, "indices of type %s", it)
	}
	inner := int64(1)
	for _, d := range is[ax+1:] {
		inner *= d
	}
	cnt := b.val(y).shape.NumElements()
	nidx := max(b.val(idx).shape.NumElements(), 1)
	return b.emit(n, "gather", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+clType(it), cnt,
		slotArg(x), slotArg(idx), slotArg(y), uint64(cnt), uint64(inner), uint64(is[ax]), uint64(nidx))
}

func lowerPad(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is, os := b.val(x).shape, b.val(y).shape
	t := b.val(x).typ
	if clType(t) == "" || t == tensor.I8 || t == tensor.I16 {
		return errUnsupported(n, "element type %s", t)
	}
	r := int64(len(is))
	pads, ok := b.hostInts(b.in(n, 1))
	if !ok {
		return errUnsupported(n, "pads not known at plan time")
	}
	axes := make([]int64, r)
	for i := range axes {
		axes[i] = int64(i)
	}
	if v := b.in(n, 3); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "axes not known at plan time")
		}
		axes = a
	}
	begin := make([]int64, r)
	for i, ax := range axes {
		if ax < 0 {
			ax += r
		}
		begin[ax] = pads[i]
	}
	var value float64
	if v := b.in(n, 2); v >= 0 {
		f, ok := b.hostFloat(v)
		if !ok && b.val(v).shape.NumElements() > 0 {
			return errUnsupported(n, "constant_value not known at plan time")
		}
		value = f
	}
	mode := map[string]int32{"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}[n.Attrs.String("mode", "constant")]
	m := []int64{r}
	m = append(m, os...)
	m = append(m, is...)
	m = append(m, strides(is)...)
	m = append(m, begin...)
	cnt := os.NumElements()
	return b.emit(n, "pad", "-DT="+clType(t), cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), mode, float32(value))
}

// reduce emits out = op over axes of x (axes normalised, sorted or not).
func (b *builder) reduce(n *graph.Node, name string, x, out int, axes []int64) error {
	is := b.val(x).shape
	defines, err := b.floatDefines(n, b.val(x).typ) // f32, or f64 with cl_khr_fp64
	if err != nil {
		return err
	}
	red := make([]bool, len(is))
	for _, a := range axes {
		if a < 0 {
			a += int64(len(is))
		}
		red[a] = true
	}
	ist := strides(is)
	var kd, ks, rd, rs []int64
	count := int64(1)
	for d := range is {
		if red[d] {
			count *= is[d]
		}
		// Adjacent axes of the same kind merge into one (the input is
		// dense, so the outer stride is the inner one times its dim).
		if d > 0 && red[d] == red[d-1] {
			if red[d] {
				rd[len(rd)-1] *= is[d]
				rs[len(rs)-1] = ist[d]
			} else {
				kd[len(kd)-1] *= is[d]
				ks[len(ks)-1] = ist[d]
			}
			continue
		}
		if red[d] {
			rd, rs = append(rd, is[d]), append(rs, ist[d])
		} else {
			kd, ks = append(kd, is[d]), append(ks, ist[d])
		}
	}
	m := []int64{int64(len(kd))}
	m = append(m, kd...)
	m = append(m, ks...)
	m = append(m, int64(len(rd)))
	m = append(m, rd...)
	m = append(m, rs...)
	m = append(m, count)
	cnt := b.val(out).shape.NumElements()
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(out), uint64(cnt), b.meta(m))
}

func lowerReduce(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	var axes []int64
	if v := b.in(n, 1); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok {
			return errUnsupported(n, "axes not known at plan time")
		}
		axes = a
	}
	if len(axes) == 0 {
		if n.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			b.alias(y, x)
			return nil
		}
		for d := range b.val(x).shape {
			axes = append(axes, int64(d))
		}
	}
	name := map[string]string{"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max", "ReduceMin": "reduce_min",
		"ReduceProd": "reduce_prod", "ReduceSumSquare": "reduce_sum_square", "ReduceL1": "reduce_l1", "ReduceL2": "reduce_l2",
		"ReduceLogSumExp": "reduce_log_sum_exp"}[n.OpType]
	return b.reduce(n, name, x, y, axes)
}

func lowerGlobalPool(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	var axes []int64
	for d := 2; d < len(b.val(x).shape); d++ {
		axes = append(axes, int64(d))
	}
	name := "reduce_mean"
	if n.OpType == "GlobalMaxPool" {
		name = "reduce_max"
	}
	return b.reduce(n, name, x, b.out(n, 0), axes)
}

func lowerSoftmax(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if t := b.val(x).typ; t != tensor.F32 && t != tensor.F16 {
		return errUnsupported(n, "element type %s", t)
	}
	ax := n.Attrs.Int("axis", -1)
	if ax < 0 {
		ax += int64(len(s))
	}
	outer, inner := int64(1), int64(1)
	for d, v := range s {
		switch {
		case int64(d) < ax:
			outer *= v
		case int64(d) > ax:
			inner *= v
		}
	}
	name := "softmax"
	if n.OpType == "LogSoftmax" {
		name = "log_softmax"
	}
	var axisLen int64 = 1
	if len(s) > 0 {
		axisLen = s[ax]
	}
	cnt := outer * inner
	if s.NumElements() == 0 {
		return nil
	}
	return b.emit(n, name, b.halfDefine(x), cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(axisLen), uint64(inner))
}

// gemm emits out = alpha * A.B + beta * C over broadcast batches; the
// geometry is M, N, K with A, B and C (row, k/col) strides, and batch dims
// with per-input batch strides.
type gemmGeom struct {
	M, N, K                        int64
	aRow, aK, bK, bCol, cRow, cCol int64
	hasC                           bool
	batch, aBatch, bBatch, cBatch  []int64
}

// gemm emits out = alpha * A.B + beta * C for geometry g (C is optional:
// c < 0) on f32 data, or f16 throughout (INFERENCE_PRECISION_HINT=f16; the
// kernels are built with halfDefine(out)).
func (b *builder) gemm(n *graph.Node, a, bb, c, out int, g gemmGeom, alpha, beta float32) error {
	if !b.sameFloat(out, a, bb, c) {
		for _, v := range []int{a, bb, c, out} {
			if v >= 0 && b.val(v).typ != tensor.F32 {
				return errUnsupported(n, "element type %s (the GPU kernel takes f32, or f16 throughout)", b.val(v).typ)
			}
		}
	}
	if useGEMM(g.M, g.N, g.K) && b.val(out).shape.NumElements() > 0 {
		// lower_fused.go: register-blocked; a host B with strided
		// columns is laid out contiguously first.
		if g.bCol != 1 && b.val(bb).host != nil && len(g.batch) == 0 {
			bb = b.relaid(bb, g.K, g.N, g.bK, g.bCol)
			g.bK, g.bCol = g.N, 1
		}
		if g.bCol == 1 {
			mode := int64(0)
			if g.hasC {
				mode = 3
			}
			return b.fusedGEMM(n, a, bb, c, out, g, mode, alpha, beta)
		}
	}
	m := []int64{g.M, g.N, g.K, g.aRow, g.aK, g.bK, g.bCol, g.cRow, g.cCol, 0, int64(len(g.batch))}
	if g.hasC {
		m[9] = 1
	}
	m = append(m, g.batch...)
	m = append(m, g.aBatch...)
	m = append(m, g.bBatch...)
	if g.cBatch == nil {
		g.cBatch = make([]int64, len(g.batch))
	}
	m = append(m, g.cBatch...)
	cnt := b.val(out).shape.NumElements()
	carg := slotArg(a)
	if c >= 0 {
		carg = slotArg(c)
	}
	return b.emit(n, "matmul", b.halfDefine(out), cnt, slotArg(a), slotArg(bb), carg, slotArg(out), uint64(cnt), b.meta(m), alpha, beta)
}

func lowerMatMul(b *builder, n *graph.Node) error {
	a, bb, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	as, bs := b.val(a).shape.Clone(), b.val(bb).shape.Clone()
	if len(as) == 0 || len(bs) == 0 {
		return errUnsupported(n, "MatMul of a scalar")
	}
	if len(as) == 1 {
		as = tensor.Shape{1, as[0]}
	}
	if len(bs) == 1 {
		bs = tensor.Shape{bs[0], 1}
	}
	g := gemmGeom{M: as[len(as)-2], K: as[len(as)-1], N: bs[len(bs)-1]}
	g.aRow, g.aK, g.bK, g.bCol = g.K, 1, g.N, 1
	q := max(len(as), len(bs)) - 2
	abs, bbs := as[:len(as)-2], bs[:len(bs)-2]
	ast, bst := strides(as), strides(bs)
	for d := 0; d < q; d++ {
		ia, ib := d-(q-len(abs)), d-(q-len(bbs))
		da, db := int64(1), int64(1)
		var sa, sb int64
		if ia >= 0 {
			da = abs[ia]
			if da != 1 {
				sa = ast[ia]
			}
		}
		if ib >= 0 {
			db = bbs[ib]
			if db != 1 {
				sb = bst[ib]
			}
		}
		g.batch = append(g.batch, max(da, db))
		g.aBatch, g.bBatch = append(g.aBatch, sa), append(g.bBatch, sb)
	}
	return b.gemm(n, a, bb, -1, y, g, 1, 0)
}

func lowerGemm(b *builder, n *graph.Node) error {
	a, bb, c, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	as, bs := b.val(a).shape, b.val(bb).shape
	ta, tb := n.Attrs.Int("transA", 0) != 0, n.Attrs.Int("transB", 0) != 0
	var g gemmGeom
	if ta {
		g.M, g.K, g.aRow, g.aK = as[1], as[0], 1, as[1]
	} else {
		g.M, g.K, g.aRow, g.aK = as[0], as[1], as[1], 1
	}
	if tb {
		g.N, g.bK, g.bCol = bs[0], 1, bs[1]
	} else {
		g.N, g.bK, g.bCol = bs[1], bs[1], 1
	}
	if c >= 0 {
		cs := b.val(c).shape
		g.hasC = true
		switch len(cs) {
		case 1:
			if cs[0] != 1 {
				g.cCol = 1
			}
		case 2:
			if cs[1] != 1 {
				g.cCol = 1
			}
			if cs[0] != 1 {
				g.cRow = cs[1]
			}
		}
	}
	return b.gemm(n, a, bb, c, y, g, n.Attrs.Float("alpha", 1), n.Attrs.Float("beta", 1))
}

// to2D returns a per-spatial-axis value of a 1-D or 2-D op on NC... data
// as (H, W), with 1-D as (fill, v[0]).
func to2D(v []int64, fill int64) (int64, int64) {
	if len(v) == 1 {
		return fill, v[0]
	}
	return v[0], v[1]
}

// windowPads returns the begin and end pads of a windowed op (Conv, pools)
// per spatial axis, honouring auto_pad.
func windowPads(n *graph.Node, in, out, kernel, stride, dil []int64) (begin, end []int64) {
	r := len(in)
	pads := n.Attrs.Ints("pads", nil)
	auto := n.Attrs.String("auto_pad", "NOTSET")
	begin, end = make([]int64, r), make([]int64, r)
	for i := 0; i < r; i++ {
		switch auto {
		case "SAME_UPPER", "SAME_LOWER":
			total := max(0, (out[i]-1)*stride[i]+(kernel[i]-1)*dil[i]+1-in[i])
			if auto == "SAME_UPPER" {
				begin[i], end[i] = total/2, total-total/2
			} else {
				begin[i], end[i] = total-total/2, total/2
			}
		case "VALID":
		default:
			if len(pads) == 2*r {
				begin[i], end[i] = pads[i], pads[i+r]
			}
		}
	}
	return begin, end
}

func ones(r int) []int64 {
	o := make([]int64, r)
	for i := range o {
		o[i] = 1
	}
	return o
}

func lowerConv(b *builder, n *graph.Node) error {
	// lower_fused.go: register-blocked kernels for the common forms.
	fast := b.fastConv
	if n.OpType == "ConvTranspose" {
		fast = b.fastDeconv
	}
	if ok, err := fast(n); ok || err != nil {
		return err
	}
	x, w, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	xs, ws, ys := b.val(x).shape, b.val(w).shape, b.val(y).shape
	if len(xs) != 3 && len(xs) != 4 {
		return errUnsupported(n, "%d-D input (the GPU kernel takes 1-D and 2-D convolutions)", len(xs)-2)
	}
	g := conv2DOf(n, xs, ws, ys)
	barg, hasBias := optArg(bias, w)
	if !b.sameFloat(y, x, w, bias) {
		return errUnsupported(n, "element types %s, %s (the GPU kernel takes f32, or f16 throughout)", b.val(x).typ, b.val(w).typ)
	}
	cnt := ys.NumElements()
	name := "conv2d"
	if n.OpType == "ConvTranspose" {
		name = "conv_transpose2d"
	}
	ocb := convBlock(g.OC / g.group)
	return b.emit(n, name, "-DOCB="+strconv.FormatInt(ocb, 10)+b.halfDefine(y), cnt/ocb, slotArg(x), slotArg(w), barg, slotArg(y), uint64(cnt/ocb), b.meta(g.meta(hasBias)))
}

// convWindow is the window of a Conv, FusedConv or ConvTranspose node:
// per spatial axis the kernel size, stride, dilation and begin pad, and
// the group count.
type convWindow struct {
	kernel, stride, dil, begin []int64
	group                      int64
}

// convWindowOf reads n's window from its attributes and its input, weight
// and output shapes xs, ws and ys (NC... layout).
func convWindowOf(n *graph.Node, xs, ws, ys tensor.Shape) convWindow {
	r := len(xs) - 2
	c := convWindow{
		kernel: ws[2:],
		stride: n.Attrs.Ints("strides", ones(r)),
		dil:    n.Attrs.Ints("dilations", ones(r)),
		group:  n.Attrs.Int("group", 1),
	}
	if n.OpType != "ConvTranspose" {
		c.begin, _ = windowPads(n, xs[2:], ys[2:], c.kernel, c.stride, c.dil)
		return c
	}
	c.begin = make([]int64, r)
	pads := n.Attrs.Ints("pads", nil)
	auto := n.Attrs.String("auto_pad", "NOTSET")
	outPad := n.Attrs.Ints("output_padding", make([]int64, r))
	for i := 0; i < r; i++ {
		total := c.stride[i]*(xs[2+i]-1) + outPad[i] + (c.kernel[i]-1)*c.dil[i] + 1 - ys[2+i]
		switch {
		case len(pads) == 2*r && auto == "NOTSET" && !n.Attrs.Has("output_shape"):
			c.begin[i] = pads[i]
		case auto == "SAME_LOWER":
			c.begin[i] = total - total/2
		default: // SAME_UPPER, or NOTSET with output_shape
			c.begin[i] = total / 2
		}
	}
	return c
}

// conv2D is the geometry of a 1-D or 2-D convolution as conv.cl and
// conv_fused.cl take it, with 1-D as H = 1: batch N, channels C in and OC out,
// input H x W, output OH x OW, kernel KH x KW, strides, begin pads,
// dilations and the group count.
type conv2D struct {
	N, C, OC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, group int64
}

// conv2DOf reads the geometry of Conv-like node n with input, weight and
// output shapes xs, ws and ys of rank 3 or 4.
func conv2DOf(n *graph.Node, xs, ws, ys tensor.Shape) conv2D {
	c := convWindowOf(n, xs, ws, ys)
	g := conv2D{N: xs[0], C: xs[1], OC: ys[1], group: c.group}
	g.H, g.W = to2D(xs[2:], 1)
	g.OH, g.OW = to2D(ys[2:], 1)
	g.KH, g.KW = to2D(c.kernel, 1)
	g.SH, g.SW = to2D(c.stride, 1)
	g.PH, g.PW = to2D(c.begin, 0)
	g.DH, g.DW = to2D(c.dil, 1)
	return g
}

// meta is the metadata of conv.cl's kernels (and fused_conv2d) for g;
// hasBias is 1 when the bias argument is read.
func (g conv2D) meta(hasBias int64) []int64 {
	return []int64{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.group, hasBias}
}

// optArg is the kernel argument of optional value v (a bias) and whether
// the kernel reads it: v and 1, or, where v is absent (< 0), stand (any
// bound value, which the kernel leaves unread) and 0.
func optArg(v, stand int) (slotArg, int64) {
	if v >= 0 {
		return slotArg(v), 1
	}
	return slotArg(stand), 0
}

// convBlock is the output-channel block (OCB) of the conv2d and
// conv_transpose2d kernels for ocg output channels per group: the largest
// of 8, 4, 2 that divides it, else 1. Each input element a work item loads
// then feeds OCB accumulators; on POCL this made PP-OCR det 3-4x faster
// than one output per work item.
func convBlock(ocg int64) int64 {
	for _, c := range []int64{8, 4, 2} {
		if ocg%c == 0 {
			return c
		}
	}
	return 1
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

func lowerBatchNorm(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) < 2 {
		return errUnsupported(n, "input of rank %d", len(s))
	}
	inner := int64(1)
	for _, d := range s[2:] {
		inner *= d
	}
	cnt := s.NumElements()
	return b.emit(n, "batch_norm", half, cnt, slotArg(x), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)), slotArg(b.in(n, 3)), slotArg(b.in(n, 4)),
		slotArg(y), uint64(cnt), uint64(s[1]), uint64(inner), n.Attrs.Float("epsilon", 1e-5))
}

func lowerInstanceNorm(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) < 3 {
		return errUnsupported(n, "input of rank %d", len(s))
	}
	inner := int64(1)
	for _, d := range s[2:] {
		inner *= d
	}
	cnt := s[0] * s[1]
	return b.emit(n, "instance_norm", half, cnt, slotArg(x), slotArg(b.in(n, 1)), slotArg(b.in(n, 2)), slotArg(y),
		uint64(cnt), uint64(s[1]), uint64(inner), n.Attrs.Float("epsilon", 1e-5))
}

// describe is used in errors about shapes.
var _ = fmt.Sprint

// lowerArgReduce runs ArgMax and ArgMin along one axis (keepdims only
// changes the output shape, which is already known).
func lowerArgReduce(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	is := b.val(x).shape
	t := b.val(x).typ
	if clType(t) == "" || t == tensor.Bool || t == tensor.U8 {
		return errUnsupported(n, "element type %s", t)
	}
	if len(is) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	if is[ax] == 0 {
		return errUnsupported(n, "an empty axis %d", ax)
	}
	outer, inner := int64(1), int64(1)
	for d, v := range is {
		switch {
		case int64(d) < ax:
			outer *= v
		case int64(d) > ax:
			inner *= v
		}
	}
	cnt := outer * inner
	if cnt == 0 {
		return nil
	}
	name := "arg_max"
	if n.OpType == "ArgMin" {
		name = "arg_min"
	}
	return b.emit(n, name, "-DT="+clType(t), cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(is[ax]), uint64(inner),
		int32(n.Attrs.Int("select_last_index", 0)))
}

// lowerGatherElements gathers along one axis with an indices tensor of the
// output's shape.
func lowerGatherElements(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	is, os := b.val(x).shape, b.val(y).shape
	it := b.val(idx).typ
	if it != tensor.I64 && it != tensor.I32 {
		return errUnsupported(n, "indices of type %s", it)
	}
	if len(is) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	cnt := os.NumElements()
	if cnt == 0 {
		return nil
	}
	if is[ax] == 0 {
		return errUnsupported(n, "an empty axis %d", ax)
	}
	m := []int64{int64(len(is))}
	m = append(m, os...)
	m = append(m, strides(is)...)
	m = append(m, ax, is[ax])
	return b.emit(n, "gather_elements", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+clType(it), cnt,
		slotArg(x), slotArg(idx), slotArg(y), uint64(cnt), b.meta(m))
}

// lowerTrilu keeps the upper or lower triangle of the last two axes; the
// kernel reads k from its (possibly runtime) input.
func lowerTrilu(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) < 2 {
		return errUnsupported(n, "rank %d input (Trilu needs rank >= 2)", len(s))
	}
	kv := b.in(n, 1)
	if kv < 0 {
		zero, _ := tensor.FromI64(tensor.Shape{1}, []int64{0})
		kv = b.newValue(tensor.I64, zero.Shape(), zero)
	} else if b.val(kv).typ != tensor.I64 || b.val(kv).shape.NumElements() != 1 {
		return errUnsupported(n, "k of type %s and shape %v (want one i64)", b.val(kv).typ, b.val(kv).shape)
	}
	cnt := s.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "trilu", "-DT="+bitsType(b.val(y).typ), cnt, slotArg(x), slotArg(y), uint64(cnt),
		uint64(s[len(s)-2]), uint64(s[len(s)-1]), slotArg(kv), int32(n.Attrs.Int("upper", 1)))
}

// lowerCumSum sums along one axis; the kernel reads the axis from its
// (possibly runtime) input.
func lowerCumSum(b *builder, n *graph.Node) error {
	x, av, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	s := b.val(x).shape
	t, at := b.val(x).typ, b.val(av).typ
	if t != tensor.F32 && t != tensor.F64 && t != tensor.I32 && t != tensor.I64 {
		return errUnsupported(n, "element type %s", t)
	}
	ct, err := b.numType(n, t) // f64 needs cl_khr_fp64
	if err != nil {
		return err
	}
	if (at != tensor.I64 && at != tensor.I32) || b.val(av).shape.NumElements() != 1 {
		return errUnsupported(n, "axis of type %s and shape %v (want one i32 or i64)", at, b.val(av).shape)
	}
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	cnt := s.NumElements()
	if cnt == 0 {
		return nil
	}
	m := append([]int64{int64(len(s))}, s...)
	return b.emit(n, "cumsum", "-DT="+ct+" -DIDX="+clType(at), cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m),
		slotArg(av), int32(n.Attrs.Int("exclusive", 0)), int32(n.Attrs.Int("reverse", 0)))
}

// lowerSpaceDepth runs DepthToSpace and SpaceToDepth as one strided copy:
// the input viewed as 6-D, transposed, is the output.
func lowerSpaceDepth(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	s := b.val(x).shape
	if len(s) != 4 {
		return errUnsupported(n, "rank %d input (want NCHW)", len(s))
	}
	bs := n.Attrs.Int("blocksize", 0)
	if bs <= 0 {
		return errUnsupported(n, "blocksize %d", bs)
	}
	N, C, H, W := s[0], s[1], s[2], s[3]
	var view, perm []int64
	switch {
	case n.OpType == "SpaceToDepth":
		view, perm = []int64{N, C, H / bs, bs, W / bs, bs}, []int64{0, 3, 5, 1, 2, 4}
	case n.Attrs.String("mode", "DCR") == "CRD":
		view, perm = []int64{N, C / (bs * bs), bs, bs, H, W}, []int64{0, 1, 4, 2, 5, 3}
	default:
		view, perm = []int64{N, bs, bs, C / (bs * bs), H, W}, []int64{0, 3, 4, 1, 5, 2}
	}
	if b.val(y).shape.NumElements() == 0 {
		return nil
	}
	vst := strides(view)
	dims, sst := make([]int64, 6), make([]int64, 6)
	for d, p := range perm {
		dims[d], sst[d] = view[p], vst[p]
	}
	return b.copyView(n, x, y, dims, sst, 0, strides(dims), 0)
}
