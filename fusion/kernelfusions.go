package fusion

import (
	"github.com/clinfer/clinfer/graph"
)

// Pass names of the kernel fusions.
const (
	PassFuseSEResidual      = "FuseSEResidual"
	PassFuseFCLayerNormRelu = "FuseFCLayerNormRelu"
	PassFuseLayerNormRelu   = "FuseLayerNormRelu"
)

// KernelFusions returns every fusion onto a catalogue kernel, in pipeline
// order: the registry. Adding a fusion is one declaration here plus its
// .cl file in kernels/; the pass manager (DefaultPasses), the kernels
// catalogue, the GPU's generic lowering, the CPU device and the generic
// tests pick it up from this list (kernels/README.md walks through the
// first one). They run after FuseConv and FuseFullyConnected, so they fuse
// what those leave.
func KernelFusions() []KernelFusion {
	return []KernelFusion{{
		// PP-OCRv4 det's RSE blocks: y = x + x*gate, gate a per-channel
		// squeeze-excitation [N,C,1,1] broadcast over x [N,C,H,W]. x has
		// three consumers (the pooling of the gate, the Mul, the Add), so
		// FuseConv cannot absorb the Mul and Add into x's Conv.
		Name:    PassFuseSEResidual,
		Doc:     "fuse x + x*gate (squeeze-excitation gate with residual) into one se_residual launch",
		Kernel:  "se_residual",
		File:    "kernelfusion_se_residual.cl",
		Launch:  graph.LaunchElementwise,
		Pattern: Op("Add", Any().As("x"), Op("Mul", Same("x"), Any().As("gate")).Commutative()).Commutative(),
		Inputs:  []Input{{Name: "x", Shape: "N,C,H,W"}, {Name: "gate", Shape: "N,C,1,1"}},
	}, {
		// openWakeWord's dense layers whole: the FullyConnected that feeds
		// each Relu(LayerNormalization(x)) in the same launch, one work
		// group per row (two launches of the five in the wake-word heads).
		// Before FuseLayerNormRelu, which would take the rest apart.
		Name:   PassFuseFCLayerNormRelu,
		Doc:    "fuse FullyConnected + LayerNormalization over the last axis + Relu into one fc_layer_norm_relu launch per row",
		Kernel: "fc_layer_norm_relu",
		File:   "kernelfusion_fc_layer_norm_relu.cl",
		Launch: graph.LaunchGEMMRows,
		Pattern: Op("Relu", Op("LayerNormalization",
			Op(graph.OpFullyConnected, Any().As("x"), Const().As("w"), Const().As("b")).Where(plainFC),
			Const().As("scale"), Const().As("beta")).Attr("axis", int64(-1), int64(-1)).As("ln")),
		// 21 columns: a whole vector chunk of the kernel and a partial one.
		Inputs: []Input{{Name: "x", Shape: "N,K"}, {Name: "w", Shape: "K,21"}, {Name: "b", Shape: "21"}, {Name: "scale", Shape: "21"}, {Name: "beta", Shape: "21"}},
		Params: func(m *Match) []float32 { return []float32{m.Node("ln").Attrs.Float("epsilon", 1e-5)} },
	}, {
		// openWakeWord's dense blocks: Relu(LayerNormalization(x)) over the
		// last axis (FuseLayerNorm makes the LayerNormalization).
		Name:   PassFuseLayerNormRelu,
		Doc:    "fuse LayerNormalization over the last axis + Relu into one layer_norm_relu launch per row",
		Kernel: "layer_norm_relu",
		File:   "kernelfusion_layer_norm_relu.cl",
		Launch: graph.LaunchRows,
		Pattern: Op("Relu", Op("LayerNormalization", Any().As("x"), Const().As("scale"), Const().As("bias")).
			Attr("axis", int64(-1), int64(-1)).As("ln")),
		Inputs: []Input{{Name: "x", Shape: "N,T,C"}, {Name: "scale", Shape: "C"}, {Name: "bias", Shape: "C"}},
		Params: func(m *Match) []float32 { return []float32{m.Node("ln").Attrs.Float("epsilon", 1e-5)} },
	}}
}

// plainFC reports whether FullyConnected node n is a product plus bias
// alone: 2-D weights, a bias of one element per column, no post-ops (a
// post-op would have to run before the normalisation).
func plainFC(n *graph.Node) bool {
	if len(n.Inputs) != 3 || n.Attrs.Strings(graph.AttrPostOps, nil) != nil {
		return false
	}
	w, ok := n.ConstInput(1)
	if !ok || w.Rank() != 2 {
		return false
	}
	b, ok := n.ConstInput(2)
	return ok && b.NumElements() == w.Shape()[1]
}
