package fusion

import (
	"bytes"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// maxLoadQuantizations bounds how many times, by quantizeOnLoad's
// estimate, a fused convolution may quantize each element of its f32
// data: a division per load, against a QuantizeLinear launch that
// quantizes each element once.
const maxLoadQuantizations = 4

// quantizeOnLoad gives each graph.OpQuantizedConv whose data is a
// QuantizeLinear (per tensor, to x's own scale and zero point) that no
// other node reads the QuantizeLinear's f32 input instead: the
// convolution quantizes its data as it loads it (graph.QuantizesOnLoad),
// one launch and one pass over the data fewer (PP-OCR det: the
// squeeze-excitation gates' QuantizeLinear). Only where each element is
// quantized a few times (fewLoads).
func quantizeOnLoad(m *graph.Model) (int, error) {
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		if n.OpType != graph.OpQuantizedConv || n.Domain != "" || graph.QuantizesOnLoad(n) {
			continue
		}
		x := n.Input(graph.QuantInX)
		q := x.Node
		if q == nil || q.OpType != "QuantizeLinear" || q.Domain != "" || len(cons[x]) != 1 || !fewLoads(n) {
			continue
		}
		if in := q.Input(0); !in.Valid() || in.Type() != tensor.F32 || q.Attrs.Int("block_size", 0) != 0 {
			continue
		}
		if !sameScalar(q.Input(1), n.Input(graph.QuantInXScale)) || !sameZero(q, n.Input(graph.QuantInXZero)) {
			continue
		}
		n.Inputs[graph.QuantInX] = q.Input(0)
		n.RT.FusedNames = mergeNames(q.OriginalNames(), n.OriginalNames())
		count++
	}
	return count, nil
}

// fewLoads reports whether convolution n quantizing its data on load
// would quantize each element at most maxLoadQuantizations times: data of
// one pixel per channel, or a pointwise convolution (1x1 window, stride
// 1) of at most maxLoadQuantizations blocks of 8 output channels, each
// block loading every element once. A wider window loads each element
// once per tap (and a stride of 2 loads twice the lanes it keeps): the
// graph input's QuantizeLinear before PP-OCR det's 3x3 stride-2
// convolution costs 1.2 ms as a launch, 2 ms more quantized on load.
// Only convolutions the quantized convolution kernels that load f32 take:
// group 1, or depthwise with a window of at most 49 and no dilation (the
// GPU's grouped fallback quantizes no data on load and would refuse the
// node).
func fewLoads(n *graph.Node) bool {
	xs := n.Input(graph.QuantInX).Shape()
	w, ok := n.ConstInput(graph.QuantInW)
	if !ok || !xs.RankKnown || len(xs.Dims) < 3 || w.Rank() != len(xs.Dims) {
		return false
	}
	onePixel, window := true, int64(1)
	for i := 2; i < len(xs.Dims); i++ {
		onePixel = onePixel && xs.Dims[i].Size == 1
		window *= w.Shape()[i]
	}
	if g := n.Attrs.Int("group", 1); g != 1 {
		c := xs.Dims[1].Size
		depthwise := g == c && w.Shape()[0] == c && w.Shape()[1] == 1 && window <= 49
		for _, d := range n.Attrs.Ints("dilations", nil) {
			depthwise = depthwise && d == 1
		}
		if !depthwise {
			return false
		}
	}
	if onePixel {
		return true
	}
	for _, s := range n.Attrs.Ints("strides", nil) {
		if s != 1 {
			return false
		}
	}
	return window == 1 && (w.Shape()[0]+7)/8 <= maxLoadQuantizations
}

// sameScalar reports whether a and b are the same value or constants of
// one element with the same type and bits.
func sameScalar(a, b graph.Output) bool {
	if !a.Valid() || !b.Valid() {
		return false
	}
	if a == b {
		return true
	}
	ta, tb := constOf(a), constOf(b)
	return ta != nil && tb != nil && ta.NumElements() == 1 && tb.NumElements() == 1 && ta.Type() == tb.Type() &&
		bytes.Equal(ta.Contiguous().Bytes(), tb.Contiguous().Bytes())
}

// sameZero reports whether QuantizeLinear q's zero point (a zero of its
// output type without one) is z.
func sameZero(q *graph.Node, z graph.Output) bool {
	if qz := q.Input(2); qz.Valid() {
		return sameScalar(qz, z)
	}
	t := constOf(z)
	if t == nil || t.NumElements() != 1 || t.Type() != q.Outputs[0].Type {
		return false
	}
	return bytes.Count(t.Contiguous().Bytes(), []byte{0}) == len(t.Contiguous().Bytes())
}

// constOf is the value of o when a constant produces it, or nil.
func constOf(o graph.Output) *tensor.Tensor {
	if !o.Valid() || o.Node.OpType != graph.OpConstant {
		return nil
	}
	return o.Node.Value
}
