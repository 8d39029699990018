package ir

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Why a pair of OpenVINO's opsets is not read (opsetPair.skip).
const (
	noOp  = "clinfer's op set has no op with these semantics, and the reader composes none"
	state = "a variable kept across inferences; clinfer's graph has no state"
	fp8   = "OpenVINO emulates f8 through f16 (f32 -> f16 -> f8, clamped), clinfer's Cast rounds to f8 directly: values could differ on double-rounding ties"
)

// opsetPair is one (type, version) of OpenVINO's opset1..opset14 tables
// (src/core/include/openvino/opsets/opsetN_tbl.hpp): the IR type name and
// the first opset holding that version (what IR writes as "opsetN"), and
// why the reader does not read it ("" when it does).
type opsetPair struct {
	typ   string
	opset int
	skip  string
}

// openVINOOpsets lists every (type, version) of opset1..opset14.
var openVINOOpsets = []opsetPair{
	// opset1
	{"Abs", 1, ""}, {"Acos", 1, ""}, {"Add", 1, ""}, {"Asin", 1, ""}, {"Atan", 1, ""}, {"AvgPool", 1, ""},
	{"BatchNormInference", 1, ""}, {"BinaryConvolution", 1, noOp}, {"Broadcast", 1, ""}, {"CTCGreedyDecoder", 1, ""},
	{"Ceiling", 1, ""}, {"Clamp", 1, ""}, {"Concat", 1, ""}, {"Const", 1, ""}, {"Convert", 1, ""}, {"ConvertLike", 1, ""},
	{"Convolution", 1, ""}, {"ConvolutionBackpropData", 1, ""}, {"Cos", 1, ""}, {"Cosh", 1, ""},
	{"DeformableConvolution", 1, noOp}, {"DeformablePSROIPooling", 1, noOp}, {"DepthToSpace", 1, ""},
	{"DetectionOutput", 1, noOp}, {"Divide", 1, ""}, {"Elu", 1, ""}, {"Erf", 1, ""}, {"Equal", 1, ""}, {"Exp", 1, ""},
	{"FakeQuantize", 1, ""}, {"Floor", 1, ""}, {"FloorMod", 1, ""}, {"Gather", 1, ""}, {"GatherTree", 1, noOp},
	{"Greater", 1, ""}, {"GreaterEqual", 1, ""}, {"GroupConvolution", 1, ""}, {"GroupConvolutionBackpropData", 1, ""},
	{"GRN", 1, ""}, {"HardSigmoid", 1, ""}, {"Interpolate", 1, ""}, {"Less", 1, ""}, {"LessEqual", 1, ""},
	{"Log", 1, ""}, {"LogicalAnd", 1, ""}, {"LogicalNot", 1, ""}, {"LogicalOr", 1, ""}, {"LogicalXor", 1, ""},
	{"LRN", 1, ""}, {"LSTMCell", 1, ""}, {"LSTMSequence", 1, ""}, {"MatMul", 1, ""}, {"MaxPool", 1, ""},
	{"Maximum", 1, ""}, {"Minimum", 1, ""}, {"Mod", 1, ""}, {"Multiply", 1, ""}, {"Negative", 1, ""},
	{"NonMaxSuppression", 1, ""}, {"NormalizeL2", 1, ""}, {"NotEqual", 1, ""}, {"OneHot", 1, ""}, {"PRelu", 1, ""},
	{"PSROIPooling", 1, noOp}, {"Pad", 1, ""}, {"Parameter", 1, ""}, {"Power", 1, ""}, {"PriorBox", 1, noOp},
	{"PriorBoxClustered", 1, noOp}, {"Proposal", 1, noOp}, {"Range", 1, ""}, {"Relu", 1, ""}, {"ReduceMax", 1, ""},
	{"ReduceLogicalAnd", 1, ""}, {"ReduceLogicalOr", 1, ""}, {"ReduceMean", 1, ""}, {"ReduceMin", 1, ""},
	{"ReduceProd", 1, ""}, {"ReduceSum", 1, ""}, {"RegionYolo", 1, ""}, {"Reshape", 1, ""}, {"Result", 1, ""},
	{"Reverse", 1, ""}, {"ReverseSequence", 1, ""}, {"RNNCell", 1, ""}, {"Select", 1, ""}, {"Selu", 1, ""},
	{"ShapeOf", 1, ""}, {"ShuffleChannels", 1, ""}, {"Sign", 1, ""}, {"Sigmoid", 1, ""}, {"Sin", 1, ""}, {"Sinh", 1, ""},
	{"Softmax", 1, ""}, {"Sqrt", 1, ""}, {"SpaceToDepth", 1, ""}, {"Split", 1, ""}, {"SquaredDifference", 1, ""},
	{"Squeeze", 1, ""}, {"StridedSlice", 1, ""}, {"Subtract", 1, ""}, {"Tan", 1, ""}, {"Tanh", 1, ""},
	{"TensorIterator", 1, ""}, {"Tile", 1, ""}, {"TopK", 1, ""}, {"Transpose", 1, ""}, {"Unsqueeze", 1, ""},
	{"VariadicSplit", 1, ""}, {"Xor", 1, ""},
	// opset2
	{"MVN", 2, ""}, {"ReorgYolo", 2, ""}, {"ROIPooling", 2, noOp}, {"Gelu", 2, ""}, {"BatchToSpace", 2, ""},
	{"SpaceToBatch", 2, ""},
	// opset3
	{"Broadcast", 3, ""}, {"Bucketize", 3, ""}, {"CumSum", 3, ""}, {"ExtractImagePatches", 3, noOp},
	{"NonMaxSuppression", 3, ""}, {"EmbeddingBagPackedSum", 3, ""}, {"EmbeddingSegmentsSum", 3, ""},
	{"EmbeddingBagOffsetsSum", 3, ""}, {"GRUCell", 3, ""}, {"NonZero", 3, ""}, {"ROIAlign", 3, ""},
	{"ScatterElementsUpdate", 3, ""}, {"ScatterUpdate", 3, ""}, {"ShapeOf", 3, ""}, {"Assign", 3, state},
	{"ReadValue", 3, state}, {"TopK", 3, ""},
	// opset4 (Acosh, Asinh, Atanh and ScatterNDUpdate are their v3, first in opset4)
	{"LSTMCell", 4, ""}, {"Proposal", 4, noOp}, {"Range", 4, ""}, {"ScatterNDUpdate", 4, ""}, {"Acosh", 4, ""},
	{"Asinh", 4, ""}, {"Atanh", 4, ""}, {"CTCLoss", 4, noOp}, {"HSwish", 4, ""}, {"Interpolate", 4, ""}, {"Mish", 4, ""},
	{"NonMaxSuppression", 4, ""}, {"ReduceL1", 4, ""}, {"ReduceL2", 4, ""}, {"SoftPlus", 4, ""}, {"Swish", 4, ""},
	// opset5
	{"BatchNormInference", 5, ""}, {"GatherND", 5, ""}, {"GRUSequence", 5, ""}, {"HSigmoid", 5, ""},
	{"LogSoftmax", 5, ""}, {"Loop", 5, ""}, {"LSTMSequence", 5, ""}, {"NonMaxSuppression", 5, ""},
	{"RNNSequence", 5, ""}, {"Round", 5, ""},
	// opset6
	{"CTCGreedyDecoderSeqLen", 6, ""}, {"ExperimentalDetectronDetectionOutput", 6, noOp},
	{"ExperimentalDetectronGenerateProposalsSingleImage", 6, noOp}, {"ExperimentalDetectronPriorGridGenerator", 6, noOp},
	{"ExperimentalDetectronROIFeatureExtractor", 6, noOp}, {"ExperimentalDetectronTopKROIs", 6, noOp},
	{"GatherElements", 6, ""}, {"MVN", 6, ""}, {"Assign", 6, state}, {"ReadValue", 6, state},
	// opset7
	{"DFT", 7, ""}, {"Einsum", 7, ""}, {"Gelu", 7, ""}, {"IDFT", 7, ""}, {"Roll", 7, ""}, {"Gather", 7, ""},
	// opset8
	{"Gather", 8, ""}, {"GatherND", 8, ""}, {"AdaptiveAvgPool", 8, ""}, {"AdaptiveMaxPool", 8, ""},
	{"DeformableConvolution", 8, noOp}, {"DetectionOutput", 8, noOp}, {"I420toBGR", 8, ""}, {"I420toRGB", 8, ""},
	{"MatrixNms", 8, noOp}, {"MaxPool", 8, ""}, {"MulticlassNms", 8, noOp}, {"NV12toBGR", 8, ""}, {"NV12toRGB", 8, ""},
	{"RandomUniform", 8, ""}, {"Slice", 8, ""}, {"Softmax", 8, ""}, {"If", 8, ""}, {"PriorBox", 8, noOp},
	// opset9
	{"IRDFT", 9, ""}, {"RDFT", 9, ""}, {"Eye", 9, ""}, {"NonMaxSuppression", 9, ""}, {"ROIAlign", 9, ""},
	{"SoftSign", 9, ""}, {"GenerateProposals", 9, noOp}, {"MulticlassNms", 9, noOp}, {"GridSample", 9, ""},
	// opset10
	{"IsFinite", 10, ""}, {"IsInf", 10, ""}, {"IsNaN", 10, ""}, {"Unique", 10, ""},
	// opset11
	{"Interpolate", 11, ""}, {"TopK", 11, ""},
	// opset12
	{"GroupNormalization", 12, ""}, {"Pad", 12, ""}, {"ScatterElementsUpdate", 12, ""},
	// opset13
	{"BitwiseAnd", 13, ""}, {"BitwiseNot", 13, ""}, {"BitwiseOr", 13, ""}, {"BitwiseXor", 13, ""},
	{"NMSRotated", 13, noOp}, {"Multinomial", 13, ""}, {"ScaledDotProductAttention", 13, ""},
	{"FakeConvert", 13, fp8},
	// opset14
	{"ConvertPromoteTypes", 14, ""}, {"Inverse", 14, noOp}, {"AvgPool", 14, ""}, {"MaxPool", 14, ""},
}

// TestOpsetCoverage keeps openVINOOpsets honest both ways: a pair the
// list says is read has a row of its own version (not an older version's
// row reached by the opset lookup), a pair it says is not read has none,
// and every row of the reader up to opset14 is a pair of the list.
func TestOpsetCoverage(t *testing.T) {
	prev := map[string]int{} // the type's previous version's opset
	listed := map[string]bool{}
	for _, p := range openVINOOpsets {
		key := p.typ + "-" + strconv.Itoa(p.opset)
		assert.False(t, listed[key], "%s listed twice", key)
		listed[key] = true
		row, ok := lookupImport(p.typ, p.opset)
		own := ok && row.Since > prev[p.typ]
		if p.skip == "" {
			assert.True(t, own, "%s: the list says the reader reads it, but it has no row for it (found %v: %+v)", key, ok, row.Since)
		} else {
			assert.False(t, own, "%s: the reader reads it now; take %q out of the list", key, p.skip)
		}
		prev[p.typ] = p.opset
	}
	for _, r := range OpTypes() {
		i := strings.LastIndexByte(r, '-')
		n, _ := strconv.Atoi(r[i+1:])
		if n > 14 {
			continue
		}
		found := false
		for _, p := range openVINOOpsets {
			if p.typ == r[:i] && p.opset >= n && (p.opset == n || prevOpset(p.typ, p.opset) < n) {
				found = true
			}
		}
		assert.True(t, found, "reader row %s is no (type, version) of OpenVINO's opset1..14", r)
	}
}

// prevOpset is the opset of the version of typ listed before the one of
// opset n (0 if none).
func prevOpset(typ string, n int) int {
	best := 0
	for _, p := range openVINOOpsets {
		if p.typ == typ && p.opset < n && p.opset > best {
			best = p.opset
		}
	}
	return best
}
