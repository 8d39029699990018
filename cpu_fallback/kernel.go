package cpufallback

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// kernel computes one node's outputs on the host. in[i] is nil for an
// omitted optional input. Inputs are contiguous and must not be modified;
// the kernel returns newly allocated contiguous outputs, one per
// n.Outputs, with shapes computed from the actual inputs (graph shapes may
// be dynamic) and element types matching graph shape inference.
type kernel func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// kernelTable is every op the CPU device runs, merged from the per-family
// tables in ops_*.go. It is built once, explicitly, not by init side effects
// scattered over files.
func kernelTable() map[string]kernel {
	t := map[string]kernel{}
	for _, family := range []map[string]kernel{
		elementwiseKernels(),   // ops_elementwise.go, ops_unary.go, ops_compare.go
		reduceKernels(),        // ops_reduce.go
		movementKernels(),      // ops_movement.go
		nnKernels(),            // ops_conv.go, ops_gemm.go, ops_pool.go, ops_norm.go, ops_resize.go, ops_softmax.go, ops_pad.go
		fusedKernels(),         // ops_fused.go
		kernelFusionKernels(t), // ops_kernelfusion.go; runs bodies with t itself
	} {
		for name, k := range family {
			if _, dup := t[name]; dup {
				panic("cpufallback: kernel " + name + " registered twice")
			}
			t[name] = k
		}
	}
	return t
}
