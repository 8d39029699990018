package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// kernelFusionKernels is the family of the generic fused op: a
// KernelFusion node runs its body with the reference kernels of table (the
// complete kernel table, looked up at run time), so the CPU result of any
// declared fusion is right by construction and nothing here changes when a
// fusion is added.
func kernelFusionKernels(table map[string]Kernel) map[string]Kernel {
	return guardAll(map[string]Kernel{graph.OpKernelFusion: func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return runBody(table, n, in)
	}})
}

// kernelFusionImpl is the IMPL_TYPE of a KernelFusion node on the CPU: its
// body on the reference kernels, and the GPU kernel it stands for.
func kernelFusionImpl(n *graph.Node) string {
	return "ref_body:" + n.Attrs.String(graph.AttrKernel, "")
}

// runBody evaluates the body of n on the inputs in topological order with
// the kernels of table, after binding its Parameters to the inputs' actual
// shapes (graph shapes may be dynamic).
func runBody(table map[string]Kernel, n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return nil, err
	}
	b := body.Clone()
	for i, p := range b.Parameters {
		if i >= len(in) || in[i] == nil {
			return nil, n.Errorf("input %d is omitted; every input of the body is required", i)
		}
		p.Outputs[0].Type = in[i].Type()
		p.Outputs[0].Shape = graph.StaticShape(in[i].Shape())
	}
	if err := b.InferShapes(); err != nil {
		return nil, n.Errorf("body %q: %w", b.Name, err)
	}
	nodes, err := b.Nodes()
	if err != nil {
		return nil, n.Errorf("body %q: %w", b.Name, err)
	}
	param := make(map[*graph.Node]int, len(b.Parameters))
	for i, p := range b.Parameters {
		param[p] = i
	}
	vals := map[graph.Output]*tensor.Tensor{}
	for _, bn := range nodes {
		switch bn.OpType {
		case graph.OpParameter:
			i, ok := param[bn]
			if !ok {
				return nil, n.Errorf("body %q reads parameter %q, which is not in its parameter list", b.Name, bn.Name)
			}
			vals[bn.Out(0)] = in[i]
			continue
		case graph.OpConstant:
			if bn.Value == nil {
				return nil, n.Errorf("body %q: constant %q has no value", b.Name, bn.Name)
			}
			vals[bn.Out(0)] = bn.Value.Contiguous()
			continue
		case graph.OpResult:
			continue
		}
		args := make([]*tensor.Tensor, len(bn.Inputs))
		for i, x := range bn.Inputs {
			if x.Valid() {
				args[i] = vals[x]
			}
		}
		k, ok := table[bn.OpType]
		if !ok || bn.Domain != "" {
			return nil, n.Errorf("body %q: %s has no CPU kernel", b.Name, bn)
		}
		outs, err := k(bn, args)
		if err != nil {
			return nil, n.Errorf("body %q: %w", b.Name, err)
		}
		if len(outs) < len(bn.Outputs) {
			return nil, n.Errorf("body %q: %s returned %d outputs, want %d", b.Name, bn, len(outs), len(bn.Outputs))
		}
		for i := range bn.Outputs {
			vals[bn.Out(i)] = outs[i]
		}
	}
	out := make([]*tensor.Tensor, len(b.Results))
	for j, r := range b.Results {
		y := vals[r.Inputs[0]]
		if y == nil {
			return nil, n.Errorf("body %q: result %q has no value", b.Name, r.Name)
		}
		// Outputs are the request's to keep: never hand back an input or a
		// constant of the body.
		if r.Inputs[0].Node.OpType == graph.OpParameter || r.Inputs[0].Node.OpType == graph.OpConstant {
			y = y.Clone()
		}
		out[j] = y.Contiguous()
	}
	return out, nil
}
