package fusion

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PassFuseSEBlock is the pass name of FuseSEBlock.
const PassFuseSEBlock = "FuseSEBlock"

// SEBlockKernel is the catalogue kernel of the KernelFusion nodes
// FuseSEBlock makes (kernels/kernelfusion_se_block.cl).
const SEBlockKernel = "se_block"

// SE block activations, as the se_block kernel's shape table codes them
// (graph.LaunchSEBlock).
const (
	SEActNone        = 0
	SEActRelu        = 1
	SEActSigmoid     = 2
	SEActHardSigmoid = 3
)

// seActs maps the post-op kinds a squeeze-excitation layer may end in to
// their codes.
var seActs = map[string]int64{graph.PostRelu: SEActRelu, graph.PostSigmoid: SEActSigmoid, graph.PostHardSigmoid: SEActHardSigmoid}

// FuseSEBlock replaces each squeeze-excitation block of MobileNetV3-style
// networks (PP-OCR cls, rec and det),
//
//	g = act2(Conv1x1(act1(Conv1x1(GlobalAveragePool(x)))))   [N, C, 1, 1]
//	y = x * g          or, after FuseSEResidual, x + x * g
//
// after FuseConv (the convolutions are FusedConv nodes with at most one
// Relu, Sigmoid or HardSigmoid post-op, constant weights and biases), with
// one KernelFusion node of kernel se_block (graph.LaunchSEBlock) whose body
// is the block: one launch where the unfused block takes four (pooling,
// two convolutions, the scaling). Every work group of the kernel pools
// the whole image, so the GPU launches it only where an image of x fits
// the device's local memory (on POCL a core's cache, which the repeated
// pooling then reads) or, on a CPU device, where at most two groups pool
// it; a larger block runs its body's nodes as before. It runs only where
// the device sets Options.BodyFusions (the GPU).
func FuseSEBlock() Pass {
	return Pass{Name: PassFuseSEBlock,
		Doc: "run a squeeze-excitation block (GlobalAveragePool, two 1x1 FusedConvs, the Mul or se_residual) as one se_block launch where an image fits the device's local memory or at most two groups pool it",
		Ops: []string{"GlobalAveragePool", graph.OpFusedConv, "Mul", graph.OpKernelFusion},
		Run: func(ctx context.Context, m *graph.Model, o *Options) (int, error) {
			if o == nil || !o.BodyFusions {
				return 0, nil
			}
			return fuseSEBlocks(ctx, m, o)
		}}
}

// seBlock is one squeeze-excitation block in the graph: the pooling, the
// two convolutions and the node applying the gate (a Mul, or a
// se_residual KernelFusion node).
type seBlock struct {
	x                  graph.Output
	pool, conv1, conv2 *graph.Node
	apply              *graph.Node
	residual           bool
	acts               [2]graph.PostOp
}

// fuseSEBlocks is FuseSEBlock's rewrite.
func fuseSEBlocks(ctx context.Context, m *graph.Model, o *Options) (int, error) {
	exclude := o.excluded()
	return rewriteEach(ctx, m, func(n *graph.Node, cons map[graph.Output][]graph.Input) (bool, error) {
		blk, ok := seBlockAt(n, cons, exclude)
		if !ok {
			return false, nil
		}
		return true, replaceSEBlock(blk, cons)
	})
}

// rewriteEach calls rewrite on each node of m in topological order with
// the consumers as they were before the pass, and counts the nodes it
// rewrote (it returns true); it stops at the first error.
func rewriteEach(ctx context.Context, m *graph.Model, rewrite func(*graph.Node, map[graph.Output][]graph.Input) (bool, error)) (int, error) {
	nodes, cons, err := nodesAndConsumers(m)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			return count, err
		}
		done, err := rewrite(n, cons)
		if err != nil {
			return count, err
		}
		if done {
			count++
		}
	}
	return count, nil
}

// seBlockAt returns the squeeze-excitation block whose gate node n (a Mul
// or a se_residual KernelFusion) applies.
func seBlockAt(n *graph.Node, cons map[graph.Output][]graph.Input, exclude map[string]bool) (seBlock, bool) {
	var blk seBlock
	switch {
	case n.OpType == "Mul" && len(n.Inputs) == 2:
	case n.OpType == graph.OpKernelFusion && n.Attrs.String(graph.AttrKernel, "") == "se_residual" && len(n.Inputs) == 2:
		blk.residual = true
	default:
		return blk, false
	}
	if exclude[n.OpType] || exclude["GlobalAveragePool"] || len(n.Outputs) != 1 {
		return blk, false
	}
	for gi := range 2 {
		if n.OpType == graph.OpKernelFusion && gi == 0 {
			continue // se_residual's inputs are (x, gate)
		}
		blk.x, blk.apply = n.Input(1-gi), n
		if seGate(&blk, n.Input(gi), cons) {
			return blk, true
		}
	}
	return blk, false
}

// seGate reports whether gate is the squeeze-excitation gate of blk.x,
// read only by blk.apply, and fills in its nodes.
func seGate(blk *seBlock, gate graph.Output, cons map[graph.Output][]graph.Input) bool {
	only := func(o graph.Output) bool { return len(cons[o]) == 1 }
	c2 := gate.Node
	if c2 == nil || c2.OpType != graph.OpFusedConv || !only(gate) {
		return false
	}
	c1 := c2.Input(0).Node
	if c1 == nil || c1.OpType != graph.OpFusedConv || !only(c2.Input(0)) {
		return false
	}
	pool := c1.Input(0).Node
	if pool == nil || pool.OpType != "GlobalAveragePool" || !only(c1.Input(0)) || pool.Input(0) != blk.x {
		return false
	}
	xs := blk.x.Shape()
	if blk.x.Type() != tensor.F32 || !xs.RankKnown || len(xs.Dims) != 4 || xs.Dims[1].Size < 1 {
		return false
	}
	C := xs.Dims[1].Size
	w1, ok1 := seConv(c1, C)
	if !ok1 {
		return false
	}
	CM := w1.Shape()[0]
	w2, ok2 := seConv(c2, CM)
	if !ok2 || w2.Shape()[0] != C {
		return false
	}
	for i, c := range []*graph.Node{c1, c2} {
		post, _ := graph.PostOps(c)
		if len(post) == 1 {
			blk.acts[i] = post[0]
		}
	}
	blk.pool, blk.conv1, blk.conv2 = pool, c1, c2
	return true
}

// seConv returns the weights of FusedConv node n when it is a plain 1x1
// convolution of K input channels (one group, unit strides and dilations,
// no padding, a constant f32 bias of one element per output channel) with
// at most one activation post-op a squeeze-excitation layer ends in.
func seConv(n *graph.Node, K int64) (*tensor.Tensor, bool) {
	if len(n.Inputs) != 3 || len(n.Outputs) != 1 || n.Input(0).Type() != tensor.F32 {
		return nil, false
	}
	w, ok := n.ConstInput(1)
	if !ok || w.Type() != tensor.F32 || w.Rank() != 4 || w.Shape()[1] != K || w.Shape()[2] != 1 || w.Shape()[3] != 1 {
		return nil, false
	}
	if b, ok := n.ConstInput(2); !ok || b.Type() != tensor.F32 || b.NumElements() != w.Shape()[0] {
		return nil, false
	}
	if n.Attrs.Int("group", 1) != 1 {
		return nil, false
	}
	for _, a := range []string{"strides", "dilations"} {
		for _, v := range n.Attrs.Ints(a, nil) {
			if v != 1 {
				return nil, false
			}
		}
	}
	for _, v := range n.Attrs.Ints("pads", nil) {
		if v != 0 {
			return nil, false
		}
	}
	if p := n.Attrs.String("auto_pad", "NOTSET"); p != "NOTSET" && p != "VALID" {
		return nil, false
	}
	post, err := graph.PostOps(n)
	if err != nil || len(post) > 1 {
		return nil, false
	}
	if len(post) == 1 {
		if _, ok := seActs[post[0].Kind]; !ok {
			return nil, false
		}
	}
	return w, true
}

// replaceSEBlock replaces blk with one KernelFusion node of kernel
// se_block: its inputs are x and the two convolutions' weights and
// biases, its body the block's nodes on Parameters for them, its params
// the two post-ops' alpha and beta.
func replaceSEBlock(blk seBlock, cons map[graph.Output][]graph.Input) error {
	inputs := []graph.Output{blk.x, blk.conv1.Input(1), blk.conv1.Input(2), blk.conv2.Input(1), blk.conv2.Input(2)}
	var params []*graph.Node
	for i, name := range []string{"x", "w1", "b1", "w2", "b2"} {
		params = append(params, graph.NewParameter(name, inputs[i].Type(), inputs[i].Shape()))
	}
	x := params[0].Out(0)
	pool := bodyCopy(blk.pool, x)
	c1 := bodyCopy(blk.conv1, pool.Out(0), params[1].Out(0), params[2].Out(0))
	c2 := bodyCopy(blk.conv2, c1.Out(0), params[3].Out(0), params[4].Out(0))
	ins := []graph.Output{x, c2.Out(0)}
	if blk.apply.Input(0) != blk.x {
		ins[0], ins[1] = ins[1], ins[0]
	}
	apply := bodyCopy(blk.apply, ins...)
	var names []string
	for _, n := range []*graph.Node{blk.pool, blk.conv1, blk.conv2, blk.apply} {
		names = mergeNames(names, n.OriginalNames())
	}
	body := graph.NewModel(SEBlockKernel, params, []*graph.Node{graph.NewResult("y", apply.Out(0))})
	p := []float32{blk.acts[0].Alpha, blk.acts[0].Beta, blk.acts[1].Alpha, blk.acts[1].Beta}
	return replaceByKernelFusion(cons, blk.apply, inputs, body, SEBlockKernel, graph.LaunchSEBlock, p, names)
}

// SEBlockLayout is what the se_block kernel's shape table says of a
// FuseSEBlock body beyond the shapes: each layer's activation code and
// whether the block adds its input.
type SEBlockLayout struct {
	// Acts are the two layers' activations (SEActNone ... SEActHardSigmoid).
	Acts [2]int64
	// Residual is set when the block computes x + x*gate.
	Residual bool
}

// SEBlockLayoutOf reads the layout of the body of a se_block KernelFusion
// node (FuseSEBlock's form): an error names what does not fit it.
func SEBlockLayoutOf(body *graph.Model) (SEBlockLayout, error) {
	var l SEBlockLayout
	nodes, err := body.Nodes()
	if err != nil {
		return l, err
	}
	convs := 0
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpResult, "GlobalAveragePool", "Mul":
		case graph.OpKernelFusion:
			l.Residual = true
		case graph.OpFusedConv:
			if convs == 2 {
				return l, n.Errorf("se block %q: a third convolution", body.Name)
			}
			post, err := graph.PostOps(n)
			if err != nil || len(post) > 1 {
				return l, n.Errorf("se block %q: post-ops %v (at most one activation)", body.Name, post)
			}
			if len(post) == 1 {
				a, ok := seActs[post[0].Kind]
				if !ok {
					return l, n.Errorf("se block %q: post-op %s", body.Name, post[0].Kind)
				}
				l.Acts[convs] = a
			}
			convs++
		default:
			return l, n.Errorf("se block %q: node of type %s", body.Name, n.OpType)
		}
	}
	if convs != 2 {
		return l, fmt.Errorf("se block %q: %d convolutions, want 2", body.Name, convs)
	}
	return l, nil
}
