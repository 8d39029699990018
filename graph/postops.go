package graph

import (
	"fmt"
	"strings"
)

// Fused ops: kernel-shaped ops the fusion passes produce. They are not ONNX
// ops; a model read from a file never contains them.
const (
	// OpFusedConv is Conv (X, W, B?) followed by a list of post-ops; input 3
	// is the residual operand of a "sum" post-op. Its attributes are Conv's
	// plus the post-op list (see PostOps).
	OpFusedConv = "FusedConv"
	// OpFullyConnected is MatMul(A, W) with W [K, N], plus an optional bias
	// B [N] (input 2), followed by a list of post-ops; input 3 is the
	// residual operand of a "sum" post-op.
	OpFullyConnected = "FullyConnected"
)

// Post-op kinds of FusedConv and FullyConnected, applied in list order to
// the op's output.
const (
	PostSum         = "sum"         // y += input 3 (numpy broadcast to y)
	PostRelu        = "relu"        // max(y, 0)
	PostClip        = "clip"        // min(max(y, Alpha), Beta)
	PostHardSwish   = "hardswish"   // y * max(0, min(1, y/6 + 0.5))
	PostHardSigmoid = "hardsigmoid" // max(0, min(1, Alpha*y + Beta))
	PostSigmoid     = "sigmoid"     // 1 / (1 + exp(-y))
	PostSwish       = "swish"       // y * sigmoid(Alpha*y)
	PostGelu        = "gelu"        // erf form; Alpha != 0 selects the tanh approximation
	PostLeakyRelu   = "leakyrelu"   // y < 0 ? Alpha*y : y
	PostTanh        = "tanh"        // tanh(y)
	PostLinear      = "linear"      // Alpha*y + Beta (a scalar Mul/Add after the op)
)

// postOpKinds is the set of accepted post-op kinds.
var postOpKinds = map[string]bool{
	PostSum: true, PostRelu: true, PostClip: true, PostHardSwish: true, PostHardSigmoid: true,
	PostSigmoid: true, PostSwish: true, PostGelu: true, PostLeakyRelu: true, PostTanh: true, PostLinear: true,
}

// PostOp is one post-op of a fused op: its kind and up to two parameters
// whose meaning the kind defines.
type PostOp struct {
	Kind        string
	Alpha, Beta float32
}

// String formats the post-op as "kind(alpha,beta)".
func (p PostOp) String() string { return fmt.Sprintf("%s(%g,%g)", p.Kind, p.Alpha, p.Beta) }

// Attribute names holding a fused op's post-ops: three parallel lists.
const (
	AttrPostOps   = "post_ops"
	AttrPostAlpha = "post_alpha"
	AttrPostBeta  = "post_beta"
)

// PostOps returns the post-op list of a fused op. It returns an error naming
// the node for an unknown kind, lists of different lengths, or more than
// one "sum".
func PostOps(n *Node) ([]PostOp, error) {
	kinds := n.Attrs.Strings(AttrPostOps, nil)
	alpha := n.Attrs.Floats(AttrPostAlpha, nil)
	beta := n.Attrs.Floats(AttrPostBeta, nil)
	if len(alpha) != len(kinds) || len(beta) != len(kinds) {
		return nil, n.Errorf("post-op lists differ in length: %s=%d, %s=%d, %s=%d",
			AttrPostOps, len(kinds), AttrPostAlpha, len(alpha), AttrPostBeta, len(beta))
	}
	out := make([]PostOp, len(kinds))
	sums := 0
	for i, k := range kinds {
		if !postOpKinds[k] {
			return nil, n.Errorf("post-op %d: unknown kind %q (accepted: %s)", i, k, strings.Join(sortedKeys(postOpKinds), ", "))
		}
		if k == PostSum {
			sums++
		}
		out[i] = PostOp{Kind: k, Alpha: alpha[i], Beta: beta[i]}
	}
	if sums > 1 {
		return nil, n.Errorf("post-ops %v have %d sums, want at most one", kinds, sums)
	}
	return out, nil
}

// SetPostOps stores ops as the node's post-op attributes.
func SetPostOps(n *Node, ops []PostOp) {
	kinds := make([]string, len(ops))
	alpha := make([]float32, len(ops))
	beta := make([]float32, len(ops))
	for i, p := range ops {
		kinds[i], alpha[i], beta[i] = p.Kind, p.Alpha, p.Beta
	}
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	n.Attrs[AttrPostOps] = kinds
	n.Attrs[AttrPostAlpha] = alpha
	n.Attrs[AttrPostBeta] = beta
}

// checkPostOps validates the post-op list against the inputs: a "sum"
// needs input 3 broadcastable to the output, and input 3 needs a "sum".
func checkPostOps(n *Node) error {
	ops, err := PostOps(n)
	if err != nil {
		return err
	}
	hasSum := false
	for _, p := range ops {
		hasSum = hasSum || p.Kind == PostSum
	}
	if hasSum != present(n, 3) {
		if hasSum {
			return n.Errorf("post-op %q needs input 3 (the residual operand)", PostSum)
		}
		return n.Errorf("input 3 is given but there is no %q post-op", PostSum)
	}
	if hasSum {
		r := n.Input(3)
		if r.Type() != n.Outputs[0].Type {
			return n.Errorf("residual input 3 has element type %v, output has %v", r.Type(), n.Outputs[0].Type)
		}
		if err := unidirectional(n, r.Shape(), n.Outputs[0].Shape, "residual input 3"); err != nil {
			return err
		}
	}
	return nil
}
