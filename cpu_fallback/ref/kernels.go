package ref

import (
	"maps"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Kernel computes one node's outputs on the host. in[i] is nil for an
// omitted optional input. Inputs are contiguous and must not be modified;
// the kernel returns newly allocated contiguous outputs, one per
// n.Outputs, with shapes computed from the actual inputs (graph shapes may
// be dynamic) and element types matching graph shape inference.
type Kernel func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// kernelTable is every op the CPU device runs, merged from the families'
// tables in ops_F.go (one per graph.Family), each kernel wrapped by guard.
// It is built once, explicitly, not by init side effects scattered over
// files.
func kernelTable() map[string]Kernel {
	t := map[string]Kernel{}
	for _, family := range []map[string]Kernel{
		eltwiseKernels(), bitKernels(), activationKernels(), compareKernels(), movementKernels(), indexKernels(), cropKernels(),
		reduceKernels(), convKernels(), col2ImKernels(), poolKernels(), lpPoolKernels(), normKernels(), normStatsKernels(), gemmKernels(), detKernels(), resizeKernels(), affineKernels(),
		castKernels(), shapeKernels(), compactKernels(), colorKernels(), detectionKernels(), signalKernels(), windowKernels(), quantKernels(),
		kernelFusionKernels(t), // runs bodies with t itself
		controlKernels(t),      // runs bodies with t itself
		recurrentKernels(), lossKernels(), sequenceKernels(t), randomKernels(), stringKernels(),
	} {
		for name, k := range family {
			if _, dup := t[name]; dup {
				panic("ref: kernel " + name + " registered twice")
			}
			t[name] = guard(k)
		}
	}
	return t
}

// hostKernels is the kernel table, built once.
var hostKernels = sync.OnceValue(kernelTable)

// Lookup returns the kernel of an op type of the default domain.
func Lookup(opType string) (Kernel, bool) {
	k, ok := hostKernels()[opType]
	return k, ok
}

// Supports reports whether there is a kernel for n's op.
func Supports(n *graph.Node) bool {
	_, ok := hostKernels()[n.OpType]
	return ok && n.Domain == ""
}

// implNames are the implementation names of the ops whose name is not
// "ref_" and the op type in lower case.
var implNames = sync.OnceValue(func() map[string]string {
	t := map[string]string{}
	for _, m := range []map[string]string{convImpls, gemmImpls, poolImpls, normImpls, resizeImpls, quantImpls} {
		maps.Copy(t, m)
	}
	return t
})

// Impl is the name of the implementation that runs n, which the CPU
// device reports as IMPL_TYPE and ExecType.
func Impl(n *graph.Node) string {
	if n.OpType == graph.OpKernelFusion {
		return kernelFusionImpl(n)
	}
	if s, ok := implNames()[n.OpType]; ok {
		return s
	}
	return "ref_" + strings.ToLower(n.OpType)
}

// Evaluate computes one node's outputs on the host with the CPU device's
// reference kernels; in[i] is nil for an omitted optional input. It is what
// the fusion passes use to fold constant subgraphs (fusion.Options.Eval).
// An op without a CPU kernel is an error naming the node; a panic inside a
// kernel becomes an error.
func Evaluate(n *graph.Node, in []*tensor.Tensor) (out []*tensor.Tensor, err error) {
	k, ok := hostKernels()[n.OpType]
	if !ok || n.Domain != "" {
		return nil, n.Errorf("op %s has no CPU kernel", n.OpType)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, n.Errorf("cpu kernel panicked: %v", r)
		}
	}()
	dense := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		if x != nil {
			dense[i] = x.Contiguous()
		}
	}
	out, err = k(n, dense)
	if err != nil {
		return nil, err
	}
	if len(out) < len(n.Outputs) {
		return nil, n.Errorf("kernel returned %d outputs, want %d", len(out), len(n.Outputs))
	}
	return out, nil
}
