package clbackend

import (
	"os"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// EnvEmulateFP16 names the environment variable that, set to 1, lets a
// device without cl_khr_fp16 accept INFERENCE_PRECISION_HINT=f16. The f16
// path stores activations as half and computes in float through
// vload_half/vstore_half, which every OpenCL 1.2 device has, so it runs
// the same kernels there; tests and kernel developers use this on POCL and
// oclgrind, which lack the extension. Users leave it unset: the hint then
// follows what the device reports.
const EnvEmulateFP16 = "CLINFER_EMULATE_FP16"

// hasFP16 reports whether d accepts the f16 hint: it reports cl_khr_fp16,
// or EnvEmulateFP16 is set to 1.
func (d *device) hasFP16() bool { return d.fp16 || os.Getenv(EnvEmulateFP16) == "1" }

// halfOps lists, per op type, the ops whose lowering runs on f16
// activations (stored as half, computed in float, f32 accumulation in
// reductions and GEMM) with INFERENCE_PRECISION_HINT=f16, and the inputs
// each still reads in f32 (shape-like parameters). fusion.ConvertPrecision
// wraps every other op in Casts, so an op joins the list when its lowering
// and kernels take F16 values and TestHalfLoweringsMatchCPU covers it.
var halfOps = withUnaryOps(map[string][]int{
	// Pure data movement: kernels copy bits (bitsType), any element type.
	"Reshape": nil, "Flatten": nil, "Squeeze": nil, "Unsqueeze": nil, "Identity": nil,
	"Transpose": nil, "Slice": nil, "Concat": nil, "Split": nil, "Expand": nil, "Tile": nil,
	"Gather": nil, "GatherElements": nil, "DepthToSpace": nil, "SpaceToDepth": nil,
	// Shapes only.
	"Shape": nil, "Size": nil,
	// eltwise_binary.cl reads and writes f16 storage (HALF_IN/HALF_OUT).
	"Add": nil, "Sub": nil, "Mul": nil, "Div": nil,
	// Conv and GEMM family (conv*.cl, gemm*.cl, matmul.cl).
	// Weights, bias and residual are f16 too; sums stay f32.
	graph.OpFusedConv: nil, graph.OpFullyConnected: nil, "Conv": nil, "ConvTranspose": nil,
	"MatMul": nil, "Gemm": nil,

	// Activations, pooling, reductions, normalisation, Resize, Softmax and
	// the kernel fusions.
	// The unary activations and math of unaryOps join through
	// withUnaryOps (Clip with bounds known only at run time as Max/Min).
	// Pow: an f16 base with the exponent in its own type (pow.cl).
	"Pow": {1},
	// reduce.cl (float accumulation); Global pools are reductions.
	"ReduceMean": nil, "ReduceSum": nil, "ReduceMax": nil, "ReduceMin": nil, "ReduceProd": nil,
	"ReduceSumSquare": nil, "ReduceL1": nil, "ReduceL2": nil, "ReduceLogSumExp": nil,
	"GlobalAveragePool": nil, "GlobalMaxPool": nil,
	// pool.cl, softmax.cl, norm.cl (LayerNormalization's statistics stay f32).
	"MaxPool": nil, "AveragePool": nil, "Softmax": nil, "LogSoftmax": nil,
	"BatchNormalization": nil, "InstanceNormalization": nil, "LayerNormalization": nil,
	// resize.cl: f16 data, f32 tap weights; roi and scales stay f32.
	"Resize": {1, 2},
	// where.cl moves bits; the condition is bool.
	"Where": nil,
	// Every kernel fusion: its kernel is written with half.clh.
	graph.OpKernelFusion: nil,
})

// withUnaryOps adds to ops every op of unaryOps with a float output:
// eltwise_unary.cl computes them all in float from -DHALF storage (IsNaN,
// IsInf and Not answer in bool).
func withUnaryOps(ops map[string][]int) map[string][]int {
	for op := range unaryOps {
		switch op {
		case "IsNaN", "IsInf", "Not":
		default:
			ops[op] = nil
		}
	}
	return ops
}

// halfPolicy is the GPU's fusion.PrecisionPolicy for f16.
func halfPolicy(n *graph.Node) (bool, []int) {
	keep, ok := halfOps[n.OpType]
	return ok, keep
}

// isHalf reports whether value v is stored as f16.
func (b *builder) isHalf(v int) bool { return v >= 0 && b.val(v).typ == tensor.F16 }

// halfDefine returns " -DHALF" when value v is stored as f16: kernels
// written with the FT/LD/ST macros of half.clh then read and write every
// float buffer as half and compute in float.
func (b *builder) halfDefine(v int) string {
	if b.isHalf(v) {
		return " -DHALF"
	}
	return ""
}

// floatsFor is floats stored as the element type of value like: f16 for
// an f16 activation (a kernel built with -DHALF reads every float buffer
// as half), f32 otherwise.
func (b *builder) floatsFor(like int, f []float32) slotArg {
	if !b.isHalf(like) {
		return b.floats(f)
	}
	if len(f) == 0 {
		f = []float32{0}
	}
	t, _ := tensor.FromF32(tensor.Shape{int64(len(f))}, f)
	h, _ := t.Convert(tensor.F16)
	return slotArg(b.newValue(tensor.F16, h.Shape(), h))
}
