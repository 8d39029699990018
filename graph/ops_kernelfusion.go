package graph

import (
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// OpKernelFusion is the generic fused op (OpenVINO's Subgraph, ONNX
// Runtime's compiled node): a subgraph that a fusion declaration
// (fusion.KernelFusion) matched and replaced, kept as the node's body. The
// GPU device runs it as one launch of the catalogue kernel the node names,
// through one generic lowering; the CPU device runs the body with its
// reference ops, so the CPU result is right by construction. Shape and type
// inference come from the body: input i of the node is the body's
// Parameter i, output j the body's Result j.
//
// Its attributes are AttrKernel, AttrLaunch, AttrBody and, optionally,
// AttrParams. It is not an ONNX op; a model read from a file never contains
// it, but exported compiled models do (the body is a *Model attribute,
// which the binary encoding carries).
const OpKernelFusion = "KernelFusion"

// Attribute names of a KernelFusion node.
const (
	// AttrKernel is the catalogue name of the kernel (string).
	AttrKernel = "kernel"
	// AttrLaunch is the launch convention (string): LaunchElementwise or
	// LaunchRows.
	AttrLaunch = "launch"
	// AttrBody is the subgraph the node stands for (*Model).
	AttrBody = "body"
	// AttrParams are float parameters the kernel reads ([]float32,
	// optional): values the body holds as attributes (an epsilon).
	AttrParams = "params"
)

// GeneratedKernel is the AttrKernel of a KernelFusion node whose kernel is
// not a catalogue entry but generated from its body at compile time
// (package kernels/gen: fusion's FuseElementwiseChains makes such nodes).
const GeneratedKernel = "generated"

// Launch conventions of a KernelFusion kernel: how many work items it runs
// and what the shape table it reads describes. Every kernel takes, in
// order, the inputs, the outputs, the work-item count n (ulong), the shape
// table (int array) and the params (float array; one unused element when
// the node has none); all tensors are f32.
const (
	// LaunchElementwise runs one work item per element of output 0;
	// every output has output 0's shape. The shape table is the numpy
	// broadcast of the inputs to output 0: m[0] = rank r, r output dims,
	// then r element strides per input (0 on broadcast axes), with
	// adjacent axes merged where every input allows.
	LaunchElementwise = "elementwise"
	// LaunchRows runs one work item per row of the last axis of output 0.
	// The shape table is m[0] = the row length, followed by the
	// LaunchElementwise table of output 0: element c of row i is output
	// element i*m[0] + c, located in each input through that table.
	LaunchRows = "rows"
	// LaunchReduceRows runs one work item per element of output 0, each
	// folding a row: the body ends in a reduction over the trailing axes
	// of its iteration space S (the reduction's input, to which every
	// input broadcasts), a row being the D elements those axes hold. The
	// shape table is m[0] = D, followed by the LaunchElementwise table of
	// S: element c of row i is element i*D + c of S.
	LaunchReduceRows = "reduce_rows"
	// LaunchGEMMRows runs one work group per row of output 0 for a body
	// that starts with a product of rows: input 0 holds rows of K
	// (contiguous), input 1 is a [K, C] matrix, every other input a [C]
	// vector along the row, and output 0 has rows of C. The group's size
	// L is a power of two (at most 256) and its items share the row's C
	// columns, so the kernel can reduce over the row in local memory (a
	// FullyConnected followed by a LayerNormalization). The shape table is
	// m[0] = C, m[1] = K; n is the number of rows.
	LaunchGEMMRows = "gemm_rows"
	// LaunchDenseChain runs one work group per row of output 0 for a
	// body that is a chain of dense layers (fusion.FuseDenseChain): each a
	// product of the previous layer's row (input 0's rows of K for the
	// first) with a [K, C] matrix plus a [C] bias, then optionally a
	// LayerNormalization over the row and an activation. The inputs are
	// input 0, then per layer the matrix, the bias and, for a normalised
	// layer, its scale and shift. The group keeps the row between layers
	// in local memory, so the chain is one launch. The shape table is m[0]
	// = the number of layers, then four ints per layer (K, C, 1 when it
	// normalises, its activation: 0 none, 1 Relu, 2 Sigmoid); the params
	// hold each layer's epsilon; n is the number of rows.
	LaunchDenseChain = "dense_chain"
	// LaunchSEBlock runs a squeeze-excitation block y = x * gate(x) (+ x
	// with a residual) in one launch (fusion.FuseSEBlock): the body is a
	// GlobalAveragePool of x [N, C, H, W], two 1x1 FusedConvs (C -> CM
	// -> C, each with at most one activation post-op) and the Mul (and
	// Add). The inputs are x, the first conv's weights [CM, C, 1, 1] and
	// bias [CM], the second's [C, CM, 1, 1] and [C]; output 0 has x's
	// shape. Each of N*G work groups (G groups per image, L items, L a
	// power of two of at most 256) pools the whole image, runs both
	// layers and scales its slice of ceil(C/G) channels. The shape table
	// is m = C, H*W, CM, G, then each layer's activation (0 none, 1 Relu,
	// 2 Sigmoid, 3 HardSigmoid) and 1 for a residual; the params hold each
	// layer's post-op alpha and beta; n is the number of groups, N*G.
	LaunchSEBlock = "se_block"
	// LaunchDeconv runs a ConvTranspose and the activation after it
	// (fusion.FuseDeconvActivation) as the register-blocked transposed
	// convolution with the activation as its post-op, launched as that
	// kernel is for a ConvTranspose of the body's attributes; the inputs
	// are the ConvTranspose's (x, w and the bias when it has one). Where
	// that kernel does not take the ConvTranspose the body's nodes run.
	LaunchDeconv = "deconv"
)

// launchKinds are the accepted AttrLaunch values.
var launchKinds = map[string]bool{LaunchElementwise: true, LaunchRows: true, LaunchReduceRows: true, LaunchGEMMRows: true, LaunchDenseChain: true, LaunchSEBlock: true, LaunchDeconv: true}

// LaunchKinds returns the accepted launch conventions, sorted.
func LaunchKinds() []string { return sortedKeys(launchKinds) }

// KernelFusionBody returns the body of a KernelFusion node after checking
// the node's attributes: a kernel name, a known launch convention and a
// body with one Parameter per input and one Result per output.
func KernelFusionBody(n *Node) (*Model, error) {
	if n.Attrs.String(AttrKernel, "") == "" {
		return nil, n.Errorf("attribute %q (the catalogue kernel) is missing", AttrKernel)
	}
	if l := n.Attrs.String(AttrLaunch, ""); !launchKinds[l] {
		return nil, n.Errorf("attribute %q is %q, want one of %s", AttrLaunch, l, strings.Join(LaunchKinds(), ", "))
	}
	body, ok := n.Attrs[AttrBody].(*Model)
	if !ok || body == nil {
		return nil, n.Errorf("attribute %q (the subgraph the node stands for) is missing", AttrBody)
	}
	if len(body.Parameters) != len(n.Inputs) {
		return nil, n.Errorf("body %q has %d parameters for %d inputs", body.Name, len(body.Parameters), len(n.Inputs))
	}
	if len(body.Results) != len(n.Outputs) {
		return nil, n.Errorf("body %q has %d results for %d outputs", body.Name, len(body.Results), len(n.Outputs))
	}
	if v, ok := n.Attrs[AttrParams]; ok {
		if _, ok := v.([]float32); !ok {
			return nil, n.Errorf("attribute %q is a %T, want []float32", AttrParams, v)
		}
	}
	return body, nil
}

// BindBody returns a copy of the body of KernelFusion node n whose
// Parameters have the types and shapes of n's inputs, shape-inferred. When
// every input is of one float type (f16 for INFERENCE_PRECISION_HINT=f16)
// the body's float scalar constants are converted to it, so the body
// computes in the node's precision. The node's own body is left alone
// (nodes may be shared by concurrent readers).
func BindBody(n *Node) (*Model, error) {
	body, err := KernelFusionBody(n)
	if err != nil {
		return nil, err
	}
	b := body.Clone()
	var common tensor.ElementType
	for i, p := range b.Parameters {
		in := n.Input(i)
		if !in.Valid() {
			return nil, n.Errorf("input %d is omitted; every input of the body is required", i)
		}
		p.Outputs[0].Type = in.Type()
		p.Outputs[0].Shape = in.Shape().Clone()
		switch {
		case i == 0 && in.Type().IsFloat():
			common = in.Type()
		case in.Type() != common:
			common = tensor.Undefined
		}
	}
	if common != tensor.Undefined {
		nodes, err := b.Nodes()
		if err != nil {
			return nil, n.Errorf("body %q: %w", b.Name, err)
		}
		for _, c := range nodes {
			if c.OpType == OpConstant && c.Value != nil && c.Value.Type().IsFloat() && c.Value.Type() != common && c.Value.NumElements() == 1 {
				v, err := c.Value.Convert(common)
				if err != nil {
					return nil, n.Errorf("body %q: constant %q to %s: %w", b.Name, c.Name, common, err)
				}
				c.Value = v
				c.Outputs[0].Type = common
			}
		}
	}
	if err := b.InferShapes(); err != nil {
		return nil, n.Errorf("body %q: %w", b.Name, err)
	}
	return b, nil
}

// inferKernelFusion takes the outputs' types and shapes from the body
// bound to the node's inputs.
func inferKernelFusion(n *Node) error {
	b, err := BindBody(n)
	if err != nil {
		return err
	}
	for j, r := range b.Results {
		setOutput(n, j, r.Outputs[0].Type, r.Outputs[0].Shape)
	}
	return nil
}

// bodySummary formats a body for dumps: "body(x, gate){Mul, Add}".
func bodySummary(m *Model) string {
	var params, ops []string
	for _, p := range m.Parameters {
		params = append(params, p.Name)
	}
	nodes, err := m.Nodes()
	if err != nil {
		return fmt.Sprintf("model %q (%v)", m.Name, err)
	}
	for _, n := range nodes {
		switch n.OpType {
		case OpParameter, OpConstant, OpResult:
			continue
		}
		ops = append(ops, n.OpType)
	}
	// Long bodies (If branches of whole networks) list their first ops.
	const maxListed = 12
	if len(params) > maxListed {
		params = append(params[:maxListed], fmt.Sprintf("... %d parameters", len(m.Parameters)))
	}
	if len(ops) > maxListed {
		ops = append(ops[:maxListed], fmt.Sprintf("... %d ops", len(ops)))
	}
	return fmt.Sprintf("%s(%s){%s}", m.Name, strings.Join(params, ", "), strings.Join(ops, ", "))
}

// kernelFusionOps is the generic fused op.
var kernelFusionOps = []OpSpec{
	{Name: OpKernelFusion, MinInputs: 1, MaxInputs: -1, Infer: inferKernelFusion},
}
