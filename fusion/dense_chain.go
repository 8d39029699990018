package fusion

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PassFuseDenseChain is the pass name of FuseDenseChain.
const PassFuseDenseChain = "FuseDenseChain"

// DenseChainKernel is the catalogue kernel of the KernelFusion nodes
// FuseDenseChain makes (kernels/kernelfusion_dense_chain.cl).
const DenseChainKernel = "dense_chain"

// DenseChainMaxLayers is the most layers of one dense chain (the kernel's
// argument slots, DENSE_MAX_LAYERS).
const DenseChainMaxLayers = 4

// DenseChainRowFloats is the floats the dense_chain kernel keeps in local
// memory for each of its two row halves (DW) when the chain's widest
// layer has width columns: width rounded up to 64. The fusion's fit and
// the lowering's check both size the kernel's local arrays by it.
func DenseChainRowFloats(width int64) int64 { return (width + 63) / 64 * 64 }

// DenseChainOptions says how small a chain of dense layers must be for a
// device to run it in one work group (FuseDenseChain): the device sets
// them from its own properties.
type DenseChainOptions struct {
	// LocalBytes is the local memory one work group may use
	// (CL_DEVICE_LOCAL_MEM_SIZE): the chain's weights and its widest
	// layer's row (twice: the layer's input and output) must fit in it, so that the
	// group streams the weights from that memory's level (a core's cache
	// on a CPU device) and the MACs one group does stay bounded by it.
	LocalBytes int64
	// MaxRows is the most rows (the product of the input's leading dims,
	// which must be static) a chain takes: one work group runs each row,
	// so more rows than the device has compute units would wait on each
	// other where the per-layer kernels would spread columns over them.
	MaxRows int64
}

// FuseDenseChain replaces a run of 2 to DenseChainMaxLayers dense layers
// (each a FullyConnected with 2-D constant weights and a bias, then either
// one Relu or Sigmoid post-op, or a LayerNormalization over the row with
// constant scale and shift, optionally followed by Relu: openWakeWord's
// heads), each read only by the next, with one KernelFusion node of kernel
// dense_chain (graph.LaunchDenseChain) whose body is the chain: one launch
// where the per-layer kernels take one each. It runs only where the device
// says how small a chain must be (Options.DenseChain) and the chain fits:
// its weights and widest row within LocalBytes, its rows static and at
// most MaxRows; larger chains keep their per-layer kernels
// (FuseFCLayerNormRelu, FullyConnected).
func FuseDenseChain() Pass {
	return Pass{Name: PassFuseDenseChain,
		Doc: "run a small chain of dense layers (FullyConnected with a Relu/Sigmoid post-op or a LayerNormalization + Relu) as one dense_chain launch of one work group per row, on a device whose local memory holds it",
		Ops: []string{graph.OpFullyConnected, "LayerNormalization", "Relu"},
		Run: func(ctx context.Context, m *graph.Model, o *Options) (int, error) {
			if o == nil || o.DenseChain == nil {
				return 0, nil
			}
			return fuseDenseChains(ctx, m, o)
		}}
}

// denseLink is one layer of a dense chain in the graph: its FullyConnected,
// the LayerNormalization and Relu after it (nil when absent), and the node
// whose output is the layer's.
type denseLink struct {
	fc, ln, relu, last *graph.Node
}

// fuseDenseChains is FuseDenseChain's rewrite.
func fuseDenseChains(ctx context.Context, m *graph.Model, o *Options) (int, error) {
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	exclude := o.excluded()
	taken := map[*graph.Node]bool{}
	count := 0
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			return count, err
		}
		first, ok := denseLinkAt(n, cons, exclude)
		if !ok || taken[n] {
			continue
		}
		chain := []denseLink{first}
		for len(chain) < DenseChainMaxLayers {
			c := cons[chain[len(chain)-1].last.Out(0)]
			if len(c) != 1 || c[0].Index != 0 || c[0].Node.OpType == graph.OpResult {
				break
			}
			next, ok := denseLinkAt(c[0].Node, cons, exclude)
			if !ok {
				break
			}
			chain = append(chain, next)
		}
		if len(chain) < 2 || !denseChainFits(chain, o.DenseChain) {
			continue
		}
		for _, l := range chain {
			for _, x := range []*graph.Node{l.fc, l.ln, l.relu} {
				if x != nil {
					taken[x] = true
				}
			}
		}
		if err := replaceDenseChain(chain, cons); err != nil {
			return count, err
		}
		count++
	}
	return count, nil
}

// denseLinkAt returns the dense layer that starts at FullyConnected node n.
func denseLinkAt(n *graph.Node, cons map[graph.Output][]graph.Input, exclude map[string]bool) (denseLink, bool) {
	if n.OpType != graph.OpFullyConnected || exclude[n.OpType] || len(n.Inputs) != 3 || n.Input(0).Type() != tensor.F32 {
		return denseLink{}, false
	}
	w, ok := n.ConstInput(1)
	if !ok || w.Rank() != 2 || w.Type() != tensor.F32 {
		return denseLink{}, false
	}
	C := w.Shape()[1]
	if b, ok := n.ConstInput(2); !ok || b.Type() != tensor.F32 || b.NumElements() != C {
		return denseLink{}, false
	}
	post, err := graph.PostOps(n)
	if err != nil || len(post) > 1 {
		return denseLink{}, false
	}
	link := denseLink{fc: n, last: n}
	if len(post) == 1 {
		return link, post[0].Kind == graph.PostRelu || post[0].Kind == graph.PostSigmoid
	}
	c := cons[n.Out(0)]
	if len(c) != 1 || c[0].Node.OpType != "LayerNormalization" || c[0].Index != 0 || exclude["LayerNormalization"] {
		return link, true
	}
	ln := c[0].Node
	if ln.Attrs.Int("axis", -1) != -1 || len(ln.Inputs) != 3 || len(cons[ln.Out(1)]) > 0 || len(cons[ln.Out(2)]) > 0 {
		return link, true
	}
	for i := 1; i <= 2; i++ {
		if v, ok := ln.ConstInput(i); !ok || v.Type() != tensor.F32 || v.NumElements() != C || v.Rank() != 1 {
			return link, true
		}
	}
	link.ln, link.last = ln, ln
	if c := cons[ln.Out(0)]; len(c) == 1 && c[0].Node.OpType == "Relu" && !exclude["Relu"] {
		link.relu, link.last = c[0].Node, c[0].Node
	}
	return link, true
}

// denseChainFits reports whether chain is small enough for one work group
// under o: static rows, at most MaxRows of them, and the weights plus the
// kernel's two row halves (DenseChainRowFloats of the widest layer; the
// first layer reads x where it lies) and the group's reduction array
// within LocalBytes, so a chain it accepts is one the lowering launches.
func denseChainFits(chain []denseLink, o *DenseChainOptions) bool {
	xs := chain[0].fc.Input(0).Shape()
	if !xs.RankKnown || len(xs.Dims) < 1 {
		return false
	}
	rows := int64(1)
	for _, d := range xs.Dims[:len(xs.Dims)-1] {
		if d.Size < 0 {
			return false
		}
		rows *= d.Size
	}
	width, floats := int64(0), int64(0)
	for _, l := range chain {
		w, _ := l.fc.ConstInput(1)
		K, C := w.Shape()[0], w.Shape()[1]
		width = max(width, C)
		floats += K*C + C
		if l.ln != nil {
			floats += 2 * C
		}
	}
	const groupItems = 256 // the kernel's reduction array (ROWS_MAX_GROUP)
	floats += 2*DenseChainRowFloats(width) + groupItems
	return rows >= 1 && rows <= o.MaxRows && floats*4 <= o.LocalBytes
}

// replaceDenseChain replaces chain with one KernelFusion node of kernel
// dense_chain: its inputs are the first layer's input, then per layer the
// weights, the bias and, for a normalising layer, the scale and shift; its
// body is the chain's nodes on Parameters for them; its params each
// layer's epsilon (0 where it does not normalise).
func replaceDenseChain(chain []denseLink, cons map[graph.Output][]graph.Input) error {
	x := chain[0].fc.Input(0)
	inputs := []graph.Output{x}
	params := []*graph.Node{graph.NewParameter("x", x.Type(), x.Shape())}
	param := func(o graph.Output, name string) graph.Output {
		p := graph.NewParameter(name, o.Type(), o.Shape())
		params = append(params, p)
		inputs = append(inputs, o)
		return p.Out(0)
	}
	prev := params[0].Out(0)
	var names []string
	var eps []float32
	for i, l := range chain {
		fc := bodyCopy(l.fc, prev, param(l.fc.Input(1), fmt.Sprintf("w%d", i)), param(l.fc.Input(2), fmt.Sprintf("b%d", i)))
		prev = fc.Out(0)
		names = mergeNames(names, l.fc.OriginalNames())
		e := float32(0)
		if l.ln != nil {
			ln := bodyCopy(l.ln, prev, param(l.ln.Input(1), fmt.Sprintf("scale%d", i)), param(l.ln.Input(2), fmt.Sprintf("shift%d", i)))
			prev = ln.Out(0)
			names = mergeNames(names, l.ln.OriginalNames())
			e = l.ln.Attrs.Float("epsilon", 1e-5)
		}
		if l.relu != nil {
			prev = bodyCopy(l.relu, prev).Out(0)
			names = mergeNames(names, l.relu.OriginalNames())
		}
		eps = append(eps, e)
	}
	last := chain[len(chain)-1].last
	body := graph.NewModel(DenseChainKernel, params, []*graph.Node{graph.NewResult("y", prev)})
	return replaceByKernelFusion(cons, last, inputs, body, DenseChainKernel, graph.LaunchDenseChain, eps, names)
}

// DenseLayer is one layer of a dense_chain body, as its kernel's shape
// table describes it (graph.LaunchDenseChain).
type DenseLayer struct {
	// Norm is set for a layer with a LayerNormalization over the row.
	Norm bool
	// Act is the activation: 0 none, 1 Relu, 2 Sigmoid.
	Act int64
}

// DenseChainLayers reads the layers of the body of a dense_chain
// KernelFusion node (FuseDenseChain's form): an error names what does not
// fit it.
func DenseChainLayers(body *graph.Model) ([]DenseLayer, error) {
	nodes, err := body.Nodes()
	if err != nil {
		return nil, err
	}
	var layers []DenseLayer
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
		case graph.OpFullyConnected:
			post, err := graph.PostOps(n)
			if err != nil || len(post) > 1 {
				return nil, fmt.Errorf("dense chain %q: node %q: post-ops %v (at most one Relu or Sigmoid)", body.Name, n.Name, post)
			}
			l := DenseLayer{}
			if len(post) == 1 {
				switch post[0].Kind {
				case graph.PostRelu:
					l.Act = 1
				case graph.PostSigmoid:
					l.Act = 2
				default:
					return nil, fmt.Errorf("dense chain %q: node %q: post-op %s", body.Name, n.Name, post[0].Kind)
				}
			}
			layers = append(layers, l)
		case "LayerNormalization", "Relu":
			if len(layers) == 0 || layers[len(layers)-1].Act != 0 || n.OpType == "LayerNormalization" && layers[len(layers)-1].Norm {
				return nil, fmt.Errorf("dense chain %q: node %q (%s) out of place", body.Name, n.Name, n.OpType)
			}
			if n.OpType == "Relu" {
				layers[len(layers)-1].Act = 1
			} else {
				layers[len(layers)-1].Norm = true
			}
		default:
			return nil, fmt.Errorf("dense chain %q: node %q of type %s", body.Name, n.Name, n.OpType)
		}
	}
	if len(layers) == 0 || len(layers) > DenseChainMaxLayers {
		return nil, fmt.Errorf("dense chain %q: %d layers (1 to %d)", body.Name, len(layers), DenseChainMaxLayers)
	}
	return layers, nil
}
