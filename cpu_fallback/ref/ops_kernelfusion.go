package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// kernelFusionKernels is the family of the generic fused op: a
// KernelFusion node runs its body with the reference kernels of table (the
// complete kernel table, looked up at run time), so the CPU result of any
// declared fusion is right by construction and nothing here changes when a
// fusion is added. This kernel plans the body on every call (constant
// folding calls it once); the CPU device runs Prepare's, which plans it
// once.
func kernelFusionKernels(table map[string]Kernel) map[string]Kernel {
	return guardAll(map[string]Kernel{graph.OpKernelFusion: func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		k, err := prepareKernelFusion(n, table)
		if err != nil {
			return nil, err
		}
		return k(n, in)
	}})
}

// kernelFusionImpl is the IMPL_TYPE of a KernelFusion node on the CPU: its
// body on the reference kernels, and the GPU kernel it stands for.
func kernelFusionImpl(n *graph.Node) string {
	return "ref_body:" + n.Attrs.String(graph.AttrKernel, "")
}

// prepareKernelFusion plans n's body once and returns the kernel that runs
// it on the node's inputs.
func prepareKernelFusion(n *graph.Node, table map[string]Kernel) (Kernel, error) {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return nil, err
	}
	p, err := compile(body, table)
	if err != nil {
		return nil, n.Errorf("body %q: %w", body.Name, err)
	}
	return guard(func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		for i := range body.Parameters {
			if i >= len(in) || in[i] == nil {
				return nil, n.Errorf("input %d is omitted; every input of the body is required", i)
			}
		}
		out, err := p.Run(in)
		if err != nil {
			return nil, n.Errorf("body %q: %w", body.Name, err)
		}
		return out, nil
	}), nil
}
